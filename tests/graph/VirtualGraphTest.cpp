// Virtual graphs: a view of a tile range of a parent graph whose tiles are
// numbered from zero and whose target describes the range.
#include "tessera/device/Target.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using ::testing::HasSubstr;

namespace {
Target fourIpus(unsigned tilesPerIpu = 4) {
  return Target::createIPUTarget(
      4, "ipu2", {{"tilesPerIPU", std::to_string(tilesPerIpu)}});
}
} // namespace

TEST(VirtualGraph, WholeIpusKeepTheirSizeAndOffsetTheirTiles) {
  Graph g(fourIpus());
  Graph ipu2 = g.createVirtualGraph(8, 12);
  EXPECT_EQ(ipu2.getTarget().getNumIPUs(), 1u);
  EXPECT_EQ(ipu2.getTarget().getNumTiles(), 4u);
  EXPECT_EQ(ipu2.getTileOffset(), 8u);
  Tensor v = ipu2.addVariable(FLOAT, {8}, "v");
  mapTensorLinearly(ipu2, v, 1, 1);
  // The parent sees the variable on its tiles 8..11.
  TileMapping parent = g.getTileMapping(v);
  ASSERT_EQ(parent.size(), 16u);
  for (unsigned t = 0; t < 16; ++t)
    EXPECT_EQ(parent[t].empty(), t < 8 || t >= 12) << "tile " << t;
  // The virtual graph sees them as its tiles 0..3.
  TileMapping own = ipu2.getTileMapping(v);
  ASSERT_EQ(own.size(), 4u);
  EXPECT_EQ(own[0], (std::vector<Interval>{{0, 2}}));
  EXPECT_EQ(own[3], (std::vector<Interval>{{6, 8}}));
  EXPECT_EQ(g.getNumVariables(), 1u);
}

TEST(VirtualGraph, RangesNestAndPartOfAnIpuIsASmallerIpu) {
  Graph g(fourIpus(8));
  Graph two = g.createVirtualGraph(16, 32);
  EXPECT_EQ(two.getTarget().getNumIPUs(), 2u);
  Graph half = two.createVirtualGraph(8, 12);
  EXPECT_EQ(half.getTarget().getNumIPUs(), 1u);
  EXPECT_EQ(half.getTarget().getTilesPerIPU(), 4u);
  EXPECT_EQ(half.getTileOffset(), 24u);
  Tensor v = half.addVariable(INT, {1}, "v");
  half.setTileMapping(v, 3);
  EXPECT_EQ(g.getTileMapping(v)[27], (std::vector<Interval>{{0, 1}}));
}

TEST(VirtualGraph, TensorsOutsideTheRangeAreReported) {
  Graph g(fourIpus());
  Tensor v = g.addVariable(FLOAT, {2}, "outside");
  g.setTileMapping(v, 1);
  Graph ipu3 = g.createVirtualGraph(12, 16);
  try {
    ipu3.getTileMapping(v);
    FAIL();
  } catch (const GraphError &e) {
    EXPECT_THAT(e.what(), HasSubstr("\"outside\" element 0 is on tile 1"));
    EXPECT_THAT(e.what(), HasSubstr("tiles [12, 16)"));
  }
}

TEST(VirtualGraph, BadRangesAreRejectedWithTheNumbers) {
  Graph g(fourIpus());
  EXPECT_THROW(g.createVirtualGraph(4, 4), GraphError);
  try {
    g.createVirtualGraph(2, 20);
    FAIL();
  } catch (const GraphError &e) {
    EXPECT_THAT(e.what(), HasSubstr("within this graph's 16 tiles"));
  }
  try {
    g.createVirtualGraph(2, 6);
    FAIL();
  } catch (const GraphError &e) {
    EXPECT_THAT(e.what(), HasSubstr("part of more than one IPU (4 tiles"));
  }
  Graph ipu1 = g.createVirtualGraph(4, 8);
  Tensor v = ipu1.addVariable(FLOAT, {1});
  EXPECT_THROW(ipu1.setTileMapping(v, 4), GraphError);
}
