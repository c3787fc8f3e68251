// Pooling: MAX, AVG and SUM forward and input gradients against the host
// reference in float and half on 1, 4 and 1472 tiles; ties of the maximum;
// averages next to padding; finite differences; errors; cycle estimates.
#include "OpsTestUtil.hpp"

#include "tessera/ops/Pooling.hpp"
#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace tessera;
using namespace tessera::ops;
using namespace tessera::test;
using ::testing::HasSubstr;

namespace {

std::size_t product(const std::vector<std::size_t> &s) {
  std::size_t n = 1;
  for (std::size_t d : s)
    n *= d;
  return n;
}

std::vector<double> rounded(Type t, std::vector<double> v) {
  for (double &x : v)
    x = reference::roundTo(t, x);
  return v;
}

PoolParams params(PoolingType type, Type dType, std::size_t n, std::size_t c,
                  std::array<std::size_t, 2> in, std::array<std::size_t, 2> k,
                  std::array<unsigned, 2> stride,
                  std::array<unsigned, 2> padLower = {0, 0},
                  std::array<unsigned, 2> padUpper = {0, 0}) {
  return PoolParams(type, in, k, stride, padLower, padUpper, c, n, dType);
}

std::vector<PoolParams> cases(PoolingType type, Type t) {
  return {params(type, t, 2, 3, {6, 6}, {2, 2}, {2, 2}),
          params(type, t, 1, 2, {7, 5}, {3, 3}, {2, 1}, {1, 1}, {1, 1}),
          params(type, t, 2, 1, {5, 9}, {3, 2}, {1, 3}, {0, 1}, {2, 0}),
          params(type, t, 1, 2, {4, 4}, {1, 1}, {1, 1})};
}

RunResult runPool(unsigned tiles, const PoolParams &p,
                  const std::vector<double> &x, const std::vector<double> &dy) {
  return runOp(
      tiles,
      {{p.dType, p.getInputShape(), x}, {p.dType, p.getOutputShape(), dy}},
      [&](Graph &g, const auto &in, program::Sequence &prog) {
        Tensor out = pool(g, p, in[0], prog);
        Tensor dIn = poolInputGradient(g, p, in[0], out, in[1], prog);
        return std::vector<Tensor>{out, dIn};
      });
}

void expectClose(const std::vector<double> &got,
                 const std::vector<double> &want, Type t,
                 const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tol = t == HALF ? 4e-3 : 1e-5;
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i])))
        << what << " at element " << i;
}

void checkPool(unsigned tiles, const PoolParams &p) {
  const auto x = rounded(p.dType, spread(product(p.getInputShape()), -2, 2));
  const auto dy = rounded(p.dType, spread(product(p.getOutputShape()), -1, 1));
  const RunResult r = runPool(tiles, p, x, dy);
  const std::string what = p.toString() + " on " + std::to_string(tiles);
  expectClose(r.outputs[0], reference::pool(p, x), p.dType, what);
  expectClose(r.outputs[1], reference::poolInputGradient(p, x, dy), p.dType,
              what + " gradient");
}

TEST(Pool, MatchesReferenceOnOneAndFourTiles) {
  for (PoolingType type :
       {PoolingType::MAX, PoolingType::AVG, PoolingType::SUM})
    for (Type t : {FLOAT, HALF})
      for (unsigned tiles : {1u, 4u})
        for (const PoolParams &p : cases(type, t))
          checkPool(tiles, p);
}

TEST(Pool, MatchesReferenceOn1472Tiles) {
  for (PoolingType type :
       {PoolingType::MAX, PoolingType::AVG, PoolingType::SUM})
    for (Type t : {FLOAT, HALF})
      checkPool(1472,
                params(type, t, 1, 2, {5, 4}, {3, 2}, {2, 2}, {1, 0}, {1, 1}));
}

TEST(Pool, MaxGradientGoesToTheFirstMaximumOnTies) {
  // All equal: each 2x2 window sends its gradient to its top-left element.
  const PoolParams p =
      params(PoolingType::MAX, FLOAT, 1, 1, {4, 4}, {2, 2}, {2, 2});
  const RunResult r = runPool(4, p, std::vector<double>(16, 1.5), {1, 2, 3, 4});
  const std::vector<double> want = {1, 0, 2, 0, 0, 0, 0, 0,
                                    3, 0, 4, 0, 0, 0, 0, 0};
  EXPECT_EQ(r.outputs[0], (std::vector<double>{1.5, 1.5, 1.5, 1.5}));
  EXPECT_EQ(r.outputs[1], want);
  // Overlapping windows add their gradients at a shared maximum.
  const PoolParams q =
      params(PoolingType::MAX, FLOAT, 1, 1, {1, 3}, {1, 2}, {1, 1});
  const RunResult s = runPool(1, q, {0, 5, 1}, {2, 3});
  EXPECT_EQ(s.outputs[1], (std::vector<double>{0, 5, 0}));
}

