// Lowering: IR modules run on the IPU Model give the interpreter's values,
// sharded modules put each shard's tensors on its own IPU, and leaves get
// the layouts their users prefer.
#include "IrTestModels.hpp"
#include "LoweringTestUtil.hpp"

#include "tessera/device/Target.hpp"
#include "tessera/ops/Conv.hpp"
#include "tessera/ops/MatMul.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using namespace tessera::ir;
using ::testing::HasSubstr;

namespace {

// The IPUs a tensor's elements are on.
std::set<unsigned> ipusOf(const Graph &g, const Tensor &t) {
  std::set<unsigned> ipus;
  const TileMapping m = g.getTileMapping(t);
  for (unsigned tile = 0; tile < m.size(); ++tile)
    if (!m[tile].empty())
      ipus.insert(g.getTarget().tileIpu(tile));
  return ipus;
}

} // namespace

// The seed tutorial's sharding example: three shards add pairs of the
// inputs in parallel and the fourth sums their results.
TEST(Lowering, FourIpuShardedSumPutsEachShardOnItsIpu) {
  Module m("sharded sum");
  Builder b(m);
  Value pa = b.input("pa", FLOAT, {2});
  Value pb = b.input("pb", FLOAT, {2});
  Value pc = b.input("pc", FLOAT, {2});
  Value o1, o2, o3, out;
  {
    ShardScope s(b, 0);
    o1 = pa + pb;
  }
  {
    ShardScope s(b, 1);
    o2 = pa + pc;
  }
  {
    ShardScope s(b, 2);
    o3 = pb + pc;
  }
  {
    ShardScope s(b, 3);
    out = o1 + o2 + o3;
  }
  b.output("out", out);
  const Feeds feeds{{"pa", {FLOAT, {2}, {1, 1}}},
                    {"pb", {FLOAT, {2}, {0, 1}}},
                    {"pc", {FLOAT, {2}, {1, 5}}}};
  bool inspected = false;
  test::LoweredRun r = test::runLowered(
      m, feeds, {out.id(), o1.id()}, 4, 8,
      [&](const Graph &g, const LoweredModule &l) {
        inspected = true;
        EXPECT_TRUE(l.sharded());
        EXPECT_EQ(ipusOf(g, l.tensor(o1)), std::set<unsigned>{0});
        EXPECT_EQ(ipusOf(g, l.tensor(o2)), std::set<unsigned>{1});
        EXPECT_EQ(ipusOf(g, l.tensor(o3)), std::set<unsigned>{2});
        EXPECT_EQ(ipusOf(g, l.tensor(out)), std::set<unsigned>{3});
        EXPECT_EQ(l.ipu(out.id()), 3u);
        // Inputs live with their first user: pa and pb on IPU 0, pc on 1.
        EXPECT_EQ(ipusOf(g, l.tensor(pc)), std::set<unsigned>{1});
        // pa to IPU 1, pb and pc to IPU 2, o1, o2 and o3 to IPU 3.
        EXPECT_EQ(l.numCopies(), 6u);
      });
  EXPECT_TRUE(inspected);
  EXPECT_EQ(r.values[out.id()].values, (std::vector<double>{4, 14}));
  EXPECT_EQ(r.values[o1.id()].values, (std::vector<double>{1, 2}));
}

TEST(Lowering, ShardsBeyondTheDeviceAreAnError) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2});
  {
    ShardScope s(b, 3);
    b.output("y", -x);
  }
  IPUModel model;
  model.numIPUs = 2;
  model.tilesPerIPU = 4;
  Graph g(model.createDevice().getTarget());
  program::Sequence prog;
  try {
    lowerToGraph(m, g, prog);
    FAIL();
  } catch (const IrError &e) {
    EXPECT_THAT(e.what(), HasSubstr("op 0 (neg) is on IPU 3 but there are 2 "
                                    "IPUs"));
  }
}

