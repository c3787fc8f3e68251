#include "tessera/passes/GradientAccumulation.hpp"

#include "tessera/ir/Builder.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/support/Error.hpp"

#include <functional>
#include <queue>
#include <string>
#include <vector>

namespace tessera::passes {
namespace {

const std::string kCounter = "accumulation/micro_batch";

// New operations get \p annotations until this is destroyed (the Builder's
// scopes only set one annotation each; these copy all of them).
class WithAnnotations {
public:
  WithAnnotations(ir::Module &m, const ir::Annotations &annotations)
      : m_(m), saved_(m.currentAnnotations()) {
    m_.currentAnnotations() = annotations;
  }
  WithAnnotations(const WithAnnotations &) = delete;
  WithAnnotations &operator=(const WithAnnotations &) = delete;
  ~WithAnnotations() { m_.currentAnnotations() = saved_; }

private:
  ir::Module &m_;
  ir::Annotations saved_;
};

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

// Replaces operand \p from by \p to in every op except \p skip.
void replaceUses(ir::Module &m, ir::ValueId from, ir::ValueId to,
                 const std::function<bool(std::size_t)> &skip) {
  std::vector<ir::Op> &ops = m.mutableOps();
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (!skip(i))
      for (ir::ValueId &operand : ops[i].operands)
        if (operand == from)
          operand = to;
}

// Reorders the ops so each comes after the producers of its operands,
// keeping the existing order wherever the data flow allows: the pass
// appends its ops at the end although earlier ops now read them.
void sortTopologically(ir::Module &m) {
  std::vector<ir::Op> &ops = m.mutableOps();
  const std::size_t n = ops.size();
  std::vector<std::vector<std::size_t>> users(n);
  std::vector<std::size_t> pending(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (ir::ValueId operand : ops[i].operands)
      if (m.value(operand).kind == ir::ValueKind::OpResult) {
        users[m.value(operand).def].push_back(i);
        ++pending[i];
      }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>>
      ready;
  for (std::size_t i = 0; i < n; ++i)
    if (pending[i] == 0)
      ready.push(i);
  std::vector<ir::Op> sorted;
  sorted.reserve(n);
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    sorted.push_back(std::move(ops[i]));
    for (std::size_t u : users[i])
      if (--pending[u] == 0)
        ready.push(u);
  }
  TESSERA_INTERNAL_ASSERT(sorted.size() == n,
                          "gradient accumulation left a cycle among the ops");
  ops = std::move(sorted);
  for (std::size_t i = 0; i < n; ++i)
    for (ir::ValueId r : ops[i].results)
      m.mutableValue(r).def = static_cast<std::uint32_t>(i);
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
    // The optimizer reads the accumulated gradients; then every update is
    // gated, its copy reading whatever the optimizer's ops now read.
    const std::size_t existing = m_.ops().size();
    for (const ir::VariableRecord &u : updates)
      if (m_.variableOf(u.variable).trainable)
        accumulate(u.variable, existing);
    for (const ir::VariableRecord &u : updates)
      gate(u.variable, u.value);
    sortTopologically(m_);
  }

private:
  // m, the micro-batches accumulated before this step, and whether this
  // step applies the optimizer (m = N - 1) as a float 0 or 1.
  void buildCounter() {
    WithAnnotations none(m_, {});
    const ir::Value m =
        b_.variable(kCounter, {}, ir::init::zeros(), FLOAT, false);
    counter_ = m;
    isLast_ = cast(eq(m, double(o_.count - 1)), FLOAT);
    b_.update(m, (m + 1.0) * (1.0 - isLast_));
  }

  // isLast_ as \p type.
  ir::Value flagAs(Type type) {
    return type == FLOAT ? isLast_ : cast(isLast_, type);
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
    b_.update(acc, next * (1.0 - flagAs(accType)));
    const ir::Value effective =
        accType == gradType ? next : cast(next, gradType);
    replaceUses(m_, *grad, effective.id(),
                [existing](std::size_t i) { return i >= existing; });
  }

  // Makes update \p next of \p var take effect only on the last
  // micro-batch: its op becomes flag * copy + (1 - flag) * var, and the
  // ops that read it read the ungated copy.
  void gate(ir::ValueId var, ir::ValueId next) {
    const ir::ValueInfo info = m_.value(next); // a copy, as in accumulate
    const std::string name = m_.value(var).name;
    if (info.kind != ir::ValueKind::OpResult ||
        m_.producer(next).results.size() != 1)
      throw UnsupportedError(
          "gradient accumulation: the update of \"" + name +
          "\" is not the only result of an operation, so it cannot be "
          "gated; compute the new value with an elementwise operation");
    const std::size_t index = info.def;
    const ir::Op original = m_.ops()[index];
    WithAnnotations scope(m_, original.annotations);
    const ir::ValueId copy = m_.addOp(original.kind, original.operands,
                                      original.attrs, original.annotations)[0];
    const ir::Value flag = flagAs(info.type.dtype);
    const ir::Value kept = b_.value(copy) * flag;
    const ir::Value old = b_.value(var) * (1.0 - flag);
    ir::Op &op = m_.mutableOps()[index];
    op.kind = ir::OpKind::ADD;
    op.operands = {kept.id(), old.id()};
    op.attrs = {};
    replaceUses(m_, next, copy, [index](std::size_t i) { return i == index; });
  }

  ir::Module &m_;
  ir::Builder b_;
  const GradientAccumulationOptions &o_;
  ir::Value counter_, isLast_;
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
