// The planning helpers every op uses.
#include "ops/OpsInternal.hpp"

#include "tessera/device/Target.hpp"
#include "tessera/support/Error.hpp"

#include <gtest/gtest.h>

using namespace tessera;

TEST(OpsBroadcast, ShapesFollowNumPyRules) {
  EXPECT_EQ(ops::broadcastShape("add", {3, 1, 5}, {4, 1}),
            (std::vector<std::size_t>{3, 4, 5}));
  EXPECT_EQ(ops::broadcastShape("add", {}, {2, 2}),
            (std::vector<std::size_t>{2, 2}));
  EXPECT_THROW(ops::broadcastShape("add", {3}, {4}), ShapeError);
}

TEST(OpsSplit, PiecesFollowTheMappingAndTheGrain) {
  Graph g(Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "4"}}));
  Tensor t = g.addVariable(FLOAT, {100}, "t");
  g.setTileMapping(t.slice(0, 60), 1);
  g.setTileMapping(t.slice(60, 100), 3);
  auto pieces = ops::splitByTile(g, t, 6, 4);
  std::size_t covered = 0;
  for (const auto &p : pieces) {
    EXPECT_EQ(p.tile, p.begin < 60 ? 1u : 3u);
    if (p.end != 60 && p.end != 100) {
      EXPECT_EQ((p.end - p.begin) % 4, 0u);
    }
    covered += p.end - p.begin;
  }
  EXPECT_EQ(covered, 100u);
  EXPECT_LE(pieces.size(), 12u);
}
