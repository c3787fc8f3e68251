// Gradient accumulation, run through the IR interpreter: N micro-batches
// accumulated with MEAN (and RUNNING_MEAN) train exactly as one batch N
// times as large, SUM as the large batch with N times the learning rate;
// weights and optimizer state stay put between applications; the pass
// adds the accumulators it documents and rejects what it cannot rewrite.
#include "tessera/passes/GradientAccumulation.hpp"

#include "tessera/ir/Interpreter.hpp"
#include "tessera/ir/Verifier.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::passes;
using ::testing::HasSubstr;

namespace {

constexpr std::size_t kIn = 3;

// loss = mean over the batch of (x w + b - y)^2: a mean, so the mean of
// micro-batch gradients is the large batch's gradient.
Module linearModel(std::size_t batch, const TrainingOptions &training) {
  Module m("linear");
  Builder b(m);
  Value x = b.input("x", FLOAT, {batch, kIn});
  Value y = b.input("y", FLOAT, {batch, 1});
  Value w = b.variable("w", {kIn, 1}, init::values({0.1, -0.2, 0.3}));
  Value bias = b.variable("b", {1}, init::zeros());
  Value loss = reduceMean(meanSquaredError(matmul(x, w) + bias, y));
  b.output("loss", loss);
  makeTrainingStep(m, loss, training);
  return m;
}

// Rows [first, first + count) of y = 2 x0 - x1 + 0.5 x2 + 1 (plus a wobble
// so the fit never becomes exact).
Feeds rows(std::size_t first, std::size_t count) {
  Feeds f;
  f["x"] = {FLOAT, {count, kIn}, {}};
  f["y"] = {FLOAT, {count, 1}, {}};
  for (std::size_t i = first; i < first + count; ++i) {
    const double a = std::sin(double(i)), c = std::cos(double(i)),
                 d = double(i % 7) / 7;
    f["x"].values.insert(f["x"].values.end(), {a, c, d});
    f["y"].values.push_back(2 * a - c + 0.5 * d + 1 + 0.1 * std::sin(3.0 * i));
  }
  return f;
}

// Trains \p m for \p steps steps of \p batch rows each (consecutive rows)
// in the interpreter; returns every variable's value afterwards, by name.
// \p afterStep (when given) sees the variables after each step.
Feeds train(
    const Module &m, std::size_t batch, std::size_t steps,
    const std::function<void(std::size_t, const Feeds &)> &afterStep = {}) {
  Feeds vars;
  for (std::size_t s = 0; s < steps; ++s) {
    Feeds feeds = rows(s * batch, batch);
    feeds.insert(vars.begin(), vars.end());
    const Evaluation e = interpret(m, feeds);
    vars = variablesAfterRun(m, e, std::move(vars));
    if (afterStep)
      afterStep(s, vars);
  }
  return vars;
}

void expectSameVariables(const Feeds &got, const Feeds &want,
                         const std::vector<std::string> &names, double rel) {
  for (const std::string &name : names) {
    ASSERT_TRUE(got.count(name)) << name;
    ASSERT_TRUE(want.count(name)) << name;
    const auto &a = got.at(name).values, &b = want.at(name).values;
    ASSERT_EQ(a.size(), b.size()) << name;
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], rel * (1 + std::abs(b[i])))
          << name << " element " << i;
  }
}

Module accumulated(std::size_t microBatch, const TrainingOptions &training,
                   const GradientAccumulationOptions &options) {
  Module m = linearModel(microBatch, training);
  EXPECT_TRUE(accumulateGradients(m, options));
  verify(m);
  return m;
}

constexpr std::size_t kMicro = 2, kCount = 4, kApplications = 3;

} // namespace

TEST(GradientAccumulation, MeanOfMicroBatchesTrainsAsOneLargeBatch) {
  TrainingOptions sgd;
  sgd.optimizer = SGD{0.1, 0.9, 0, 0.01};
  const Module big = linearModel(kMicro * kCount, sgd);
  const Module acc = accumulated(kMicro, sgd, {.count = kCount});
  const Feeds want = train(big, kMicro * kCount, kApplications);
  std::vector<std::vector<double>> w{{0.1, -0.2, 0.3}}, momentum{{0, 0, 0}};
  const Feeds got = train(
      acc, kMicro, kCount * kApplications, [&](std::size_t, const Feeds &v) {
        // Unset until the first update applies.
        w.push_back(v.count("w") ? v.at("w").values : w.front());
        momentum.push_back(v.count("w/momentum") ? v.at("w/momentum").values
                                                 : momentum.front());
      });
  // Between applications the weights and the momentum do not move.
  for (std::size_t step = 1; step < w.size(); ++step) {
    const bool applies = step % kCount == 0;
    EXPECT_EQ(w[step] != w[step - 1], applies) << "step " << step;
    EXPECT_EQ(momentum[step] != momentum[step - 1], applies) << "step " << step;
  }
  expectSameVariables(got, want, {"w", "b", "w/momentum", "b/momentum"}, 1e-12);
  // The accumulators are empty and the counter back at 0 after a step.
  EXPECT_EQ(got.at("w/accumulator").values, std::vector<double>(kIn, 0));
  EXPECT_EQ(got.at("accumulation/micro_batch").values, std::vector<double>{0});
}

