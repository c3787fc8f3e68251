// Reductions, argMax / argMin and topK: every operation against the host
// reference over several dimension sets in float and half on 1, 4 and 1472
// tiles; update and scale; int and bool types; multi-stage plans (rows
// split between tiles, worker partials); ties; errors; cycle estimates.
#include "OpsTestUtil.hpp"

#include "tessera/ops/Reduce.hpp"
#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

using namespace tessera;
using namespace tessera::ops;
using namespace tessera::test;
using ::testing::HasSubstr;

namespace {

const std::vector<Operation> kFloatOps = {
    Operation::ADD, Operation::MUL,        Operation::MIN,
    Operation::MAX, Operation::SQUARE_ADD, Operation::LOG_ADD};

using Dims = std::vector<std::size_t>;
const std::vector<Dims> kDimSets = {{2}, {0}, {1}, {0, 2}, {0, 1, 2}, {}};

std::string dimsText(const Dims &dims) {
  std::string s = "{";
  for (std::size_t d : dims)
    s += std::to_string(d) + " ";
  return s + "}";
}

std::vector<double> inputFor(Operation op, std::size_t n) {
  // Products stay near 1; everything else sees signs and magnitudes.
  return op == Operation::MUL ? spread(n, 0.9, 1.1) : spread(n, -2.0, 2.0);
}

std::vector<double> rounded(Type t, std::vector<double> v) {
  for (double &x : v)
    x = reference::roundTo(t, x);
  return v;
}

// Float accumulation differs from the double reference by rounding that
// grows with the magnitude summed; half outputs add their own rounding.
double tolerance(Operation op, Type outType, double want, double l1) {
  const double rel = outType == HALF ? 2e-3 : 2e-6;
  double scale = std::max(1.0, std::fabs(want));
  if (op == Operation::ADD || op == Operation::SQUARE_ADD)
    scale = std::max(scale, l1 * 1e-2);
  return rel * scale + 1e-6 * l1 * 1e-2;
}

void expectMatches(Operation op, Type outType, const std::vector<double> &got,
                   const std::vector<double> &want,
                   const std::vector<double> &l1, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], tolerance(op, outType, want[i], l1[i]))
        << what << " at " << i;
  }
}

// Runs reduce for every dimension set of kDimSets on one [6, 5, 7] input.
void checkAllDimSets(unsigned tiles, Type type, Operation op) {
  const std::vector<std::size_t> shape{6, 5, 7};
  const auto x = inputFor(op, 210);
  RunResult r = runOp(tiles, {{type, shape, x}},
                      [&](Graph &g, const auto &in, program::Sequence &p) {
                        std::vector<Tensor> outs;
                        for (const Dims &d : kDimSets)
                          outs.push_back(reduce(g, in[0], d, op, p));
                        return outs;
                      });
  const auto xr = rounded(type, x);
  std::vector<double> absX(xr.size());
  for (std::size_t i = 0; i < xr.size(); ++i)
    absX[i] =
        std::fabs(xr[i]) * (op == Operation::SQUARE_ADD ? std::fabs(xr[i]) : 1);
  for (std::size_t k = 0; k < kDimSets.size(); ++k) {
    auto want = reference::reduce(xr, shape, kDimSets[k], op);
    const auto l1 = reference::reduce(absX, shape, kDimSets[k], Operation::ADD);
    expectMatches(op, type, r.outputs[k], rounded(type, want), l1,
                  std::string(operationName(op)) + " over " +
                      dimsText(kDimSets[k]) + " on " + std::to_string(tiles) +
                      " tiles in " + std::string(typeName(type)));
  }
}

// Reads back the first output as raw float bits, for exact comparisons.
std::vector<std::uint32_t> bitsOf(const std::vector<double> &v) {
  std::vector<std::uint32_t> b;
  for (double d : v) {
    const float f = static_cast<float>(d);
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    b.push_back(u);
  }
  return b;
}

} // namespace

class ReduceConformance
    : public ::testing::TestWithParam<std::pair<unsigned, Type>> {};

TEST_P(ReduceConformance, EveryOperationOverEveryDimensionSet) {
  const auto [tiles, type] = GetParam();
  for (Operation op : kFloatOps)
    checkAllDimSets(tiles, type, op);
}

