// Slicing ops: dynamicSlice / dynamicUpdate and multiSlice / multiUpdate /
// multiUpdateAdd against the host reference on 1, 4 and 1472 tiles in float
// and half, offset clamping and out-of-range indices, duplicate indices, the
// sliceable layout that needs no exchange, errors and estimates.
#include "OpsTestUtil.hpp"

#include "tessera/ops/DynamicSlice.hpp"
#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace tessera;
using namespace tessera::ops;
using namespace tessera::test;
using ::testing::HasSubstr;

namespace {

using Shape = std::vector<std::size_t>;

std::size_t count(const Shape &s) {
  std::size_t n = 1;
  for (std::size_t d : s)
    n *= d;
  return n;
}

std::string text(const Shape &s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Values as stored in \p type.
std::vector<double> rounded(Type type, std::vector<double> v) {
  for (double &x : v)
    x = reference::roundTo(type, x);
  return v;
}

std::vector<double> asDoubles(const std::vector<std::size_t> &v) {
  return std::vector<double>(v.begin(), v.end());
}

void expectValues(const std::vector<double> &got,
                  const std::vector<double> &want, double tol,
                  const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << what << " at " << i;
}

struct DynamicCase {
  Shape shape;
  std::vector<std::size_t> dims, sizes, offsets;
};

// Slices within range, clamped offsets, several dimensions in any order.
std::vector<DynamicCase> dynamicCases() {
  return {{{6, 5, 4}, {0}, {2}, {3}},
          {{6, 5, 4}, {1}, {3}, {4}}, // clamped to 2
          {{6, 5, 4}, {1, 2}, {2, 3}, {2, 1}},
          {{6, 5, 4}, {2, 0}, {1, 6}, {9, 0}}, // clamped to 3
          {{37}, {0}, {5}, {30}},
          {{3, 40}, {1}, {7}, {11}}};
}

struct MultiCase {
  Shape shape;
  std::vector<std::size_t> dims, sizes, offsets; // offsets: M x dims
};

// Gathers with out-of-range indices (zeros / ignored) and duplicates.
std::vector<MultiCase> multiCases() {
  return {{{10, 6}, {0}, {1}, {3, 0, 9, 10, 3, 12, 7}},
          {{10, 6}, {1}, {2}, {0, 4, 5, 2, 4}},
          {{5, 4, 3}, {0, 2}, {2, 1}, {0, 2, 3, 0, 4, 1, 3, 2, 1, 1}},
          {{50, 3}, {0}, {1}, {49, 0, 0, 25, 50}}};
}

} // namespace

class SliceConformance
    : public ::testing::TestWithParam<std::pair<unsigned, Type>> {};

TEST_P(SliceConformance, DynamicSliceAndUpdateMatchTheReference) {
  const auto [tiles, type] = GetParam();
  for (const DynamicCase &c : dynamicCases()) {
    const std::size_t n = count(c.shape);
    const auto t = rounded(type, spread(n, -5, 5));
    Shape sliceShape = c.shape;
    for (std::size_t k = 0; k < c.dims.size(); ++k)
      sliceShape[c.dims[k]] = c.sizes[k];
    const auto s = rounded(type, spread(count(sliceShape), 10, 20));
    const std::string what = "slice of " + text(c.shape);
    RunResult r =
        runOp(tiles,
              {{type, c.shape, t},
               {UNSIGNED_INT, {c.offsets.size()}, asDoubles(c.offsets)},
               {type, sliceShape, s}},
              [&](Graph &g, const auto &in, program::Sequence &p) {
                Tensor slice =
                    dynamicSlice(g, in[0], in[1], c.dims, c.sizes, p);
                EXPECT_EQ(slice.shape(), sliceShape) << what;
                Tensor copy = g.clone(slice);
                p.add(program::Copy(slice, copy));
                dynamicUpdate(g, in[0], in[2], in[1], c.dims, c.sizes, p);
                return std::vector<Tensor>{copy, in[0]};
              });
    expectValues(
        r.outputs[0],
        reference::dynamicSlice(t, c.shape, c.offsets, c.dims, c.sizes), 0,
        what);
    auto updated = t;
    reference::dynamicUpdate(updated, c.shape, s, c.offsets, c.dims, c.sizes);
    expectValues(r.outputs[1], updated, 0, "update of " + text(c.shape));
  }
}

TEST_P(SliceConformance, MultiSliceAndUpdatesMatchTheReference) {
  const auto [tiles, type] = GetParam();
  for (const MultiCase &c : multiCases()) {
    const std::size_t n = count(c.shape);
    const std::size_t m = c.offsets.size() / c.dims.size();
    const auto t = rounded(type, spread(n, -5, 5));
    Shape sShape = c.shape;
    for (std::size_t k = 0; k < c.dims.size(); ++k)
      sShape[c.dims[k]] = c.sizes[k];
    sShape.insert(sShape.begin(), m);
    const auto s = rounded(type, spread(count(sShape), 1, 3));
    const Shape offShape =
        c.dims.size() == 1 ? Shape{m} : Shape{m, c.dims.size()};
    const std::string what = "multi of " + text(c.shape);
    RunResult r = runOp(
        tiles,
        {{type, c.shape, t},
         {UNSIGNED_INT, offShape, asDoubles(c.offsets)},
         {type, sShape, s},
         {type, c.shape, t},
         {FLOAT, {}, {0.5}}},
        [&](Graph &g, const auto &in, program::Sequence &p) {
          Tensor gathered = multiSlice(g, in[0], in[1], c.dims, c.sizes, p);
          EXPECT_EQ(gathered.shape(), sShape) << what;
          Tensor copy = g.clone(gathered);
          p.add(program::Copy(gathered, copy));
          multiUpdate(g, in[0], in[2], in[1], c.dims, c.sizes, p);
          multiUpdateAdd(g, in[3], in[2], in[1], in[4], c.dims, c.sizes, p);
          return std::vector<Tensor>{copy, in[0], in[3]};
        });
    expectValues(r.outputs[0],
                 reference::multiSlice(t, c.shape, c.offsets, c.dims, c.sizes),
                 0, what);
    auto written = t, added = t;
    reference::multiUpdate(written, c.shape, s, c.offsets, c.dims, c.sizes);
    reference::multiUpdateAdd(added, c.shape, s, c.offsets, c.dims, c.sizes,
                              0.5);
    expectValues(r.outputs[1], written, 0, "update " + what);
    expectValues(r.outputs[2], added, type == HALF ? 2e-3 : 1e-6,
                 "add " + what);
  }
}

INSTANTIATE_TEST_SUITE_P(
    TilesAndTypes, SliceConformance,
    ::testing::Values(std::pair{1u, FLOAT}, std::pair{4u, FLOAT},
                      std::pair{1472u, FLOAT}, std::pair{1u, HALF},
                      std::pair{4u, HALF}, std::pair{1472u, HALF}));

TEST(SliceOutOfRange, MultiSliceGivesZerosAndUpdatesIgnoreTheIndex) {
  // Rows 4 and 100 of a [4, 3] table do not exist; a slice of 2 rows at
  // offset 3 does not fit.
  const std::vector<double> t{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  RunResult r =
      runOp(4,
            {{FLOAT, {4, 3}, t},
             {UNSIGNED_INT, {3}, {1, 4, 100}},
             {UNSIGNED_INT, {2}, {3, 1}},
             {FLOAT, {3, 1, 3}, {-1, -1, -1, -2, -2, -2, -3, -3, -3}}},
            [&](Graph &g, const auto &in, program::Sequence &p) {
              Tensor rows = multiSlice(g, in[0], in[1], 0, 1, p);
              Tensor pairs = multiSlice(g, in[0], in[2], 0, 2, p);
              Tensor rowsCopy = g.clone(rows), pairsCopy = g.clone(pairs);
              p.add(program::Copy(rows, rowsCopy));
              p.add(program::Copy(pairs, pairsCopy));
              multiUpdate(g, in[0], in[3], in[1], 0, 1, p);
              return std::vector<Tensor>{rowsCopy, pairsCopy, in[0]};
            });
  EXPECT_EQ(r.outputs[0], (std::vector<double>{4, 5, 6, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(r.outputs[1],
            (std::vector<double>{0, 0, 0, 0, 0, 0, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(r.outputs[2],
            (std::vector<double>{1, 2, 3, -1, -1, -1, 7, 8, 9, 10, 11, 12}));
}

TEST(SliceClamping, DynamicOffsetsAreClampedToKeepTheSliceInside) {
  const std::vector<double> t{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  RunResult r = runOp(4,
                      {{FLOAT, {10}, t},
                       {UNSIGNED_INT, {1}, {8}},
                       {UNSIGNED_INT, {}, {4000}},
                       {FLOAT, {3}, {-1, -2, -3}}},
                      [&](Graph &g, const auto &in, program::Sequence &p) {
                        Tensor a = dynamicSlice(g, in[0], in[1], {0}, {3}, p);
                        Tensor b = dynamicSlice(g, in[0], in[2], {0}, {3}, p);
                        Tensor ac = g.clone(a), bc = g.clone(b);
                        p.add(program::Copy(a, ac));
                        p.add(program::Copy(b, bc));
                        dynamicUpdate(g, in[0], in[3], in[2], {0}, {3}, p);
                        return std::vector<Tensor>{ac, bc, in[0]};
                      });
  EXPECT_EQ(r.outputs[0], (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(r.outputs[1], (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(r.outputs[2],
            (std::vector<double>{0, 1, 2, 3, 4, 5, 6, -1, -2, -3}));
}

TEST(SliceUpdateAdd, DuplicateIndicesAllAdd) {
  RunResult r = runOp(4,
                      {{FLOAT, {4, 2}, std::vector<double>(8, 1.0)},
                       {UNSIGNED_INT, {5, 1}, {2, 2, 0, 2, 9}},
                       {FLOAT, {5, 2}, {1, 10, 2, 20, 3, 30, 4, 40, 5, 50}},
                       {FLOAT, {1}, {2.0}}},
                      [&](Graph &g, const auto &in, program::Sequence &p) {
                        // The [M, E] form of the update: the size-1 sliced
                        // dimension left out.
                        multiUpdateAdd(g, in[0], in[2], in[1], in[3], 0, 1, p);
                        return std::vector<Tensor>{in[0]};
                      });
  EXPECT_EQ(r.outputs[0], (std::vector<double>{7, 61, 1, 1, 15, 141, 1, 1}));
}

TEST(SliceTypes, IntAndBoolTensorsAreSlicedExactly) {
  const std::vector<double> t{-7, 1, 16777217, 3, -2, 5, 6, 100000};
  RunResult r =
      runOp(4,
            {{INT, {4, 2}, t},
             {UNSIGNED_INT, {2}, {3, 1}},
             {BOOL, {4, 2}, {1, 0, 0, 1, 1, 1, 0, 0}}},
            [&](Graph &g, const auto &in, program::Sequence &p) {
              return std::vector<Tensor>{multiSlice(g, in[0], in[1], 0, 1, p),
                                         multiSlice(g, in[2], in[1], 0, 1, p)};
            });
  // 16777217 is not a float; the host write rounds it to 16777216.
  EXPECT_EQ(r.outputs[0], (std::vector<double>{6, 100000, 16777216, 3}));
  EXPECT_EQ(r.outputs[1], (std::vector<double>{0, 0, 0, 1}));
}

namespace {

// Total bytes the exchange steps of one run move.
std::uint64_t exchangedBytes(const Engine &e) {
  const Executable &x = e.getExecutable();
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < x.steps.size(); ++i)
    if (x.steps[i].kind == StepKind::Exchange)
      bytes += x.estimates[i].bytesExchanged;
  return bytes;
}

struct TableRun {
  std::vector<float> gathered, table;
  std::uint64_t bytes = 0;
};

// An embedding lookup and its gradient on a [200, 24] table over 16 tiles,
// the table sliceable or mapped linearly row by row.
TableRun embedding(bool sliceable) {
  IPUModel model;
  model.tilesPerIPU = 16;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  Tensor table =
      sliceable
          ? createSliceableTensor(g, FLOAT, {200, 24}, {0}, {1}, 1, "table")
          : g.addVariable(FLOAT, {200, 24}, VariableMappingMethod::LINEAR);
  Tensor ids = createIndicesTensor(g, {0}, 6, "ids");
  Tensor scale = g.addConstant(FLOAT, {}, -1.0f);
  g.setTileMapping(scale, 0);
  g.createHostWrite("table", table);
  g.createHostWrite("ids", ids);
  program::Sequence prog;
  Tensor rows = multiSlice(g, table, ids, 0, 1, prog);
  Tensor out = g.clone(rows);
  prog.add(program::Copy(rows, out));
  multiUpdateAdd(g, table, rows, ids, scale, 0, 1, prog);
  g.createHostRead("rows", out);
  g.createHostRead("tableOut", table);
  Engine e(g, prog);
  e.load(device);
  std::vector<float> values(200 * 24);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = float(i);
  const std::vector<unsigned> idv{5, 199, 0, 5, 77, 200};
  e.writeTensor("table", values.data(), values.data() + values.size());
  e.writeTensor("ids", idv.data(), idv.data() + idv.size());
  e.run();
  TableRun r;
  r.gathered.resize(6 * 24);
  r.table.resize(values.size());
  e.readTensor("rows", r.gathered.data(),
               r.gathered.data() + r.gathered.size());
  e.readTensor("tableOut", r.table.data(), r.table.data() + r.table.size());
  r.bytes = exchangedBytes(e);
  return r;
}

} // namespace

TEST(SlicePlan, SliceableTablesAreGatheredWithoutMovingTheTable) {
  const TableRun good = embedding(true), bad = embedding(false);
  // Same results either way.
  EXPECT_EQ(good.gathered, bad.gathered);
  EXPECT_EQ(good.table, bad.table);
  for (std::size_t j = 0; j < 24; ++j) {
    EXPECT_EQ(good.gathered[0 * 24 + j], float(5 * 24 + j));
    EXPECT_EQ(good.gathered[1 * 24 + j], float(199 * 24 + j));
    EXPECT_EQ(good.gathered[5 * 24 + j], 0.0f); // index 200 is out of range
    // Row 5 was gathered twice, so it lost itself twice.
    EXPECT_EQ(good.table[5 * 24 + j], -float(5 * 24 + j));
    EXPECT_EQ(good.table[77 * 24 + j], 0.0f);
    EXPECT_EQ(good.table[1 * 24 + j], float(24 + j));
  }
  // The sliceable table moves only the indices and the gathered rows; the
  // linear one is brought to the slicing tiles and back.
  const std::uint64_t tableBytes = 200 * 24 * 4;
  EXPECT_LT(good.bytes, tableBytes / 4);
  EXPECT_GT(bad.bytes, tableBytes);
}

TEST(SlicePlan, SliceableTensorsKeepEachColumnOnOneTile) {
  IPUModel model;
  model.tilesPerIPU = 8;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  Tensor t = createSliceableTensor(g, HALF, {3, 50, 7}, {1}, {4}, 2, "t");
  EXPECT_EQ(t.shape(), (Shape{3, 50, 7}));
  const TileMapping m = g.getTileMapping(t);
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t c = 0; c < 7; ++c) {
      const Tensor column = t[a].slice(c, c + 1, 1);
      const TileMapping cm = g.getTileMapping(column);
      std::size_t tilesHolding = 0;
      for (const auto &ivs : cm)
        tilesHolding += !ivs.empty();
      EXPECT_EQ(tilesHolding, 1u) << a << ", " << c;
    }
}

TEST(SliceErrors, BadOffsetsAndSizesAreExplained) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  Tensor t = g.addVariable(FLOAT, {6, 4}, VariableMappingMethod::LINEAR);
  Tensor off = g.addVariable(UNSIGNED_INT, {1}, VariableMappingMethod::LINEAR);
  Tensor intOff = g.addVariable(INT, {1}, VariableMappingMethod::LINEAR);
  Tensor off3 = g.addVariable(UNSIGNED_INT, {3}, VariableMappingMethod::LINEAR);
  Tensor offs =
      g.addVariable(UNSIGNED_INT, {5, 2}, VariableMappingMethod::LINEAR);
  Tensor s = g.addVariable(FLOAT, {5, 4}, VariableMappingMethod::LINEAR);
  Tensor scale = g.addVariable(FLOAT, {2}, VariableMappingMethod::LINEAR);
  program::Sequence p;
  auto message = [](auto &&f) {
    try {
      f();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THROW(dynamicSlice(g, t, intOff, {0}, {2}, p), TypeError);
  EXPECT_THAT(message([&] { dynamicSlice(g, t, intOff, {0}, {2}, p); }),
              HasSubstr("offset tensor has type int; it must be unsigned int"));
  EXPECT_THROW(dynamicSlice(g, t, off3, {0}, {2}, p), ShapeError);
  EXPECT_THAT(message([&] { dynamicSlice(g, t, off3, {0}, {2}, p); }),
              HasSubstr("has shape [3] but 1 dimension(s) are sliced"));
  EXPECT_THAT(message([&] { dynamicSlice(g, t, off, {0}, {7}, p); }),
              HasSubstr("the size 7 for dimension 0 is larger than the "
                        "dimension (6)"));
  EXPECT_THAT(message([&] { dynamicSlice(g, t, off, {2}, {1}, p); }),
              HasSubstr("dimension 2 is out of range for a tensor of rank 2"));
  EXPECT_THAT(message([&] { dynamicSlice(g, t, off, {0}, {0}, p); }),
              HasSubstr("is 0"));
  EXPECT_THROW(multiSlice(g, t, offs, 0, 1, p), ShapeError);
  EXPECT_THAT(message([&] { multiSlice(g, t, offs, 0, 1, p); }),
              HasSubstr("it must be [M, 1] or [M]"));
  EXPECT_THAT(message([&] { multiUpdate(g, t, s, off3, 0, 1, p); }),
              HasSubstr("the update has shape [5, 4] but it must be [3, 1, 4] "
                        "(or [3, 4])"));
  EXPECT_THAT(message([&] { multiUpdateAdd(g, t, s, off3, scale, 0, 1, p); }),
              HasSubstr("the scale has shape [2]"));
  Tensor ints = g.addVariable(INT, {6, 4}, VariableMappingMethod::LINEAR);
  Tensor intS = g.addVariable(INT, {1, 4}, VariableMappingMethod::LINEAR);
  EXPECT_THROW(multiUpdateAdd(g, ints, intS, off, scale, 0, 1, p), TypeError);
  EXPECT_THROW(dynamicSlice(g, t, off, {0}, {2}, p, {}, {{"plan", "x"}}),
               OptionError);
}

TEST(SliceEstimates, CyclesArePositiveDeterministicAndGrowWithSize) {
  auto cycles = [](std::size_t rows, std::size_t cols, std::size_t indices) {
    std::vector<double> ids(indices);
    for (std::size_t i = 0; i < indices; ++i)
      ids[i] = double(i * 7 % rows);
    return runOp(4,
                 {{FLOAT, {rows, cols}, std::vector<double>(rows * cols, 1)},
                  {UNSIGNED_INT, {indices}, ids}},
                 [&](Graph &g, const auto &in, program::Sequence &p) {
                   return std::vector<Tensor>{
                       multiSlice(g, in[0], in[1], 0, 1, p)};
                 })
        .cycles;
  };
  const auto small = cycles(64, 16, 4);
  EXPECT_GT(small, 0u);
  EXPECT_EQ(cycles(64, 16, 4), small);
  EXPECT_GT(cycles(64, 16, 64), small);
  EXPECT_GT(cycles(64, 256, 4), small);
}
