#include "tessera/support/Hash.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace tessera;

TEST(Hash, MatchesTheXxh64ReferenceValueOfEmptyInput) {
  EXPECT_EQ(hash64("", 0), 0xef46db3751d8e999ull);
  EXPECT_EQ(toHex(hash64("")), "ef46db3751d8e999");
}

TEST(Hash, SeedChangesTheHash) {
  EXPECT_NE(hash64("tessera", 0), hash64("tessera", 1));
  EXPECT_EQ(hash64("tessera", 7), hash64("tessera", 7));
}

TEST(Hasher, IncrementalDigestEqualsOneShotAtEverySplit) {
  std::string data;
  for (int i = 0; i < 200; ++i)
    data.push_back(static_cast<char>(i * 37));
  const auto expected = hash64(data, 5);
  for (std::size_t split = 0; split <= data.size(); split += 7) {
    Hasher h(5);
    h.update(std::string_view(data).substr(0, split));
    h.update(std::string_view(data).substr(split));
    EXPECT_EQ(h.digest(), expected) << "split at " << split;
  }
}

TEST(Hasher, HashesTriviallyCopyableValuesByTheirBytes) {
  const std::uint32_t v = 0x01020304;
  Hasher h;
  h.update(v);
  EXPECT_EQ(h.digest(), hash64(&v, sizeof v));
  Hasher s;
  s.update("abc"); // a string literal hashes its characters, not its NUL
  EXPECT_EQ(s.digest(), hash64("abc"));
}

TEST(Hasher, DelimitedUpdatesDistinguishSplits) {
  Hasher a, b;
  a.updateDelimited("ab").updateDelimited("c");
  b.updateDelimited("a").updateDelimited("bc");
  EXPECT_NE(a.digest(), b.digest());
}

TEST(Hasher, CopiesContinueIndependently) {
  Hasher a;
  a.update("common");
  Hasher b = a;
  a.update("x");
  b.update("y");
  EXPECT_EQ(a.digest(), hash64("commonx"));
  EXPECT_EQ(b.digest(), hash64("commony"));
  Hasher c(3);
  c = a;
  EXPECT_EQ(c.digest(), a.digest());
}

TEST(Hash, ToHexPadsToSixteenDigits) {
  EXPECT_EQ(toHex(0), "0000000000000000");
  EXPECT_EQ(toHex(0xabcull), "0000000000000abc");
  EXPECT_EQ(toHex(~0ull), "ffffffffffffffff");
}