INSTANTIATE_TEST_SUITE_P(
    TilesAndTypes, ReduceConformance,
    ::testing::Values(std::pair{1u, FLOAT}, std::pair{1u, HALF},
                      std::pair{4u, FLOAT}, std::pair{4u, HALF},
                      std::pair{1472u, FLOAT}, std::pair{1472u, HALF}),
    [](const auto &info) {
      return std::to_string(info.param.first) + "tiles_" +
             (info.param.second == FLOAT ? "float" : "half");
    });

TEST(ReduceTypes, FloatToHalfAndHalfToFloat) {
  const std::vector<std::size_t> shape{8, 33};
  const auto x = spread(264, -3.0, 3.0);
  for (Type in : {FLOAT, HALF}) {
    const Type outType = in == FLOAT ? HALF : FLOAT;
    RunResult r = runOp(4, {{in, shape, x}},
                        [&](Graph &g, const auto &t, program::Sequence &p) {
                          return std::vector<Tensor>{
                              reduce(g, t[0], outType, {1}, Operation::ADD, p)};
                        });
    const auto want = rounded(
        outType, reference::reduce(rounded(in, x), shape, {1}, Operation::ADD));
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(r.outputs[0][i], want[i], outType == HALF ? 2e-2 : 1e-4);
  }
}

TEST(ReduceParamsTest, ScaleAndUpdateCombineAsDocumented) {
  const std::vector<std::size_t> shape{12, 40};
  const auto x = spread(480, -1.0, 1.0);
  const auto init = spread(40, -3.0, 3.0);
  for (Type type : {FLOAT, HALF})
    for (Operation op : kFloatOps) {
      const auto xi = op == Operation::MUL ? spread(480, 0.95, 1.05) : x;
      const float scale = 0.5f;
      RunResult r =
          runOp(4, {{type, shape, xi}, {type, {40}, init}},
                [&](Graph &g, const auto &t, program::Sequence &p) {
                  reduceWithOutput(g, t[0], t[1], {0}, {op, true, scale}, p);
                  Tensor plain = reduce(g, t[0], {0}, {op, false, scale}, p);
                  return std::vector<Tensor>{t[1], plain};
                });
      const auto xr = rounded(type, xi), ir = rounded(type, init);
      const auto upd = reference::reduce(xr, shape, {0}, op, scale, &ir);
      const auto plain = reference::reduce(xr, shape, {0}, op, scale);
      const std::vector<double> l1(40, 20.0);
      const std::string what =
          std::string(operationName(op)) + " in " + std::string(typeName(type));
      expectMatches(op, type, r.outputs[0], rounded(type, upd), l1,
                    "update " + what);
      expectMatches(op, type, r.outputs[1], rounded(type, plain), l1,
                    "scale " + what);
    }
}

TEST(ReduceParamsTest, UpdateInTheFirstStageWhenRowsAreOnOneTile) {
  const auto x = spread(12 * 40, -1.0, 1.0);
  const auto init = spread(12, -3.0, 3.0);
  for (Operation op : {Operation::ADD, Operation::MAX, Operation::LOG_ADD}) {
    RunResult r =
        runOp(4, {{FLOAT, {12, 40}, x}, {FLOAT, {12}, init}},
              [&](Graph &g, const auto &t, program::Sequence &p) {
                reduceWithOutput(g, t[0], t[1], {1}, {op, true, 2.0f}, p);
                return std::vector<Tensor>{t[1]};
              });
    const auto want = reference::reduce(x, {12, 40}, {1}, op, 2.0, &init);
    for (std::size_t i = 0; i < 12; ++i)
      EXPECT_NEAR(r.outputs[0][i], want[i],
                  1e-5 * std::max(1.0, std::fabs(want[i])))
          << operationName(op);
  }
}

TEST(ReduceParamsTest, LogAddIsStableForLargeValues) {
  const auto x = spread(4 * 300, 990.0, 1010.0);
  RunResult r = runOp(4, {{FLOAT, {4, 300}, x}},
                      [&](Graph &g, const auto &t, program::Sequence &p) {
                        return std::vector<Tensor>{
                            reduce(g, t[0], {1}, Operation::LOG_ADD, p),
                            reduce(g, t[0], {0, 1}, Operation::LOG_ADD, p)};
                      });
  const auto rows = reference::reduce(x, {4, 300}, {1}, Operation::LOG_ADD);
  const auto all = reference::reduce(x, {4, 300}, {0, 1}, Operation::LOG_ADD);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(r.outputs[0][i], rows[i], 1e-3);
  EXPECT_NEAR(r.outputs[1][0], all[0], 1e-3);
}

