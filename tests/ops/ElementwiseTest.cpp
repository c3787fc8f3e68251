// Elementwise ops beyond the operation table (whose rows, forward and
// gradient, the conformance harness checks): the kernels against the
// standard library, fused maps, broadcasting, in-place ops, select, clamp,
// casts, fills, scaled additions and estimates.
#include "OpsTestUtil.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace tessera;
using namespace tessera::ops;
using namespace tessera::test;
using expr::BinaryOpType;
using expr::UnaryOpType;

TEST(ElementwiseReference, KernelsAgreeWithTheStandardLibrary) {
  EXPECT_DOUBLE_EQ(reference::unary(UnaryOpType::EXPONENT, 0.5), std::exp(0.5));
  EXPECT_DOUBLE_EQ(reference::unary(UnaryOpType::SIGMOID, 0.0), 0.5);
  EXPECT_NEAR(reference::unary(UnaryOpType::GELU, 1.0), 0.841192, 1e-6);
  EXPECT_DOUBLE_EQ(reference::unary(UnaryOpType::RELU, -3.0), 0.0);
  EXPECT_DOUBLE_EQ(reference::binary(BinaryOpType::REMAINDER, -7, 2), -1.0);
  EXPECT_DOUBLE_EQ(reference::binary(BinaryOpType::ATAN2, 1, 1),
                   std::atan(1.0));
}

TEST(ElementwiseMap, FusedExpressionIsOneComputeSet) {
  const std::size_t n = 300;
  auto a = spread(n, -1, 1), b = spread(n, 0.5, 2);
  using namespace expr;
  const Expr e = Sigmoid(_1 * _2 + Const(0.5f)) - Square(_1) / _2;
  RunResult r = runOp(16, {{FLOAT, {n}, a}, {FLOAT, {n}, b}},
                      [&](Graph &g, const auto &in, program::Sequence &p) {
                        return std::vector<Tensor>{map(g, e, in, p)};
                      });
  EXPECT_EQ(r.computeSteps, 1u);
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_NEAR(r.outputs[0][i],
                reference::evaluate(e, {float(a[i]), float(b[i])}), 1e-5);
}

TEST(ElementwiseMap, FragmentedLayoutsTakeAtMostOneVertexPerWorker) {
  // 400 elements in 100 stripes of 4 alternating between tiles 0 and 1, as
  // a matmul's block layout leaves a weight: still at most six vertices a
  // tile, each running its stripes as regions.
  const std::size_t n = 400;
  auto a = spread(n, -2, 2);
  std::size_t mapVertices = 0;
  using namespace expr;
  RunResult r = runOp(2, {{FLOAT, {n}, a}},
                      [&](Graph &g, const auto &in, program::Sequence &p) {
                        Tensor f = g.addVariable(FLOAT, {n}, "striped");
                        for (std::size_t s = 0; s < n / 4; ++s)
                          g.setTileMapping(f.slice(4 * s, 4 * s + 4), s % 2);
                        p.add(program::Copy(in[0], f));
                        const std::size_t before = g.getNumVertices();
                        Tensor out = map(g, Exp(_1) + Const(1.0f), {f}, p);
                        mapVertices = g.getNumVertices() - before;
                        return std::vector<Tensor>{out};
                      });
  EXPECT_LE(mapVertices, 12u);
  EXPECT_GE(mapVertices, 2u);
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_NEAR(r.outputs[0][i], std::exp(a[i]) + 1, 1e-5 * std::exp(a[i]));
}

