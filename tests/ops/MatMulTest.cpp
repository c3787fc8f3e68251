// The matmul family: products against the host reference in float and half
// (both partials types) on 1, 4 and 1472 tiles, grouped products, matMulAcc,
// the layouts createMatMulInput* give, errors, the planner's choices and the
// cycle estimates.
#include "OpsTestUtil.hpp"

#include "ops/matmul/MatMulInternal.hpp"
#include "ops/matmul/MatMulKernel.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/ops/MatMul.hpp"
#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <numeric>

using namespace tessera;
using testing::HasSubstr;

namespace {

// Small integers: every product and sum below is exact in float, and in
// half for the sizes used, so results can be compared exactly.
std::vector<double> ints(std::size_t n, unsigned seed) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = double(int((i * 2654435761u + seed * 40503u) % 7) - 3);
  return v;
}

struct Case {
  std::size_t g = 1, m = 1, k = 1, n = 1;
};

enum class Layout { Linear, Planned };

struct Outcome {
  std::vector<double> c;
  std::uint64_t cycles = 0;
  /// Compute steps the host ran as MatMulHostSum (the K-slices summed in
  /// the block kernel).
  unsigned summedSteps = 0;
};

Target targetOf(unsigned tiles) {
  IPUModel model;
  model.tilesPerIPU = tiles;
  return model.getTarget();
}

std::vector<std::byte> bytesOf(Type type, const std::vector<double> &v) {
  std::vector<float> f(v.begin(), v.end());
  std::vector<std::byte> raw(f.size() * typeSize(type));
  convertElements(FLOAT, f.data(), type, raw.data(), f.size());
  return raw;
}

std::vector<double> read(Engine &e, const std::string &h, const Tensor &t) {
  const Type type = t.elementType();
  std::vector<std::byte> raw(t.numElements() * typeSize(type));
  e.readTensor(h, raw.data(), raw.data() + raw.size());
  std::vector<double> v(t.numElements());
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = elementAsDouble(type, raw.data() + i * typeSize(type));
  return v;
}

// Runs one product (grouped when c.g > 1, or when `grouped`) with inputs a,
// b and returns C.
Outcome run(unsigned tiles, const Case &c, Type in, Type out,
            const std::vector<double> &a, const std::vector<double> &b,
            const OptionFlags &opts = {}, Layout layout = Layout::Linear,
            bool grouped = false, const OptionFlags &engineOpts = {}) {
  IPUModel model;
  model.tilesPerIPU = tiles;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  grouped = grouped || c.g > 1;
  std::vector<std::size_t> as{c.m, c.k}, bs{c.k, c.n};
  if (grouped) {
    as.insert(as.begin(), c.g);
    bs.insert(bs.begin(), c.g);
  }
  Tensor A, B;
  if (layout == Layout::Planned) {
    A = grouped
            ? ops::createMatMulGroupedInputLHS(g, in, out, as, bs, "A", opts)
            : ops::createMatMulInputLHS(g, in, out, as, bs, "A", opts);
    B = grouped
            ? ops::createMatMulGroupedInputRHS(g, in, out, as, bs, "B", opts)
            : ops::createMatMulInputRHS(g, in, out, as, bs, "B", opts);
  } else {
    A = g.addVariable(in, as, "A");
    B = g.addVariable(in, bs, "B");
    mapTensorLinearly(g, A);
    mapTensorLinearly(g, B);
  }
  g.createHostWrite("a", A);
  g.createHostWrite("b", B);
  program::Sequence prog;
  Tensor C = grouped ? ops::matMulGrouped(g, A, B, prog, out, "mm", opts)
                     : ops::matMul(g, A, B, prog, out, "mm", opts);
  g.createHostRead("c", C);
  Engine e(g, prog, engineOpts);
  e.load(device);
  const auto ra = bytesOf(in, a), rb = bytesOf(in, b);
  e.writeTensor("a", ra.data(), ra.data() + ra.size());
  e.writeTensor("b", rb.data(), rb.data() + rb.size());
  e.run();
  Outcome o;
  o.c = read(e, "c", C);
  for (std::uint64_t x : e.getCycleCounts())
    o.cycles += x;
  const Executable &exe = e.getExecutable();
  for (const Step &st : exe.steps)
    if (st.kind == StepKind::Compute && st.count > 0 &&
        exe.vertexClasses[exe.vertices[st.addr].vertexClass].name ==
            "tessera::ops::MatMulHostSum")
      ++o.summedSteps;
  return o;
}

