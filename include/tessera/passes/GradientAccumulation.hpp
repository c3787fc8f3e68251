/// \file
/// Gradient accumulation as an IR pass, as TensorFlow for the IPU's
/// GradientAccumulationOptimizerV2 does it: the gradients of N micro-batches
/// are accumulated on the device and the optimizer is applied once every
/// N-th step, so the effective batch is N micro-batches without the memory
/// of one large batch.
///
///     passes::makeTrainingStep(module, loss, {.optimizer = SGD{0.1, 0.9}});
///     passes::accumulateGradients(module, {.count = 4});
///     // each run of the module is one micro-batch; every 4th updates w
///
/// The pass rewrites a module that already has a training step (the
/// updates and gradients recorded on the module by the autodiff and
/// optimizer passes, passes/Optimizer.hpp):
///
/// - A counter variable "accumulation/micro_batch" (float, zero) counts the
///   micro-batches accumulated before this one, m in [0, N); the module's
///   update condition (Module::updateCondition) is m + 1 = N.
/// - Each trainable variable w gets an accumulator "<w>/accumulator" of
///   the accumulator type (w's type by default), zero-initialised. With
///   g = w's recorded gradient converted to that type, each micro-batch
///   computes
///     SUM:          acc' = acc + g
///     MEAN:         acc' = acc + g / N
///     RUNNING_MEAN: acc' = acc * m / (m + 1) + g / (m + 1)
///   MEAN and RUNNING_MEAN both end at the mean gradient; RUNNING_MEAN keeps
///   the accumulator in the range of one gradient throughout, which matters
///   for half accumulators. The optimizer's operations read acc' (converted
///   back to w's type) wherever they read the gradient.
/// - The operations no micro-batch result needs (the optimizer, and the
///   last step of any other update not listed in microBatchUpdates) become
///   the weight update: annotated
///   @weight_update and moved after the others. They run, and their
///   updates apply, only when the condition holds, once per N micro-batches
///   (the session runs them under an If program; a pipeline once after its
///   micro-batches). The accumulators and the counter are the module's
///   resets: zeroed after each weight update. The optimizer's step count
///   therefore counts applied steps.
///
/// Other outputs (the loss, gradients) stay per micro-batch.
#pragma once

#include "tessera/passes/Pass.hpp"
#include "tessera/support/Type.hpp"

#include <optional>
#include <string_view>
#include <vector>

namespace tessera::passes {

/// How micro-batch gradients are combined (TensorFlow for the IPU's
/// GradientAccumulationReductionMethod).
enum class AccumulationReduction { SUM, MEAN, RUNNING_MEAN };

struct GradientAccumulationOptions {
  /// N: micro-batches per optimizer step (1 leaves the module unchanged).
  unsigned count = 1;
  AccumulationReduction reduction = AccumulationReduction::MEAN;
  /// The accumulators' element type (float or half); unset: each
  /// variable's own type.
  std::optional<Type> accumulatorType = std::nullopt;
  /// Variables whose recorded updates apply every micro-batch rather than
  /// with the weight update (running statistics, random seeds): their ops
  /// stay in the micro-batch.
  std::vector<ir::ValueId> microBatchUpdates = {};
};

/// Rewrites \p module's training step to accumulate gradients as the file
/// comment describes. Returns whether it changed the module (false for
/// count 1). Throws OptionError for count 0 or an accumulator type that is
/// not float or half; IrError when the module has no recorded updates or a
/// trainable variable no recorded gradient (build the step with the
/// autodiff and optimizer passes first), or when it already accumulates;
/// UnsupportedError
/// for an update that is not the single result of an operation.
bool accumulateGradients(ir::Module &module,
                         const GradientAccumulationOptions &options);

/// accumulateGradients as a pass.
class GradientAccumulationPass : public Pass {
public:
  explicit GradientAccumulationPass(GradientAccumulationOptions options)
      : options_(options) {}
  std::string_view name() const override { return "gradient-accumulation"; }
  bool run(ir::Module &module) override {
    return accumulateGradients(module, options_);
  }

private:
  GradientAccumulationOptions options_;
};

} // namespace tessera::passes