TEST(ReduceParamsTest, NoDimensionsIsAScaledCopyAndAllGivesAScalar) {
  const auto x = spread(30, -2.0, 2.0);
  RunResult r = runOp(
      4, {{FLOAT, {5, 6}, x}},
      [&](Graph &g, const auto &t, program::Sequence &p) {
        Tensor copy = reduce(g, t[0], {}, {Operation::ADD, false, 3.0f}, p);
        Tensor all = reduce(g, t[0], {0, 1}, Operation::MAX, p);
        EXPECT_EQ(copy.shape(), (std::vector<std::size_t>{5, 6}));
        EXPECT_TRUE(all.shape().empty());
        return std::vector<Tensor>{copy, all};
      });
  for (std::size_t i = 0; i < 30; ++i)
    EXPECT_FLOAT_EQ(r.outputs[0][i], static_cast<float>(x[i]) * 3.0f);
  RunResult scalar =
      runOp(4, {{FLOAT, {}, {2.5}}},
            [&](Graph &g, const auto &t, program::Sequence &p) {
              return std::vector<Tensor>{
                  reduce(g, t[0], {}, {Operation::MUL, false, 2.0f}, p)};
            });
  EXPECT_EQ(scalar.outputs[0], std::vector<double>{5.0});
  EXPECT_FLOAT_EQ(r.outputs[1][0],
                  static_cast<float>(*std::max_element(x.begin(), x.end())));
}

TEST(ReduceTypes, IntAndUnsignedAreExact) {
  const std::vector<std::size_t> shape{4, 5, 6};
  std::vector<double> xs(120), xu(120);
  for (std::size_t i = 0; i < 120; ++i) {
    xs[i] = static_cast<double>(static_cast<int>((i * 37) % 7) - 3);
    xu[i] = static_cast<double>((i * 11) % 4);
  }
  for (unsigned tiles : {1u, 4u, 1472u})
    for (Type type : {INT, UNSIGNED_INT}) {
      const auto &x = type == INT ? xs : xu;
      for (Operation op : {Operation::ADD, Operation::MUL, Operation::MIN,
                           Operation::MAX, Operation::SQUARE_ADD}) {
        const std::vector<Dims> sets = {{1}, {0, 2}, {0, 1, 2}};
        RunResult r = runOp(tiles, {{type, shape, x}},
                            [&](Graph &g, const auto &t, program::Sequence &p) {
                              std::vector<Tensor> outs;
                              for (const Dims &d : sets)
                                outs.push_back(reduce(g, t[0], d, op, p));
                              return outs;
                            });
        for (std::size_t k = 0; k < sets.size(); ++k) {
          // Products over many elements overflow: compare where exact.
          if (op == Operation::MUL && k > 0)
            continue;
          EXPECT_EQ(r.outputs[k], reference::reduce(x, shape, sets[k], op))
              << operationName(op) << " " << typeName(type) << " over "
              << dimsText(sets[k]) << " on " << tiles << " tiles";
        }
      }
    }
}

TEST(ReduceTypes, IntScaleTruncatesLikeACast) {
  std::vector<double> x{1, 2, 3, 4, 5, 6, -7, -8, -9};
  RunResult r = runOp(4, {{INT, {3, 3}, x}},
                      [&](Graph &g, const auto &t, program::Sequence &p) {
                        return std::vector<Tensor>{reduce(
                            g, t[0], {1}, {Operation::ADD, false, 0.5f}, p)};
                      });
  EXPECT_EQ(r.outputs[0], (std::vector<double>{3, 7, -12}));
}

TEST(ReduceTypes, LogicalOperationsOnBool) {
  const std::vector<std::size_t> shape{7, 9};
  std::vector<double> x(63);
  for (std::size_t i = 0; i < 63; ++i)
    x[i] = (i % 7 == 3 || i / 9 == 2) ? 1 : (i / 9 == 5 ? 1 : 0);
  for (std::size_t i = 45; i < 54; ++i)
    x[i] = 1; // row 5 all true
  for (unsigned tiles : {1u, 4u, 1472u})
    for (Operation op : {Operation::LOGICAL_AND, Operation::LOGICAL_OR}) {
      RunResult r =
          runOp(tiles, {{BOOL, shape, x}},
                [&](Graph &g, const auto &t, program::Sequence &p) {
                  return std::vector<Tensor>{reduce(g, t[0], {1}, op, p),
                                             reduce(g, t[0], {0}, op, p),
                                             reduce(g, t[0], {0, 1}, op, p)};
                });
      EXPECT_EQ(r.outputs[0], reference::reduce(x, shape, {1}, op));
      EXPECT_EQ(r.outputs[1], reference::reduce(x, shape, {0}, op));
      EXPECT_EQ(r.outputs[2], reference::reduce(x, shape, {0, 1}, op));
    }
}