TEST(ElementwiseMap, InputsLaidOutUnlikeTheOutputAreCopiedAndRegionsJoin) {
  // W [8, 8] is four 4x4 blocks, one a tile, each block's rows one after
  // another in memory (as a matmul lays out a weight); L is mapped
  // linearly. For W + L, L is first copied into W's layout, and each tile's
  // four rows then run as one region.
  const std::size_t n = 64;
  auto a = spread(n, -2, 2), b = spread(n, 1, 3);
  std::vector<std::size_t> regionsPerVertex;
  using namespace expr;
  RunResult r = runOp(4, {{FLOAT, {8, 8}, a}, {FLOAT, {8, 8}, b}},
                      [&](Graph &g, const auto &in, program::Sequence &p) {
                        Tensor pieces = g.addVariable(FLOAT, {n}, "pieces");
                        std::vector<Tensor> rows;
                        for (unsigned br = 0; br < 2; ++br) {
                          std::vector<Tensor> blocks;
                          for (unsigned bc = 0; bc < 2; ++bc) {
                            const unsigned tile = 2 * br + bc;
                            Tensor block =
                                pieces.slice(16 * tile, 16 * tile + 16);
                            g.setTileMapping(block, tile);
                            blocks.push_back(block.reshape({4, 4}));
                          }
                          rows.push_back(concat(blocks, 1));
                        }
                        Tensor w = concat(rows, 0);
                        p.add(program::Copy(in[0], w));
                        const std::size_t before = g.getNumVertices();
                        Tensor out = map(g, _1 + _2, {w, in[1]}, p);
                        for (std::size_t k : outRegionsSince(g, before))
                          regionsPerVertex.push_back(k);
                        return std::vector<Tensor>{out};
                      });
  EXPECT_EQ(regionsPerVertex, std::vector<std::size_t>(4, 1));
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_NEAR(r.outputs[0][i], a[i] + b[i], 1e-6);
}

TEST(ElementwiseMap, TransposedViewsRunInMemoryOrder) {
  // X [N, H, W, C] seen channels-first as [N, C, H, W]: each element of
  // the view's rows lies C apart. The map runs in memory order, so each
  // tile's share is a few regions, not one per element; the result (and
  // its view) is the same.
  const std::size_t n = 2, h = 4, w = 4, c = 16, size = n * h * w * c;
  auto a = spread(size, -2, 2), b = spread(c, 1, 2);
  std::size_t regions = 0;
  using namespace expr;
  RunResult r =
      runOp(4, {{FLOAT, {n, h, w, c}, a}, {FLOAT, {c}, b}},
            [&](Graph &g, const auto &in, program::Sequence &p) {
              const Tensor x = in[0].dimShuffle({0, 3, 1, 2});
              const std::size_t before = g.getNumVertices();
              Tensor out = map(g, _1 * _2, {x, in[1].reshape({c, 1, 1})}, p);
              for (std::size_t k : outRegionsSince(g, before))
                regions += k;
              return std::vector<Tensor>{out.dimShuffle({0, 2, 3, 1})};
            });
  // Rows of the C channels, at most one cut per tile boundary.
  EXPECT_LE(regions, n * h * w + 4);
  for (std::size_t i = 0; i < size; ++i)
    EXPECT_FLOAT_EQ(r.outputs[0][i], float(float(a[i]) * float(b[i % c])));
}

TEST(ElementwiseMap, BroadcastBiasBringsOneElementPerRegionPart) {
  // x [7, 30] + bias [7, 1] (a bias over channels of NCHW activations) on 4
  // tiles: each tile's rows cross channels, and each part of a row reads its
  // channel's bias element once (the vertex broadcasts it), not 30 copies.
  const std::size_t c = 7, w = 30;
  auto x = spread(c * w, -2, 2), bias = spread(c, 1, 3);
  RunResult r = runOp(
      4, {{FLOAT, {c, w}, x}, {FLOAT, {c}, bias}},
      [&](Graph &g, const auto &in, program::Sequence &p) {
        return std::vector<Tensor>{add(g, in[0], in[1].reshape({c, 1}), p)};
      });
  for (std::size_t i = 0; i < c * w; ++i)
    ASSERT_NEAR(r.outputs[0][i], x[i] + bias[i / w], 1e-6) << i;
  // At most c + 3 parts (the tiles' rows cut at channel boundaries), each
  // bringing 4 bytes and its sender sending them: well under one copy of a
  // row per part (120 bytes).
  EXPECT_LE(r.exchangedBytes, 2 * 4 * (c + 3));
}

