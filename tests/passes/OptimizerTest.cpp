// The optimizer pass: SGD (momentum, dampening, Nesterov, weight decay),
// Adam, AdamW and RMSprop step by step against the formulas in double
// precision, run through the IR interpreter; loss scaling leaves the step
// unchanged; bad settings are errors.
#include "tessera/passes/Optimizer.hpp"
#include "tessera/ir/Interpreter.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::passes;

namespace {

// loss = sum(w * c) + 0.5 * sum(w * w): the gradient is c + w, known
// exactly, so each optimizer's trajectory can be computed by hand.
const std::vector<double> kC{0.5, -1.0, 2.0};
const std::vector<double> kW0{1.0, 2.0, -3.0};

// Runs `steps` training steps through the interpreter; returns w.
std::vector<double> trainInterpreted(const TrainingOptions &o, int steps) {
  Module m("quadratic");
  Builder b(m);
  Value w = b.variable("w", {3}, init::values(kW0));
  Value c = b.constant(kC, {3});
  Value loss = reduceSum(w * c) + reduceSum(w * w) * 0.5;
  makeTrainingStep(m, loss, o);
  Feeds feeds;
  for (int s = 0; s < steps; ++s) {
    Evaluation e = interpret(m, feeds);
    for (const auto &[var, next] : variableUpdates(m))
      feeds[m.value(var).name] = e.at(next);
  }
  return feeds.at("w").values;
}

// The same by hand: `step` maps (w, g, t) to the new w, keeping its state.
std::vector<double> trainByHand(
    int steps,
    const std::function<double(std::size_t, double, double, int)> &step) {
  std::vector<double> w = kW0;
  for (int t = 1; t <= steps; ++t)
    for (std::size_t i = 0; i < w.size(); ++i)
      w[i] = step(i, w[i], kC[i] + w[i], t);
  return w;
}

void expectNear(const std::vector<double> &a, const std::vector<double> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-12 * (1 + std::abs(b[i]))) << "element " << i;
}

} // namespace

TEST(Optimizer, PlainSgdStepsAlongTheGradient) {
  TrainingOptions o;
  o.optimizer = SGD{0.1};
  expectNear(trainInterpreted(o, 5),
             trainByHand(5, [](std::size_t, double w, double g, int) {
               return w - 0.1 * g;
             }));
}

TEST(Optimizer, SgdWithMomentumDampeningAndWeightDecay) {
  TrainingOptions o;
  o.optimizer = SGD{0.05, 0.9, 0.1, 0.01, false};
  std::vector<double> buf(3, 0.0);
  expectNear(trainInterpreted(o, 6),
             trainByHand(6, [&](std::size_t i, double w, double g, int) {
               g += 0.01 * w;
               buf[i] = 0.9 * buf[i] + 0.9 * g;
               return w - 0.05 * buf[i];
             }));
}

TEST(Optimizer, SgdWithNesterovMomentum) {
  TrainingOptions o;
  o.optimizer = SGD{0.05, 0.8, 0, 0, true};
  std::vector<double> buf(3, 0.0);
  expectNear(trainInterpreted(o, 6),
             trainByHand(6, [&](std::size_t i, double w, double g, int) {
               buf[i] = 0.8 * buf[i] + g;
               return w - 0.05 * (g + 0.8 * buf[i]);
             }));
}

TEST(Optimizer, AdamAndAdamWWithBiasCorrection) {
  for (bool decoupled : {false, true}) {
    Adam a;
    a.learningRate = 0.01;
    a.weightDecay = 0.1;
    a.decoupledWeightDecay = decoupled;
    TrainingOptions o;
    o.optimizer = a;
    std::vector<double> m(3, 0.0), v(3, 0.0);
    expectNear(trainInterpreted(o, 7),
               trainByHand(7, [&](std::size_t i, double w, double g, int t) {
                 double base = w;
                 if (decoupled)
                   base = w * (1 - 0.01 * 0.1);
                 else
                   g += 0.1 * w;
                 m[i] = 0.9 * m[i] + 0.1 * g;
                 v[i] = 0.999 * v[i] + 0.001 * g * g;
                 const double mh = m[i] / (1 - std::pow(0.9, t));
                 const double vh = v[i] / (1 - std::pow(0.999, t));
                 return base - 0.01 * mh / (std::sqrt(vh) + 1e-8);
               }));
  }
}