TEST(Lowering, EveryOpKindMatchesTheInterpreter) {
  const Module m = test::everyOpModule();
  Feeds feeds;
  for (ValueId id : m.inputs()) {
    const ValueType &t = m.typeOf(id);
    std::vector<double> v(t.numElements());
    for (std::size_t k = 0; k < v.size(); ++k)
      v[k] = t.dtype == INT ? double((k * 7) % 5) - 1
                            : 0.3 + 0.7 * double((k * 37 + 11) % 17) / 17.0 -
                                  (m.value(id).name == "x" ? 0.6 : 0.0);
    feeds[m.value(id).name] = {t.dtype, t.shape, v};
  }
  std::vector<ValueId> read;
  for (const Op &op : m.ops())
    read.insert(read.end(), op.results.begin(), op.results.end());
  const Evaluation want = interpret(m, feeds);
  test::LoweredRun got = test::runLowered(m, feeds, read, 2, 16);
  for (const Op &op : m.ops())
    for (ValueId r : op.results)
      test::expectClose(got.values.at(r), want.at(r), 2e-5,
                        std::string(opKindName(op.kind)) + " %" +
                            std::to_string(r));
}

TEST(Lowering, LeavesTakeTheLayoutTheirFirstUserPrefers) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {64, 96});
  Value w = b.variable("w", {96, 128}, init::glorotUniform(3));
  b.output("y", matmul(x, w));
  IPUModel model;
  model.tilesPerIPU = 16;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  program::Sequence prog;
  LoweredModule l = lowerToGraph(m, g, prog);
  Graph ref(device.getTarget());
  const Tensor rhs = ops::createMatMulInputRHS(ref, FLOAT, {64, 96}, {96, 128});
  const Tensor lhs = ops::createMatMulInputLHS(ref, FLOAT, {64, 96}, {96, 128});
  EXPECT_EQ(g.getTileMapping(l.tensor(w)), ref.getTileMapping(rhs));
  EXPECT_EQ(g.getTileMapping(l.tensor(x)), ref.getTileMapping(lhs));
  EXPECT_FALSE(l.sharded());
  EXPECT_EQ(l.numCopies(), 0u);
}

TEST(Lowering, VariablesStartFromTheirInitialisers) {
  Module m;
  Builder b(m);
  Value w = b.variable("w", {3, 4}, init::glorotNormal(9));
  Value unused = b.variable("unused", {5}, init::uniform(-2, 2, 4));
  Value c = b.constant({1, 2, 3}, {3}, INT, "c");
  b.output("c", c);
  test::LoweredRun r = test::runLowered(m, {}, {w.id(), unused.id(), c.id()});
  auto asFloat = [](std::vector<double> v) {
    for (double &x : v)
      x = static_cast<float>(x);
    return v;
  };
  EXPECT_EQ(r.values[w.id()].values,
            asFloat(materialise(init::glorotNormal(9), FLOAT, {3, 4})));
  EXPECT_EQ(r.values[unused.id()].values,
            asFloat(materialise(init::uniform(-2, 2, 4), FLOAT, {5})));
  EXPECT_EQ(r.values[c.id()].values, (std::vector<double>{1, 2, 3}));
}

TEST(Lowering, ElementwiseChainsFuseIntoOneMapPerRoot) {
  // y = relu(x * 0.5 + b) - x: "x * 0.5", "+ b" and "relu" have one user
  // each and as many elements as y; x has two users, b broadcasts.
  auto build = [](Module &m) {
    Builder b(m);
    Value x = b.input("x", FLOAT, {4, 6});
    Value bias = b.input("b", FLOAT, {6});
    Value h = relu(x * 0.5 + bias);
    Value y = h - x;
    b.output("y", y);
    return std::make_pair(h, y);
  };
  Module m;
  const auto [h, y] = build(m);
  Feeds feeds;
  std::vector<double> xs(24), bs(6);
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = std::sin(double(i)) * 3;
  for (std::size_t i = 0; i < bs.size(); ++i)
    bs[i] = 0.25 * double(i) - 0.5;
  feeds["x"] = {FLOAT, {4, 6}, xs};
  feeds["b"] = {FLOAT, {6}, bs};
  const Evaluation want = interpret(m, feeds);

  std::size_t fused = 0;
  auto count = [&](const Graph &, const LoweredModule &l) {
    fused = l.numFused();
  };
  // Reading only y leaves the three inner values to y's map.
  test::LoweredRun got = test::runLowered(m, feeds, {y.id()}, 1, 4, count);
  EXPECT_EQ(fused, 3u);
  test::expectClose(got.values.at(y.id()), want.at(y.id()), 1e-6, "y");
  // A value asked for keeps its tensor: h is computed, then y from it.
  got = test::runLowered(m, feeds, {y.id(), h.id()}, 1, 4, count);
  EXPECT_EQ(fused, 2u);
  test::expectClose(got.values.at(h.id()), want.at(h.id()), 1e-6, "h");
  test::expectClose(got.values.at(y.id()), want.at(y.id()), 1e-6, "y");
}