// A float variable of \p shape mapped linearly, which the host writes as
// \p handle.
Tensor hostInput(Graph &g, const std::vector<std::size_t> &shape,
                 const std::string &handle) {
  Tensor t = g.addVariable(FLOAT, shape, handle);
  mapTensorLinearly(g, t);
  g.createHostWrite(handle, t);
  return t;
}

std::vector<double> reference(const Case &c, const std::vector<double> &a,
                              const std::vector<double> &b) {
  return ops::reference::matMulGrouped(a, b, c.g, c.m, c.k, c.n);
}

std::string name(const Case &c, unsigned tiles) {
  return std::to_string(c.g) + "x" + std::to_string(c.m) + "x" +
         std::to_string(c.k) + "x" + std::to_string(c.n) + " on " +
         std::to_string(tiles) + " tiles";
}

// The estimated cycles of compiling one product (nothing runs).
std::uint64_t compiledCycles(const Target &target, const Case &c, Type in,
                             const OptionFlags &opts) {
  Graph g(target);
  ops::addCodelets(g);
  const std::vector<std::size_t> as{c.m, c.k}, bs{c.k, c.n};
  Tensor A = ops::createMatMulInputLHS(g, in, as, bs, "A", opts);
  Tensor B = ops::createMatMulInputRHS(g, in, as, bs, "B", opts);
  program::Sequence prog;
  ops::matMul(g, A, B, prog, "mm", opts);
  return compileGraph(g, {prog}).stepCyclesOnce();
}

} // namespace

TEST(MatMul, FloatMatchesReferenceOnOneFourAndAllTiles) {
  const std::vector<Case> cases{{1, 1, 1, 1},    {1, 5, 7, 3},
                                {1, 17, 33, 9},  {1, 40, 24, 70},
                                {1, 1, 3000, 1}, {1, 2, 999, 3}};
  for (unsigned tiles : {1u, 4u, 1472u})
    for (const Case &c : cases) {
      const auto a = ints(c.m * c.k, 1), b = ints(c.k * c.n, 2);
      EXPECT_EQ(run(tiles, c, FLOAT, FLOAT, a, b).c, reference(c, a, b))
          << name(c, tiles);
    }
}

TEST(MatMul, FloatWithNonIntegerValuesIsCloseToReference) {
  const Case c{1, 33, 300, 19};
  const auto a = test::spread(c.m * c.k, -1, 1);
  const auto b = test::spread(c.k * c.n, -2, 1);
  for (unsigned tiles : {1u, 1472u}) {
    const auto got = run(tiles, c, FLOAT, FLOAT, a, b).c;
    const auto want = reference(c, a, b);
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4) << i << " " << name(c, tiles);
  }
}

TEST(MatMul, HalfMatchesReferenceWithFloatAndHalfPartials) {
  const std::vector<Case> cases{{1, 3, 5, 2}, {1, 19, 37, 21}, {1, 8, 64, 16}};
  for (const char *partials : {"float", "half"})
    for (Type out : {HALF, FLOAT})
      for (unsigned tiles : {1u, 4u, 1472u})
        for (const Case &c : cases) {
          const auto a = ints(c.m * c.k, 3), b = ints(c.k * c.n, 4);
          const auto got =
              run(tiles, c, HALF, out, a, b, {{"partialsType", partials}}).c;
          EXPECT_EQ(got, reference(c, a, b))
              << name(c, tiles) << " partials " << partials << " output "
              << typeName(out);
        }
}

TEST(MatMul, HalfPartialsRoundRunningSumsToHalf) {
  // 2048 + 31 x 0.25: float partials keep 2055.75; half partials round the
  // running sum after each 16 products (2051.75 -> 2052, then 2056).
  const Case c{1, 1, 32, 1};
  std::vector<double> a(32, 0.25), b(32, 1.0);
  a[0] = 2048;
  EXPECT_EQ(run(1, c, HALF, FLOAT, a, b, {{"partialsType", "float"}}).c[0],
            2055.75);
  EXPECT_EQ(run(1, c, HALF, FLOAT, a, b, {{"partialsType", "half"}}).c[0],
            2056.0);
  // A half result rounds the float sum once: 2055.75 -> 2056.
  EXPECT_EQ(run(1, c, HALF, HALF, a, b).c[0], 2056.0);
}

