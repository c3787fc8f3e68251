/// \file
/// The model IR: a Module is a straight-line program of operations on
/// values with static shapes and element types. Values are defined once
/// (SSA): as an input (fed by the host each step), a variable (a parameter
/// with an initialiser, trainable or not), a constant, or a result of an
/// operation. Operations appear in execution order and use only values
/// defined before them. Every operation carries annotations: the IPU
/// (shard) it runs on, its pipeline stage, whether to recompute it, and
/// whether autodiff made it (backward).
///
/// Modules are built with the Builder (Builder.hpp), printed and parsed as
/// text (Text.hpp), checked by verify() (Verifier.hpp), run on the host in
/// double precision (Interpreter.hpp) and lowered to a Graph (Lowering.hpp).
#pragma once

#include "tessera/ir/Initialiser.hpp"
#include "tessera/ir/OpKind.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/Type.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace tessera::ir {

/// IR that is malformed: an attribute missing or of the wrong kind, a value
/// used before it is defined or from another module, bad annotations, a
/// name used twice.
class IrError : public Error {
public:
  using Error::Error;
};

using Shape = std::vector<std::size_t>;
using ValueId = std::uint32_t;

/// "[32, 784]"; "[]" for a scalar.
std::string shapeToString(const Shape &shape);
/// The product of the dimensions (1 for a scalar).
std::size_t numElements(const Shape &shape);

/// An element type and a static shape.
struct ValueType {
  Type dtype = FLOAT;
  Shape shape;
  std::size_t numElements() const { return ir::numElements(shape); }
  std::size_t rank() const { return shape.size(); }
  /// "float[32, 784]", as the text format writes it.
  std::string toString() const;
  bool operator==(const ValueType &) const = default;
};

/// The text format's name of a type: float, half, int, uint, short,
/// ushort, char, schar, uchar, bool.
std::string_view dtypeName(Type type);
std::optional<Type> dtypeFromName(std::string_view name);

/// One attribute value: an integer, a float, a string or a list of integers.
using AttrValue =
    std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;

/// An operation's attributes by name, in name order. The typed getters
/// throw IrError naming the attribute when it is missing or of another
/// kind.
class Attributes {
public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<const std::string, AttrValue>> a)
      : map_(a) {}
  void set(const std::string &name, AttrValue value) {
    map_[name] = std::move(value);
  }
  bool has(std::string_view name) const { return map_.count(name) != 0; }
  std::int64_t getInt(std::string_view name) const;
  double getFloat(std::string_view name) const;
  const std::string &getString(std::string_view name) const;
  const std::vector<std::int64_t> &getInts(std::string_view name) const;
  /// getInts with every element checked to be non-negative.
  std::vector<std::size_t> getSizes(std::string_view name) const;
  const std::map<std::string, AttrValue, std::less<>> &all() const {
    return map_;
  }
  bool operator==(const Attributes &) const = default;

private:
  const AttrValue &get(std::string_view name, const char *kind) const;
  std::map<std::string, AttrValue, std::less<>> map_;
};

/// Where and how an operation runs.
struct Annotations {
  /// The IPU (shard) the operation runs on; unset: IPU 0 of a sharded
  /// module, the whole target of an unsharded one. In a pipelined module
  /// (with stages) it names the concurrent sub-stage j of the op's stage
  /// instead, which runs on the IPU the pipeline's device mapping gives it.
  std::optional<unsigned> ipu;
  /// The pipeline stage the operation belongs to.
  std::optional<unsigned> pipelineStage;
  /// Recompute the operation in the backward pass instead of keeping its
  /// results.
  bool recompute = false;
  /// Made by autodiff: part of the backward pass.
  bool backward = false;
  /// Part of the weight update of a module that accumulates gradients:
  /// run once per step, after the step's micro-batches, only when the
  /// module's update condition holds (Module::updateCondition).
  bool weightUpdate = false;
  bool operator==(const Annotations &) const = default;
};

/// How a value is defined.
enum class ValueKind : std::uint8_t { Input, Variable, Constant, OpResult };

/// What the module knows about a value.
struct ValueInfo {
  ValueType type;
  /// Unique within the module, or empty.
  std::string name;
  ValueKind kind = ValueKind::OpResult;
  /// Index of the defining op (OpResult) or of the entry in inputs(),
  /// variables() or constants().
  std::uint32_t def = 0;
  /// Which result of its op.
  unsigned resultIndex = 0;
  /// The IPU an input, variable or constant lives on, when given; unset
  /// for op results (they live where their op runs).
  std::optional<unsigned> ipu;
};

