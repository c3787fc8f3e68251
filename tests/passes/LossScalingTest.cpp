// Loss scaling in the training passes: dynamic scaling (Keras'
// LossScaleOptimizer) skips a step whose gradients overflow, leaving every
// weight and every piece of optimizer state as it was, halves the scale and
// trains on; it doubles the scale after growthSteps finite steps; without
// overflow it trains as unscaled training does; the skip works on the IPU
// Model too; and bad settings are OptionErrors that say what to give.
#include "ir/LoweringTestUtil.hpp"

#include "tessera/ir/Interpreter.hpp"
#include "tessera/ir/OpKind.hpp"
#include "tessera/passes/Autodiff.hpp"
#include "tessera/passes/GradientAccumulation.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/passes/TrainingPasses.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::passes;
using ::testing::HasSubstr;

namespace {

const std::vector<double> kC{0.5, -1.0, 2.0};
const std::vector<double> kW0{1.0, 2.0, -3.0};
constexpr double kInf = std::numeric_limits<double>::infinity();

// loss = sum(w * c) + 0.5 * sum(w * w) with c fed each step, so a step can
// be given an infinite or NaN gradient (c + w) by feeding one in c.
Module quadratic(const TrainingOptions &o, unsigned accumulation = 1) {
  Module m("quadratic");
  Builder b(m);
  Value w = b.variable("w", {3}, init::values(kW0));
  Value c = b.input("c", FLOAT, {3});
  b.output("loss", reduceSum(w * c) + reduceSum(w * w) * 0.5);
  TrainingPassOptions t;
  t.training = o;
  t.accumulation.count = accumulation;
  runTrainingPasses(m, t);
  return m;
}

struct Trace {
  std::vector<double> w;
  std::vector<double> scales; // the scale each step ran with
  Feeds state;
};

// Runs one step per entry of \p cs (c's value that step) in the
// interpreter, writing the updates back.
Trace train(const TrainingOptions &o,
            const std::vector<std::vector<double>> &cs,
            unsigned accumulation = 1) {
  Module m = quadratic(o, accumulation);
  Trace t;
  for (const auto &c : cs) {
    t.state["c"] = {FLOAT, {3}, c};
    if (const auto s = m.findValue(kLossScaleVariable))
      t.scales.push_back(t.state.count(kLossScaleVariable)
                             ? t.state.at(kLossScaleVariable).values[0]
                             : o.dynamicLossScaling->initialScale);
    Evaluation e = interpret(m, t.state);
    t.state = variablesAfterRun(m, e, std::move(t.state));
  }
  t.w = t.state.at("w").values;
  return t;
}

std::vector<std::vector<double>> steps(std::size_t n) {
  return std::vector<std::vector<double>>(n, kC);
}

TrainingOptions dynamic(Optimizer opt, double initial = 1024,
                        unsigned growth = 1000) {
  TrainingOptions o;
  o.optimizer = opt;
  o.dynamicLossScaling = DynamicLossScaling{initial, growth};
  return o;
}

void expectNear(const std::vector<double> &a, const std::vector<double> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-12 * (1 + std::abs(b[i]))) << "element " << i;
}

} // namespace

TEST(LossScaling, DynamicScalingWithoutOverflowTrainsAsUnscaled) {
  for (const Optimizer &opt : {Optimizer(SGD{0.1, 0.5}), Optimizer(Adam{0.05}),
                               Optimizer(RMSprop{})}) {
    TrainingOptions plain;
    plain.optimizer = opt;
    expectNear(train(dynamic(opt), steps(5)).w, train(plain, steps(5)).w);
  }
}

TEST(LossScaling, AnOverflowingStepIsSkippedAndTheScaleHalves) {
  // Step 2 gets an infinite gradient, step 4 a NaN one.
  std::vector<std::vector<double>> cs = steps(6);
  cs[1][0] = kInf;
  cs[3][2] = std::nan("");
  for (const Optimizer &opt : {Optimizer(SGD{0.1, 0.9}), Optimizer(Adam{0.05}),
                               Optimizer(RMSprop{0.01, 0.9, 0.5})}) {
    const Trace t = train(dynamic(opt), cs);
    EXPECT_THAT(t.scales,
                ::testing::ElementsAre(1024, 1024, 512, 512, 256, 256));
    // A skipped step leaves the weights, momentum, moments and Adam's step
    // count alone: the run is the run without those steps.
    TrainingOptions plain;
    plain.optimizer = opt;
    const Trace without = train(plain, steps(4));
    expectNear(t.w, without.w);
    for (const auto &[name, v] : without.state)
      if (name != "c")
        expectNear(t.state.at(name).values, v.values);
  }
}

TEST(LossScaling, TheScaleDoublesAfterGrowthStepsFiniteSteps) {
  std::vector<std::vector<double>> cs = steps(8);
  cs[4][1] = -kInf;
  const Trace t = train(dynamic(SGD{0.1}, 8, 2), cs);
  // x2 after steps 2 and 4; step 5 overflows (x0.5) and restarts the count.
  EXPECT_THAT(t.scales, ::testing::ElementsAre(8, 8, 16, 16, 32, 16, 16, 32));
  EXPECT_EQ(t.state.at(kLossScaleGoodSteps).values[0], 1);
}

TEST(LossScaling, WithAccumulationAnOverflowSkipsTheWholeUpdate) {
  // Two micro-batches per update; the second update's first micro-batch
  // overflows, so that update is skipped and the scale halves once.
  std::vector<std::vector<double>> cs = steps(6);
  cs[2][1] = kInf;
  const Trace t = train(dynamic(Adam{0.05}), cs, 2);
  EXPECT_THAT(t.scales,
              ::testing::ElementsAre(1024, 1024, 1024, 1024, 512, 512));
  TrainingOptions plain;
  plain.optimizer = Adam{0.05};
  expectNear(t.w, train(plain, steps(4), 2).w);
}

