// Non-linearities: every type against the host reference in float and half
// on 1, 4 and 1472 tiles, both softmax plans (whole rows on a tile, and
// reductions over tiles), in place, input gradients against finite
// differences of the reference, errors and estimates.
#include "OpsTestUtil.hpp"

#include "tessera/ops/NonLinearity.hpp"
#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace tessera;
using namespace tessera::ops;
using namespace tessera::test;

namespace {

const NonLinearityType kAllTypes[] = {
    NonLinearityType::RELU,       NonLinearityType::GELU,
    NonLinearityType::SIGMOID,    NonLinearityType::TANH,
    NonLinearityType::SOFTMAX,    NonLinearityType::SOFTMAX_STABLE,
    NonLinearityType::LOG_SOFTMAX};

const NonLinearityType kSoftmaxTypes[] = {NonLinearityType::SOFTMAX,
                                          NonLinearityType::SOFTMAX_STABLE,
                                          NonLinearityType::LOG_SOFTMAX};

double tolerance(Type t) { return t == HALF ? 5e-3 : 1e-5; }

std::vector<double> roundAll(Type t, std::vector<double> v) {
  for (double &x : v)
    x = reference::roundTo(t, x);
  return v;
}

void expectClose(Type t, const std::vector<double> &got,
                 const std::vector<double> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i],
                tolerance(t) * std::max(1.0, std::fabs(want[i])))
        << what << " at " << i;
}

OptionFlags planOption(const char *plan) { return {{"plan", plan}}; }

} // namespace

class NonLinearityConformance
    : public ::testing::TestWithParam<std::pair<unsigned, Type>> {};

TEST_P(NonLinearityConformance, EveryTypeMatchesTheReference) {
  const auto [tiles, type] = GetParam();
  const std::vector<std::size_t> shape =
      tiles == 1472 ? std::vector<std::size_t>{2, 5}
                    : std::vector<std::size_t>{3, 2, 7};
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  const auto x = spread(n, -3.0, 3.0);
  for (NonLinearityType nl : kAllTypes) {
    RunResult r =
        runOp(tiles, {{type, shape, x}},
              [&](Graph &g, const auto &in, program::Sequence &p) {
                return std::vector<Tensor>{nonLinearity(g, nl, in[0], p)};
              });
    const auto want = roundAll(
        type, reference::nonLinearity(nl, roundAll(type, x), shape.back()));
    expectClose(type, r.outputs[0], want, std::string(nonLinearityName(nl)));
  }
}

TEST_P(NonLinearityConformance, SoftmaxPlansAndInPlaceAgree) {
  const auto [tiles, type] = GetParam();
  const std::vector<std::size_t> shape{4, 9};
  const auto x = spread(36, -4.0, 4.0);
  for (NonLinearityType nl : kSoftmaxTypes) {
    RunResult r = runOp(tiles, {{type, shape, x}, {type, shape, x}},
                        [&](Graph &g, const auto &in, program::Sequence &p) {
                          Tensor viaReduce = nonLinearity(g, nl, in[0], p, {},
                                                          planOption("reduce"));
                          nonLinearityInPlace(g, nl, in[1], p);
                          return std::vector<Tensor>{viaReduce, in[1]};
                        });
    const auto want =
        roundAll(type, reference::nonLinearity(nl, roundAll(type, x), 9));
    const std::string name(nonLinearityName(nl));
    expectClose(type, r.outputs[0], want, name + " reduce plan");
    expectClose(type, r.outputs[1], want, name + " in place");
  }
}

INSTANTIATE_TEST_SUITE_P(
    TilesAndTypes, NonLinearityConformance,
    ::testing::Values(std::pair{1u, FLOAT}, std::pair{4u, FLOAT},
                      std::pair{1472u, FLOAT}, std::pair{1u, HALF},
                      std::pair{4u, HALF}, std::pair{1472u, HALF}));

TEST(NonLinearitySoftmax, ShortRowsRunInOneComputeSetLongRowsOverTiles) {
  const auto shortRows = spread(8 * 16, -2, 2);
  RunResult fused = runOp(4, {{FLOAT, {8, 16}, shortRows}},
                          [](Graph &g, const auto &in, program::Sequence &p) {
                            return std::vector<Tensor>{nonLinearity(
                                g, NonLinearityType::SOFTMAX_STABLE, in[0], p)};
                          });
  EXPECT_EQ(fused.computeSteps, 1u);
  // 12000 floats a row: a row and its output do not fit an eighth of a tile.
  const std::size_t n = 12000;
  const auto longRows = spread(2 * n, -5, 5);
  RunResult spreadOut =
      runOp(4, {{FLOAT, {2, n}, longRows}},
            [](Graph &g, const auto &in, program::Sequence &p) {
              return std::vector<Tensor>{
                  nonLinearity(g, NonLinearityType::LOG_SOFTMAX, in[0], p)};
            });
  EXPECT_GT(spreadOut.computeSteps, 1u);
  const auto want = reference::nonLinearity(NonLinearityType::LOG_SOFTMAX,
                                            roundAll(FLOAT, longRows), n);
  expectClose(FLOAT, spreadOut.outputs[0], want, "long log-softmax");
}