TEST(MatMul, PlannedLayoutsGiveTheSameResults) {
  const std::vector<Case> cases{{1, 13, 29, 35}, {1, 64, 64, 64}};
  for (unsigned tiles : {4u, 1472u})
    for (const Case &c : cases) {
      const auto a = ints(c.m * c.k, 5), b = ints(c.k * c.n, 6);
      EXPECT_EQ(run(tiles, c, FLOAT, FLOAT, a, b, {}, Layout::Planned).c,
                reference(c, a, b))
          << name(c, tiles);
      EXPECT_EQ(run(tiles, c, HALF, HALF, a, b, {{"partialsType", "half"}},
                    Layout::Planned)
                    .c,
                reference(c, a, b))
          << name(c, tiles);
    }
}

// A transposed view of each operand, stored [k, m] and [n, k] and mapped
// linearly (as x^T in a weight gradient): the product is right and the
// simulator moves no bytes for it, since every vertex reads its pieces of
// the operands where they lie.
TEST(MatMul, TransposedOperandsAreReadInPlace) {
  const Case c{1, 40, 96, 24};
  const auto at = ints(c.k * c.m, 3), bt = ints(c.n * c.k, 4);
  std::vector<double> a(c.m * c.k), b(c.k * c.n);
  for (std::size_t i = 0; i < c.m; ++i)
    for (std::size_t q = 0; q < c.k; ++q)
      a[i * c.k + q] = at[q * c.m + i];
  for (std::size_t q = 0; q < c.k; ++q)
    for (std::size_t j = 0; j < c.n; ++j)
      b[q * c.n + j] = bt[j * c.k + q];
  for (unsigned tiles : {4u, 1472u}) {
    IPUModel model;
    model.tilesPerIPU = tiles;
    Device device = model.createDevice();
    Graph g(device.getTarget());
    ops::addCodelets(g);
    Tensor At = hostInput(g, {c.k, c.m}, "a");
    Tensor Bt = hostInput(g, {c.n, c.k}, "b");
    program::Sequence prog;
    Tensor C = ops::matMul(g, At.transpose(), Bt.transpose(), prog, "mm");
    g.createHostRead("c", C);
    const Executable exe = compileGraph(g, {prog});
    std::size_t exchanged = 0;
    for (const Step &st : exe.steps)
      if (st.kind == StepKind::Exchange)
        exchanged += st.b;
    EXPECT_EQ(exchanged, 0u) << "copy ops on " << tiles << " tiles";
    Engine e(g, prog);
    e.load(device);
    const auto ra = bytesOf(FLOAT, at), rb = bytesOf(FLOAT, bt);
    e.writeTensor("a", ra.data(), ra.data() + ra.size());
    e.writeTensor("b", rb.data(), rb.data() + rb.size());
    e.run();
    EXPECT_EQ(read(e, "c", C), reference(c, a, b)) << name(c, tiles);
  }
}

// A dense layer's input as Keras flattens channel-planar activations:
// X [n, c, hw] viewed as [n, hw * c], so neighbours in a row (and in a
// column) lie apart in memory and each element is a piece of its own. The
// product copies A once into its planned layout, so its block vertices
// read fewer pieces of A than it has elements (reading it in place, each
// element would be at least one piece), and the result is unchanged, with
// host kernels or without.
TEST(MatMul, ScatteredOperandIsRearrangedIntoThePlannedLayout) {
  const std::size_t n = 16, chans = 24, hw = 36, cols = 40;
  const Case c{1, n, hw * chans, cols};
  const auto x = ints(n * chans * hw, 7), b = ints(c.k * c.n, 8);
  std::vector<double> a(c.m * c.k);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t p = 0; p < hw; ++p)
      for (std::size_t ch = 0; ch < chans; ++ch)
        a[i * c.k + p * chans + ch] = x[(i * chans + ch) * hw + p];
  for (bool hostKernels : {true, false}) {
    IPUModel model;
    Device device = model.createDevice();
    Graph g(device.getTarget());
    ops::addCodelets(g);
    Tensor X = hostInput(g, {n, chans, hw}, "x");
    Tensor B = hostInput(g, {c.k, c.n}, "b");
    program::Sequence prog;
    const Tensor A = X.dimShuffle({0, 2, 1}).reshape({c.m, c.k});
    Tensor C = ops::matMul(g, A, B, prog, "mm");
    g.createHostRead("c", C);
    std::size_t aPieces = 0;
    for (const VertexData &v : g.data().vertices) {
      const codelet::VertexClassInfo &info = v.vertexClass->info;
      if (info.name.rfind("tessera::ops::MatMulBlock", 0) != 0)
        continue;
      for (std::size_t f = 0; f < info.fields.size(); ++f)
        if (info.fields[f].name == "a")
          aPieces += v.fields[f].tensors.size();
    }
    EXPECT_GT(aPieces, 0u);
    EXPECT_LT(aPieces, c.m * c.k);
    Engine e(g, prog, {{"engine.hostKernels", hostKernels ? "true" : "false"}});
    e.load(device);
    const auto rx = bytesOf(FLOAT, x), rb = bytesOf(FLOAT, b);
    e.writeTensor("x", rx.data(), rx.data() + rx.size());
    e.writeTensor("b", rb.data(), rb.data() + rb.size());
    e.run();
    EXPECT_EQ(read(e, "c", C), reference(c, a, b))
        << "hostKernels " << hostKernels;
  }
}