TEST(ElementwiseMap, ChannelStatisticsOverATilesChannelsAreOneRegion) {
  // Batch norm's whitening (x - mean) * istd of x [2, 8, 12] with per-channel
  // statistics [8, 1]: each of 2 tiles holds one batch's 8 channels of 12
  // elements. Each tile runs them as one region whose statistics give one
  // element per channel (each repeated 12 times), not 8 regions; on 3
  // tiles a channel cut by a tile boundary adds at most two more a tile.
  // The values are the same either way.
  const std::size_t n = 2, c = 8, s = 12, size = n * c * s;
  auto x = spread(size, -2, 2), mean = spread(c, -1, 1), istd = spread(c, 1, 3);
  for (unsigned tiles : {2u, 3u}) {
    std::size_t regions = 0, vertices = 0;
    using namespace expr;
    RunResult r = runOp(
        tiles, {{FLOAT, {n, c, s}, x}, {FLOAT, {c}, mean}, {FLOAT, {c}, istd}},
        [&](Graph &g, const auto &in, program::Sequence &p) {
          const std::size_t before = g.getNumVertices();
          Tensor out =
              map(g, (_1 - _2) * _3,
                  {in[0], in[1].reshape({c, 1}), in[2].reshape({c, 1})}, p);
          for (std::size_t k : outRegionsSince(g, before)) {
            ++vertices;
            regions += k;
          }
          return std::vector<Tensor>{out};
        });
    EXPECT_EQ(vertices, tiles);
    if (tiles == 2) {
      EXPECT_EQ(regions, 2u);
    }
    EXPECT_LE(regions, 3u * tiles);
    for (std::size_t i = 0; i < size; ++i) {
      const std::size_t ch = i / s % c;
      ASSERT_FLOAT_EQ(r.outputs[0][i],
                      (float(x[i]) - float(mean[ch])) * float(istd[ch]))
          << i;
    }
  }
}

TEST(ElementwiseMap, SmallMapOnManyTilesRunsAsAHostKernelWithTheSameBytes) {
  // 3000 elements on 1472 tiles: two or three a tile, so the host runs the
  // map in a few vertices; the values and the estimate are the tiles'.
  const std::size_t n = 3000;
  auto a = spread(n, -3, 3), b = spread(n, 0.5, 2);
  using namespace expr;
  const Expr e = Exp(_1) / _2 - Sqrt(_2) * Cast(Index(), FLOAT);
  auto build = [&](Graph &g, const auto &in, program::Sequence &p) {
    return std::vector<Tensor>{map(g, e, in, p)};
  };
  const RunResult host = runOp(1472, {{FLOAT, {n}, a}, {FLOAT, {n}, b}}, build);
  const RunResult tiles = runOp(1472, {{FLOAT, {n}, a}, {FLOAT, {n}, b}}, build,
                                {{"engine.hostKernels", "false"}});
  EXPECT_EQ(host.hostKernelSteps, 1u);
  EXPECT_EQ(tiles.hostKernelSteps, 0u);
  EXPECT_EQ(host.outputs, tiles.outputs);
  EXPECT_EQ(host.cycles, tiles.cycles);
}

TEST(ElementwiseMap, BroadcastsByNumPyRulesAndScalars) {
  RunResult r = runOp(
      4, {{FLOAT, {3, 1}, {1, 2, 3}}, {FLOAT, {4}, {10, 20, 30, 40}}},
      [&](Graph &g, const auto &in, program::Sequence &p) {
        return std::vector<Tensor>{add(g, in[0], in[1], p),
                                   mul(g, in[1], 2.0f, p), sub(g, 1, in[0], p)};
      });
  EXPECT_EQ(r.outputs[0], (std::vector<double>{11, 21, 31, 41, 12, 22, 32, 42,
                                               13, 23, 33, 43}));
  EXPECT_EQ(r.outputs[1], (std::vector<double>{20, 40, 60, 80}));
  EXPECT_EQ(r.outputs[2], (std::vector<double>{0, -1, -2}));
}

TEST(ElementwiseMap, ShapesThatDoNotBroadcastAreAnError) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Graph g(model.createDevice().getTarget());
  ops::addCodelets(g);
  Tensor a = g.addVariable(FLOAT, {3}, "a"), b = g.addVariable(FLOAT, {4}, "b");
  program::Sequence p;
  try {
    add(g, a, b, p);
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("[3] and [4] do not broadcast"));
  }
  Tensor s = g.addVariable(SHORT, {3}, "s");
  mapTensorLinearly(g, s);
  EXPECT_THROW(neg(g, s, p), UnsupportedError);
}

