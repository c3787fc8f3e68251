#include "tessera/support/OptionFlags.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

using namespace tessera;
using ::testing::HasSubstr;

namespace {

std::string messageOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const OptionError &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an OptionError";
  return {};
}

} // namespace

TEST(OptionFlags, InitializerListSetsValuesAndLastDuplicateWins) {
  OptionFlags flags{{"b", "1"}, {"a", "2"}, {"b", "3"}};
  EXPECT_EQ(flags.size(), 2u);
  EXPECT_EQ(flags.at("a"), "2");
  EXPECT_EQ(flags.at("b"), "3");
}

TEST(OptionFlags, IteratesInKeyOrderWhateverTheInsertionOrder) {
  OptionFlags flags;
  flags.set("z", "1");
  flags.set("a", "2");
  flags.set("m", "3");
  std::vector<std::string> keys;
  for (const auto &[key, value] : flags)
    keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "m", "z"}));
  EXPECT_EQ(flags, (OptionFlags{{"m", "3"}, {"z", "1"}, {"a", "2"}}));
}

TEST(OptionFlags, SetReplacesAndGetFallsBackToDefault) {
  OptionFlags flags;
  flags.set("x", "1");
  flags.set("x", "2");
  EXPECT_EQ(flags.at("x"), "2");
  EXPECT_EQ(flags.get("x", "9"), "2");
  EXPECT_EQ(flags.get("y", "9"), "9");
  EXPECT_TRUE(flags.contains("x"));
  EXPECT_FALSE(flags.contains("y"));
  EXPECT_TRUE(flags.erase("x"));
  EXPECT_FALSE(flags.erase("x"));
  EXPECT_TRUE(flags.empty());
}

TEST(OptionFlags, AtOfMissingKeyThrowsNamingTheKey) {
  OptionFlags flags{{"a", "1"}};
  EXPECT_THAT(messageOf([&] { flags.at("autoReport.all"); }),
              HasSubstr("\"autoReport.all\""));
}

TEST(OptionFlags, FromJsonConvertsStringsNumbersAndBooleans) {
  auto flags = OptionFlags::fromJson(
      R"({"s": "text", "i": 42, "f": 0.5, "t": true, "n": false})", "test");
  EXPECT_EQ(flags.at("s"), "text");
  EXPECT_EQ(flags.at("i"), "42");
  EXPECT_EQ(flags.at("f"), "0.5");
  EXPECT_EQ(flags.at("t"), "true");
  EXPECT_EQ(flags.at("n"), "false");
}

TEST(OptionFlags, FromJsonRejectsNonScalarValuesNamingSourceAndKey) {
  auto msg =
      messageOf([] { OptionFlags::fromJson(R"({"a": [1, 2]})", "TESSERA_X"); });
  EXPECT_THAT(msg, HasSubstr("TESSERA_X"));
  EXPECT_THAT(msg, HasSubstr("\"a\""));
  EXPECT_THAT(msg, HasSubstr("an array"));
  EXPECT_THAT(messageOf([] { OptionFlags::fromJson(R"({"a": null})", "src"); }),
              HasSubstr("null"));
  EXPECT_THAT(
      messageOf([] { OptionFlags::fromJson(R"({"a": {"b": 1}})", "src"); }),
      HasSubstr("an object"));
}

TEST(OptionFlags, FromJsonReportsParseErrorsAndNonObjects) {
  auto msg = messageOf(
      [] { OptionFlags::fromJson("{\"a\": ", "TESSERA_ENGINE_OPTIONS"); });
  EXPECT_THAT(msg, HasSubstr("TESSERA_ENGINE_OPTIONS"));
  EXPECT_THAT(msg, HasSubstr("not valid JSON"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("[json.exception")));
  EXPECT_THAT(messageOf([] { OptionFlags::fromJson("[1]", "where"); }),
              HasSubstr("must be a JSON object"));
}

TEST(OptionFlags, ReadJSONMergesIntoExistingFlagsInBothArgumentOrders) {
  OptionFlags flags{{"keep", "1"}, {"replace", "old"}};
  std::istringstream in(R"({"replace": "new", "add": 7})");
  readJSON(flags, in);
  EXPECT_EQ(flags,
            (OptionFlags{{"keep", "1"}, {"replace", "new"}, {"add", "7"}}));
  std::istringstream in2(R"({"x": "y"})");
  readJSON(in2, flags);
  EXPECT_EQ(flags.at("x"), "y");
}

TEST(OptionFlags, OptionsFromEnvironmentReadsJsonAndIsEmptyWhenUnset) {
  ::unsetenv("TESSERA_TEST_OPTIONS");
  EXPECT_TRUE(optionsFromEnvironment("TESSERA_TEST_OPTIONS").empty());
  ::setenv("TESSERA_TEST_OPTIONS", R"({"autoReport.all": true})", 1);
  EXPECT_EQ(optionsFromEnvironment("TESSERA_TEST_OPTIONS"),
            (OptionFlags{{"autoReport.all", "true"}}));
  ::setenv("TESSERA_TEST_OPTIONS", "{oops", 1);
  EXPECT_THAT(messageOf([] { optionsFromEnvironment("TESSERA_TEST_OPTIONS"); }),
              HasSubstr("TESSERA_TEST_OPTIONS"));
  ::unsetenv("TESSERA_TEST_OPTIONS");
}

TEST(OptionFlags, MergedLetsOverridesWin) {
  OptionFlags base{{"a", "1"}, {"b", "2"}};
  OptionFlags over{{"b", "3"}, {"c", "4"}};
  EXPECT_EQ(merged(base, over),
            (OptionFlags{{"a", "1"}, {"b", "3"}, {"c", "4"}}));
}

TEST(OptionFlags, PrintsAsJson) {
  std::ostringstream os;
  os << OptionFlags{{"b", "2"}, {"a", "x\"y"}};
  EXPECT_EQ(os.str(), R"({"a":"x\"y","b":"2"})");
  EXPECT_EQ(OptionFlags::fromJson(os.str(), "round trip"),
            (OptionFlags{{"b", "2"}, {"a", "x\"y"}}));
}