// The host kernel (a few large products in place of one small one per tile)
// writes exactly the bytes the tiles' vertices do, with or without a
// K-split, in float and in half with either partials type, and changes no
// estimate.
TEST(MatMul, HostKernelWritesExactlyWhatTheTilesWould) {
  const OptionFlags tilesOnly{{"engine.hostKernels", "false"}};
  struct Types {
    Type in, out;
    const char *partials;
  };
  const std::vector<Types> types{
      {FLOAT, FLOAT, "float"}, {HALF, HALF, "half"}, {HALF, HALF, "float"}};
  const std::vector<Case> cases{
      {1, 64, 512, 48}, {1, 200, 40, 300}, {3, 24, 96, 40}};
  for (const Case &c : cases)
    for (const Types &t : types) {
      std::vector<double> a(c.g * c.m * c.k), b(c.g * c.k * c.n);
      for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = std::sin(0.37 * double(i) + 1.0);
      for (std::size_t i = 0; i < b.size(); ++i)
        b[i] = std::cos(0.91 * double(i) + 2.0);
      const OptionFlags opts{{"partialsType", t.partials}};
      const Outcome host = run(1472, c, t.in, t.out, a, b, opts);
      const Outcome tiles = run(1472, c, t.in, t.out, a, b, opts,
                                Layout::Linear, false, tilesOnly);
      EXPECT_EQ(host.c, tiles.c) << name(c, 1472) << " " << t.partials;
      EXPECT_EQ(host.cycles, tiles.cycles) << name(c, 1472);
      // Float K-splits sum their slices in the block kernel.
      EXPECT_EQ(host.summedSteps, t.in == FLOAT && c.k >= 96 ? 1u : 0u)
          << name(c, 1472);
      EXPECT_EQ(tiles.summedSteps, 0u);
    }
}

TEST(MatMulGrouped, MatchesReferencePerGroup) {
  const std::vector<Case> cases{{3, 5, 6, 7}, {4, 1, 9, 2}, {2, 16, 40, 24}};
  for (unsigned tiles : {1u, 4u, 1472u})
    for (const Case &c : cases) {
      const auto a = ints(c.g * c.m * c.k, 7), b = ints(c.g * c.k * c.n, 8);
      EXPECT_EQ(run(tiles, c, FLOAT, FLOAT, a, b).c, reference(c, a, b))
          << name(c, tiles);
      EXPECT_EQ(run(tiles, c, HALF, FLOAT, a, b, {}, Layout::Planned).c,
                reference(c, a, b))
          << name(c, tiles);
    }
  // One group through the grouped entry point.
  const Case one{1, 6, 10, 4};
  const auto a = ints(60, 9), b = ints(40, 10);
  EXPECT_EQ(run(4, one, FLOAT, FLOAT, a, b, {}, Layout::Linear, true).c,
            reference(one, a, b));
}

