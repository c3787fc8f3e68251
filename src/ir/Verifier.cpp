// The verifier re-derives everything the Module API guarantees on creation,
// because passes may rewrite operations in place through mutableOps().
#include "tessera/ir/Verifier.hpp"

#include <set>

namespace tessera::ir {
namespace {

class Verifier {
public:
  Verifier(const Module &m, const VerifyOptions &o) : m_(m), o_(o) {}
  void run();

private:
  [[noreturn]] void fail(const std::string &msg) const { throw IrError(msg); }
  std::string opName(std::size_t i) const {
    return "op " + std::to_string(i) + " (" +
           std::string(opKindName(m_.ops()[i].kind)) + ")";
  }
  void checkIpu(const std::string &what, std::optional<unsigned> ipu) const;
  void checkValues();
  void checkLeaves();
  void checkOp(std::size_t i);
  void checkStages(std::size_t i, const Op &op) const;
  void checkOutputs() const;
  void checkRecords() const;
  void checkWeightUpdate() const;

  const Module &m_;
  const VerifyOptions &o_;
  std::vector<bool> defined_;
};

void Verifier::checkIpu(const std::string &what,
                        std::optional<unsigned> ipu) const {
  if (ipu && o_.numIpus && *ipu >= o_.numIpus)
    fail(what + " is on IPU " + std::to_string(*ipu) + " but there are " +
         std::to_string(o_.numIpus) + " IPUs (0 to " +
         std::to_string(o_.numIpus - 1) +
         "); use more IPUs or shard onto "
         "fewer");
}

void Verifier::checkValues() {
  std::set<std::string> names;
  for (ValueId id = 0; id < m_.numValues(); ++id) {
    const ValueInfo &v = m_.value(id);
    if (!v.name.empty() && !names.insert(v.name).second)
      fail("the name '" + v.name + "' is used by two values");
    bool ok = false;
    switch (v.kind) {
    case ValueKind::Input:
      ok = v.def < m_.inputs().size() && m_.inputs()[v.def] == id;
      break;
    case ValueKind::Variable:
      ok = v.def < m_.variables().size() && m_.variables()[v.def].value == id;
      break;
    case ValueKind::Constant:
      ok = v.def < m_.constants().size() && m_.constants()[v.def].value == id;
      break;
    case ValueKind::OpResult:
      ok = v.def < m_.ops().size() &&
           v.resultIndex < m_.ops()[v.def].results.size() &&
           m_.ops()[v.def].results[v.resultIndex] == id;
      break;
    }
    if (!ok)
      fail("value " + m_.describe(id) +
           " is not where its definition says (its op or list entry does "
           "not list it)");
    if (v.kind != ValueKind::OpResult && v.ipu)
      checkIpu("value " + m_.describe(id), v.ipu);
  }
}

void Verifier::checkLeaves() {
  defined_.assign(m_.numValues(), false);
  for (ValueId id : m_.inputs())
    defined_.at(id) = true;
  for (const Variable &v : m_.variables()) {
    defined_.at(v.value) = true;
    const ValueType &t = m_.typeOf(v.value);
    try {
      checkInitialiser(v.init, t.dtype, t.shape);
    } catch (const Error &e) {
      fail("variable " + m_.describe(v.value) + ": " + e.what());
    }
  }
  for (const Constant &c : m_.constants()) {
    defined_.at(c.value) = true;
    const std::size_t n = m_.typeOf(c.value).numElements();
    if (c.data.size() != 1 && c.data.size() != n)
      fail("constant " + m_.describe(c.value) + " has " +
           std::to_string(c.data.size()) + " values for " + std::to_string(n) +
           " elements");
  }
}

void Verifier::checkOp(std::size_t i) {
  const Op &op = m_.ops()[i];
  const auto n = static_cast<int>(op.operands.size());
  if (n < minOperands(op.kind) ||
      (maxOperands(op.kind) >= 0 && n > maxOperands(op.kind)))
    fail(opName(i) + " has " + std::to_string(n) + " operands");
  std::vector<ValueType> types;
  std::vector<std::string> names;
  for (ValueId v : op.operands) {
    if (v >= m_.numValues() || !defined_[v])
      fail(opName(i) + ": operand " +
           (v < m_.numValues() ? m_.describe(v) : "%" + std::to_string(v)) +
           " is used before it is defined");
    types.push_back(m_.typeOf(v));
    names.push_back(m_.describe(v));
  }
  if (op.results.size() != numResults(op.kind))
    fail(opName(i) + " has " + std::to_string(op.results.size()) +
         " results; the kind has " + std::to_string(numResults(op.kind)));
  const std::vector<ValueType> inferred =
      inferResultTypes(op.kind, types, op.attrs, names);
  for (std::size_t r = 0; r < op.results.size(); ++r) {
    const ValueId id = op.results[r];
    if (id >= m_.numValues() || m_.value(id).kind != ValueKind::OpResult ||
        m_.value(id).def != i || defined_[id])
      fail(opName(i) + ": result " + std::to_string(r) +
           " is not a value this op defines");
    if (m_.typeOf(id) != inferred[r])
      fail(opName(i) + ": result " + m_.describe(id) + " has type " +
           m_.typeOf(id).toString() + " but its operands give " +
           inferred[r].toString());
    defined_[id] = true;
  }
  checkIpu(opName(i), op.annotations.ipu);
  if (op.annotations.recompute && op.annotations.backward)
    fail(opName(i) + " is a backward op marked @recompute; only forward ops "
                     "can be recomputed");
  checkStages(i, op);
}

void Verifier::checkStages(std::size_t i, const Op &op) const {
  const auto &stage = op.annotations.pipelineStage;
  if (!stage)
    return;
  for (ValueId v : op.operands) {
    if (m_.value(v).kind != ValueKind::OpResult)
      continue;
    const Op &p = m_.producer(v);
    const auto &from = p.annotations.pipelineStage;
    if (!from || p.annotations.backward != op.annotations.backward)
      continue;
    const bool backward = op.annotations.backward;
    if (backward ? *from < *stage : *from > *stage)
      fail(opName(i) + " in " + (backward ? "backward" : "forward") +
           " stage " + std::to_string(*stage) + " uses " + m_.describe(v) +
           " from stage " + std::to_string(*from) +
           (backward ? "; backward stages run from the last to the first"
                     : "; a stage can only use values of itself or earlier "
                       "stages"));
  }
}

void Verifier::checkOutputs() const {
  std::set<std::string> names;
  for (const Output &o : m_.outputs()) {
    if (!names.insert(o.name).second)
      fail("output '" + o.name + "' is defined twice");
    if (o.value >= m_.numValues())
      fail("output '" + o.name + "' names %" + std::to_string(o.value) +
           ", which is not a value of the module");
  }
}

// Passes rewrite values in place, so the records are checked again: each
// names a variable and a value of its type.
void Verifier::checkRecords() const {
  auto check = [&](const std::vector<VariableRecord> &list, const char *what,
                   bool valueIsVariable) {
    for (const VariableRecord &r : list) {
      if (r.variable >= m_.numValues() || r.value >= m_.numValues())
        fail(std::string(what) + " record names a value the module lacks");
      if (m_.value(r.variable).kind != ValueKind::Variable ||
          (valueIsVariable && m_.value(r.value).kind != ValueKind::Variable))
        fail(std::string(what) + " record of " + m_.describe(r.variable) +
             " names a value that is not a variable");
      if (m_.typeOf(r.variable) != m_.typeOf(r.value))
        fail(std::string(what) + " of " + m_.describe(r.variable) + " is " +
             m_.describe(r.value) + ", of type " +
             m_.typeOf(r.value).toString() + " instead of " +
             m_.typeOf(r.variable).toString());
    }
  };
  check(m_.updates(), "update", false);
  check(m_.gradients(), "gradient", false);
  check(m_.states(), "optimizer state", true);
  // The host writes a hyper-parameter between runs; a device update would
  // overwrite what it wrote.
  for (const HyperParameterRecord &r : m_.hyperParameters()) {
    if (r.variable >= m_.numValues() ||
        m_.value(r.variable).kind != ValueKind::Variable ||
        !m_.typeOf(r.variable).shape.empty())
      fail("hyper-parameter \"" + r.name +
           "\" is not held by a scalar variable");
    if (m_.updateOf(r.variable))
      fail("hyper-parameter \"" + r.name + "\" (" + m_.describe(r.variable) +
           ") has an update record; the host sets it, the step must not");
  }
}

// The weight update runs after the micro-batch's operations, so module
// order is run order: its operations come last, and nothing before them
// reads what they compute.
void Verifier::checkWeightUpdate() const {
  const auto &ops = m_.ops();
  const auto isUpdate = [&](ValueId v) {
    return m_.value(v).kind == ValueKind::OpResult &&
           m_.producer(v).annotations.weightUpdate;
  };
  bool seen = false;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const bool update = ops[i].annotations.weightUpdate;
    if (seen && !update)
      fail(opName(i) + " follows the weight update's operations but is not "
                       "one of them; the weight update comes last");
    seen |= update;
    if (!update)
      for (ValueId v : ops[i].operands)
        if (isUpdate(v))
          fail(opName(i) + " reads " + m_.describe(v) +
               ", a result of the weight update, which runs after it");
  }
  const auto c = m_.updateCondition();
  if (seen && !c)
    fail("the module has @weight_update operations but no update condition "
         "(a `condition %flag` record)");
  if (c && (*c >= m_.numValues() || isUpdate(*c)))
    fail("the update condition must be computed before the weight update");
  for (ValueId v : m_.resets())
    if (v >= m_.numValues() || m_.value(v).kind != ValueKind::Variable)
      fail("a reset record names a value that is not a variable");
}

void Verifier::run() {
  checkValues();
  checkLeaves();
  for (std::size_t i = 0; i < m_.ops().size(); ++i)
    checkOp(i);
  checkOutputs();
  checkRecords();
  checkWeightUpdate();
}

} // namespace

void verify(const Module &module, const VerifyOptions &options) {
  Verifier(module, options).run();
}

} // namespace tessera::ir
