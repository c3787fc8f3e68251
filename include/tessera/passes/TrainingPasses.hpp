/// \file
/// The training pass pipeline, as every product path runs it (nn models,
/// the Python front ends) and the tests run it: autodiff, recomputation
/// (when asked for, or when ops are marked @recompute), the optimizer and,
/// for a gradient accumulation count above 1, gradient accumulation,
/// through a PassManager that verifies the module after each pass and
/// dumps it when asked (TESSERA_DUMP_IR=DIR).
///
///     passes::TrainingPassOptions o;
///     o.training.optimizer = passes::SGD{0.1, 0.9};
///     o.accumulation.count = 4;
///     passes::runTrainingPasses(module, o); // module has output "loss"
#pragma once

#include "tessera/passes/GradientAccumulation.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/passes/Pass.hpp"

#include <string>

namespace tessera::passes {

struct TrainingPassOptions {
  /// The output holding the loss.
  std::string lossOutput = "loss";
  TrainingOptions training;
  GradientAccumulationOptions accumulation;
  /// Recompute the pipeline stages' activations in the backward pass
  /// (passes/Recompute.hpp, RecomputeOptions::stages).
  bool recompute = false;
};

/// Runs the pipeline over \p module, which must have the loss output.
/// Throws what the passes throw (OptionError for bad settings, IrError
/// naming the pass after which the module does not verify).
void runTrainingPasses(
    ir::Module &module, const TrainingPassOptions &options,
    const PassManagerOptions &manager = PassManagerOptions::fromEnvironment());

} // namespace tessera::passes