TEST(ReducePlan, RowsSplitBetweenTilesAndWorkersAreReducedInTwoStages) {
  // [63, 301] over 4 tiles splits rows mid-way; [3, 20000] on one tile is
  // split between workers; a reduction of everything takes both stages;
  // on 1472 tiles every output has a partial from hundreds of tiles.
  struct Case {
    unsigned tiles;
    std::vector<std::size_t> shape;
    Dims dims;
  };
  const std::vector<Case> cases = {
      {4, {63, 301}, {1}},  {4, {63, 301}, {0}},       {1, {3, 20000}, {1}},
      {1, {20000, 3}, {0}}, {4, {40, 50, 30}, {0, 2}}, {16, {60000}, {0}},
      {1472, {11776}, {0}}, {1472, {736, 64}, {0}}};
  for (const Case &c : cases) {
    const std::size_t n = std::accumulate(c.shape.begin(), c.shape.end(),
                                          std::size_t(1), std::multiplies<>());
    const auto x = spread(n, -1.0, 1.0);
    for (Operation op : {Operation::ADD, Operation::MAX, Operation::LOG_ADD}) {
      RunResult r =
          runOp(c.tiles, {{FLOAT, c.shape, x}},
                [&](Graph &g, const auto &t, program::Sequence &p) {
                  return std::vector<Tensor>{reduce(g, t[0], c.dims, op, p)};
                });
      const auto want = reference::reduce(x, c.shape, c.dims, op);
      std::vector<double> absX(x.size());
      for (std::size_t i = 0; i < x.size(); ++i)
        absX[i] = std::fabs(x[i]);
      const auto l1 = reference::reduce(absX, c.shape, c.dims, Operation::ADD);
      const std::string what = std::string(operationName(op)) + " over " +
                               dimsText(c.dims) + " on " +
                               std::to_string(c.tiles);
      expectMatches(op, FLOAT, r.outputs[0], want, l1, what);
      // More than 128 partials of an output (one per tile of 1472) take an
      // intermediate level.
      EXPECT_EQ(r.computeSteps, c.tiles == 1472 ? 3u : 2u) << what;
    }
  }
}

TEST(ReducePlan, StridedViewsAndUserMappedOutputs) {
  const auto x = spread(12 * 17, -2.0, 2.0);
  RunResult r = runOp(4, {{FLOAT, {12, 17}, x}},
                      [&](Graph &g, const auto &t, program::Sequence &p) {
                        Tensor tr =
                            reduce(g, t[0].transpose(), {1}, Operation::ADD, p);
                        Tensor out = g.addVariable(FLOAT, {12}, "out");
                        g.setTileMapping(out, 3);
                        reduceWithOutput(g, t[0], out, {1}, Operation::MAX, p);
                        return std::vector<Tensor>{tr, out};
                      });
  const auto sums = reference::reduce(x, {12, 17}, {0}, Operation::ADD);
  const auto maxes = reference::reduce(x, {12, 17}, {1}, Operation::MAX);
  for (std::size_t i = 0; i < 17; ++i)
    EXPECT_NEAR(r.outputs[0][i], sums[i], 1e-5);
  for (std::size_t i = 0; i < 12; ++i)
    EXPECT_FLOAT_EQ(r.outputs[1][i], static_cast<float>(maxes[i]));
}

