/// \file
/// A host interpreter of the IR in double precision: the float64 reference
/// that lowered graphs and training runs are checked against. Every op
/// kind is computed from its definition (the ops library's host references
/// where they fit) with doubles throughout; results of integer types are
/// truncated as a cast would, float and half results are not rounded.
///
///     ir::Feeds feeds{{"x", {FLOAT, {2, 3}, {...}}}};
///     ir::Evaluation e = ir::interpret(module, feeds);
///     const ir::HostValue &loss = e.output("loss");
///
/// Variables take their initial values unless a feed of the same name
/// overrides them (to run a training loop on the host, feed the updated
/// parameters each step).
#pragma once

#include "tessera/ir/Builder.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::ir {

/// A host array of doubles with an element type and a shape.
struct HostValue {
  Type dtype = FLOAT;
  Shape shape;
  /// Row-major; numElements(shape) of them.
  std::vector<double> values;
  std::size_t numElements() const { return ir::numElements(shape); }
};

/// Values for inputs (required) and variables (optional) by name.
using Feeds = std::map<std::string, HostValue, std::less<>>;

/// The values a run computed, by value.
class Evaluation {
public:
  /// The value of \p v (IrError for a value of another module).
  const HostValue &operator[](const Value &v) const;
  const HostValue &at(ValueId id) const;
  /// The value of the output named \p name.
  const HostValue &output(std::string_view name) const;

private:
  friend Evaluation interpret(const Module &, const Feeds &);
  const Module *module_ = nullptr;
  std::vector<HostValue> values_;
};

/// Runs every operation of \p module on the host. Throws IrError for an
/// input without a feed or a feed that names nothing, ShapeError and
/// TypeError for feeds whose shape or type differ from the value's.
Evaluation interpret(const Module &module, const Feeds &feeds = {});

/// The variables after the run \p e of \p module, by name: \p before
/// (values by variable name) with every recorded update applied, except
/// that the updates the weight update computes apply, and the module's
/// resets then become zero, only when the update condition is nonzero
/// (Module::updateCondition); the training loop of a host run.
Feeds variablesAfterRun(const Module &module, const Evaluation &e,
                        Feeds before);

/// The results of one operation of \p kind with \p attrs on \p operands,
/// of types \p resultTypes (as shape inference gives them).
std::vector<HostValue>
interpretOp(OpKind kind, const Attributes &attrs,
            const std::vector<const HostValue *> &operands,
            const std::vector<ValueType> &resultTypes);

} // namespace tessera::ir