TEST(ElementwiseMap, RegionsShortAndLongGiveTheSameBitsAsOneByOne) {
  // Stripes of 1 to 300 elements alternating between two tiles: a map
  // vertex gathers the short regions into shared chunks and runs each long
  // one (32 elements or more) where it lies. Every element must come out
  // as the scalar formula gives it, bit for bit.
  const std::vector<std::size_t> stripes{3,  40, 5, 300, 33, 31, 1,
                                         32, 64, 7, 257, 2,  90};
  std::size_t n = 0;
  for (std::size_t s : stripes)
    n += s;
  auto a = spread(n, -3, 3);
  using namespace expr;
  RunResult r = runOp(2, {{FLOAT, {n}, a}},
                      [&](Graph &g, const auto &in, program::Sequence &p) {
                        Tensor f = g.addVariable(FLOAT, {n}, "striped");
                        std::size_t at = 0;
                        for (std::size_t s = 0; s < stripes.size(); ++s) {
                          g.setTileMapping(f.slice(at, at + stripes[s]), s % 2);
                          at += stripes[s];
                        }
                        p.add(program::Copy(in[0], f));
                        Tensor out =
                            map(g,
                                Select(Clamp(_1, Const(-1.0f), Const(2.0f)),
                                       _1 * Const(0.5f), _1 > Const(0.25f)) +
                                    Cast(Cast(_1, INT), FLOAT),
                                {f}, p);
                        return std::vector<Tensor>{out};
                      });
  for (std::size_t i = 0; i < n; ++i) {
    const float x = static_cast<float>(a[i]);
    const float want =
        (x > 0.25f ? std::min(std::max(x, -1.0f), 2.0f) : x * 0.5f) +
        static_cast<float>(static_cast<int>(x));
    EXPECT_EQ(static_cast<float>(r.outputs[0][i]), want) << "element " << i;
  }
}

TEST(ElementwiseMap, InPlaceSelectClampAndCasts) {
  RunResult r = runOp(4,
                      {{FLOAT, {5}, {-2.5, -0.5, 0.5, 1.5, 2.75}},
                       {BOOL, {5}, {1, 0, 1, 0, 1}}},
                      [&](Graph &g, const auto &in, program::Sequence &p) {
                        Tensor lo = g.addConstant<float>(FLOAT, {}, -1.0f);
                        Tensor hi = g.addConstant<float>(FLOAT, {}, 2.0f);
                        g.setTileMapping(lo, 0);
                        g.setTileMapping(hi, 1);
                        Tensor c = clamp(g, in[0], lo, hi, p);
                        Tensor sel = select(g, in[0], c, in[1], p);
                        Tensor asInt = cast(g, in[0], INT, p);
                        Tensor asHalf = cast(g, asInt, HALF, p);
                        Tensor x = g.clone(in[0]);
                        p.add(program::Copy(in[0], x));
                        absInPlace(g, x, p);
                        return std::vector<Tensor>{c, sel, asInt, asHalf, x};
                      });
  EXPECT_EQ(r.outputs[0], (std::vector<double>{-1, -0.5, 0.5, 1.5, 2}));
  EXPECT_EQ(r.outputs[1], (std::vector<double>{-2.5, -0.5, 0.5, 1.5, 2.75}));
  EXPECT_EQ(r.outputs[2], (std::vector<double>{-2, 0, 0, 1, 2}));
  EXPECT_EQ(r.outputs[3], (std::vector<double>{-2, 0, 0, 1, 2}));
  EXPECT_NEAR(r.outputs[4][0], 2.5, 1e-6);
  EXPECT_NEAR(r.outputs[4][4], 2.75, 1e-6);
}

