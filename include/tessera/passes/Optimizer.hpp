/// \file
/// Optimizers as an IR pass: for every gradient the autodiff pass recorded
/// (Module::gradients), the optimizer pass appends the operations computing
/// the variable's new value and records it (Module::setUpdate; the value is
/// also the output "update/<variable>", for dumps). Running the module and
/// writing each recorded update back to its variable is one training step
/// (the session does this on the device, the interpreter test on the host).
/// Optimizer state (momentum, Adam's moments, RMSprop's averages, the step
/// count) lives in non-trainable, zero-initialised variables named
/// "<variable>/momentum", "<variable>/adam_m", "<variable>/adam_v",
/// "<variable>/rms_v", "<variable>/rms_mean" and "optimizer/step", updated
/// the same way; each but the step count is recorded as its variable's
/// state (Module::setStateOf). makeTrainingStep() runs both steps at once.
///
/// The learning rate, and the momentum of SGD and RMSprop when it is not
/// 0, are runtime inputs: each lives in a non-trainable float scalar
/// variable ("optimizer/learning_rate", "optimizer/momentum") initialised
/// from the options and recorded as a hyper-parameter
/// (Module::setHyperParameter), which the host may overwrite between runs
/// (Session::setHyperParameter) to follow a schedule without
/// recompiling. The other settings (betas, epsilon, weight decay,
/// dampening, whether there is momentum at all) are compiled in.
///
/// Semantics follow PyTorch's optimizers, so results can be compared with it:
///   SGD:   g += wd w; buf = m buf + (1 - dampening) g;
///          g = nesterov ? g + m buf : buf; w -= lr g
///   Adam:  g += wd w (AdamW instead: w -= lr wd w); m = b1 m + (1 - b1) g;
///          v = b2 v + (1 - b2) g^2; w -= lr (m / (1 - b1^t)) /
///          (sqrt(v / (1 - b2^t)) + eps)
///   RMSprop: g += wd w; v = rho v + (1 - rho) g^2; centered: a = rho a +
///          (1 - rho) g, d = sqrt(v - a^2) + eps, else d = sqrt(v) + eps;
///          with momentum: buf = m buf + g / d, w -= lr buf; else
///          w -= lr g / d
/// One difference: PyTorch starts SGD's momentum buffer at the first
/// gradient, here it starts at zero, which is the same unless dampening > 0.
#pragma once