// A tree of 23 nodes (11 ops, their constants and x) is one map: the
// fusion takes trees up to the map code's 24 registers (it stopped at 16,
// which split a gated Adam weight update in two).
TEST(Lowering, ATreeOfTwentyThreeNodesIsOneMap) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {8});
  Value y = x;
  for (int i = 0; i < 11; ++i)
    y = i % 2 ? y * (1.0 + 0.125 * i) : y + 0.5 * i;
  b.output("y", y);
  std::vector<double> xs(8);
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = std::cos(double(i)) * 2;
  Feeds feeds{{"x", {FLOAT, {8}, xs}}};
  const Evaluation want = interpret(m, feeds);
  std::size_t fused = 0;
  auto count = [&](const Graph &, const LoweredModule &l) {
    fused = l.numFused();
  };
  test::LoweredRun got = test::runLowered(m, feeds, {y.id()}, 1, 2, count);
  EXPECT_EQ(fused, 10u);
  test::expectClose(got.values.at(y.id()), want.at(y.id()), 1e-6, "y");
}

TEST(Lowering, FusedValuesHaveNoTensorUnlessKept) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {8});
  Value inner = exp(x);
  b.output("y", inner * 2.0);
  IPUModel model;
  model.tilesPerIPU = 2;
  Graph g(model.createDevice().getTarget());
  program::Sequence prog;
  const LoweredModule l = lowerToGraph(m, g, prog);
  EXPECT_EQ(l.numFused(), 1u);
  try {
    (void)l.tensor(inner);
    FAIL() << "a fused value has a tensor";
  } catch (const IrError &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("LoweringOptions::keep"));
  }
  Graph g2(model.createDevice().getTarget());
  LoweringOptions keep;
  keep.keep = {inner.id()};
  EXPECT_EQ(lowerToGraph(m, g2, prog, keep).numFused(), 0u);
}

// A variable's update is written into the variable when its map is the
// last reader of the variable's old value; a later reader prevents it.
TEST(Lowering, UpdateIsWrittenInPlaceOnlyAfterTheVariablesLastReader) {
  for (bool laterReader : {false, true}) {
    Module m;
    Builder b(m);
    Value x = b.input("x", FLOAT, {8});
    Value w = b.variable("w", {8}, init::zeros());
    b.output("y", w * x);
    Value next = w - x * 0.1;
    if (laterReader)
      b.output("z", w * 2.0);
    b.output("next", next);
    IPUModel model;
    model.tilesPerIPU = 2;
    Graph g(model.createDevice().getTarget());
    program::Sequence prog;
    LoweringOptions o;
    o.updateInPlace = {{w.id(), next.id()}};
    const LoweredModule l = lowerToGraph(m, g, prog, o);
    EXPECT_EQ(l.tensor(next).runs() == l.tensor(w).runs(), !laterReader)
        << (laterReader ? "with" : "without") << " a later reader";
  }
}

