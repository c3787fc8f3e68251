#include "tessera/passes/Optimizer.hpp"

#include "tessera/passes/Autodiff.hpp"
#include "tessera/support/Error.hpp"

#include <cmath>

namespace tessera::passes {
namespace {

constexpr std::string_view kPrefix = "update/";

void check(bool ok, const std::string &what) {
  if (!ok)
    throw OptionError("optimizer: " + what);
}

// The names of the optimizer state of variable "w": "w/<suffix>".
constexpr std::string_view kStateSuffixes[] = {"momentum", "adam_m", "adam_v",
                                               "rms_v", "rms_mean"};

// A zero-initialised optimizer state variable like \p w.
ir::Value stateLike(ir::Builder &b, const ir::Value &w,
                    const std::string &suffix) {
  return b.variable(w.name() + "/" + suffix, w.shape(), ir::init::zeros(),
                    w.dtype(),
                    /*trainable=*/false);
}

class StepBuilder {
public:
  StepBuilder(ir::Module &m, std::vector<VariableUpdate> &updates)
      : b_(m), updates_(updates) {}

  void update(const ir::Value &v, const ir::Value &next) {
    b_.output(std::string(kPrefix) + v.name(), next);
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

} // namespace

std::vector<VariableUpdate> makeTrainingStep(ir::Module &module, ir::Value loss,
                                             const TrainingOptions &options) {
  checkOptions(options);
  std::vector<ir::Value> wrt;
  ir::Builder b(module);
  for (const ir::Variable &v : module.variables())
    if (v.trainable)
      wrt.push_back(b.value(v.value));
  const ir::Value scaled =
      options.lossScaling == 1 ? loss : loss * options.lossScaling;
  const Gradients grads = autodiff(module, scaled, wrt);
  std::vector<VariableUpdate> updates;
  StepBuilder step(module, updates);
  ir::Value t;
  if (std::holds_alternative<Adam>(options.optimizer)) {
    const ir::Value count =
        b.variable("optimizer/step", {}, ir::init::zeros(), FLOAT, false);
    t = count + 1.0;
    step.update(count, t);
  }
  for (const auto &[w, g0] : grads.entries()) {
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

std::vector<std::pair<ir::ValueId, ir::ValueId>>
variableUpdates(const ir::Module &module) {
  std::vector<std::pair<ir::ValueId, ir::ValueId>> out;
  for (const ir::Output &o : module.outputs()) {
    if (o.name.rfind(kPrefix, 0) != 0)
      continue;
    const std::string var = o.name.substr(kPrefix.size());
    const auto id = module.findValue(var);
    if (!id || module.value(*id).kind != ir::ValueKind::Variable)
      throw ir::IrError("output \"" + o.name + "\" updates \"" + var +
                        "\", which is not a variable of module \"" +
                        module.name() + "\"");
    if (module.typeOf(*id) != module.typeOf(o.value))
      throw ir::IrError("output \"" + o.name + "\" is " +
                        module.typeOf(o.value).toString() + " but variable \"" +
                        var + "\" is " + module.typeOf(*id).toString());
    out.emplace_back(*id, o.value);
  }
  return out;
}

std::vector<std::pair<ir::ValueId, ir::ValueId>>
optimizerState(const ir::Module &module) {
  std::vector<std::pair<ir::ValueId, ir::ValueId>> out;
  for (const ir::Variable &v : module.variables()) {
    const std::string &name = module.value(v.value).name;
    for (std::string_view suffix : kStateSuffixes) {
      const std::string tail = "/" + std::string(suffix);
      if (name.size() <= tail.size() ||
          name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
        continue;
      const auto w =
          module.findValue(name.substr(0, name.size() - tail.size()));
      if (w && module.value(*w).kind == ir::ValueKind::Variable &&
          module.typeOf(*w) == module.typeOf(v.value))
        out.emplace_back(v.value, *w);
    }
  }
  return out;
}

} // namespace tessera::passes
