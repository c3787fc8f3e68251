// The resolver's exchange bookkeeping (src/compiler, private): Traffic
// counts each byte a tile sends, and each byte two bus partners both
// receive, once however its ranges arrive; Locator finds the interval
// locate() finds whatever it was asked before.
#include "compiler/Traffic.hpp"
#include "compiler/CompilerState.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

using namespace tessera;
using namespace tessera::compiler;

TEST(CompilerTraffic, RangesOfTilesVisitedInTurnJoinPerTile) {
  // A transposed read: one 2-byte element from each of tiles 0-3 in turn,
  // each tile's next element just past its last; tiles 4 and 5 (bus
  // partners) receive them, 5 only those of tiles 0 and 1.
  Traffic t(8, 1);
  for (std::uint64_t i = 0; i < 100; ++i)
    for (unsigned from = 0; from < 4; ++from) {
      const std::uint64_t begin = 1000 + 2 * i;
      t.addSend(from, begin, begin + 2);
      t.addReceive(4, from, begin, begin + 2);
      if (from < 2)
        t.addReceive(5, from, begin, begin + 2);
    }
  // One range per sender, and per receiver and sender.
  EXPECT_EQ(t.sends.size(), 4u);
  EXPECT_EQ(t.receives.size(), 6u);
  t.sendsToOut();
  for (unsigned from = 0; from < 4; ++from)
    EXPECT_EQ(t.out[from], 200u);
  t.pairReceives(2, 8);
  EXPECT_EQ(t.sharedIn[4], 400u);
  EXPECT_EQ(t.sharedIn[5], 400u);
}

TEST(CompilerTraffic, BytesCountOnceInAnyOrder) {
  // Random, overlapping ranges against sets of the bytes they cover.
  constexpr unsigned kTiles = 6;
  std::mt19937 rng(7);
  Traffic t(kTiles, 1);
  std::set<std::uint64_t> sent[kTiles];
  std::set<std::pair<unsigned, std::uint64_t>> received[kTiles];
  for (int i = 0; i < 5000; ++i) {
    const unsigned from = rng() % kTiles, to = rng() % kTiles;
    const std::uint64_t begin = rng() % 600, end = begin + 1 + rng() % 9;
    t.addSend(from, begin, end);
    t.addReceive(to, from, begin, end);
    for (std::uint64_t b = begin; b < end; ++b) {
      sent[from].insert(b);
      received[to].insert({from, b});
    }
  }
  t.sendsToOut();
  t.pairReceives(2, kTiles);
  for (unsigned tile = 0; tile < kTiles; ++tile) {
    EXPECT_EQ(t.out[tile], sent[tile].size()) << tile;
    std::uint64_t both = 0;
    for (const auto &byte : received[tile])
      both += received[tile ^ 1].count(byte);
    EXPECT_EQ(t.sharedIn[tile], both) << tile;
  }
}

TEST(CompilerTraffic, LocatorFindsWhatLocateFinds) {
  // Six variables (more than a Locator remembers) of intervals of 1-9
  // elements, visited in strides forwards and backwards, at random, and
  // alternating between variables.
  std::mt19937 rng(11);
  std::vector<VariableData> vars(6);
  for (VariableData &v : vars) {
    for (unsigned i = 0; i < 300; ++i) {
      const std::size_t n = 1 + rng() % 9;
      v.mapping.push_back({v.numElements, v.numElements + n, i % 5});
      v.numElements += n;
    }
  }
  Locator locator;
  auto check = [&](std::uint32_t id, std::size_t e) {
    ASSERT_EQ(locator(id, vars[id].mapping, e), locate(vars[id].mapping, e))
        << "variable " << id << " element " << e;
  };
  for (std::uint32_t id = 0; id < vars.size(); ++id) {
    const std::size_t n = vars[id].numElements;
    for (std::size_t stride : {1, 7, 31, 400}) {
      for (std::size_t e = 0; e < n; e += stride)
        check(id, e);
      for (std::size_t e = n; e-- > 0;)
        if (e % stride == 0)
          check(id, e);
    }
  }
  for (int i = 0; i < 20000; ++i) {
    const std::uint32_t id = rng() % (i % 2 ? vars.size() : 3);
    check(id, rng() % vars[id].numElements);
  }
}
