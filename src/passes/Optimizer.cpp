#include "tessera/passes/Optimizer.hpp"

#include "Rewrite.hpp"

#include "tessera/passes/Autodiff.hpp"
#include "tessera/support/Error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <type_traits>

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

// The hyper-parameters a schedule changes live in scalar variables
// (recorded as hyper-parameters) rather than in constants, so the host
// writes a new value between runs instead of compiling a new program.
class HyperParameters {
public:
  explicit HyperParameters(ir::Builder &b) : b_(b) {}

  // The variable holding \p name, made (at \p value) on first use; read as
  // \p dtype (a cast per type and step for non-float weights).
  ir::Value get(const std::string &name, double value, Type dtype) {
    auto it = vars_.find(name);
    if (it == vars_.end()) {
      // Outside any scope: its readers may run on several IPUs.
      const detail::WithAnnotations none(b_.module(), {});
      const ir::Value v = b_.variable("optimizer/" + name, {},
                                      ir::init::constant(value), FLOAT, false);
      b_.module().setHyperParameter(v.id(), name);
      it = vars_.emplace(name, v).first;
    }
    if (dtype == FLOAT)
      return it->second;
    const auto key = std::make_pair(name, dtype);
    auto c = casts_.find(key);
    if (c == casts_.end())
      c = casts_.emplace(key, cast(it->second, dtype)).first;
    return c->second;
  }

private:
  ir::Builder &b_;
  std::map<std::string, ir::Value> vars_;
  std::map<std::pair<std::string, Type>, ir::Value> casts_;
};

// The largest finite value of \p t (float or half).
double largestFinite(Type t) {
  return t == HALF ? 65504.0 : 3.4028234663852886e38;
}

// ok ? next : old for a 0/1 scalar \p okT and \p notOkT = 1 - okT, both of
// next's type, from elementwise ops (the IR has no select). \p next may
// hold infinities or NaNs on a skipped step: clamping first makes it
// finite, so next * 0 is 0, not NaN. The clamp leans on min and max
// returning their second operand when the first is NaN (Elementwise.def:
// a < b ? a : b), which maps NaN to the bound. With ok = 1 the sum is
// next + 0 and with ok = 0 it is 0 + old: either exact.
ir::Value okOr(const ir::Value &okT, const ir::Value &notOkT,
               const ir::Value &next, const ir::Value &old) {
  const double big = largestFinite(next.dtype());
  const ir::Value finite = max(min(next, big), -big);
  return finite * okT + old * notOkT;
}

// g / scale in g's type; half gradients are divided in float, as 1 / scale
// is below half's normal range for the usual scales.
ir::Value unscale(const ir::Value &g, const ir::Value &inverse) {
  if (g.dtype() == inverse.dtype())
    return g * inverse;
  return cast(cast(g, inverse.dtype()) * inverse, g.dtype());
}

// A weight's gradient as its update reads it, unscaled by the dynamic loss
// scale where there is one. A float gradient's unscaling is a new op at
// each read: with one use each, the lowering computes it inside each
// reader's map (the same float product every time) rather than in a map
// of its own, one map fewer per weight. A half gradient's is made once:
// a fused tree computes half in float without rounding each node, so a
// copy inside another map would not round as the stored value does.
class Gradient {
public:
  Gradient(ir::Value g, std::optional<ir::Value> inverse)
      : g_(std::move(g)), inverse_(std::move(inverse)) {
    if (inverse_ && g_.dtype() != inverse_->dtype())
      g_ = unscale(g_, *inverse_), inverse_.reset();
  }
  ir::Value operator()() const { return inverse_ ? g_ * *inverse_ : g_; }

private:
  ir::Value g_;
  std::optional<ir::Value> inverse_;
};

class StepBuilder {
public:
  StepBuilder(ir::Module &m, std::vector<VariableUpdate> &updates)
      : b_(m), hyper_(b_), updates_(updates) {}