TEST(ElementwiseFill, FillZeroIotaAndScaledAdds) {
  RunResult r = runOp(
      8, {{FLOAT, {6}, {1, 2, 3, 4, 5, 6}}, {FLOAT, {6}, {1, 1, 1, 1, 1, 1}}},
      [&](Graph &g, const auto &in, program::Sequence &p) {
        Tensor f = g.addVariable(HALF, {2, 3}, "f");
        Tensor z = g.addVariable(INT, {4}, "z");
        Tensor i = g.addVariable(UNSIGNED_INT, {10}, "i");
        for (const Tensor &t : {f, z, i})
          mapTensorLinearly(g, t, 1, 1);
        fill(g, f, 0.25, p);
        zero(g, z, p);
        iota(g, i, 3, p);
        Tensor s = g.addConstant<float>(FLOAT, {}, 0.5f);
        g.setTileMapping(s, 2);
        scaledAddTo(g, in[0], in[1], 2.0f, p);       // +2
        scaledAddTo(g, in[0], 0.5f, in[1], 1.0f, p); // x/2 + 1
        scaledSubtractFrom(g, in[0], in[1], s, p);   // -0.5
        return std::vector<Tensor>{f, z, i, in[0]};
      });
  EXPECT_EQ(r.outputs[0], std::vector<double>(6, 0.25));
  EXPECT_EQ(r.outputs[1], std::vector<double>(4, 0));
  EXPECT_EQ(r.outputs[2],
            (std::vector<double>{3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(r.outputs[3], (std::vector<double>{2, 2.5, 3, 3.5, 4, 4.5}));
}

TEST(ElementwiseEstimates, CyclesArePositiveDeterministicAndGrowWithSize) {
  auto cycles = [](std::size_t n) {
    return runOp(4,
                 {{FLOAT, {n}, spread(n, 0, 1)}, {FLOAT, {n}, spread(n, 0, 1)}},
                 [](Graph &g, const auto &in, program::Sequence &p) {
                   return std::vector<Tensor>{add(g, in[0], in[1], p)};
                 })
        .cycles;
  };
  const auto small = cycles(64), big = cycles(8192);
  EXPECT_GT(small, 0u);
  EXPECT_GT(big, small);
  EXPECT_EQ(cycles(64), small);
}

TEST(ElementwiseEstimates, FloatAddCostsPoplarsCyclesPerElement) {
  // Poplar's figures: ~3 worker cycles per 64-bit vector of a float add, so
  // ~1.5 tile cycles per element on a tile whose six workers share the
  // work; an expression of two operations costs about twice as much.
  auto growth = [](bool fused) {
    auto cycles = [&](std::size_t n) {
      return runOp(
                 4,
                 {{FLOAT, {n}, spread(n, 0, 1)}, {FLOAT, {n}, spread(n, 0, 1)}},
                 [&](Graph &g, const auto &in, program::Sequence &p) {
                   using namespace expr;
                   return std::vector<Tensor>{
                       fused ? map(g, _1 * _2 + _1, {in[0], in[1]}, p)
                             : add(g, in[0], in[1], p)};
                 })
          .cycles;
    };
    return double(cycles(24576) - cycles(768));
  };
  const double perElementPerTile = 1.5 * (24576 - 768) / 4;
  EXPECT_NEAR(growth(false), perElementPerTile, 0.05 * perElementPerTile);
  EXPECT_NEAR(growth(true), 2 * perElementPerTile, 0.1 * perElementPerTile);
}

namespace {
// Tile 0's memory after compiling one map of each expression of \p exprs
// over one 64-element input, all on tile 0.
TileMemory mapsOnOneTile(const std::vector<expr::Expr> &exprs) {
  IPUModel model;
  model.tilesPerIPU = 1;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {64}, "x");
  g.setTileMapping(x, 0);
  g.createHostWrite("x", x);
  program::Sequence prog;
  for (std::size_t i = 0; i < exprs.size(); ++i)
    g.createHostRead("y" + std::to_string(i), map(g, exprs[i], {x}, prog));
  return compileGraph(g, {prog}).tileMemory.at(0);
}
} // namespace

TEST(ElementwiseMemory, MapsOfOneProgramOnATileHoldItOnceAsCode) {
  using namespace expr;
  const Expr shortE = _1 + Const(1.0f);
  const Expr longE = Sigmoid(_1 * Const(2.0f) + Const(1.0f)) -
                     Square(_1) / Const(3.0f) + Exp(_1 * Const(0.25f));
  const TileMemory one = mapsOnOneTile({longE});
  const TileMemory four = mapsOnOneTile({longE, longE, longE, longE});
  // The program is a table on the tile, not in each vertex: a vertex's
  // state does not grow with its program, and more vertices of the same
  // program add no code.
  EXPECT_EQ(mapsOnOneTile({shortE, shortE, shortE, shortE}).vertexState,
            four.vertexState);
  EXPECT_EQ(four.code, one.code);
  // Each distinct program is held once: four different constants are
  // four programs.
  const TileMemory distinct = mapsOnOneTile(
      {longE, longE + Const(1.0f), longE + Const(2.0f), longE + Const(3.0f)});
  EXPECT_GT(distinct.code, four.code + 3 * 8 * 10);
  EXPECT_EQ(distinct.vertexState, four.vertexState);
}