TEST(LossScaling, StaticScalingOfAPowerOfTwoGivesTheSameWeights) {
  TrainingOptions plain, scaled;
  plain.optimizer = scaled.optimizer = SGD{0.1, 0.5};
  scaled.lossScaling = 1 << 12;
  EXPECT_EQ(train(scaled, steps(4)).w, train(plain, steps(4)).w);
}

TEST(LossScaling, SkipsOnTheIpuModel) {
  // One step lowered and run on the device with a NaN in the gradient: the
  // new weights and momentum are the old ones and the scale halves; with a
  // finite gradient they move.
  Module m = quadratic(dynamic(SGD{0.1, 0.9}, 64));
  std::vector<ValueId> read;
  for (const auto &[var, next] : variableUpdates(m))
    read.push_back(next);
  auto nextOf = [&](const test::LoweredRun &r, const std::string &name) {
    for (const auto &[var, next] : variableUpdates(m))
      if (m.value(var).name == name)
        return r.values.at(next).values;
    ADD_FAILURE() << "no update of " << name;
    return std::vector<double>{};
  };
  Feeds feeds{{"c", {FLOAT, {3}, {0.5, std::nan(""), 2.0}}}};
  test::LoweredRun bad = test::runLowered(m, feeds, read);
  EXPECT_EQ(nextOf(bad, "w"), kW0);
  EXPECT_EQ(nextOf(bad, "w/momentum"), std::vector<double>(3, 0.0));
  EXPECT_EQ(nextOf(bad, kLossScaleVariable), std::vector<double>{32});
  feeds["c"].values = {0.5, kInf, 2.0};
  EXPECT_EQ(nextOf(test::runLowered(m, feeds, read), "w"), kW0);
  feeds["c"].values = kC;
  test::LoweredRun good = test::runLowered(m, feeds, read);
  EXPECT_NEAR(nextOf(good, "w")[0], 1.0 - 0.1 * 1.5, 1e-6);
  EXPECT_EQ(nextOf(good, kLossScaleVariable), std::vector<double>{64});
}

// Dynamic loss scaling gates each Adam update (clamp, then ok ? next :
// old). For a float weight, the unscaled gradient is computed inside the
// maps that read it and the clamp inside the weight's update map: the
// update is m1, v1, gated m, gated v and gated w, five maps of the weight's
// shape (seven before: unscale and clamp had maps of their own). Lowered
// and interpreted, the weights agree.
TEST(LossScaling, AGatedAdamUpdateOfAFloatWeightIsFiveMaps) {
  Module m = quadratic(dynamic(Adam{0.01}, 64));
  const ValueId grad = m.gradients().at(0).value;
  std::vector<ValueId> read;
  for (const auto &[var, next] : variableUpdates(m))
    read.push_back(next);
  std::size_t maps = 0;
  auto count = [&](const Graph &, const LoweredModule &l) {
    for (const Op &op : m.ops()) {
      const OpClass cls = opClass(op.kind);
      const ValueId r = op.results.at(0);
      if (r <= grad || (cls != OpClass::Unary && cls != OpClass::Binary) ||
          m.typeOf(r) != m.typeOf(grad))
        continue;
      try {
        (void)l.tensor(r);
        ++maps;
      } catch (const IrError &) {
        // fused into its user's map
      }
    }
  };
  Feeds feeds{{"c", {FLOAT, {3}, kC}}};
  const test::LoweredRun run = test::runLowered(m, feeds, read, 1, 4, count);
  EXPECT_EQ(maps, 5u);
  const Evaluation want = interpret(m, feeds);
  for (ValueId v : read)
    for (std::size_t i = 0; i < want.at(v).values.size(); ++i)
      EXPECT_NEAR(run.values.at(v).values[i], want.at(v).values[i],
                  1e-6 * (1 + std::abs(want.at(v).values[i])))
          << m.value(v).name << " element " << i;
}

TEST(LossScaling, BadSettingsAreOptionErrors) {
  auto error = [](const TrainingOptions &o) {
    try {
      quadratic(o);
    } catch (const OptionError &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  TrainingOptions o;
  o.lossScaling = kInf;
  EXPECT_THAT(error(o), HasSubstr("loss scaling must be positive and finite, "
                                  "not inf"));
  o.lossScaling = -2;
  EXPECT_THAT(error(o), HasSubstr("not -2"));
  o = dynamic(SGD{}, 0);
  EXPECT_THAT(error(o), HasSubstr("initial dynamic loss scale must be "
                                  "positive and finite, not 0"));
  o = dynamic(SGD{}, std::nan(""));
  EXPECT_THAT(error(o), HasSubstr("not nan"));
  o = dynamic(SGD{}, 128, 0);
  EXPECT_THAT(error(o), HasSubstr("growthSteps >= 1"));
  o = dynamic(SGD{});
  o.lossScaling = 8;
  EXPECT_THAT(error(o), HasSubstr("either a static loss scaling (8) or "
                                  "dynamic loss scaling, not both"));
}

TEST(LossScaling, TheOptimizerPassNeedsTheScaleVariable) {
  Module m("quadratic");
  Builder b(m);
  Value w = b.variable("w", {3}, init::values(kW0));
  b.output("loss", reduceSum(w * w));
  AutodiffPass(AutodiffOptions{}).run(m);
  OptimizerPass pass(dynamic(SGD{}));
  try {
    pass.run(m);
    FAIL() << "no error";
  } catch (const IrError &e) {
    EXPECT_THAT(e.what(), HasSubstr("passes::addLossScale"));
  }
}
