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

namespace {

// Rows of 4 elements of a [6, 4] variable: rows 0-2 on tile 1, rows 3-4 on
// tile 2, row 5 split between tiles 1 and 2.
struct RowsFixture {
  Graph g{Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "4"}})};
  Tensor t = g.addVariable(FLOAT, {6, 4}, "t");
  std::vector<Tensor> rows;
  RowsFixture() {
    g.setTileMapping(t.slice(0, 3), 1);
    g.setTileMapping(t.slice(3, 5), 2);
    g.setTileMapping(t[5].slice(0, 2), 1);
    g.setTileMapping(t[5].slice(2, 4), 2);
    for (std::size_t r = 0; r < 6; ++r)
      rows.push_back(t[r]);
  }
};

std::vector<std::size_t> sizes(const std::vector<Tensor> &ts) {
  std::vector<std::size_t> s;
  for (const Tensor &t : ts)
    s.push_back(t.numElements());
  return s;
}

} // namespace

TEST(OpsMergeRows, RowsOnTheVertexTileMergeWhereTheyContinueEachOther) {
  RowsFixture f;
  // On tile 1: rows 0-2 are one entry read in place; rows 3-4 lie on tile
  // 2 only and join one entry; row 5 is partly on tile 1 and stays alone.
  auto m = ops::mergeRows(f.g, f.rows, 1u, false);
  EXPECT_EQ(sizes(m), (std::vector<std::size_t>{12, 8, 4}));
  ASSERT_EQ(m[0].runs().size(), 1u);
  EXPECT_EQ(m[0].runs()[0].start, 0);
  EXPECT_EQ(m[1].runs()[0].start, 12);
  // Rows taken out of order are joined only when remote.
  std::vector<Tensor> swapped{f.rows[1], f.rows[0], f.rows[4], f.rows[3]};
  EXPECT_EQ(sizes(ops::mergeRows(f.g, swapped, 1u, false)),
            (std::vector<std::size_t>{4, 4, 8}));
}

TEST(OpsMergeRows, ContiguityAloneMergesRowsTheCallerPutsOnOneTile) {
  Graph g(Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "4"}}));
  Tensor t = g.addVariable(FLOAT, {3, 4}, "unmapped");
  std::vector<Tensor> rows{t[0], t[1], t[2]};
  EXPECT_EQ(sizes(ops::mergeRows(g, rows, 0u, true)),
            (std::vector<std::size_t>{12}));
  // Without that promise an unmapped row is left as it is.
  EXPECT_EQ(sizes(ops::mergeRows(g, rows, 0u, false)),
            (std::vector<std::size_t>{4, 4, 4}));
}

TEST(OpsMergeRows, RowEntriesOfABlockMergeAsItsRowsWould) {
  RowsFixture f;
  EXPECT_EQ(sizes(ops::rowEntries(f.g, f.t, 4, 1u, false)),
            sizes(ops::mergeRows(f.g, f.rows, 1u, false)));
  // A transposed block: rows of strided elements are entries of their own
  // on the tile, and join one entry when they lie wholly elsewhere.
  const Tensor tr = f.t.slice(0, 5).transpose(); // [4, 5]: rows 0-2 tile 1
  EXPECT_EQ(sizes(ops::rowEntries(f.g, tr, 5, 1u, false)),
            (std::vector<std::size_t>{5, 5, 5, 5}));
  EXPECT_EQ(
      sizes(ops::rowEntries(f.g, f.t.slice(3, 5).transpose(), 2, 1u, false)),
      (std::vector<std::size_t>{8}));
}

TEST(OpsMergeRows, RowRunsMergeAsTheirRowsWould) {
  RowsFixture f;
  // Rows as runs give the entries (runs included) that the rows as tensors
  // give, remote groups and a row of several runs among them.
  std::vector<Tensor> rows = f.rows;
  rows.push_back(concat(f.t[0].slice(0, 2), f.t[2].slice(0, 2)));
  rows.push_back(f.t.slice(3, 5).transpose()[0]);
  rows.push_back(f.t.slice(3, 5).transpose()[1]);
  std::vector<ArrayView<tessera::Run>> runs;
  for (const Tensor &r : rows)
    runs.push_back(r.runs());
  for (const std::optional<unsigned> tile :
       {std::optional<unsigned>(1u), std::optional<unsigned>(2u),
        std::optional<unsigned>()}) {
    const auto want = ops::mergeRows(f.g, rows, tile, false);
    const auto got = ops::mergeRowRuns(f.g, FLOAT, runs, tile, false);
    ASSERT_EQ(sizes(got), sizes(want));
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i].runs(), want[i].runs()) << "entry " << i;
  }
}