/// One operation.
struct Op {
  OpKind kind = OpKind::ADD;
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  Attributes attrs;
  Annotations annotations;
};

/// A parameter.
struct Variable {
  ValueId value = 0;
  Initialiser init;
  /// Whether autodiff differentiates with respect to it by default.
  bool trainable = true;
};

/// A constant: one value per element, or one value for every element.
struct Constant {
  ValueId value = 0;
  std::vector<double> data;
};

/// A named result of the module.
struct Output {
  std::string name;
  ValueId value = 0;
};

/// A fact about a variable that the training passes record for later
/// passes and the session: the value that replaces it after each step,
/// its gradient, or the variable an optimizer-state variable belongs to.
/// Passes read these records, never the values' names.
struct VariableRecord {
  /// The variable.
  ValueId variable = 0;
  /// Its new value, its gradient, or the variable it is the state of.
  ValueId value = 0;
};

/// A scalar variable that holds a hyper-parameter of the training step
/// (the optimizer's learning rate, momentum, ...): its initialiser gives
/// the first value, and the host may write another between runs, so a
/// schedule changes it without recompiling.
struct HyperParameterRecord {
  ValueId variable = 0;
  /// What it holds, as the optimizer names it: "learning_rate", ...
  std::string name;
};

/// A module of operations. Creating values and operations checks them:
/// result types are inferred (ShapeError, TypeError with the shapes) and
/// names made unique (a taken name gets a suffix _1, _2, ...).
class Module {
public:
  explicit Module(std::string name = "") : name_(std::move(name)) {}

  const std::string &name() const { return name_; }

  /// A host-fed input of \p type.
  ValueId addInput(const std::string &name, ValueType type,
                   std::optional<unsigned> ipu = std::nullopt);
  /// A parameter of \p type; throws ShapeError when \p init holds explicit
  /// values of the wrong count.
  ValueId addVariable(const std::string &name, ValueType type, Initialiser init,
                      bool trainable = true,
                      std::optional<unsigned> ipu = std::nullopt);
  /// A constant; \p data holds one value per element or one for all.
  ValueId addConstant(const std::string &name, ValueType type,
                      std::vector<double> data,
                      std::optional<unsigned> ipu = std::nullopt);
  /// Appends an operation; its results' types are inferred. \p names names
  /// the results (fewer names leave the rest unnamed). Throws IrError for
  /// operand counts and undefined operands, ShapeError and TypeError from
  /// shape inference.
  std::vector<ValueId> addOp(OpKind kind, const std::vector<ValueId> &operands,
                             Attributes attrs = {},
                             const Annotations &annotations = {},
                             const std::vector<std::string> &names = {});
  /// Names \p value as a result of the module. Throws IrError when the
  /// name is taken by another output.
  void addOutput(const std::string &name, ValueId value);

  std::size_t numValues() const { return values_.size(); }
  const ValueInfo &value(ValueId id) const;
  const ValueType &typeOf(ValueId id) const { return value(id).type; }
  /// The value named \p name, if any.
  std::optional<ValueId> findValue(std::string_view name) const;
  /// A value's name, or "%<id>" for an unnamed one (for messages).
  std::string describe(ValueId id) const;
  /// Renames \p id to \p name (made unique as new names are); an empty
  /// name leaves it unnamed. Returns the name given.
  std::string setName(ValueId id, const std::string &name);

  const std::vector<Op> &ops() const { return ops_; }
  const std::vector<ValueId> &inputs() const { return inputs_; }
  const std::vector<Variable> &variables() const { return variables_; }
  const std::vector<Constant> &constants() const { return constants_; }
  const std::vector<Output> &outputs() const { return outputs_; }
  /// The variable entry of a Variable value.
  const Variable &variableOf(ValueId id) const;
  /// Replaces the initialiser of variable \p id (checked as addVariable
  /// checks it).
  void setInitialiser(ValueId id, Initialiser init);
  const Constant &constantOf(ValueId id) const;
  /// The op defining an OpResult value.
  const Op &producer(ValueId id) const;
  /// The output named \p name; throws IrError when there is none.
  ValueId output(std::string_view name) const;

