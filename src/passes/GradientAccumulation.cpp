#include "tessera/passes/GradientAccumulation.hpp"

#include "Rewrite.hpp"

#include "tessera/ir/Builder.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace tessera::passes {
namespace {

using detail::replaceUses;
using detail::sortTopologically;
using detail::WithAnnotations;

const std::string kCounter = "accumulation/micro_batch";

void checkOptions(const GradientAccumulationOptions &o) {
  if (o.count == 0)
    throw OptionError("gradient accumulation: count must be at least 1 "
                      "micro-batch per step, not 0");
  if (o.accumulatorType && *o.accumulatorType != FLOAT &&
      *o.accumulatorType != HALF)
    throw OptionError("gradient accumulation: accumulators must be float or "
                      "half, not " +
                      std::string(typeName(*o.accumulatorType)));
}

// Moves the weight update's ops after all others, keeping each group's
// order as far as the data flow allows (the optimizer's ops, earlier in
// the module, now read the accumulation's ops the pass appended).
void moveWeightUpdateLast(ir::Module &m) {
  std::vector<ir::Op> &ops = m.mutableOps();
  std::stable_partition(ops.begin(), ops.end(), [](const ir::Op &op) {
    return !op.annotations.weightUpdate;
  });
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (ir::ValueId r : ops[i].results)
      m.mutableValue(r).def = static_cast<std::uint32_t>(i);
  sortTopologically(m);
}

class Rewriter {
public:
  Rewriter(ir::Module &m, const GradientAccumulationOptions &o)
      : m_(m), b_(m), o_(o) {}

  void run() {
    // A copy: the pass records more updates (the counter, accumulators).
    const std::vector<ir::VariableRecord> updates = m_.updates();
    if (updates.empty())
      throw ir::IrError("gradient accumulation: module \"" + m_.name() +
                        "\" has no recorded updates; build the training step "
                        "(autodiff and optimizer passes) first");
    buildCounter();
    // The optimizer's ops (those that exist now) read the accumulated
    // gradients instead of the micro-batch's.
    const std::size_t existing = m_.ops().size();
    for (const ir::VariableRecord &u : updates)
      if (m_.variableOf(u.variable).trainable)
        accumulate(u.variable, existing);
    markWeightUpdate();
    moveWeightUpdateLast(m_);
  }

private:
  // m counts the micro-batches accumulated before this one; the update
  // condition is m + 1 = N. The weight update resets m to zero.
  void buildCounter() {
    // In a pipelined module the counter belongs to the first stage.
    ir::Annotations where;
    for (const ir::Op &op : m_.ops())
      if (op.annotations.pipelineStage)
        where.pipelineStage = 0;
    WithAnnotations scope(m_, where);
    const ir::Value m =
        b_.variable(kCounter, {}, ir::init::zeros(), FLOAT, false);
    counter_ = m;
    const ir::Value next = m + 1.0;
    b_.update(m, next);
    m_.addReset(m.id());
    m_.setUpdateCondition(cast(eq(next, double(o_.count)), FLOAT).id(),
                          o_.count);
    microRoots_.push_back(next.id());
    microRoots_.push_back(*m_.updateCondition());
  }

  // acc' from the accumulator and the gradient (as the accumulator's type).
  ir::Value reduce(const ir::Value &acc, const ir::Value &g, Type type) {
    switch (o_.reduction) {
    case AccumulationReduction::SUM:
      return acc + g;
    case AccumulationReduction::MEAN:
      return acc + g * (1.0 / o_.count);
    case AccumulationReduction::RUNNING_MEAN: {
      const ir::Value seen = counter_ + 1.0;
      const ir::Value keep = counter_ / seen, take = 1.0 / seen;
      return acc * (type == FLOAT ? keep : cast(keep, type)) +
             g * (type == FLOAT ? take : cast(take, type));
    }
    }
    TESSERA_INTERNAL_ASSERT(false, "unknown accumulation reduction");
  }

  // The accumulator of \p var; the optimizer's ops (the first \p existing
  // ops) read the accumulated gradient instead of the recorded one.
  void accumulate(ir::ValueId var, std::size_t existing) {
    const std::string name = m_.value(var).name;
    const auto grad = m_.gradientOf(var);
    if (!grad)
      throw ir::IrError("gradient accumulation: trainable variable \"" + name +
                        "\" has an update but no recorded gradient; build the "
                        "training step with the autodiff and optimizer passes "
                        "(or record its gradient with Module::setGradient)");
    // A copy: adding values below may move the module's value table.
    const ir::ValueInfo g = m_.value(*grad);
    ir::Annotations where;
    if (g.kind == ir::ValueKind::OpResult)
      where = m_.producer(*grad).annotations;
    where.backward = true;
    WithAnnotations scope(m_, where);
    const Type gradType = g.type.dtype;
    const Type accType = o_.accumulatorType.value_or(gradType);
    const ir::Value acc = b_.variable(name + "/accumulator", g.type.shape,
                                      ir::init::zeros(), accType, false);
    const ir::Value gv = b_.value(*grad);
    const ir::Value next =
        reduce(acc, accType == gradType ? gv : cast(gv, accType), accType);
    b_.update(acc, next);
    m_.addReset(acc.id());
    microRoots_.push_back(next.id());
    const ir::Value effective =
        accType == gradType ? next : cast(next, gradType);
    replaceUses(m_, *grad, effective.id(),
                [existing](std::size_t i) { return i >= existing; });
  }

  // The weight update is every op that no micro-batch result needs: the
  // optimizer (reading the accumulated gradients), and the last step of
  // other updates such as running statistics.
  void markWeightUpdate() {
    // Outputs count, except the "update/<v>" outputs of recorded updates
    // that the optimizer pass adds for a host's write-back.
    std::set<ir::ValueId> updateValues;
    for (const ir::VariableRecord &u : m_.updates())
      updateValues.insert(u.value);
    for (const ir::Output &o : m_.outputs())
      if (!updateValues.count(o.value))
        microRoots_.push_back(o.value);
    for (ir::ValueId v : o_.microBatchUpdates) {
      const auto next = m_.updateOf(v);
      if (!next)
        throw ir::IrError("gradient accumulation: \"" + m_.describe(v) +
                          "\" is listed as updated every micro-batch but "
                          "has no recorded update");
      microRoots_.push_back(*next);
    }
    std::vector<bool> needed(m_.numValues(), false);
    for (ir::ValueId v : microRoots_)
      needed[v] = true;
    std::vector<ir::Op> &ops = m_.mutableOps();
    for (std::size_t i = ops.size(); i-- > 0;) {
      bool any = false;
      for (ir::ValueId r : ops[i].results)
        any |= needed[r];
      ops[i].annotations.weightUpdate = !any;
      if (any)
        for (ir::ValueId v : ops[i].operands)
          needed[v] = true;
    }
  }

  ir::Module &m_;
  ir::Builder b_;
  const GradientAccumulationOptions &o_;
  ir::Value counter_;
  std::vector<ir::ValueId> microRoots_;
};

} // namespace

bool accumulateGradients(ir::Module &module,
                         const GradientAccumulationOptions &options) {
  checkOptions(options);
  if (options.count == 1)
    return false;
  if (module.findValue(kCounter))
    throw ir::IrError("gradient accumulation: module \"" + module.name() +
                      "\" already accumulates gradients (it has \"" + kCounter +
                      "\"); run the pass once");
  Rewriter(module, options).run();
  return true;
}

} // namespace tessera::passes