  // With \p ok set (dynamic loss scaling), each update keeps the old value
  // on steps where ok is 0.
  void gateUpdates(ir::Value ok) { ok_ = ok; }

  void update(const ir::Value &v, const ir::Value &next) {
    ir::Value gated = next;
    if (ok_) {
      const auto &[okT, notOkT] = gate(next.dtype());
      gated = okOr(okT, notOkT, next, v);
    }
    b_.update(v, gated);
    updates_.push_back({v, gated});
  }

  void sgd(const SGD &o, const ir::Value &w, const Gradient &grad) {
    ir::Value g = grad();
    const ir::Value lr = learningRate(o.learningRate, w);
    if (o.weightDecay != 0)
      g = g + w * o.weightDecay;
    if (o.momentum != 0) {
      const ir::Value m = hyper_.get(kMomentum, o.momentum, w.dtype());
      const ir::Value buf = stateLike(b_, w, "momentum");
      const ir::Value next = buf * m + g * (1 - o.dampening);
      update(buf, next);
      g = o.nesterov ? g + next * m : next;
    }
    update(w, w - g * lr);
  }

  void adam(const Adam &o, const ir::Value &w, const Gradient &grad,
            const ir::Value &t) {
    const ir::Value lr = learningRate(o.learningRate, w);
    ir::Value base = w;
    std::optional<ir::Value> decayed;
    if (o.weightDecay != 0) {
      if (o.decoupledWeightDecay)
        base = w * (1.0 - lr * o.weightDecay);
      else
        decayed = grad() + w * o.weightDecay;
    }
    // Each read of g its own op (see Gradient), unless weight decay made
    // one value of it.
    const auto g = [&] { return decayed ? *decayed : grad(); };
    const ir::Value m = stateLike(b_, w, "adam_m");
    const ir::Value v = stateLike(b_, w, "adam_v");
    const ir::Value m1 = m * o.beta1 + g() * (1 - o.beta1);
    ir::Value g1 = g();
    const ir::Value v1 =
        v * o.beta2 + g1 * (decayed ? g1 : g()) * (1 - o.beta2);
    update(m, m1);
    update(v, v1);
    const auto &[c1, c2] = biasCorrections(o, t, w.dtype());
    const ir::Value step = (m1 / c1) / (sqrt(v1 / c2) + o.epsilon) * lr;
    update(w, base - step);
  }

  void rmsprop(const RMSprop &o, const ir::Value &w, const Gradient &grad) {
    ir::Value g = grad();
    const ir::Value lr = learningRate(o.learningRate, w);
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
      step = buf * hyper_.get(kMomentum, o.momentum, w.dtype()) + step;
      update(buf, step);
    }
    update(w, w - step * lr);
  }

  ir::Builder &builder() { return b_; }

private:
  ir::Value learningRate(double value, const ir::Value &w) {
    return hyper_.get(kLearningRate, value, w.dtype());
  }

  // Scalars that depend on no weight are made once, not once per weight:
  // each would be a scalar op, and a model's many scalar ops all land on
  // the tiles their one element lives on.

  // ok and 1 - ok in type \p dtype, for gating updates of that type.
  const std::pair<ir::Value, ir::Value> &gate(Type dtype) {
    auto it = gates_.find(dtype);
    if (it == gates_.end()) {
      const ir::Value okT = ok_->dtype() == dtype ? *ok_ : cast(*ok_, dtype);
      it = gates_.emplace(dtype, std::make_pair(okT, 1.0 - okT)).first;
    }
    return it->second;
  }

  // Adam's 1 - beta1^t and 1 - beta2^t in type \p dtype, with t a FLOAT
  // device value: beta^t = exp(t ln beta), computed in float and cast for
  // other weight types.
  const std::pair<ir::Value, ir::Value> &
  biasCorrections(const Adam &o, const ir::Value &t, Type dtype) {
    auto it = corrections_.find(dtype);
    if (it != corrections_.end())
      return it->second;
    if (dtype == t.dtype())
      return corrections_
          .emplace(dtype, std::make_pair(1.0 - exp(t * std::log(o.beta1)),
                                         1.0 - exp(t * std::log(o.beta2))))
          .first->second;
    const auto &[c1, c2] = biasCorrections(o, t, t.dtype());
    return corrections_
        .emplace(dtype, std::make_pair(cast(c1, dtype), cast(c2, dtype)))
        .first->second;
  }

  ir::Builder b_;
  HyperParameters hyper_;
  std::vector<VariableUpdate> &updates_;
  std::optional<ir::Value> ok_;
  std::map<Type, std::pair<ir::Value, ir::Value>> gates_;
  std::map<Type, std::pair<ir::Value, ir::Value>> corrections_;
};

