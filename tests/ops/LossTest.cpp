// Losses: calcLoss against the host reference for both losses, labels and
// targets, float and half, both plans, on 1, 4 and 1472 tiles; deltas
// against finite differences; the accuracy counter accumulating across
// runs; masked labels; errors; estimates.
#include "OpsTestUtil.hpp"

#include "tessera/ops/Loss.hpp"
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

// Rows of probabilities: the softmax of spread logits.
std::vector<double> probabilities(std::size_t b, std::size_t n) {
  return reference::nonLinearity(NonLinearityType::SOFTMAX,
                                 spread(b * n, -2.0, 2.0), n);
}

const LossType kLosses[] = {LossType::SUM_SQUARED_LOSS,
                            LossType::CROSS_ENTROPY_LOSS};

struct Built {
  Tensor loss, deltas, counter;
};

// Loss and deltas like the outputs, a counter starting at `start`.
Built addOutputs(Graph &g, const Tensor &p, unsigned start) {
  Built b;
  b.deltas = g.clone(p, "deltas");
  b.loss = g.addVariable(p.elementType(), {p.dim(0)}, "loss");
  mapTensorLinearly(g, b.loss);
  b.counter = g.addVariable(UNSIGNED_INT, {}, "numCorrect");
  g.setTileMapping(b.counter, 0);
  g.setInitialValue(b.counter, start);
  return b;
}

} // namespace

class LossConformance
    : public ::testing::TestWithParam<std::pair<unsigned, Type>> {};

TEST_P(LossConformance, LabelsMatchTheReferenceWithBothPlans) {
  const auto [tiles, type] = GetParam();
  const std::size_t b = tiles == 1472 ? 3 : 6, n = 7;
  const auto p = roundAll(type, probabilities(b, n));
  // Rows 0..b-1: correct and wrong labels, one out of range (masked).
  std::vector<long long> labels{3, 6, 1000, 0, 2, 5};
  labels.resize(b);
  for (std::size_t r = 0; r < b; ++r)
    if (r != 2)
      labels[r] =
          static_cast<long long>(reference::argMax(p, b, n)[r] + r % 2) % n;
  const std::vector<double> labelValues(labels.begin(), labels.end());
  for (LossType lt : kLosses)
    for (Type labelType : {UNSIGNED_INT, INT})
      for (const char *plan : {"rows", "reduce"}) {
        RunResult r =
            runOp(tiles, {{type, {b, n}, p}, {labelType, {b}, labelValues}},
                  [&](Graph &g, const auto &in, program::Sequence &prog) {
                    Built o = addOutputs(g, in[0], 0);
                    calcLoss(g, in[0], in[1], o.loss, o.deltas, o.counter, lt,
                             prog, {}, {{"plan", plan}});
                    return std::vector<Tensor>{o.loss, o.deltas, o.counter};
                  });
        const auto want = reference::calcLossLabels(lt, p, labels, n);
        const std::string what = std::string(lossName(lt)) + " " + plan + " " +
                                 std::string(typeName(labelType));
        expectClose(type, r.outputs[0], roundAll(type, want.loss),
                    what + " loss");
        expectClose(type, r.outputs[1], roundAll(type, want.deltas),
                    what + " deltas");
        EXPECT_EQ(r.outputs[2][0], want.numCorrect) << what;
      }
}

TEST_P(LossConformance, TargetsMatchTheReferenceWithBothPlans) {
  const auto [tiles, type] = GetParam();
  const std::size_t b = tiles == 1472 ? 2 : 5, n = 6;
  const auto p = roundAll(type, probabilities(b, n));
  // Soft targets: another softmax.
  auto t = reference::nonLinearity(NonLinearityType::SOFTMAX,
                                   spread(b * n, -1.0, 3.0), n);
  std::reverse(t.begin(), t.end());
  t = roundAll(type, t);
  for (LossType lt : kLosses)
    for (const char *plan : {"rows", "reduce"}) {
      RunResult r =
          runOp(tiles, {{type, {b, n}, p}, {type, {b, n}, t}},
                [&](Graph &g, const auto &in, program::Sequence &prog) {
                  Built o = addOutputs(g, in[0], 0);
                  calcLoss(g, in[0], in[1], o.loss, o.deltas, o.counter, lt,
                           prog, {}, {{"plan", plan}});
                  return std::vector<Tensor>{o.loss, o.deltas, o.counter};
                });
      const auto want = reference::calcLossTargets(lt, p, t, n);
      const std::string what = std::string(lossName(lt)) + " " + plan;
      expectClose(type, r.outputs[0], roundAll(type, want.loss), what);
      expectClose(type, r.outputs[1], roundAll(type, want.deltas), what);
      EXPECT_EQ(r.outputs[2][0], want.numCorrect) << what;
    }
}

INSTANTIATE_TEST_SUITE_P(
    TilesAndTypes, LossConformance,
    ::testing::Values(std::pair{1u, FLOAT}, std::pair{4u, FLOAT},
                      std::pair{1472u, FLOAT}, std::pair{1u, HALF},
                      std::pair{4u, HALF}, std::pair{1472u, HALF}));