namespace {

// C (linearly mapped, initialised to `c0`) += alpha A B; returns C.
std::vector<double> runAcc(unsigned tiles, const Case &c, Type type,
                           float alpha, const std::vector<double> &c0,
                           const std::vector<double> &a,
                           const std::vector<double> &b,
                           const OptionFlags &opts = {}) {
  IPUModel model;
  model.tilesPerIPU = tiles;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  const bool grouped = c.g > 1;
  auto shape = [&](std::size_t x, std::size_t y) {
    return grouped ? std::vector<std::size_t>{c.g, x, y}
                   : std::vector<std::size_t>{x, y};
  };
  Tensor A = g.addVariable(type, shape(c.m, c.k), "A");
  Tensor B = g.addVariable(type, shape(c.k, c.n), "B");
  Tensor C = g.addVariable(type, shape(c.m, c.n), "C");
  for (const Tensor &t : {A, B, C}) {
    mapTensorLinearly(g, t);
  }
  g.createHostWrite("a", A);
  g.createHostWrite("b", B);
  g.createHostWrite("c", C);
  g.createHostRead("cOut", C);
  program::Sequence prog;
  if (grouped)
    ops::matMulGroupedAcc(g, C, alpha, A, B, prog, "acc", opts);
  else
    ops::matMulAcc(g, C, alpha, A, B, prog, "acc", opts);
  Engine e(g, prog);
  e.load(device);
  const auto ra = bytesOf(type, a), rb = bytesOf(type, b),
             rc = bytesOf(type, c0);
  e.writeTensor("a", ra.data(), ra.data() + ra.size());
  e.writeTensor("b", rb.data(), rb.data() + rb.size());
  e.writeTensor("c", rc.data(), rc.data() + rc.size());
  e.run();
  return read(e, "cOut", C);
}

} // namespace

TEST(MatMulAcc, AddsScaledProductToC) {
  const std::vector<Case> cases{{1, 4, 6, 5}, {1, 21, 50, 13}, {3, 5, 8, 6}};
  for (Type type : {FLOAT, HALF})
    for (unsigned tiles : {1u, 4u, 1472u})
      for (const Case &c : cases) {
        const auto a = ints(c.g * c.m * c.k, 11), b = ints(c.g * c.k * c.n, 12);
        const auto c0 = ints(c.g * c.m * c.n, 13);
        auto want = reference(c, a, b);
        for (std::size_t i = 0; i < want.size(); ++i)
          want[i] = c0[i] + 0.5 * want[i];
        EXPECT_EQ(runAcc(tiles, c, type, 0.5f, c0, a, b), want)
            << name(c, tiles) << " " << typeName(type);
      }
}

TEST(MatMulAcc, RejectsAnOutputOfAnotherShape) {
  Graph g(targetOf(4));
  ops::addCodelets(g);
  Tensor A = g.addVariable(FLOAT, {3, 4}), B = g.addVariable(FLOAT, {4, 5});
  Tensor C = g.addVariable(FLOAT, {3, 6});
  program::Sequence prog;
  try {
    ops::matMulAcc(g, C, 1.0f, A, B, prog);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("C has shape [3, 6] but A B has shape "
                                    "[3, 5]"));
  }
}

TEST(MatMulLayout, CreatedInputsSpreadPiecesOverThePlannedTiles) {
  Graph g(targetOf(1472));
  const std::vector<std::size_t> as{200, 300}, bs{300, 100};
  const ops::MatMulPlan plan =
      ops::planMatMul(g.getTarget(), FLOAT, FLOAT, as, bs);
  for (bool lhs : {true, false}) {
    Tensor t = lhs ? ops::createMatMulInputLHS(g, FLOAT, as, bs, "A")
                   : ops::createMatMulInputRHS(g, FLOAT, as, bs, "B");
    EXPECT_EQ(t.shape(), lhs ? as : bs);
    const TileMapping mapping = g.getTileMapping(t);
    std::size_t mapped = 0, usedTiles = 0, most = 0;
    for (const auto &ivs : mapping) {
      std::size_t here = 0;
      for (const Interval &iv : ivs)
        here += iv.size();
      usedTiles += here != 0;
      mapped += here;
      most = std::max(most, here);
    }
    EXPECT_EQ(mapped, t.numElements());
    EXPECT_LE(usedTiles, plan.tilesUsed);
    // A tile holds one piece: a share of one block's rows (A) or K-rows (B).
    const std::size_t piece =
        lhs ? (plan.mBlock + plan.nSplit - 1) / plan.nSplit * plan.kBlock
            : (plan.kBlock + plan.mSplit - 1) / plan.mSplit * plan.nBlock;
    EXPECT_LE(most, piece) << plan.toString();
    EXPECT_GE(usedTiles * piece, t.numElements()) << plan.toString();
  }
}

TEST(MatMulLayout, PlannedInputsExchangeLessThanLinearOnes) {
  // Same product, two operand layouts: the planned one is estimated faster.
  // (A K-split product: with no K-split, the share of a block a tile holds
  // itself is small next to what its bus pair receives together.)
  const Case c{1, 256, 512, 128};
  const auto a = ints(c.m * c.k, 1), b = ints(c.k * c.n, 2);
  const Outcome linear = run(1472, c, FLOAT, FLOAT, a, b);
  const Outcome planned = run(1472, c, FLOAT, FLOAT, a, b, {}, Layout::Planned);
  EXPECT_EQ(linear.c, planned.c);
  EXPECT_LT(planned.cycles, linear.cycles);
}

