#include "tessera/passes/TrainingPasses.hpp"

#include "tessera/passes/Autodiff.hpp"
#include "tessera/passes/Recompute.hpp"

#include <algorithm>
#include <memory>
#include <optional>

namespace tessera::passes {

void runTrainingPasses(ir::Module &module, const TrainingPassOptions &options,
                       const PassManagerOptions &manager) {
  PassManager pm(manager);
  AutodiffOptions autodiff;
  autodiff.lossOutput = options.lossOutput;
  autodiff.lossScaling = options.training.lossScaling;
  std::optional<ir::ValueId> lossScale;
  if (options.training.dynamicLossScaling)
    lossScale = autodiff.lossScale =
        addLossScale(module, options.training).id();
  pm.add(std::make_unique<AutodiffPass>(autodiff));
  const bool marked =
      std::any_of(module.ops().begin(), module.ops().end(),
                  [](const ir::Op &op) { return op.annotations.recompute; });
  if (options.recompute || marked)
    pm.add(std::make_unique<RecomputePass>(
        RecomputeOptions{.stages = options.recompute}));
  pm.add(std::make_unique<OptimizerPass>(options.training, lossScale));
  if (options.accumulation.count != 1)
    pm.add(std::make_unique<GradientAccumulationPass>(options.accumulation));
  pm.run(module);
}

} // namespace tessera::passes