// Batch-norm statistics of channels-last activations seen channels-first:
// the plan follows memory, so a tile's elements are a few pieces, not one
// list element each; the result keeps the view's shape and order (also
// with several kept dimensions that the memory order permutes).
TEST(ReducePlan, TransposedViewsArePlannedInMemoryOrder) {
  const std::size_t n = 2, h = 8, w = 8, c = 32, size = n * h * w * c;
  const auto x = spread(size, -2.0, 2.0);
  std::size_t listElements = 0;
  RunResult r =
      runOp(4, {{FLOAT, {n, h, w, c}, x}},
            [&](Graph &g, const auto &t, program::Sequence &p) {
              const Tensor view = t[0].dimShuffle({0, 3, 1, 2}); // [n, c, h, w]
              const std::size_t before = g.getNumVertices();
              Tensor stats = reduce(g, view, {0, 2, 3}, Operation::ADD, p);
              for (std::size_t v = before; v < g.getNumVertices(); ++v)
                for (const FieldBinding &b : g.data().vertices[v].fields)
                  listElements += b.tensors.size();
              // Kept [c, w] of the view, which memory holds as [w, c].
              Tensor cw = reduce(g, view, {0, 2}, Operation::ADD, p);
              return std::vector<Tensor>{stats, cw};
            });
  EXPECT_LE(listElements, 4 * 6 * 8u) << "one per element would be " << size;
  const auto sums = reference::reduce(x, {n, h * w, c}, {0, 1}, Operation::ADD);
  for (std::size_t i = 0; i < c; ++i)
    EXPECT_NEAR(r.outputs[0][i], sums[i], 1e-4);
  const auto cw = reference::reduce(x, {n, h, w, c}, {0, 1}, Operation::ADD);
  for (std::size_t ci = 0; ci < c; ++ci)
    for (std::size_t wi = 0; wi < w; ++wi)
      EXPECT_NEAR(r.outputs[1][ci * w + wi], cw[wi * c + ci], 1e-4);
}

// Batch-norm statistics of a convolution's output, whose memory holds
// blocks of [batch, channels, rows, width] (one block of rows a tile):
// the rows the planner splits between a tile's workers make one
// MultiVertex a tile, and a tile's channels, which follow each other in
// memory, one partial of it. The same values in a variable per channel
// row (nothing to join) give the same bits.
TEST(ReducePlan, ATilesWorkersAndChannelsShareOneVertex) {
  const std::size_t n = 2, c = 24, blocks = 4, hb = 2, w = 56;
  const std::size_t size = n * c * blocks * hb * w;
  const auto x = spread(size, -2.0, 2.0);
  std::size_t stage1Vertices = 0, stage1Partials = 0;
  RunResult r = runOp(
      blocks, {{FLOAT, {n, c, blocks * hb, w}, x}},
      [&](Graph &g, const auto &t, program::Sequence &p) {
        std::vector<Tensor> joined, rows(n * c);
        for (std::size_t k = 0; k < blocks; ++k) {
          joined.push_back(g.addVariable(FLOAT, {n, c, hb, w}, "block"));
          g.setTileMapping(joined.back(), static_cast<unsigned>(k));
          for (std::size_t i = 0; i < n * c; ++i) {
            Tensor v = g.addVariable(FLOAT, {1, 1, hb, w}, "row");
            g.setTileMapping(v, static_cast<unsigned>(k));
            rows[i] = k ? concat(rows[i], v, 2) : v;
          }
        }
        std::vector<Tensor> perChannel;
        for (std::size_t b = 0; b < n; ++b) {
          std::vector<Tensor> chans(rows.begin() + b * c,
                                    rows.begin() + (b + 1) * c);
          perChannel.push_back(concat(chans, 1));
        }
        const Tensor a = concat(joined, 2), b = concat(perChannel, 0);
        p.add(program::Copy(t[0], a));
        p.add(program::Copy(t[0], b));
        std::vector<Tensor> outs;
        for (bool first : {true, false})
          for (Operation op : {Operation::ADD, Operation::SQUARE_ADD}) {
            const std::size_t before = g.getNumVertices();
            outs.push_back(reduce(g, first ? a : b, {0, 2, 3}, op, p));
            for (std::size_t v = before; first && v < g.getNumVertices(); ++v) {
              const VertexData &vd = g.data().vertices[v];
              const std::string &cs = g.data().computeSets[vd.computeSet].name;
              if (cs.size() < 6 || cs.substr(cs.size() - 6) != "stage1")
                continue;
              ++stage1Vertices;
              stage1Partials += vd.fields[0].tensors.size();
            }
          }
        return outs;
      });
  // Per reduction and tile, the 96 channel rows the planner splits into six
  // worker shares are one vertex reading one partial (48 and 384 before).
  EXPECT_EQ(stage1Vertices, 2 * blocks);
  EXPECT_EQ(stage1Partials, 2 * blocks);
  const auto sums =
      reference::reduce(x, {n, c, blocks * hb * w}, {0, 2}, Operation::ADD);
  for (std::size_t i = 0; i < c; ++i)
    EXPECT_NEAR(r.outputs[0][i], sums[i], 1e-3) << i;
  EXPECT_EQ(bitsOf(r.outputs[0]), bitsOf(r.outputs[2]));
  EXPECT_EQ(bitsOf(r.outputs[1]), bitsOf(r.outputs[3]));
}