TEST(MatMulPlan, TilePairsShareAnOperandWhereTheBusIsShared) {
  const OptionFlags half{{"partialsType", "half"}};
  const std::vector<std::size_t> s{1024, 1024};
  const ops::MatMulPlan shared =
      ops::planMatMul(Target::createIPUTarget(1), HALF, HALF, s, s, half);
  const ops::MatMulPlan alone = ops::planMatMul(
      Target::createIPUTarget(1, "ipu2", {{"tilesPerSharedExchangeBus", "1"}}),
      HALF, HALF, s, s, half);
  EXPECT_NE(shared.pairsShare, 0) << shared.toString();
  EXPECT_EQ(alone.pairsShare, 0) << alone.toString();
  EXPECT_LT(shared.exchangeCycles, alone.exchangeCycles);
  // The pair's operand is split evenly so that every pair shares it.
  EXPECT_EQ((shared.pairsShare == 'A' ? shared.nSplit : shared.mSplit) % 2, 0u);
}

TEST(MatMulErrors, InnerDimensionsMustAgree) {
  Graph g(targetOf(4));
  ops::addCodelets(g);
  Tensor A = g.addVariable(FLOAT, {2, 3}), B = g.addVariable(FLOAT, {4, 5});
  program::Sequence prog;
  try {
    ops::matMul(g, A, B, prog);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(),
                HasSubstr("matMul: A has 3 columns but B has 4 rows"));
  }
  Tensor G1 = g.addVariable(FLOAT, {2, 3, 4}),
         G2 = g.addVariable(FLOAT, {3, 4, 5});
  EXPECT_THROW(ops::matMulGrouped(g, G1, G2, prog), ShapeError);
  EXPECT_THROW(ops::matMul(g, G1, G2, prog), ShapeError);
  EXPECT_THROW(ops::matMulGrouped(g, A, B, prog), ShapeError);
}

TEST(MatMulErrors, TypesMustMatchAndBeSupported) {
  Graph g(targetOf(4));
  ops::addCodelets(g);
  Tensor A = g.addVariable(FLOAT, {2, 3}), B = g.addVariable(HALF, {3, 5});
  program::Sequence prog;
  try {
    ops::matMul(g, A, B, prog);
    FAIL() << "expected TypeError";
  } catch (const TypeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("A has type float but B has type half"));
  }
  Tensor I = g.addVariable(INT, {2, 3}), J = g.addVariable(INT, {3, 5});
  EXPECT_THROW(ops::matMul(g, I, J, prog), TypeError);
  Tensor F = g.addVariable(FLOAT, {3, 5});
  EXPECT_THROW(ops::matMul(g, A, F, prog, HALF), TypeError);
  EXPECT_THROW(ops::matMul(g, A, F, prog, "mm", {{"partialsType", "half"}}),
               TypeError);
  EXPECT_THROW(ops::matMul(g, A, F, prog, "mm", {{"partialType", "float"}}),
               OptionError);
  EXPECT_THROW(
      ops::matMul(g, A, F, prog, "mm", {{"availableMemoryProportion", "0"}}),
      OptionError);
}

TEST(MatMulPlan, SplitsKWhenOutputFitsOnFewTiles) {
  const ops::MatMulPlan p =
      ops::planMatMul(targetOf(1472), FLOAT, FLOAT, {16, 8192}, {8192, 16});
  EXPECT_GT(p.kSplit, 16u) << p.toString();
  EXPECT_GT(p.tilesUsed, 500u) << p.toString();
}

TEST(MatMulPlan, UsesOneTileWhenThereIsOnlyOne) {
  const ops::MatMulPlan p =
      ops::planMatMul(targetOf(1), HALF, HALF, {64, 64}, {64, 64});
  EXPECT_EQ(p.tilesUsed, 1u);
  EXPECT_EQ(p.exchangeCycles, 0u);
  EXPECT_EQ(p.reduceCycles, 0u);
}

TEST(MatMulPlan, RespectsAvailableMemoryProportion) {
  const Target t = targetOf(4);
  const ops::MatMulPlan roomy =
      ops::planMatMul(t, FLOAT, FLOAT, {128, 256}, {256, 128});
  const ops::MatMulPlan tight =
      ops::planMatMul(t, FLOAT, FLOAT, {128, 256}, {256, 128},
                      {{"availableMemoryProportion", "0.05"}});
  EXPECT_TRUE(tight.fitsMemory) << tight.toString();
  EXPECT_LE(tight.tempBytesPerTile, 0.05 * t.getBytesPerTile());
  EXPECT_GE(tight.totalCycles(), roomy.totalCycles());
}