  /// Records \p value as \p variable's value after each step (replacing an
  /// earlier record). Throws IrError unless \p variable is a variable of
  /// the same type as \p value.
  void setUpdate(ValueId variable, ValueId value);
  /// Records \p gradient as the gradient of \p variable (same rules).
  void setGradient(ValueId variable, ValueId gradient);
  /// Records \p state as optimizer state of \p owner (both variables of
  /// one type): it is laid out like \p owner.
  void setStateOf(ValueId state, ValueId owner);
  /// The records, in the order first made.
  const std::vector<VariableRecord> &updates() const { return updates_; }
  const std::vector<VariableRecord> &gradients() const { return gradients_; }
  /// Each entry: variable = the state, value = its owner.
  const std::vector<VariableRecord> &states() const { return states_; }
  std::optional<ValueId> updateOf(ValueId variable) const;
  std::optional<ValueId> gradientOf(ValueId variable) const;

  /// Records \p variable (a non-trainable scalar variable without an
  /// update) as the hyper-parameter \p name. Throws IrError for another
  /// kind of value, an empty name, or a name another variable holds.
  void setHyperParameter(ValueId variable, const std::string &name);
  const std::vector<HyperParameterRecord> &hyperParameters() const {
    return hyperParameters_;
  }
  /// The variable holding hyper-parameter \p name, if any.
  std::optional<ValueId> hyperParameter(std::string_view name) const;
  /// Whether \p variable holds a hyper-parameter.
  bool isHyperParameter(ValueId variable) const;

  /// Records \p flag (a scalar computed every run) as the condition of the
  /// weight update: the @weight_update operations run, and their updates
  /// and the resets apply, only in runs where it is nonzero, which is
  /// every \p period runs (the micro-batches of a step, for pipelines that
  /// run them together). Throws IrError for a value that is not a scalar
  /// or a period of 0.
  void setUpdateCondition(ValueId flag, unsigned period);
  std::optional<ValueId> updateCondition() const { return condition_; }
  /// The runs per weight update (1 without a condition).
  unsigned updatePeriod() const { return period_; }
  /// Records \p variable as zeroed after every weight update (after the
  /// updates apply), as gradient accumulators are. Throws IrError for a
  /// value that is not a variable.
  void addReset(ValueId variable);
  const std::vector<ValueId> &resets() const { return resets_; }

  /// The annotations new operations get (the Builder's scopes set them).
  Annotations &currentAnnotations() { return current_; }
  const Annotations &currentAnnotations() const { return current_; }
  /// The prefix new operations' unnamed results are named with:
  /// "<prefix>/<op kind>" (made unique), or unnamed when empty. The
  /// Builder's NameScope sets it; lowering turns value names into the debug
  /// names profiles show.
  std::string &currentNamePrefix() { return namePrefix_; }

  /// Direct access for passes that rewrite operations in place; run
  /// verify() afterwards.
  std::vector<Op> &mutableOps() { return ops_; }
  ValueInfo &mutableValue(ValueId id);

private:
  ValueId newValue(const std::string &name, ValueType type, ValueKind kind,
                   std::uint32_t def, std::optional<unsigned> ipu);
  std::string uniqueName(const std::string &name) const;
  void record(std::vector<VariableRecord> &list, const char *what,
              ValueId variable, ValueId value);

  std::string name_;
  std::vector<ValueInfo> values_;
  std::vector<Op> ops_;
  std::vector<ValueId> inputs_;
  std::vector<Variable> variables_;
  std::vector<Constant> constants_;
  std::vector<Output> outputs_;
  std::vector<VariableRecord> updates_, gradients_, states_;
  std::vector<HyperParameterRecord> hyperParameters_;
  std::optional<ValueId> condition_;
  unsigned period_ = 1;
  std::vector<ValueId> resets_;
  std::unordered_map<std::string, ValueId> names_;
  Annotations current_;
  std::string namePrefix_;
};

/// The result types of an operation of \p kind on operands of \p operands
/// types with \p attrs: the shape inference that Module::addOp and the
/// verifier run. \p operandNames (may be empty) name the operands in
/// messages. Throws ShapeError, TypeError or IrError.
std::vector<ValueType>
inferResultTypes(OpKind kind, const std::vector<ValueType> &operands,
                 const Attributes &attrs,
                 const std::vector<std::string> &operandNames = {});

} // namespace tessera::ir
