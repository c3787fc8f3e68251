#include "tessera/passes/Optimizer.hpp"

#include "tessera/passes/Autodiff.hpp"
#include "tessera/support/Error.hpp"

#include <cmath>

namespace tessera::passes {
namespace {

void check(bool ok, const std::string &what) {
  if (!ok)
    throw OptionError("optimizer: " + what);
}

// A zero-initialised optimizer state variable like \p w, named
// "<w>/<suffix>" and recorded as w's state.
ir::Value stateLike(ir::Builder &b, const ir::Value &w,
                    const std::string &suffix) {
  const ir::Value state =
      b.variable(w.name() + "/" + suffix, w.shape(), ir::init::zeros(),
                 w.dtype(), /*trainable=*/false);
  w.module().setStateOf(state.id(), w.id());
  return state;
}

class StepBuilder {
public:
  StepBuilder(ir::Module &m, std::vector<VariableUpdate> &updates)
      : b_(m), updates_(updates) {}

  void update(const ir::Value &v, const ir::Value &next) {
    b_.update(v, next);
    updates_.push_back({v, next});
  }

  void sgd(const SGD &o, const ir::Value &w, ir::Value g) {
    if (o.weightDecay != 0)
      g = g + w * o.weightDecay;
    if (o.momentum != 0) {
      const ir::Value buf = stateLike(b_, w, "momentum");
      const ir::Value next = buf * o.momentum + g * (1 - o.dampening);
      update(buf, next);
      g = o.nesterov ? g + next * o.momentum : next;
    }
    update(w, w - g * o.learningRate);
  }

  void adam(const Adam &o, const ir::Value &w, ir::Value g,
            const ir::Value &t) {
    ir::Value base = w;
    if (o.weightDecay != 0) {
      if (o.decoupledWeightDecay)
        base = w * (1 - o.learningRate * o.weightDecay);
      else
        g = g + w * o.weightDecay;
    }
    const ir::Value m = stateLike(b_, w, "adam_m");
    const ir::Value v = stateLike(b_, w, "adam_v");
    const ir::Value m1 = m * o.beta1 + g * (1 - o.beta1);
    const ir::Value v1 = v * o.beta2 + g * g * (1 - o.beta2);
    update(m, m1);
    update(v, v1);
    // 1 - beta^t with t a device value: beta^t = exp(t ln beta).
    const ir::Value c1 = 1.0 - exp(t * std::log(o.beta1));
    const ir::Value c2 = 1.0 - exp(t * std::log(o.beta2));
    const ir::Value step =
        (m1 / c1) / (sqrt(v1 / c2) + o.epsilon) * o.learningRate;
    update(w, base - step);
  }

  void rmsprop(const RMSprop &o, const ir::Value &w, ir::Value g) {
    if (o.weightDecay != 0)
      g = g + w * o.weightDecay;
    const ir::Value v = stateLike(b_, w, "rms_v");
    const ir::Value v1 = v * o.rho + g * g * (1 - o.rho);
    update(v, v1);
    ir::Value variance = v1;
    if (o.centered) {
      const ir::Value a = stateLike(b_, w, "rms_mean");
      const ir::Value a1 = a * o.rho + g * (1 - o.rho);
      update(a, a1);
      variance = v1 - a1 * a1;
    }
    ir::Value step = g / (sqrt(variance) + o.epsilon);
    if (o.momentum != 0) {
      const ir::Value buf = stateLike(b_, w, "momentum");
      step = buf * o.momentum + step;
      update(buf, step);
    }
    update(w, w - step * o.learningRate);
  }