// Mixed precision's float weights reach a convolution through a cast: the
// cast's result is rearranged into the layout the convolution's plan reads
// (createWeights'), not left spread over the tiles like the variable, where
// the input-gradient convolution's transposed read of it crossed a tile at
// almost every element. The values stay the interpreter's.
TEST(Lowering, ACastVariableIsRearrangedAsItsFirstUserPrefers) {
  Module m;
  Builder b(m);
  const Shape xShape{2, 32, 4, 4};
  Value x = b.input("x", HALF, xShape);
  Value w = b.variable("w", {48, 32, 3, 3}, init::glorotUniform(5));
  Value wh = cast(w, HALF);
  const Conv2dOptions o{.padLower = {1, 1}, .padUpper = {1, 1}};
  Value dx = conv2dBackpropInput(conv2d(x, wh, o), wh, o, xShape);
  b.output("dx", dx);
  std::vector<double> xs(2 * 32 * 4 * 4);
  for (std::size_t k = 0; k < xs.size(); ++k)
    xs[k] = double((k * 37 + 11) % 17) / 17.0 - 0.5;
  const Feeds feeds{{"x", {HALF, xShape, xs}}};
  const auto inspect = [&](const Graph &g, const LoweredModule &l) {
    Graph ref(g.getTarget());
    ops::ConvParams p(HALF, 2, {4, 4}, {3, 3}, 32, 48);
    p.paddingLower = p.paddingUpper = {1, 1};
    const Tensor want = ops::createWeights(ref, p).reshape({48, 32, 3, 3});
    EXPECT_EQ(g.getTileMapping(l.tensor(wh)), ref.getTileMapping(want));
    EXPECT_NE(g.getTileMapping(l.tensor(w)), ref.getTileMapping(want));
  };
  const test::LoweredRun got =
      test::runLowered(m, feeds, {wh.id(), dx.id()}, 1, 16, inspect);
  const Evaluation want = interpret(m, feeds);
  test::expectClose(got.values.at(wh.id()), want.at(wh.id()), 1e-3, "cast");
  test::expectClose(got.values.at(dx.id()), want.at(dx.id()), 1e-2, "dx");
}

// A variable laid out like another is its clone: same tiles, same order.
TEST(Lowering, LayoutLikeClonesTheOtherVariablesLayout) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {16, 64});
  Value w = b.variable("w", {64, 48}, init::zeros());
  Value s = b.variable("s", {64, 48}, init::zeros(), FLOAT, false);
  b.output("y", matmul(x, w));
  b.output("t", s * 2.0);
  IPUModel model;
  model.tilesPerIPU = 16;
  Graph g(model.createDevice().getTarget());
  program::Sequence prog;
  LoweringOptions o;
  o.layoutLike = {{s.id(), w.id()}};
  const LoweredModule l = lowerToGraph(m, g, prog, o);
  EXPECT_EQ(g.getTileMapping(l.tensor(s)), g.getTileMapping(l.tensor(w)));
  EXPECT_EQ(l.tensor(s).runs().size(), l.tensor(w).runs().size());
}

// Small variables mapped linearly from tile 0 would all share tile 0, and
// so would a vertex of every op on them (a model's biases, norm
// parameters and their optimizer state made tile 0 ResNet-50's busiest):
// each starts where the one before ended.
TEST(Lowering, SmallVariablesAreSpreadOverTheTiles) {
  Module m;
  Builder b(m);
  std::vector<Value> vars;
  for (int i = 0; i < 46; ++i) {
    // 8 floats: below mapTensorLinearly's 128 bytes a tile, so one tile.
    vars.push_back(b.variable("v" + std::to_string(i), {8}, init::zeros()));
    b.output("o" + std::to_string(i), vars.back() * 2.0);
  }
  // 100 floats: four tiles (32 a tile), wrapping round past the last.
  Value wide = b.variable("wide", {100}, init::zeros());
  b.output("w", wide * 2.0);
  IPUModel model;
  model.tilesPerIPU = 16;
  Graph g(model.createDevice().getTarget());
  program::Sequence prog;
  const LoweredModule l = lowerToGraph(m, g, prog);
  std::vector<unsigned> perTile(16, 0);
  for (const Value &v : vars) {
    const TileMapping tm = g.getTileMapping(l.tensor(v));
    for (unsigned tile = 0; tile < tm.size(); ++tile)
      perTile[tile] += !tm[tile].empty();
  }
  // 46 on 16 tiles: 3 on the first 14 and 2 on the others.
  for (unsigned tile = 0; tile < 16; ++tile)
    EXPECT_EQ(perTile[tile], tile < 14 ? 3u : 2u) << "tile " << tile;
  const TileMapping tm = g.getTileMapping(l.tensor(wide));
  const std::vector<unsigned> wideTiles{14, 15, 0, 1};
  for (unsigned tile = 0; tile < 16; ++tile) {
    const bool used =
        std::find(wideTiles.begin(), wideTiles.end(), tile) != wideTiles.end();
    EXPECT_EQ(!tm[tile].empty(), used) << "tile " << tile;
  }
}