TEST(LossDeltas, CrossEntropyDeltasAreTheGradientThroughSoftmax) {
  const std::size_t b = 3, n = 5;
  const auto logits = spread(b * n, -2.0, 2.0);
  const std::vector<long long> labels{1, 4, 0};
  const auto p = roundAll(
      FLOAT, reference::nonLinearity(NonLinearityType::SOFTMAX, logits, n));
  RunResult r = runOp(4, {{FLOAT, {b, n}, p}, {UNSIGNED_INT, {b}, {1, 4, 0}}},
                      [&](Graph &g, const auto &in, program::Sequence &prog) {
                        Built o = addOutputs(g, in[0], 0);
                        calcLoss(g, in[0], in[1], o.loss, o.deltas,
                                 LossType::CROSS_ENTROPY_LOSS, prog);
                        return std::vector<Tensor>{o.deltas};
                      });
  auto total = [&](const std::vector<double> &x) {
    const auto q = reference::nonLinearity(NonLinearityType::SOFTMAX, x, n);
    double sum = 0;
    for (double l :
         reference::calcLossLabels(LossType::CROSS_ENTROPY_LOSS, q, labels, n)
             .loss)
      sum += l;
    return sum;
  };
  for (std::size_t i = 0; i < b * n; ++i) {
    auto xp = logits, xm = logits;
    xp[i] += 1e-6;
    xm[i] -= 1e-6;
    EXPECT_NEAR(r.outputs[0][i], (total(xp) - total(xm)) / 2e-6, 1e-4) << i;
  }
}

TEST(LossDeltas, SumSquaredDeltasAreTheGradientOfTheLoss) {
  const std::size_t b = 2, n = 4;
  const auto p = roundAll(FLOAT, spread(b * n, -1.0, 1.0));
  const std::vector<long long> labels{2, 0};
  RunResult r = runOp(1, {{FLOAT, {b, n}, p}, {INT, {b}, {2, 0}}},
                      [&](Graph &g, const auto &in, program::Sequence &prog) {
                        Built o = addOutputs(g, in[0], 0);
                        calcLoss(g, in[0], in[1], o.loss, o.deltas,
                                 LossType::SUM_SQUARED_LOSS, prog);
                        return std::vector<Tensor>{o.deltas};
                      });
  auto total = [&](const std::vector<double> &x) {
    double sum = 0;
    for (double l :
         reference::calcLossLabels(LossType::SUM_SQUARED_LOSS, x, labels, n)
             .loss)
      sum += l;
    return sum;
  };
  for (std::size_t i = 0; i < b * n; ++i) {
    auto xp = p, xm = p;
    xp[i] += 1e-6;
    xm[i] -= 1e-6;
    EXPECT_NEAR(r.outputs[0][i], (total(xp) - total(xm)) / 2e-6, 1e-5) << i;
  }
}

// Builds calcLoss (or calcAccuracy) on a counter starting at 5, runs the
// engine twice and reads the counter.
unsigned counterAfterTwoRuns(bool accuracyOnly, const char *plan) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Device d = model.createDevice();
  Graph g(d.getTarget());
  ops::addCodelets(g);
  // Rows 0 and 2 correct, row 1 wrong, row 3 masked.
  std::vector<float> p{0.1f, 0.7f, 0.2f, 0.5f, 0.3f, 0.2f,
                       0.2f, 0.2f, 0.6f, 0.3f, 0.4f, 0.3f};
  Tensor probs = g.addConstant(FLOAT, {4, 3}, p, "probs");
  Tensor labels = g.addConstant(
      UNSIGNED_INT, {4}, std::vector<unsigned>{1, 2, 2, MASKED_LABEL_CODE},
      "labels");
  mapTensorLinearly(g, probs);
  mapTensorLinearly(g, labels);
  program::Sequence prog;
  Built o = addOutputs(g, probs, 5);
  if (accuracyOnly)
    calcAccuracy(g, probs, labels, o.counter, prog);
  else
    calcLoss(g, probs, labels, o.loss, o.deltas, o.counter,
             LossType::CROSS_ENTROPY_LOSS, prog, {}, {{"plan", plan}});
  g.createHostRead("counter", o.counter);
  Engine e(g, prog);
  e.load(d);
  e.run();
  e.run();
  unsigned count = 0;
  e.readTensor("counter", &count, &count + 1);
  return count;
}

TEST(LossAccuracy, NumCorrectAccumulatesAcrossRuns) {
  EXPECT_EQ(counterAfterTwoRuns(false, "rows"), 5u + 2 * 2);
  EXPECT_EQ(counterAfterTwoRuns(false, "reduce"), 5u + 2 * 2);
  EXPECT_EQ(counterAfterTwoRuns(true, "auto"), 5u + 2 * 2);
}