  ir::Builder &builder() { return b_; }

private:
  ir::Builder b_;
  std::vector<VariableUpdate> &updates_;
};

void checkOptions(const TrainingOptions &o) {
  check(o.lossScaling > 0,
        "loss scaling must be positive, not " + std::to_string(o.lossScaling));
  if (const auto *s = std::get_if<SGD>(&o.optimizer)) {
    check(s->learningRate > 0, "SGD learning rate must be positive, not " +
                                   std::to_string(s->learningRate));
    check(s->momentum >= 0, "SGD momentum must not be negative");
    check(!s->nesterov || (s->momentum > 0 && s->dampening == 0),
          "Nesterov momentum needs momentum > 0 and dampening 0");
  } else if (const auto *a = std::get_if<Adam>(&o.optimizer)) {
    check(a->learningRate > 0, "Adam learning rate must be positive, not " +
                                   std::to_string(a->learningRate));
    check(a->beta1 >= 0 && a->beta1 < 1 && a->beta2 >= 0 && a->beta2 < 1,
          "Adam betas must lie in [0, 1), not " + std::to_string(a->beta1) +
              " and " + std::to_string(a->beta2));
  } else {
    const RMSprop &r = std::get<RMSprop>(o.optimizer);
    check(r.learningRate > 0, "RMSprop learning rate must be positive, not " +
                                  std::to_string(r.learningRate));
    check(r.rho >= 0 && r.rho < 1,
          "RMSprop rho must lie in [0, 1), not " + std::to_string(r.rho));
    check(r.momentum >= 0, "RMSprop momentum must not be negative, not " +
                               std::to_string(r.momentum));
    check(r.epsilon > 0,
          "RMSprop epsilon must be positive, not " + std::to_string(r.epsilon));
  }
}

// The optimizer's operations for every recorded gradient, in the order
// autodiff recorded them.
std::vector<VariableUpdate> buildSteps(ir::Module &module,
                                       const TrainingOptions &options) {
  if (module.gradients().empty())
    throw ir::IrError("optimizer: module \"" + module.name() +
                      "\" has no recorded gradients; run the autodiff pass "
                      "(or makeTrainingStep) first");
  ir::Builder b(module);
  std::vector<VariableUpdate> updates;
  StepBuilder step(module, updates);
  ir::Value t;
  if (std::holds_alternative<Adam>(options.optimizer)) {
    const ir::Value count =
        b.variable("optimizer/step", {}, ir::init::zeros(), FLOAT, false);
    t = count + 1.0;
    step.update(count, t);
  }
  // A copy: the steps below add records to the module.
  const std::vector<ir::VariableRecord> gradients = module.gradients();
  for (const ir::VariableRecord &r : gradients) {
    const ir::Value w = b.value(r.variable), g0 = b.value(r.value);
    ir::Value g =
        options.lossScaling == 1 ? g0 : g0 * (1 / options.lossScaling);
    // Replicas see different batches; averaging their gradients keeps
    // their weights identical (TensorFlow's CrossReplicaOptimizer).
    if (options.crossReplicaMean)
      g = crossReplicaMean(g);
    if (const auto *s = std::get_if<SGD>(&options.optimizer))
      step.sgd(*s, w, g);
    else if (const auto *a = std::get_if<Adam>(&options.optimizer))
      step.adam(*a, w, g, t);
    else
      step.rmsprop(std::get<RMSprop>(options.optimizer), w, g);
  }
  return updates;
}

} // namespace

std::vector<VariableUpdate> makeTrainingStep(ir::Module &module, ir::Value loss,
                                             const TrainingOptions &options) {
  checkOptions(options);
  const ir::Value scaled =
      options.lossScaling == 1 ? loss : loss * options.lossScaling;
  const Gradients gradients = autodiff(module, scaled);
  for (const auto &[w, g] : gradients.entries())
    module.setGradient(w.id(), g.id());
  return buildSteps(module, options);
}

bool OptimizerPass::run(ir::Module &module) {
  checkOptions(options_);
  return !buildSteps(module, options_).empty();
}

std::vector<std::pair<ir::ValueId, ir::ValueId>>
variableUpdates(const ir::Module &module) {
  std::vector<std::pair<ir::ValueId, ir::ValueId>> out;
  for (const ir::VariableRecord &r : module.updates())
    out.emplace_back(r.variable, r.value);
  return out;
}

std::vector<std::pair<ir::ValueId, ir::ValueId>>
optimizerState(const ir::Module &module) {
  std::vector<std::pair<ir::ValueId, ir::ValueId>> out;
  for (const ir::VariableRecord &r : module.states())
    out.emplace_back(r.variable, r.value);
  return out;
}

} // namespace tessera::passes