TEST(MatMulPlan, PredictsTheCompiledEstimate) {
  for (const Case &c :
       {Case{1, 64, 64, 64}, Case{1, 200, 300, 100}, Case{1, 16, 2048, 16}}) {
    const Target t = targetOf(1472);
    const ops::MatMulPlan p =
        ops::planMatMul(t, FLOAT, FLOAT, {c.m, c.k}, {c.k, c.n});
    const double compiled = double(compiledCycles(t, c, FLOAT, {}));
    EXPECT_NEAR(double(p.totalCycles()), compiled, 0.1 * compiled)
        << p.toString();
  }
}

TEST(MatMulEstimate, PositiveDeterministicAndGrowingWithSize) {
  const Target t = targetOf(4);
  std::uint64_t last = 0;
  for (std::size_t s : {8u, 32u, 128u}) {
    const Case c{1, s, s, s};
    const std::uint64_t first = compiledCycles(t, c, FLOAT, {});
    EXPECT_GT(first, 0u);
    EXPECT_EQ(first, compiledCycles(t, c, FLOAT, {}));
    EXPECT_GT(first, last) << s;
    last = first;
  }
  // The cycles of a run are the compiled estimates of its steps.
  const Case c{1, 32, 32, 32};
  const auto a = ints(1024, 1), b = ints(1024, 2);
  EXPECT_EQ(run(4, c, FLOAT, FLOAT, a, b, {}, Layout::Planned).cycles,
            compiledCycles(t, c, FLOAT, {}));
}

TEST(MatMulEstimate, Fp16Of1024CubedIsNearPeakAndFarAheadOfOneTile) {
  // Compiled, not run. The bound is the AMP peak: 1024^3 MACs over 64 MACs
  // per cycle on each of 1472 tiles (~11,400 cycles). Issue 3 asks for 2x;
  // with the cost figures' 4 exchange bytes per tile cycle no plan gets
  // there: a tile doing 1/1472 of the MACs must receive at least
  // 3 (mnk/P)^(2/3) - (what it holds) ~ 22,000 halves of A, B and partials
  // (the Loomis-Whitney bound behind 2.5D matmul), ~11,000 cycles, on top of
  // the ~11,400 of compute, before syncs and the partials' additions. The
  // plan found is ~2.3x; this checks it stays there.
  const Case c{1, 1024, 1024, 1024};
  const OptionFlags half{{"partialsType", "half"}};
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t full = compiledCycles(targetOf(1472), c, HALF, half);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const double bound = 1024.0 * 1024 * 1024 / (64.0 * 1472);
  const Target one = Target::createIPUTarget(
      1, "ipu2", {{"tilesPerIPU", "1"}, {"bytesPerTile", "67108864"}});
  const std::uint64_t single = compiledCycles(one, c, HALF, half);
  std::cout << "fp16 1024^3: " << full << " cycles on 1472 tiles ("
            << double(full) / bound << "x the peak bound " << bound << "), "
            << single << " on one tile (" << double(single) / double(full)
            << "x), compiled in " << seconds << " s\n"
            << ops::planMatMul(targetOf(1472), HALF, HALF, {1024, 1024},
                               {1024, 1024}, half)
                   .toString()
            << "\n";
  EXPECT_LT(double(full), 2.4 * bound);
  EXPECT_GT(double(single), 100.0 * double(full));
}

// A case's A (m x k) and B (k x n) as float rows, as the kernels take them.
struct KernelOperands {
  KernelOperands(const Case &c, const std::vector<double> &a,
                 const std::vector<double> &b)
      : af(a.begin(), a.end()), bf(b.begin(), b.end()) {
    for (std::size_t i = 0; i < c.m; ++i)
      aRows.push_back(af.data() + i * c.k);
    for (std::size_t i = 0; i < c.k; ++i)
      bRows.push_back(bf.data() + i * c.n);
  }
  std::vector<float> af, bf;
  std::vector<const float *> aRows, bRows;
};