TEST(NonLinearitySoftmax, StableFormSurvivesLargeInputs) {
  const std::vector<double> x{100, 101, 102, 1000, 1000, 999};
  RunResult r =
      runOp(1, {{FLOAT, {2, 3}, x}},
            [](Graph &g, const auto &in, program::Sequence &p) {
              return std::vector<Tensor>{
                  nonLinearity(g, NonLinearityType::SOFTMAX_STABLE, in[0], p),
                  nonLinearity(g, NonLinearityType::LOG_SOFTMAX, in[0], p)};
            });
  const double e = std::exp(1.0), s = 1 + e + e * e;
  EXPECT_NEAR(r.outputs[0][2], e * e / s, 1e-6);
  EXPECT_NEAR(r.outputs[0][5], (1 / e) / (2 + 1 / e), 1e-6);
  EXPECT_NEAR(r.outputs[1][0], -std::log(s), 1e-5);
}

// dL/dx for L = sum(dy * f(x)), by central differences of the reference.
std::vector<double> finiteDifferenceGradient(NonLinearityType nl,
                                             const std::vector<double> &x,
                                             const std::vector<double> &dy,
                                             std::size_t rowSize) {
  std::vector<double> g(x.size());
  const double h = 1e-6;
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    const auto yp = reference::nonLinearity(nl, xp, rowSize);
    const auto ym = reference::nonLinearity(nl, xm, rowSize);
    for (std::size_t j = 0; j < x.size(); ++j)
      g[i] += dy[j] * (yp[j] - ym[j]) / (2 * h);
  }
  return g;
}

TEST(NonLinearityGradient, EveryTypeMatchesFiniteDifferences) {
  const std::size_t rows = 3, n = 6;
  // Away from relu's kink at 0.
  const auto x = roundAll(FLOAT, spread(rows * n, -2.0, 2.5));
  const auto dy = roundAll(FLOAT, spread(rows * n, -1.0, 1.0));
  for (NonLinearityType nl : kAllTypes) {
    const auto y = roundAll(FLOAT, reference::nonLinearity(nl, x, n));
    const auto want = finiteDifferenceGradient(nl, x, dy, n);
    for (const char *plan : {"rows", "reduce"}) {
      RunResult r =
          runOp(4,
                {{FLOAT, {rows, n}, x},
                 {FLOAT, {rows, n}, y},
                 {FLOAT, {rows, n}, dy}},
                [&](Graph &g, const auto &in, program::Sequence &p) {
                  return std::vector<Tensor>{nonLinearityInputGradient(
                      g, nl, in[0], in[1], in[2], p, {}, planOption(plan))};
                });
      for (std::size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(r.outputs[0][i], want[i],
                    1e-4 * std::max(1.0, std::fabs(want[i])))
            << nonLinearityName(nl) << " plan " << plan << " at " << i;
    }
  }
}

TEST(NonLinearityGradient, GeluTakesTheInputInTheTwoTensorForm) {
  const auto x = roundAll(FLOAT, spread(10, -2.0, 2.0));
  const auto dy = roundAll(FLOAT, spread(10, 0.5, 1.5));
  const auto want = finiteDifferenceGradient(NonLinearityType::GELU, x, dy, 10);
  RunResult r = runOp(2, {{FLOAT, {10}, x}, {FLOAT, {10}, dy}},
                      [](Graph &g, const auto &in, program::Sequence &p) {
                        return std::vector<Tensor>{nonLinearityInputGradient(
                            g, NonLinearityType::GELU, in[0], in[1], p)};
                      });
  for (std::size_t i = 0; i < 10; ++i)
    EXPECT_NEAR(r.outputs[0][i], want[i], 1e-4);
}

TEST(NonLinearityErrors, BadTypesShapesAndOptionsSayWhatIsWrong) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Graph g(model.createDevice().getTarget());
  ops::addCodelets(g);
  program::Sequence p;
  Tensor i = g.addVariable(INT, {4, 3}, "i");
  Tensor f = g.addVariable(FLOAT, {4, 3}, "f");
  Tensor other = g.addVariable(FLOAT, {3, 4}, "other");
  Tensor h = g.addVariable(HALF, {4, 3}, "h");
  Tensor scalar = g.addVariable(FLOAT, {}, "s");
  for (const Tensor &t : {i, f, other, h, scalar})
    mapTensorLinearly(g, t);
  try {
    nonLinearity(g, NonLinearityType::RELU, i, p);
    FAIL();
  } catch (const TypeError &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("has type int"));
  }
  try {
    nonLinearity(g, NonLinearityType::SOFTMAX, scalar, p);
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("innermost dimension"));
  }
  try {
    nonLinearityInputGradient(g, NonLinearityType::SOFTMAX, f, other, p);
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("[4, 3]"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("[3, 4]"));
  }
  EXPECT_THROW(nonLinearityInputGradient(g, NonLinearityType::TANH, f, h, p),
               TypeError);
  EXPECT_THROW(
      nonLinearity(g, NonLinearityType::SOFTMAX, f, p, {}, {{"plna", "rows"}}),
      OptionError);
  EXPECT_THROW(
      nonLinearity(g, NonLinearityType::SOFTMAX, f, p, {}, {{"plan", "fast"}}),
      OptionError);
}

TEST(NonLinearityEstimates, CyclesArePositiveDeterministicAndGrowWithSize) {
  auto cycles = [](std::size_t rows) {
    return runOp(4, {{FLOAT, {rows, 32}, spread(rows * 32, -1, 1)}},
                 [](Graph &g, const auto &in, program::Sequence &p) {
                   return std::vector<Tensor>{nonLinearity(
                       g, NonLinearityType::SOFTMAX_STABLE, in[0], p)};
                 })
        .cycles;
  };
  const auto small = cycles(4), big = cycles(256);
  EXPECT_GT(small, 0u);
  EXPECT_GT(big, small);
  EXPECT_EQ(cycles(4), small);
}