#include "tessera/ir/Builder.hpp"
#include "tessera/passes/Pass.hpp"

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tessera::passes {

struct SGD {
  double learningRate = 0.01;
  double momentum = 0;
  double dampening = 0;
  double weightDecay = 0;
  bool nesterov = false;
};

struct Adam {
  double learningRate = 0.001;
  double beta1 = 0.9, beta2 = 0.999;
  double epsilon = 1e-8;
  double weightDecay = 0;
  /// AdamW: decay the weights directly instead of adding to the gradient.
  bool decoupledWeightDecay = false;
};

/// RMSprop (PyTorch's "alpha" is rho here, as Keras names it).
struct RMSprop {
  double learningRate = 0.001;
  double rho = 0.9;
  double momentum = 0;
  double epsilon = 1e-7;
  double weightDecay = 0;
  /// Divide by the estimated variance of the gradient rather than its
  /// second moment.
  bool centered = false;
};

using Optimizer = std::variant<SGD, Adam, RMSprop>;

/// The names the optimizer pass records its hyper-parameters under.
inline constexpr const char *kLearningRate = "learning_rate";
inline constexpr const char *kMomentum = "momentum";

/// The hyper-parameters the optimizer pass keeps in variables for
/// \p optimizer, with their values: the learning rate, and the momentum
/// when it is not 0.
std::vector<std::pair<std::string, double>>
runtimeHyperParameters(const Optimizer &optimizer);

/// Whether \p a and \p b build the same program, so that a session
/// compiled for one runs the other after its runtime hyper-parameters are
/// written: same kind, and equal in every setting but those. When not,
/// \p why (if given) gets what differs.
bool sameProgram(const Optimizer &a, const Optimizer &b,
                 std::string *why = nullptr);

/// Dynamic loss scaling, as Keras' LossScaleOptimizer does it, all on the
/// device: the loss is multiplied by a scale held in the non-trainable
/// float scalar variable "optimizer/loss_scale" (starting at
/// \ref initialScale) and the gradients divided by it. A step whose
/// scaled gradients hold any infinity or NaN is skipped: every update the
/// optimizer builds (weights, their state, Adam's step count) keeps the
/// old value, and the scale halves. After \ref growthSteps finite steps
/// in a row (counted in "optimizer/loss_scale_good_steps") the scale
/// doubles. Both variables are ordinary state: checkpoints carry them, as
/// Keras' checkpoints carry the optimizer's, so a restored model goes on
/// with the scale it had learnt.
struct DynamicLossScaling {
  double initialScale = 32768;
  unsigned growthSteps = 2000;
};

/// The names of the dynamic loss scale's variables.
inline constexpr const char *kLossScaleVariable = "optimizer/loss_scale";
inline constexpr const char *kLossScaleGoodSteps =
    "optimizer/loss_scale_good_steps";

struct TrainingOptions {
  Optimizer optimizer = SGD{};
  /// Static loss scaling: the loss is multiplied by this fixed factor
  /// before differentiation and the gradients divided by it after, so
  /// small half gradients do not flush to zero.
  double lossScaling = 1;
  /// Dynamic loss scaling instead (lossScaling must then stay 1).
  std::optional<DynamicLossScaling> dynamicLossScaling = std::nullopt;
  /// For a replicated graph: average each gradient over the replicas
  /// (crossReplicaMean) before the update, so every replica takes the same
  /// step with the gradient of all their batches together.
  bool crossReplicaMean = false;
};

/// A variable and the value it takes after a step.
struct VariableUpdate {
  ir::Value variable;
  ir::Value newValue;
};

/// Differentiates \p loss (times the loss scaling) with respect to every
/// trainable variable, records the gradients and builds the optimizer's
/// updates. Throws OptionError for a non-positive learning rate, a loss
/// scaling that is not positive and finite (or both static and dynamic
/// scaling), a growth interval of 0, betas or rho outside [0, 1), or a
/// non-positive epsilon.
std::vector<VariableUpdate> makeTrainingStep(ir::Module &module, ir::Value loss,
                                             const TrainingOptions &options);

/// The variable kLossScaleVariable of \p module for \p options' dynamic
/// loss scaling, made at its initial scale; give it to AutodiffPass and
/// OptimizerPass. OptionError as makeTrainingStep.
ir::Value addLossScale(ir::Module &module, const TrainingOptions &options);

/// The optimizer as a pass, after AutodiffPass (with the same loss
/// scaling): builds an update for every recorded gradient. With dynamic
/// loss scaling, \p lossScale is the variable addLossScale made and
/// AutodiffPass scaled the loss by. Throws as makeTrainingStep, and
/// IrError when no gradient is recorded or dynamic scaling has no
/// \p lossScale.
class OptimizerPass : public Pass {
public:
  explicit OptimizerPass(TrainingOptions options,
                         std::optional<ir::ValueId> lossScale = std::nullopt)
      : options_(options), lossScale_(lossScale) {}
  std::string_view name() const override { return "optimizer"; }
  bool run(ir::Module &module) override;

private:
  TrainingOptions options_;
  std::optional<ir::ValueId> lossScale_;
};

/// The recorded updates of \p module as (variable, new value) pairs.
std::vector<std::pair<ir::ValueId, ir::ValueId>>
variableUpdates(const ir::Module &module);

/// The recorded optimizer state variables of \p module with the variable
/// each belongs to: (state, variable) pairs, for laying the state out as
/// its variable.
std::vector<std::pair<ir::ValueId, ir::ValueId>>
optimizerState(const ir::Module &module);

} // namespace tessera::passes