TEST(Optimizer, RmspropPlainCenteredAndWithMomentum) {
  for (bool centered : {false, true})
    for (double momentum : {0.0, 0.7}) {
      RMSprop r;
      r.learningRate = 0.01;
      r.rho = 0.8;
      r.momentum = momentum;
      r.weightDecay = 0.05;
      r.centered = centered;
      TrainingOptions o;
      o.optimizer = r;
      std::vector<double> v(3, 0.0), a(3, 0.0), buf(3, 0.0);
      expectNear(trainInterpreted(o, 6),
                 trainByHand(6, [&](std::size_t i, double w, double g, int) {
                   g += 0.05 * w;
                   v[i] = 0.8 * v[i] + 0.2 * g * g;
                   double var = v[i];
                   if (centered) {
                     a[i] = 0.8 * a[i] + 0.2 * g;
                     var -= a[i] * a[i];
                   }
                   double step = g / (std::sqrt(var) + 1e-7);
                   if (momentum != 0)
                     step = buf[i] = momentum * buf[i] + step;
                   return w - 0.01 * step;
                 }));
    }
}

TEST(Optimizer, LossScalingDoesNotChangeTheStep) {
  TrainingOptions plain, scaled;
  plain.optimizer = scaled.optimizer = SGD{0.1, 0.5};
  scaled.lossScaling = 1024;
  expectNear(trainInterpreted(scaled, 4), trainInterpreted(plain, 4));
}

TEST(Optimizer, BadSettingsAreOptionErrors) {
  auto error = [](const TrainingOptions &o) {
    Module m;
    Builder b(m);
    Value w = b.variable("w", {2}, init::ones());
    try {
      makeTrainingStep(m, reduceSum(w * w), o);
    } catch (const OptionError &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  TrainingOptions o;
  o.optimizer = SGD{-0.1};
  EXPECT_THAT(error(o), ::testing::HasSubstr("learning rate must be positive"));
  o.optimizer = SGD{0.1, 0, 0, 0, true};
  EXPECT_THAT(error(o), ::testing::HasSubstr("Nesterov"));
  Adam a;
  a.beta1 = 1.0;
  o.optimizer = a;
  EXPECT_THAT(error(o), ::testing::HasSubstr("betas must lie in [0, 1)"));
  RMSprop r;
  r.rho = 1.5;
  o.optimizer = r;
  EXPECT_THAT(error(o),
              ::testing::HasSubstr("rho must lie in [0, 1), not 1.5"));
  r = RMSprop{};
  r.epsilon = 0;
  o.optimizer = r;
  EXPECT_THAT(error(o), ::testing::HasSubstr("epsilon must be positive"));
  o.optimizer = SGD{};
  o.lossScaling = 0;
  EXPECT_THAT(error(o), ::testing::HasSubstr("loss scaling"));
}

TEST(Optimizer, StateVariablesNameTheVariableTheyBelongTo) {
  auto stateOf = [](const TrainingOptions &o) {
    Module m("quadratic");
    Builder b(m);
    Value w = b.variable("w", {3}, init::values(kW0));
    b.variable("w/other", {3}, init::zeros(), FLOAT, false); // not state
    Value loss = reduceSum(w * w);
    makeTrainingStep(m, loss, o);
    std::vector<std::string> names;
    for (const auto &[state, var] : optimizerState(m)) {
      EXPECT_EQ(var, w.id());
      names.push_back(m.value(state).name);
    }
    return names;
  };
  TrainingOptions adam;
  adam.optimizer = Adam{};
  EXPECT_EQ(stateOf(adam), (std::vector<std::string>{"w/adam_m", "w/adam_v"}));
  TrainingOptions momentum;
  momentum.optimizer = SGD{0.1, 0.9};
  EXPECT_EQ(stateOf(momentum), std::vector<std::string>{"w/momentum"});
  TrainingOptions rms;
  RMSprop r;
  r.centered = true;
  r.momentum = 0.5;
  rms.optimizer = r;
  EXPECT_EQ(stateOf(rms),
            (std::vector<std::string>{"w/rms_v", "w/rms_mean", "w/momentum"}));
  TrainingOptions plain;
  plain.optimizer = SGD{0.1};
  EXPECT_TRUE(stateOf(plain).empty());
}