void checkOptions(const TrainingOptions &o) {
  check(o.lossScaling > 0 && std::isfinite(o.lossScaling),
        fmt::format("loss scaling must be positive and finite, not {}; a "
                    "power of 2 such as 128 or 1024 scales exactly",
                    o.lossScaling));
  if (const auto &d = o.dynamicLossScaling) {
    check(o.lossScaling == 1,
          fmt::format("give either a static loss scaling ({}) or dynamic "
                      "loss scaling, not both",
                      o.lossScaling));
    check(d->initialScale > 0 && std::isfinite(d->initialScale),
          fmt::format("the initial dynamic loss scale must be positive and "
                      "finite, not {}; Keras starts at 32768 (2^15)",
                      d->initialScale));
    check(d->growthSteps > 0,
          "dynamic loss scaling needs growthSteps >= 1 (finite steps before "
          "the scale doubles; Keras uses 2000), not 0");
  }
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

// Replicas see different batches; averaging their gradients keeps their
// weights identical (TensorFlow's CrossReplicaOptimizer).
ir::Value replicaMean(const TrainingOptions &options, const ir::Value &g) {
  return options.crossReplicaMean ? crossReplicaMean(g) : g;
}

// Where a gradient was computed (its IPU and pipeline stage), so its
// finite check runs there and only a scalar crosses to other IPUs.
ir::Annotations whereComputed(const ir::Module &m, ir::ValueId g) {
  ir::Annotations a;
  if (m.value(g).kind == ir::ValueKind::OpResult) {
    const ir::Annotations &p = m.producer(g).annotations;
    a.ipu = p.ipu;
    a.pipelineStage = p.pipelineStage;
  }
  a.backward = true;
  return a;
}

// 1 (FLOAT) when every gradient is finite, else 0: one reduction per
// element type and place over a concatenation of the flattened gradients
// there (a view, not a copy). An infinity or NaN anywhere makes the sum
// infinite or NaN. A float sum of finite gradients overflows only past
// 3.4e38 (and then the halved scale passes again a step or two later), so
// float gradients are summed as they are: a map to g * 0 first would cost
// a copy of every gradient and, on each tile, a vertex listing every
// gradient's regions there (80 KB of vertex state a tile in ResNet-50).
// Half gradients are summed as g * 0: 0 for finite g, NaN otherwise,
// as a half sum of them overflows at 65504.
ir::Value allFinite(ir::Module &m, const std::vector<ir::Value> &grads,
                    const std::vector<ir::Annotations> &where) {
  using Key =
      std::tuple<Type, std::optional<unsigned>, std::optional<unsigned>>;
  std::map<Key, std::pair<ir::Annotations, std::vector<ir::Value>>> groups;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const ir::Value &g = grads[i];
    auto &[a, flat] = groups[{g.dtype(), where[i].ipu, where[i].pipelineStage}];
    a = where[i];
    const detail::WithAnnotations scope(m, a);
    flat.push_back(reshape(g, {g.type().numElements()}));
  }
  std::vector<ir::Value> finite;
  for (const auto &[key, group] : groups) {
    const auto &[a, flat] = group;
    const detail::WithAnnotations scope(m, a);
    const ir::Value all = flat.size() == 1 ? flat[0] : concat(flat, 0);
    const bool asIs = std::get<0>(key) == FLOAT;
    finite.push_back(isFinite(reduceSum(asIs ? all : all * 0.0)));
  }
  // Scalars from every place meet outside any stage, as the weight
  // update's other readers of several stages do.
  ir::Value ok = finite[0];
  for (std::size_t i = 1; i < finite.size(); ++i)
    ok = logicalAnd(ok, finite[i]);
  return cast(ok, FLOAT);
}