TEST(LossAccuracy, CalcAccuracyCountsIntegerOutputsAndIntLabels) {
  RunResult r = runOp(4,
                      {{INT, {3, 4}, {1, 9, 3, 9, 0, 0, 5, 1, 7, 2, 2, 2}},
                       {INT, {3}, {1, 2, -1}}},
                      [](Graph &g, const auto &in, program::Sequence &prog) {
                        Tensor c = g.addVariable(UNSIGNED_INT, {1}, "c");
                        g.setTileMapping(c, 3);
                        g.setInitialValue(c, 0u);
                        calcAccuracy(g, in[0], in[1], c, prog);
                        return std::vector<Tensor>{c};
                      });
  // Row 0: argmax 1 (the first of two 9s) matches; row 1: 2 matches; row 2
  // is masked.
  EXPECT_EQ(r.outputs[0][0], 2.0);
}

TEST(LossPlans, LongRowsAreSpreadOverTiles) {
  const std::size_t b = 2, n = 11000;
  const auto p = roundAll(FLOAT, probabilities(b, n));
  const std::vector<long long> labels{17, 10999};
  RunResult r = runOp(4, {{FLOAT, {b, n}, p}, {UNSIGNED_INT, {b}, {17, 10999}}},
                      [&](Graph &g, const auto &in, program::Sequence &prog) {
                        Built o = addOutputs(g, in[0], 0);
                        calcLoss(g, in[0], in[1], o.loss, o.deltas, o.counter,
                                 LossType::CROSS_ENTROPY_LOSS, prog);
                        return std::vector<Tensor>{o.loss, o.counter};
                      });
  const auto want =
      reference::calcLossLabels(LossType::CROSS_ENTROPY_LOSS, p, labels, n);
  expectClose(FLOAT, r.outputs[0], want.loss, "loss");
  EXPECT_EQ(r.outputs[1][0], want.numCorrect);
  EXPECT_GT(r.computeSteps, 3u);
}

TEST(LossErrors, WrongTypesAndShapesSayWhatIsWrong) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Graph g(model.createDevice().getTarget());
  ops::addCodelets(g);
  program::Sequence prog;
  auto var = [&](Type t, std::vector<std::size_t> shape) {
    Tensor v = g.addVariable(t, shape, "v");
    mapTensorLinearly(g, v);
    return v;
  };
  Tensor p = var(FLOAT, {4, 3}), deltas = var(FLOAT, {4, 3}),
         loss = var(FLOAT, {4}), labels = var(UNSIGNED_INT, {4}),
         counter = var(UNSIGNED_INT, {});
  const LossType ce = LossType::CROSS_ENTROPY_LOSS;
  auto expectError = [&](auto f, const char *substring) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one saying " << substring;
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(substring));
    }
  };
  expectError(
      [&] { calcLoss(g, p, var(BOOL, {4}), loss, deltas, counter, ce, prog); },
      "expected is bool; give labels as unsigned int or int [4]");
  expectError(
      [&] { calcLoss(g, p, var(INT, {5}), loss, deltas, counter, ce, prog); },
      "the labels have shape [5] but the model outputs have 4 rows");
  expectError(
      [&] { calcLoss(g, p, var(FLOAT, {4}), loss, deltas, counter, ce, prog); },
      "the targets have shape [4]");
  expectError(
      [&] {
        calcLoss(g, p, labels, loss, var(FLOAT, {3, 4}), counter, ce, prog);
      },
      "deltas have shape [3, 4]");
  expectError(
      [&] {
        calcLoss(g, p, labels, var(FLOAT, {4, 1}), deltas, counter, ce, prog);
      },
      "loss has shape [4, 1]");
  expectError(
      [&] { calcLoss(g, p, labels, loss, deltas, var(INT, {}), ce, prog); },
      "numCorrect is int");
  expectError(
      [&] {
        calcLoss(g, var(INT, {4, 3}), labels, loss, deltas, counter, ce, prog);
      },
      "the model outputs are int");
  expectError([&] { calcAccuracy(g, p, var(HALF, {4}), counter, prog); },
              "the labels are half");
  EXPECT_THROW(calcLoss(g, p, labels, loss, deltas, ce, prog, {},
                        {{"plan", "everything"}}),
               OptionError);
}

TEST(LossEstimates, CyclesArePositiveDeterministicAndGrowWithSize) {
  auto cycles = [](std::size_t b) {
    std::vector<double> labels(b);
    for (std::size_t r = 0; r < b; ++r)
      labels[r] = double(r % 10);
    return runOp(4,
                 {{FLOAT, {b, 10}, probabilities(b, 10)},
                  {UNSIGNED_INT, {b}, labels}},
                 [](Graph &g, const auto &in, program::Sequence &prog) {
                   Built o = addOutputs(g, in[0], 0);
                   calcLoss(g, in[0], in[1], o.loss, o.deltas, o.counter,
                            LossType::CROSS_ENTROPY_LOSS, prog);
                   return std::vector<Tensor>{o.loss};
                 })
        .cycles;
  };
  const auto small = cycles(8), big = cycles(512);
  EXPECT_GT(small, 0u);
  EXPECT_GT(big, small);
  EXPECT_EQ(cycles(8), small);
}
