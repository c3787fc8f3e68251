// The optimizer pass: SGD (momentum, dampening, Nesterov, weight decay),
// Adam, AdamW and RMSprop step by step against the formulas in double
// precision, run through the IR interpreter; loss scaling leaves the step
// unchanged; bad settings are errors.
#include "tessera/passes/Optimizer.hpp"
#include "tessera/ir/Interpreter.hpp"
#include "tessera/ir/Text.hpp"
#include "tessera/ir/Verifier.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::passes;

namespace {

// loss = sum(w * c) + 0.5 * sum(w * w): the gradient is c + w, known
// exactly, so each optimizer's trajectory can be computed by hand.
const std::vector<double> kC{0.5, -1.0, 2.0};
const std::vector<double> kW0{1.0, 2.0, -3.0};

// Hyper-parameter values the host writes before the step (from 1) they
// are keyed by.
using Schedule = std::map<int, std::vector<std::pair<std::string, double>>>;

// Runs `steps` training steps through the interpreter, with w and c of
// type \p dtype; returns w.
std::vector<double> trainInterpreted(const TrainingOptions &o, int steps,
                                     const Schedule &schedule = {},
                                     Type dtype = FLOAT) {
  Module m("quadratic");
  Builder b(m);
  Value w = b.variable("w", {3}, init::values(kW0), dtype);
  Value c = b.constant(kC, {3}, dtype);
  Value loss = reduceSum(w * c) + reduceSum(w * w) * 0.5;
  makeTrainingStep(m, loss, o);
  Feeds feeds;
  for (int s = 0; s < steps; ++s) {
    if (auto it = schedule.find(s + 1); it != schedule.end())
      for (const auto &[name, value] : it->second) {
        const auto v = m.hyperParameter(name);
        EXPECT_TRUE(v) << name;
        feeds[m.value(*v).name] = {FLOAT, {}, {value}};
      }
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

// Keras' "float16" policy: half weights, so half Adam state and a half
// step; the bias corrections (computed from the float step count) are
// cast to the weights' type.
TEST(Optimizer, AdamTrainsHalfWeights) {
  TrainingOptions o;
  o.optimizer = Adam{0.01};
  const std::vector<double> half = trainInterpreted(o, 7, {}, HALF);
  const std::vector<double> single = trainInterpreted(o, 7);
  ASSERT_EQ(half.size(), single.size());
  for (std::size_t i = 0; i < half.size(); ++i) {
    EXPECT_NEAR(half[i], single[i], 1e-2) << "element " << i;
    EXPECT_NE(half[i], kW0[i]) << "element " << i << " did not move";
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

TEST(Optimizer, SgdFollowsALearningRateAndMomentumScheduleWrittenBetweenSteps) {
  TrainingOptions o;
  o.optimizer = SGD{0.05, 0.9, 0.1, 0.01, false};
  std::vector<double> buf(3, 0.0);
  const Schedule schedule{{4, {{"learning_rate", 0.02}, {"momentum", 0.5}}},
                          {6, {{"learning_rate", 0.2}}}};
  expectNear(trainInterpreted(o, 7, schedule),
             trainByHand(7, [&](std::size_t i, double w, double g, int t) {
               const double lr = t < 4 ? 0.05 : t < 6 ? 0.02 : 0.2;
               const double m = t < 4 ? 0.9 : 0.5;
               g += 0.01 * w;
               buf[i] = m * buf[i] + 0.9 * g;
               return w - lr * buf[i];
             }));
  // Without the writes, the first values stay (the schedule takes effect).
  EXPECT_GT(
      std::abs(trainInterpreted(o, 7)[0] - trainInterpreted(o, 7, schedule)[0]),
      1e-6);
}

TEST(Optimizer, AdamWDecaysByTheLearningRateTheHostWrote) {
  Adam a;
  a.learningRate = 0.01;
  a.weightDecay = 0.1;
  a.decoupledWeightDecay = true;
  TrainingOptions o;
  o.optimizer = a;
  std::vector<double> m(3, 0.0), v(3, 0.0);
  expectNear(trainInterpreted(o, 6, {{3, {{"learning_rate", 0.003}}}}),
             trainByHand(6, [&](std::size_t i, double w, double g, int t) {
               const double lr = t < 3 ? 0.01 : 0.003;
               m[i] = 0.9 * m[i] + 0.1 * g;
               v[i] = 0.999 * v[i] + 0.001 * g * g;
               const double mh = m[i] / (1 - std::pow(0.9, t));
               const double vh = v[i] / (1 - std::pow(0.999, t));
               return w * (1 - lr * 0.1) - lr * mh / (std::sqrt(vh) + 1e-8);
             }));
}

TEST(Optimizer, HyperParametersAreRecordedScalarVariables) {
  auto recorded = [](const Optimizer &opt, Type dtype = FLOAT) {
    Module m("quadratic");
    Builder b(m);
    Value w = b.variable("w", {3}, init::values(kW0), dtype);
    makeTrainingStep(m, cast(reduceSum(w * w), FLOAT), {.optimizer = opt});
    verify(m);
    std::vector<std::pair<std::string, double>> out;
    for (const HyperParameterRecord &r : m.hyperParameters()) {
      const ValueInfo &info = m.value(r.variable);
      EXPECT_EQ(info.name, "optimizer/" + r.name);
      EXPECT_EQ(info.type, (ValueType{FLOAT, {}}));
      EXPECT_FALSE(m.variableOf(r.variable).trainable);
      EXPECT_FALSE(m.updateOf(r.variable));
      out.emplace_back(r.name, m.variableOf(r.variable).init.a);
    }
    // The records survive the text form.
    EXPECT_EQ(print(parse(print(m))), print(m));
    EXPECT_EQ(out, runtimeHyperParameters(opt));
    return out;
  };
  using Values = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(recorded(SGD{0.1}), (Values{{"learning_rate", 0.1}}));
  EXPECT_EQ(recorded(SGD{0.1, 0.9}),
            (Values{{"learning_rate", 0.1}, {"momentum", 0.9}}));
  EXPECT_EQ(recorded(Adam{}), (Values{{"learning_rate", 0.001}}));
  RMSprop r;
  r.momentum = 0.5;
  EXPECT_EQ(recorded(r).size(), 2u);
  // Half weights read the float variable through a cast.
  EXPECT_EQ(recorded(SGD{0.1, 0.9}, HALF).size(), 2u);
}

TEST(Optimizer, HyperParameterRecordsAreCheckedAsTheyAreMade) {
  Module m("records");
  Builder b(m);
  Value w = b.variable("w", {3}, init::zeros());
  Value s = b.variable("s", {}, init::constant(0.1), FLOAT, false);
  Value t = b.variable("t", {}, init::constant(0.2), FLOAT, false);
  EXPECT_THROW(m.setHyperParameter(w.id(), "learning_rate"), IrError);
  EXPECT_THROW(m.setHyperParameter(s.id(), ""), IrError);
  m.setHyperParameter(s.id(), "learning_rate");
  EXPECT_THAT([&] { m.setHyperParameter(t.id(), "learning_rate"); },
              ::testing::ThrowsMessage<IrError>(
                  ::testing::HasSubstr("is already held by")));
  EXPECT_EQ(m.hyperParameter("learning_rate"), s.id());
  EXPECT_TRUE(m.isHyperParameter(s.id()));
  EXPECT_FALSE(m.isHyperParameter(t.id()));
  // The host writes it; a device update would overwrite what it wrote.
  m.setUpdate(s.id(), (s * 0.5).id());
  EXPECT_THAT([&] { verify(m); },
              ::testing::ThrowsMessage<IrError>(
                  ::testing::HasSubstr("has an update record")));
}

TEST(Optimizer, SameProgramComparesEverythingButTheRuntimeHyperParameters) {
  std::string why;
  EXPECT_TRUE(sameProgram(SGD{0.1, 0.9}, SGD{0.5, 0.3}, &why));
  EXPECT_EQ(why, "");
  EXPECT_FALSE(sameProgram(SGD{0.1, 0.9}, SGD{0.1}, &why));
  EXPECT_THAT(why, ::testing::HasSubstr("momentum on"));
  Adam a, b;
  b.learningRate = 0.5;
  EXPECT_TRUE(sameProgram(a, b));
  b.beta2 = 0.99;
  EXPECT_FALSE(sameProgram(a, b, &why));
  EXPECT_EQ(why, "beta2 0.999 and 0.99");
  EXPECT_FALSE(sameProgram(a, SGD{}, &why));
  EXPECT_EQ(why, "Adam and SGD");
}

namespace {

// The ops with a scalar result in a training step of \p weights weights of
// 4 elements each, trained by \p o.
std::size_t scalarOps(const TrainingOptions &o, int weights) {
  Module m("weights");
  Builder b(m);
  Value loss;
  for (int i = 0; i < weights; ++i) {
    Value w = b.variable("w" + std::to_string(i), {4}, init::constant(0.5));
    Value term = reduceSum(w * w);
    loss = i ? loss + term : term;
  }
  makeTrainingStep(m, loss, o);
  std::size_t n = 0;
  for (const Op &op : m.ops())
    n += !op.results.empty() && m.typeOf(op.results[0]).shape.empty();
  return n;
}

} // namespace

// A scalar op per weight is a vertex per weight on the one tile that holds
// the scalar: Adam's bias corrections and the loss-scaling gate (ok and
// 1 - ok) are computed once per step, whatever the number of weights.
TEST(Optimizer, ScalarWorkDoesNotGrowWithTheNumberOfWeights) {
  TrainingOptions adam;
  adam.optimizer = Adam{0.01};
  TrainingOptions gated = adam;
  gated.dynamicLossScaling = DynamicLossScaling{1024, 100};
  for (const TrainingOptions &o : {adam, gated}) {
    // Each weight adds two to the forward pass (its sum and the add of
    // that to the loss) and, before the fix, 8 (Adam) or 11 (gated Adam)
    // to the step.
    const std::size_t two = scalarOps(o, 2), six = scalarOps(o, 6);
    EXPECT_EQ(six - two, 4 * 2u) << "scalar ops: " << two << " for two "
                                 << "weights, " << six << " for six";
  }
}