// Dynamic loss scaling: whether every scaled gradient is finite (a FLOAT
// 0/1 scalar), and the next scale and good-step count, computed on the
// device with no host round trip. Gradients enter after the cross-replica
// mean, so every replica sees the same verdict.
ir::Value dynamicScaleStep(ir::Builder &b, const DynamicLossScaling &d,
                           const ir::Value &scale,
                           const std::vector<ir::Value> &grads,
                           const std::vector<ir::Annotations> &where) {
  const ir::Value ok = allFinite(b.module(), grads, where);
  const ir::Value good = b.variable(kLossScaleGoodSteps, {}, ir::init::zeros(),
                                    FLOAT, /*trainable=*/false);
  const ir::Value good1 = (good + 1.0) * ok;
  const ir::Value grow = cast(gteq(good1, double(d.growthSteps)), FLOAT);
  // x2 after growthSteps finite steps in a row, x1 on other finite steps,
  // x0.5 on a step with an overflow.
  b.update(scale, scale * ((grow + 0.5) * ok + 0.5));
  b.update(good, good1 * (1.0 - grow));
  return ok;
}

// The optimizer's operations for every recorded gradient, in the order
// autodiff recorded them.
std::vector<VariableUpdate> buildSteps(ir::Module &module,
                                       const TrainingOptions &options,
                                       std::optional<ir::ValueId> lossScale) {
  if (module.gradients().empty())
    throw ir::IrError("optimizer: module \"" + module.name() +
                      "\" has no recorded gradients; run the autodiff pass "
                      "(or makeTrainingStep) first");
  if (options.dynamicLossScaling && !lossScale)
    throw ir::IrError("optimizer: dynamic loss scaling needs the loss-scale "
                      "variable the autodiff pass scaled the loss by "
                      "(passes::addLossScale)");
  ir::Builder b(module);
  std::vector<VariableUpdate> updates;
  StepBuilder step(module, updates);
  // A copy: the steps below add records to the module.
  const std::vector<ir::VariableRecord> gradients = module.gradients();
  std::vector<ir::Value> grads;
  std::vector<ir::Annotations> where;
  for (const ir::VariableRecord &r : gradients) {
    where.push_back(whereComputed(module, r.value));
    const ir::Value g0 = replicaMean(options, b.value(r.value));
    grads.push_back(options.lossScaling == 1 ? g0
                                             : g0 * (1 / options.lossScaling));
  }
  std::optional<ir::Value> inverse;
  if (options.dynamicLossScaling) {
    const ir::Value scale = b.value(*lossScale);
    step.gateUpdates(
        dynamicScaleStep(b, *options.dynamicLossScaling, scale, grads, where));
    inverse = inv(scale);
  }
  ir::Value t;
  if (std::holds_alternative<Adam>(options.optimizer)) {
    const ir::Value count =
        b.variable("optimizer/step", {}, ir::init::zeros(), FLOAT, false);
    t = count + 1.0;
    step.update(count, t);
  }
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    const ir::Value w = b.value(gradients[i].variable);
    const Gradient g(grads[i], inverse);
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

ir::Value addLossScale(ir::Module &module, const TrainingOptions &options) {
  checkOptions(options);
  check(options.dynamicLossScaling.has_value(),
        "addLossScale: the options have no dynamic loss scaling");
  ir::Builder b(module);
  // Outside any scope: the loss and every gradient read it.
  const detail::WithAnnotations none(module, {});
  return b.variable(
      kLossScaleVariable, {},
      ir::init::constant(options.dynamicLossScaling->initialScale), FLOAT,
      /*trainable=*/false);
}

std::vector<VariableUpdate> makeTrainingStep(ir::Module &module, ir::Value loss,
                                             const TrainingOptions &options) {
  checkOptions(options);
  std::optional<ir::ValueId> lossScale;
  ir::Value scaled = loss;
  if (options.dynamicLossScaling) {
    ir::Value s = addLossScale(module, options);
    lossScale = s.id();
    scaled = loss * (s.dtype() == loss.dtype() ? s : cast(s, loss.dtype()));
  } else if (options.lossScaling != 1) {
    scaled = loss * options.lossScaling;
  }
  const Gradients gradients = autodiff(module, scaled);
  for (const auto &[w, g] : gradients.entries())
    module.setGradient(w.id(), g.id());
  return buildSteps(module, options, lossScale);
}

bool OptimizerPass::run(ir::Module &module) {
  checkOptions(options_);
  return !buildSteps(module, options_, lossScale_).empty();
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

namespace tessera::passes {

std::vector<std::pair<std::string, double>>
runtimeHyperParameters(const Optimizer &optimizer) {
  std::vector<std::pair<std::string, double>> out;
  std::visit(
      [&](const auto &o) {
        out.emplace_back(kLearningRate, o.learningRate);
        if constexpr (!std::is_same_v<std::decay_t<decltype(o)>, Adam>)
          if (o.momentum != 0)
            out.emplace_back(kMomentum, o.momentum);
      },
      optimizer);
  return out;
}

namespace {

// Adds "<name> <a> and <b>" to \p diffs when the compiled-in settings differ.
void compare(std::vector<std::string> &diffs, const char *name, double a,
             double b) {
  if (a != b)
    diffs.push_back(fmt::format("{} {} and {}", name, a, b));
}

std::vector<std::string> differences(const SGD &a, const SGD &b) {
  std::vector<std::string> d;
  compare(d, "momentum on", a.momentum != 0, b.momentum != 0);
  compare(d, "dampening", a.dampening, b.dampening);
  compare(d, "weight decay", a.weightDecay, b.weightDecay);
  compare(d, "nesterov", a.nesterov, b.nesterov);
  return d;
}

std::vector<std::string> differences(const Adam &a, const Adam &b) {
  std::vector<std::string> d;
  compare(d, "beta1", a.beta1, b.beta1);
  compare(d, "beta2", a.beta2, b.beta2);
  compare(d, "epsilon", a.epsilon, b.epsilon);
  compare(d, "weight decay", a.weightDecay, b.weightDecay);
  compare(d, "decoupled weight decay", a.decoupledWeightDecay,
          b.decoupledWeightDecay);
  return d;
}

std::vector<std::string> differences(const RMSprop &a, const RMSprop &b) {
  std::vector<std::string> d;
  compare(d, "rho", a.rho, b.rho);
  compare(d, "momentum on", a.momentum != 0, b.momentum != 0);
  compare(d, "epsilon", a.epsilon, b.epsilon);
  compare(d, "weight decay", a.weightDecay, b.weightDecay);
  compare(d, "centered", a.centered, b.centered);
  return d;
}

constexpr const char *kNames[] = {"SGD", "Adam", "RMSprop"};

} // namespace

bool sameProgram(const Optimizer &a, const Optimizer &b, std::string *why) {
  std::vector<std::string> diffs;
  if (a.index() != b.index())
    diffs.push_back(
        fmt::format("{} and {}", kNames[a.index()], kNames[b.index()]));
  else
    std::visit(
        [&](const auto &x) {
          diffs = differences(x, std::get<std::decay_t<decltype(x)>>(b));
        },
        a);
  if (why && !diffs.empty())
    *why = fmt::format("{}", fmt::join(diffs, ", "));
  return diffs.empty();
}

} // namespace tessera::passes