TEST(ReducePlan, InterleavedMappingsGiveTheSameResults) {
  // Blocks of 5 elements alternate between tiles 0 and 2, so every row has
  // several pieces on each tile.
  const std::vector<std::size_t> shape{6, 40};
  const auto x = spread(240, -2.0, 2.0);
  RunResult r = runOp(4, {{FLOAT, shape, x}},
                      [&](Graph &g, const auto &t, program::Sequence &p) {
                        TileMapping m(4);
                        for (std::size_t b = 0; b < 240; b += 5)
                          m[(b / 5) % 2 * 2].emplace_back(b, b + 5);
                        g.setTileMapping(t[0], m);
                        auto [v, i] = topK(g, t[0], 3, p);
                        return std::vector<Tensor>{
                            reduce(g, t[0], {1}, Operation::ADD, p),
                            reduce(g, t[0], {0}, Operation::MAX, p),
                            argMax(g, t[0], p), v, i};
                      });
  const auto sums = reference::reduce(x, shape, {1}, Operation::ADD);
  for (std::size_t i = 0; i < 6; ++i)
    EXPECT_NEAR(r.outputs[0][i], sums[i], 1e-5);
  const auto maxes = reference::reduce(x, shape, {0}, Operation::MAX);
  for (std::size_t i = 0; i < 40; ++i)
    EXPECT_FLOAT_EQ(r.outputs[1][i], static_cast<float>(maxes[i]));
  const auto am = reference::argMax(rounded(FLOAT, x), 6, 40);
  const auto tk = reference::topK(rounded(FLOAT, x), 6, 40, 3, true, true);
  EXPECT_EQ(r.outputs[2], std::vector<double>(am.begin(), am.end()));
  EXPECT_EQ(r.outputs[3], tk.values);
  EXPECT_EQ(r.outputs[4],
            std::vector<double>(tk.indices.begin(), tk.indices.end()));
}

TEST(ReducePlan, EmptyReductionGivesTheIdentity) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  addCodelets(g);
  Tensor in = g.addVariable(FLOAT, {3, 0}, "in");
  program::Sequence p;
  const std::vector<Operation> ops = {Operation::ADD, Operation::MUL,
                                      Operation::MAX, Operation::LOG_ADD};
  for (std::size_t k = 0; k < ops.size(); ++k)
    g.createHostRead("out" + std::to_string(k), reduce(g, in, {1}, ops[k], p));
  Engine e(g, p);
  e.load(device);
  e.run();
  const std::vector<float> want = {0, 1, -INFINITY, -INFINITY};
  for (std::size_t k = 0; k < ops.size(); ++k) {
    std::vector<float> out(3);
    e.readTensor("out" + std::to_string(k), out.data(), out.data() + 3);
    EXPECT_EQ(out, std::vector<float>(3, want[k])) << operationName(ops[k]);
  }
}

TEST(ReducePlan, ResultsAreDeterministicAndCloseAcrossTileCounts) {
  const auto x = spread(5000, -1.0, 1.0);
  std::vector<std::vector<double>> results;
  for (unsigned tiles : {1u, 4u, 1472u, 4u}) {
    RunResult r = runOp(tiles, {{FLOAT, {5000}, x}},
                        [&](Graph &g, const auto &t, program::Sequence &p) {
                          return std::vector<Tensor>{
                              reduce(g, t[0], {0}, Operation::ADD, p)};
                        });
    results.push_back(r.outputs[0]);
  }
  EXPECT_EQ(bitsOf(results[1]), bitsOf(results[3])); // same tiles, same bits
  const double want = reference::reduce(x, {5000}, {0}, Operation::ADD)[0];
  // 5000 terms of magnitude <= 1: float rounding bounded by n * eps * |x|.
  for (const auto &res : results)
    EXPECT_NEAR(res[0], want, 5000 * 6e-8);
}