TEST(MatMulKernel, MatchesReferenceOnAwkwardShapes) {
  for (const Case &c : {Case{1, 1, 1, 1}, Case{1, 7, 300, 17},
                        Case{1, 13, 5, 40}, Case{1, 64, 513, 300}}) {
    const auto a = test::spread(c.m * c.k, -1, 1);
    const auto b = test::spread(c.k * c.n, -1, 2);
    const KernelOperands operands(c, a, b);
    const auto &ar = operands.aRows, &br = operands.bRows;
    std::vector<float> out(c.m * c.n, 1.0f);
    ops::matmul::gemm(c.m, c.n, c.k, ar.data(), br.data(), out.data(), c.n,
                      true);
    const auto want = reference(c, a, b);
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(out[i], want[i] + 1.0, 1e-3) << i;
  }
}

// The panel entry point reads B and writes C through per-panel pointers
// (16 columns each, the last narrower), each piece on its own here, and
// gives gemm's bits: every shape crosses an edge (narrow panels, K past a
// 256 slice, rows not a multiple of 6), with and without accumulation and
// half-precision rounding of the partial sums.
TEST(MatMulKernel, PanelsGiveGemmsBitsWithPiecesApart) {
  for (const Case &c : {Case{1, 1, 1, 1}, Case{1, 7, 300, 17},
                        Case{1, 13, 36, 256}, Case{1, 64, 513, 40}}) {
    const auto a = test::spread(c.m * c.k, -1, 1);
    const auto b = test::spread(c.k * c.n, -1, 2);
    const KernelOperands operands(c, a, b);
    const auto &ar = operands.aRows, &br = operands.bRows;
    const std::size_t panels = (c.n + 15) / 16;
    // Each panel row in its own allocation, 16 floats apart from the next.
    std::vector<std::vector<float>> bp(panels * c.k), cp(panels * c.m);
    std::vector<const float *> bPtr;
    std::vector<float *> cPtr;
    for (std::size_t p = 0; p < panels; ++p)
      for (std::size_t q = 0; q < c.k; ++q) {
        bp[p * c.k + q].assign(br[q] + 16 * p,
                               br[q] + std::min(c.n, 16 * p + 16));
        bPtr.push_back(bp[p * c.k + q].data());
      }
    for (bool accumulate : {false, true})
      for (bool round : {false, true}) {
        std::vector<float> want(c.m * c.n, 0.5f);
        ops::matmul::gemm(c.m, c.n, c.k, ar.data(), br.data(), want.data(), c.n,
                          accumulate, round);
        cPtr.clear();
        for (std::size_t p = 0; p < panels; ++p)
          for (std::size_t r = 0; r < c.m; ++r) {
            cp[p * c.m + r].assign(std::min<std::size_t>(16, c.n - 16 * p),
                                   0.5f);
            cPtr.push_back(cp[p * c.m + r].data());
          }
        ops::matmul::gemmPanels(c.m, c.n, c.k, ar.data(), bPtr.data(),
                                cPtr.data(), accumulate, round);
        for (std::size_t r = 0; r < c.m; ++r)
          for (std::size_t col = 0; col < c.n; ++col)
            ASSERT_EQ(cp[(col / 16) * c.m + r][col % 16], want[r * c.n + col])
                << "m " << c.m << " n " << c.n << " k " << c.k << " row " << r
                << " col " << col;
      }
  }
}

// The partial sums start from the first part, ((p0 + p1) + p2) + ..., in
// part order, bit for bit, over 1 to 9 parts (one to three passes of four)
// and lengths that cross the vector and chunk edges.
TEST(MatMulKernel, SumRowsAddsPartsInOrder) {
  struct Part {
    const float *p;
    const float *data() const { return p; }
  };
  for (std::size_t np : {1, 2, 4, 5, 9})
    for (std::size_t n : {1, 9, 256, 263}) {
      std::vector<std::vector<float>> rows(np, std::vector<float>(n + 3));
      std::vector<Part> parts;
      for (std::size_t r = 0; r < np; ++r) {
        for (std::size_t i = 0; i < rows[r].size(); ++i)
          rows[r][i] = 1e-3f * float(i * 7 % 13) + float(r) * 1e4f - 0.3f;
        parts.push_back({rows[r].data()});
      }
      std::vector<float> got(n);
      ops::matmul::sumRows<false>(parts, 3, n, got.data());
      for (std::size_t i = 0; i < n; ++i) {
        float want = rows[0][3 + i];
        for (std::size_t r = 1; r < np; ++r)
          want += rows[r][3 + i];
        ASSERT_EQ(got[i], want) << "parts " << np << " n " << n << " i " << i;
      }
    }
}