TEST(GradientAccumulation, RunningMeanWithAdamMatchesOneLargeBatch) {
  TrainingOptions adam;
  adam.optimizer = Adam{0.05};
  const Module big = linearModel(kMicro * kCount, adam);
  const Module acc = accumulated(
      kMicro, adam,
      {.count = kCount, .reduction = AccumulationReduction::RUNNING_MEAN});
  const Feeds want = train(big, kMicro * kCount, kApplications);
  const Feeds got = train(acc, kMicro, kCount * kApplications);
  // Adam's step count counts applications, not micro-batches.
  expectSameVariables(
      got, want, {"w", "b", "w/adam_m", "w/adam_v", "optimizer/step"}, 1e-10);
  EXPECT_EQ(got.at("optimizer/step").values,
            std::vector<double>{double(kApplications)});
}

TEST(GradientAccumulation, SumIsTheLargeBatchWithNTimesTheLearningRate) {
  TrainingOptions sgd, scaled;
  sgd.optimizer = SGD{0.02};
  scaled.optimizer = SGD{0.02 * kCount};
  const Module big = linearModel(kMicro * kCount, scaled);
  const Module acc = accumulated(
      kMicro, sgd, {.count = kCount, .reduction = AccumulationReduction::SUM});
  expectSameVariables(train(acc, kMicro, kCount * kApplications),
                      train(big, kMicro * kCount, kApplications), {"w", "b"},
                      1e-12);
}

TEST(GradientAccumulation, AddsAccumulatorsOfTheAccumulatorType) {
  const Module m = accumulated(kMicro, {},
                               {.count = 3,
                                .reduction = AccumulationReduction::MEAN,
                                .accumulatorType = HALF});
  for (const char *name : {"w/accumulator", "b/accumulator"}) {
    const auto id = m.findValue(name);
    ASSERT_TRUE(id) << name;
    EXPECT_EQ(m.typeOf(*id).dtype, HALF);
    EXPECT_FALSE(m.variableOf(*id).trainable);
    EXPECT_NO_THROW(m.output(std::string("update/") + name));
  }
  ASSERT_TRUE(m.findValue("accumulation/micro_batch"));
  // The loss and the per-micro-batch gradient stay outputs of their own.
  EXPECT_NO_THROW(m.output("loss"));
  // Every variable has an update: the two weights, their accumulators and
  // the counter.
  EXPECT_EQ(variableUpdates(m).size(), 5u);
}

TEST(GradientAccumulation, RunsAsAPassThatVerifies) {
  Module m = linearModel(kMicro, {});
  const std::size_t before = m.ops().size();
  PassManager pm;
  pm.add(std::make_unique<GradientAccumulationPass>(
      GradientAccumulationOptions{.count = 2}));
  EXPECT_TRUE(pm.run(m));
  EXPECT_GT(m.ops().size(), before);
  GradientAccumulationPass one({.count = 1});
  EXPECT_EQ(one.name(), "gradient-accumulation");
  Module unchanged = linearModel(kMicro, {});
  EXPECT_FALSE(one.run(unchanged));
  EXPECT_EQ(unchanged.ops().size(), before);
}

TEST(GradientAccumulation, ErrorsSayWhatToFix) {
  auto message = [](Module &m, const GradientAccumulationOptions &o) {
    try {
      accumulateGradients(m, o);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Module m = linearModel(kMicro, {});
  EXPECT_THAT(message(m, {.count = 0}), HasSubstr("at least 1"));
  EXPECT_THAT(message(m, {.count = 2,
                          .reduction = AccumulationReduction::SUM,
                          .accumulatorType = INT}),
              HasSubstr("float or half, not int"));
  ASSERT_EQ(message(m, {.count = 2}), "no error");
  EXPECT_THAT(message(m, {.count = 2}), HasSubstr("already accumulates"));

  Module untrained("untrained");
  Builder b(untrained);
  b.output("y", b.variable("w", {2}, init::ones()) * 2.0);
  EXPECT_THAT(message(untrained, {.count = 2}),
              HasSubstr("no recorded updates"));

  Module noGrad("no-grad");
  Builder nb(noGrad);
  Value w = nb.variable("w", {2}, init::ones());
  nb.update(w, w * 0.5);
  EXPECT_THAT(message(noGrad, {.count = 2}),
              HasSubstr("has an update but no recorded gradient"));
}