TEST(ReduceErrors, BadDimensionsTypesAndParams) {
  Graph g(Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "4"}}));
  addCodelets(g);
  Tensor f = g.addVariable(FLOAT, {3, 4}, "f");
  Tensor b = g.addVariable(BOOL, {3, 4}, "b");
  Tensor i = g.addVariable(INT, {3, 4}, "i");
  mapTensorLinearly(g, f);
  mapTensorLinearly(g, b);
  mapTensorLinearly(g, i);
  program::Sequence p;
  auto message = [&](auto &&f) -> std::string {
    try {
      f();
    } catch (const Error &e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(message([&] { reduce(g, f, {3}, Operation::ADD, p); }),
              HasSubstr("reduce: dimension 3 is out of range for a tensor of "
                        "rank 2"));
  EXPECT_THROW(reduce(g, f, {3}, Operation::ADD, p), ShapeError);
  EXPECT_THAT(message([&] {
                reduce(g, f, {1, 1}, Operation::ADD, p);
              }),
              HasSubstr("dimension 1 is listed twice"));
  EXPECT_THROW(reduce(g, f, {1}, Operation::LOGICAL_AND, p), TypeError);
  EXPECT_THAT(message([&] { reduce(g, f, {1}, Operation::LOGICAL_OR, p); }),
              HasSubstr("needs a bool input but the input is float"));
  EXPECT_THROW(reduce(g, b, {1}, Operation::ADD, p), TypeError);
  EXPECT_THROW(reduce(g, i, {1}, Operation::LOG_ADD, p), TypeError);
  EXPECT_THROW(reduce(g, i, FLOAT, {1}, Operation::ADD, p), TypeError);
  EXPECT_THROW(reduce(g, f, INT, {1}, Operation::ADD, p), TypeError);
  EXPECT_THROW(reduce(g, f, {1}, {Operation::ADD, true}, p), UnsupportedError);
  EXPECT_THROW(reduce(g, f, {1}, {Operation::LOG_ADD, false, -1.0f}, p),
               UnsupportedError);
  EXPECT_THROW(reduce(g, b, {1}, {Operation::LOGICAL_OR, false, 2.0f}, p),
               UnsupportedError);
  Tensor wrong = g.addVariable(FLOAT, {4}, "wrong");
  EXPECT_THAT(
      message([&] { reduceWithOutput(g, f, wrong, {1}, Operation::ADD, p); }),
      HasSubstr("gives [3] but the output has shape [4]"));
  EXPECT_THROW(
      reduce(g, f, {1}, Operation::ADD, p, {}, {{"accumType.intertile", "x"}}),
      OptionError);
  EXPECT_THROW(topK(g, f, 5, p), ShapeError);
  EXPECT_THROW(topK(g, f, 0, p), ShapeError);
  EXPECT_THROW(argMax(g, f.flatten(), p), ShapeError);
  EXPECT_THROW(argMax(g, b, p), TypeError);
}

TEST(ReduceOptions, HalfPartialsBetweenTiles) {
  const auto x = spread(64 * 301, -1.0, 1.0);
  RunResult r = runOp(4, {{HALF, {64, 301}, x}},
                      [&](Graph &g, const auto &t, program::Sequence &p) {
                        return std::vector<Tensor>{
                            reduce(g, t[0], FLOAT, {0}, Operation::ADD, p, {},
                                   {{"accumType.interTile", "half"}})};
                      });
  const auto want =
      reference::reduce(rounded(HALF, x), {64, 301}, {0}, Operation::ADD);
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(r.outputs[0][i], want[i], 0.05);
}

TEST(ReduceEstimates, CyclesArePositiveDeterministicAndGrowWithSize) {
  auto cycles = [](std::size_t n, unsigned tiles, Operation op) {
    return runOp(tiles, {{FLOAT, {n / 50, 50}, spread(n, -1.0, 1.0)}},
                 [&](Graph &g, const auto &t, program::Sequence &p) {
                   return std::vector<Tensor>{reduce(g, t[0], {0}, op, p)};
                 })
        .cycles;
  };
  for (Operation op : {Operation::ADD, Operation::LOG_ADD}) {
    const auto small = cycles(1000, 4, op), big = cycles(100000, 4, op);
    EXPECT_GT(small, 0u);
    EXPECT_EQ(small, cycles(1000, 4, op));
    EXPECT_GT(big, small);
  }
  // Spreading a big reduction over more tiles is estimated faster.
  EXPECT_LT(cycles(100000, 64, Operation::ADD),
            cycles(100000, 1, Operation::ADD));
}

// ---- argMax, argMin, topK ----------------------------------------------

namespace {

// Rows with repeated values, so that ties decide; row length n.
std::vector<double> tiedRows(std::size_t rows, std::size_t n) {
  std::vector<double> x(rows * n);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<double>((i * 7 + i / n * 3) % 11) - 5.0;
  return x;
}

} // namespace

TEST(ArgMaxTest, LowestIndexAmongTiesOnEveryTileCountAndType) {
  struct Case {
    unsigned tiles;
    std::size_t rows, n;
  };
  for (const Case &c : std::vector<Case>{
           {1, 5, 13}, {4, 6, 300}, {4, 1, 3000}, {1472, 3, 9}, {1, 2, 9000}})
    for (Type type : {FLOAT, HALF, INT, UNSIGNED_INT}) {
      auto x = tiedRows(c.rows, c.n);
      if (type == UNSIGNED_INT)
        for (double &v : x)
          v += 5.0;
      RunResult r = runOp(
          c.tiles, {{type, {c.rows, c.n}, x}},
          [&](Graph &g, const auto &t, program::Sequence &p) {
            return std::vector<Tensor>{argMax(g, t[0], p), argMin(g, t[0], p)};
          });
      const auto mx = reference::argMax(x, c.rows, c.n);
      const auto mn = reference::argMin(x, c.rows, c.n);
      const std::string what =
          std::string(typeName(type)) + " [" + std::to_string(c.rows) + ", " +
          std::to_string(c.n) + "] on " + std::to_string(c.tiles);
      ASSERT_EQ(r.outputs[0].size(), c.rows) << what;
      for (std::size_t i = 0; i < c.rows; ++i) {
        EXPECT_EQ(r.outputs[0][i], static_cast<double>(mx[i])) << what;
        EXPECT_EQ(r.outputs[1][i], static_cast<double>(mn[i])) << what;
      }
    }
}

TEST(TopKTest, ValuesAndIndicesRankedWithTies) {
  struct Case {
    unsigned tiles;
    std::size_t rows, n, k;
  };
  for (const Case &c : std::vector<Case>{{1, 4, 20, 3},
                                         {4, 5, 400, 7},
                                         {4, 2, 11, 11},
                                         {1472, 3, 10, 4},
                                         {1, 2, 9000, 5}})
    for (Type type : {FLOAT, HALF})
      for (bool largest : {true, false})
        for (bool sorted : {true, false}) {
          const auto x = tiedRows(c.rows, c.n);
          RunResult r = runOp(
              c.tiles, {{type, {c.rows, c.n}, x}},
              [&](Graph &g, const auto &t, program::Sequence &p) {
                auto [v, i] = topK(g, t[0], static_cast<unsigned>(c.k), largest,
                                   sorted, p);
                EXPECT_EQ(v.shape(), (std::vector<std::size_t>{c.rows, c.k}));
                EXPECT_EQ(i.elementType(), UNSIGNED_INT);
                return std::vector<Tensor>{v, i};
              });
          const auto want =
              reference::topK(x, c.rows, c.n, c.k, largest, sorted);
          const std::string what = "[" + std::to_string(c.rows) + ", " +
                                   std::to_string(c.n) + "] k " +
                                   std::to_string(c.k) +
                                   (largest ? " largest" : " smallest") +
                                   (sorted ? " sorted" : " unsorted") + " on " +
                                   std::to_string(c.tiles) + " tiles";
          EXPECT_EQ(r.outputs[0], want.values) << what;
          std::vector<double> idx(want.indices.begin(), want.indices.end());
          EXPECT_EQ(r.outputs[1], idx) << what;
        }
}

TEST(TopKTest, EstimatesArePositiveAndGrowWithSize) {
  auto cycles = [](std::size_t n) {
    return runOp(4, {{FLOAT, {4, n}, spread(4 * n, -1.0, 1.0)}},
                 [&](Graph &g, const auto &t, program::Sequence &p) {
                   return std::vector<Tensor>{topK(g, t[0], 4, p).first};
                 })
        .cycles;
  };
  const auto small = cycles(100), big = cycles(10000);
  EXPECT_GT(small, 0u);
  EXPECT_EQ(small, cycles(100));
  EXPECT_GT(big, small);
}