TEST(Pool, AverageCountsOnlyInputElements) {
  // 3x3 windows, stride 1, padding 1 on a 2x2 input: every window holds
  // the whole input, so every output is the input's mean.
  const PoolParams p = params(PoolingType::AVG, FLOAT, 1, 1, {2, 2}, {3, 3},
                              {1, 1}, {1, 1}, {1, 1});
  const RunResult r = runPool(1, p, {1, 2, 3, 6}, {4, 4, 4, 4});
  EXPECT_EQ(r.outputs[0], (std::vector<double>{3, 3, 3, 3}));
  EXPECT_EQ(r.outputs[1], (std::vector<double>{4, 4, 4, 4}));
  // A corner window of a 3x3 input with padding 1 holds 4 elements.
  const PoolParams q = params(PoolingType::AVG, FLOAT, 1, 1, {3, 3}, {2, 2},
                              {2, 2}, {1, 1}, {0, 0});
  const RunResult s = runPool(1, q, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4});
  EXPECT_EQ(s.outputs[0], (std::vector<double>{1, 2.5, 5.5, 7}));
  EXPECT_EQ(s.outputs[1], (std::vector<double>{1, 1, 1, 1.5, 1, 1, 1.5, 1, 1}));
}

TEST(Pool, GradientsMatchFiniteDifferences) {
  for (PoolingType type :
       {PoolingType::MAX, PoolingType::AVG, PoolingType::SUM}) {
    const PoolParams p =
        params(type, FLOAT, 1, 2, {5, 6}, {3, 2}, {2, 2}, {1, 0}, {1, 1});
    // Distinct values keep the maximum's position stable under a step.
    std::vector<double> x(product(p.getInputShape()));
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = double((i * 37) % x.size()) * 0.1;
    const auto dy = spread(product(p.getOutputShape()), -1, 1);
    const RunResult r = runPool(4, p, x, dy);
    const auto loss = [&](const std::vector<double> &xs) {
      const auto out = reference::pool(p, xs);
      double l = 0;
      for (std::size_t i = 0; i < out.size(); ++i)
        l += out[i] * dy[i];
      return l;
    };
    const double h = 1e-3;
    for (std::size_t i = 0; i < x.size(); ++i) {
      auto up = x, down = x;
      up[i] += h;
      down[i] -= h;
      EXPECT_NEAR(r.outputs[1][i], (loss(up) - loss(down)) / (2 * h), 1e-4)
          << poolingTypeName(type) << " element " << i;
    }
  }
}

TEST(Pool, AverageAndSumGradientsNeedNoForwardTensors) {
  const PoolParams p = params(PoolingType::SUM, FLOAT, 1, 1, {2, 2}, {2, 2},
                              {1, 1}, {0, 0}, {1, 1});
  const RunResult r =
      runOp(1, {{FLOAT, p.getOutputShape(), {1, 2, 3, 4}}},
            [&](Graph &g, const auto &in, program::Sequence &prog) {
              return std::vector<Tensor>{
                  poolInputGradient(g, p, Tensor(), Tensor(), in[0], prog)};
            });
  EXPECT_EQ(r.outputs[0], (std::vector<double>{1, 3, 4, 10}));
}

TEST(PoolErrors, SayWhatIsWrong) {
  Graph g(Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "4"}}));
  addCodelets(g);
  program::Sequence prog;
  const PoolParams p =
      params(PoolingType::MAX, FLOAT, 1, 2, {4, 4}, {2, 2}, {2, 2});
  Tensor bad = g.addVariable(FLOAT, {1, 2, 4, 5});
  try {
    pool(g, p, bad, prog);
    ADD_FAILURE() << "expected a ShapeError";
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("pool: the input has shape [1, 2, 4, 5] "
                                    "but the parameters need [1, 2, 4, 4]"));
  }
  const PoolParams big =
      params(PoolingType::AVG, FLOAT, 1, 1, {2, 2}, {4, 2}, {1, 1}, {1, 0});
  try {
    big.validate();
    ADD_FAILURE() << "expected a ShapeError";
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("kernel height 4 is larger than the "
                                    "padded input height 2 + 1 + 0 = 3"));
  }
  EXPECT_THROW(
      params(PoolingType::SUM, INT, 1, 1, {2, 2}, {1, 1}, {1, 1}).validate(),
      TypeError);
  Tensor x = g.addVariable(FLOAT, p.getInputShape());
  Tensor dy = g.addVariable(FLOAT, p.getOutputShape());
  EXPECT_THROW(poolInputGradient(g, p, x, Tensor(), dy, prog), ShapeError);
}

TEST(PoolEstimates, PositiveDeterministicAndGrowing) {
  const auto cycles = [](std::size_t batch) {
    const PoolParams p =
        params(PoolingType::MAX, FLOAT, batch, 4, {8, 8}, {2, 2}, {2, 2});
    return runPool(4, p, std::vector<double>(product(p.getInputShape())),
                   std::vector<double>(product(p.getOutputShape())))
        .cycles;
  };
  const std::uint64_t a = cycles(1);
  EXPECT_GT(a, 0u);
  EXPECT_EQ(a, cycles(1));
  EXPECT_GT(cycles(8), a);
}

} // namespace
