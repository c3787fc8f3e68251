#include "tessera/ir/Module.hpp"

#include <algorithm>
#include <array>
#include <sstream>

namespace tessera::ir {

std::string shapeToString(const Shape &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::size_t numElements(const Shape &shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  return n;
}

std::string ValueType::toString() const {
  return std::string(dtypeName(dtype)) + shapeToString(shape);
}

namespace {
// The text format's type names: single words, so that a type never needs
// quoting ("unsigned int" is uint).
constexpr std::array<std::pair<Type, std::string_view>, numTypes> dtypeNames{{
    {FLOAT, "float"},
    {HALF, "half"},
    {INT, "int"},
    {UNSIGNED_INT, "uint"},
    {SHORT, "short"},
    {UNSIGNED_SHORT, "ushort"},
    {CHAR, "char"},
    {SIGNED_CHAR, "schar"},
    {UNSIGNED_CHAR, "uchar"},
    {BOOL, "bool"},
}};
} // namespace

std::string_view dtypeName(Type type) {
  for (const auto &[t, n] : dtypeNames)
    if (t == type)
      return n;
  TESSERA_INTERNAL_ASSERT(false, "type without a name");
}

std::optional<Type> dtypeFromName(std::string_view name) {
  for (const auto &[t, n] : dtypeNames)
    if (n == name)
      return t;
  return std::nullopt;
}

// ---- Attributes -----------------------------------------------------------

const AttrValue &Attributes::get(std::string_view name,
                                 const char *kind) const {
  auto it = map_.find(name);
  if (it == map_.end())
    throw IrError("attribute '" + std::string(name) + "' (" + kind +
                  ") is missing");
  return it->second;
}

std::int64_t Attributes::getInt(std::string_view name) const {
  const AttrValue &v = get(name, "an integer");
  if (const auto *i = std::get_if<std::int64_t>(&v))
    return *i;
  throw IrError("attribute '" + std::string(name) + "' must be an integer");
}

double Attributes::getFloat(std::string_view name) const {
  const AttrValue &v = get(name, "a float");
  if (const auto *d = std::get_if<double>(&v))
    return *d;
  // An integer is a float too ({eps = 1} means 1.0).
  if (const auto *i = std::get_if<std::int64_t>(&v))
    return static_cast<double>(*i);
  throw IrError("attribute '" + std::string(name) + "' must be a float");
}

const std::string &Attributes::getString(std::string_view name) const {
  const AttrValue &v = get(name, "a string");
  if (const auto *s = std::get_if<std::string>(&v))
    return *s;
  throw IrError("attribute '" + std::string(name) + "' must be a string");
}

const std::vector<std::int64_t> &
Attributes::getInts(std::string_view name) const {
  const AttrValue &v = get(name, "a list of integers");
  if (const auto *l = std::get_if<std::vector<std::int64_t>>(&v))
    return *l;
  throw IrError("attribute '" + std::string(name) +
                "' must be a list of integers");
}

std::vector<std::size_t> Attributes::getSizes(std::string_view name) const {
  std::vector<std::size_t> sizes;
  for (std::int64_t i : getInts(name)) {
    if (i < 0)
      throw IrError("attribute '" + std::string(name) + "' holds " +
                    std::to_string(i) + "; it must hold sizes (>= 0)");
    sizes.push_back(static_cast<std::size_t>(i));
  }
  return sizes;
}

// ---- Module ----------------------------------------------------------------

std::string Module::uniqueName(const std::string &name) const {
  if (name.empty() || !names_.count(name))
    return name;
  for (unsigned i = 1;; ++i) {
    std::string candidate = name + "_" + std::to_string(i);
    if (!names_.count(candidate))
      return candidate;
  }
}

namespace {

// More elements than any IPU system holds (2^48 floats are 1 PiB): a
// larger shape is a mistake or a hostile file, and its element count could
// wrap around, making shape checks (reshape's, say) pass wrongly.
constexpr std::size_t kMaxElements = std::size_t(1) << 48;

void checkElementCount(const std::string &name, const ValueType &type) {
  std::size_t elements = 1;
  for (std::size_t d : type.shape) {
    if (d != 0 && elements > kMaxElements / d)
      throw ShapeError("value '" + name + "' of type " + type.toString() +
                       " has more than 2^48 elements, the most a value may "
                       "have");
    elements *= d;
  }
}

} // namespace

ValueId Module::newValue(const std::string &name, ValueType type,
                         ValueKind kind, std::uint32_t def,
                         std::optional<unsigned> ipu) {
  checkElementCount(name, type);
  const auto id = static_cast<ValueId>(values_.size());
  ValueInfo v;
  v.type = std::move(type);
  v.name = uniqueName(name);
  v.kind = kind;
  v.def = def;
  v.ipu = ipu;
  if (!v.name.empty())
    names_[v.name] = id;
  values_.push_back(std::move(v));
  return id;
}

ValueId Module::addInput(const std::string &name, ValueType type,
                         std::optional<unsigned> ipu) {
  const ValueId id = newValue(name, std::move(type), ValueKind::Input,
                              static_cast<std::uint32_t>(inputs_.size()), ipu);
  inputs_.push_back(id);
  return id;
}

ValueId Module::addVariable(const std::string &name, ValueType type,
                            Initialiser init, bool trainable,
                            std::optional<unsigned> ipu) {
  // The initialiser is checked against the shape and type now, where the
  // error can name the variable, rather than when lowering; its values are
  // drawn only when needed.
  checkElementCount(name, type);
  try {
    checkInitialiser(init, type.dtype, type.shape);
  } catch (const ShapeError &e) {
    throw ShapeError("variable '" + name + "': " + e.what());
  } catch (const TypeError &e) {
    throw TypeError("variable '" + name + "': " + e.what());
  } catch (const UnsupportedError &e) {
    throw UnsupportedError("variable '" + name + "': " + e.what());
  }
  const ValueId id =
      newValue(name, std::move(type), ValueKind::Variable,
               static_cast<std::uint32_t>(variables_.size()), ipu);
  variables_.push_back({id, std::move(init), trainable});
  return id;
}

ValueId Module::addConstant(const std::string &name, ValueType type,
                            std::vector<double> data,
                            std::optional<unsigned> ipu) {
  if (data.size() != 1 && data.size() != type.numElements())
    throw ShapeError("constant '" + name + "' of type " + type.toString() +
                     " has " + std::to_string(type.numElements()) +
                     " elements but " + std::to_string(data.size()) +
                     " values were given; give one value per element, or "
                     "one for all");
  const ValueId id =
      newValue(name, std::move(type), ValueKind::Constant,
               static_cast<std::uint32_t>(constants_.size()), ipu);
  constants_.push_back({id, std::move(data)});
  return id;
}

std::vector<ValueId> Module::addOp(OpKind kind,
                                   const std::vector<ValueId> &operands,
                                   Attributes attrs,
                                   const Annotations &annotations,
                                   const std::vector<std::string> &names) {
  const std::string kindName(opKindName(kind));
  const auto count = static_cast<int>(operands.size());
  if (count < minOperands(kind) ||
      (maxOperands(kind) >= 0 && count > maxOperands(kind)))
    throw IrError(
        kindName + ": " + std::to_string(count) + " operands given; it takes " +
        std::to_string(minOperands(kind)) +
        (maxOperands(kind) == minOperands(kind) ? ""
         : maxOperands(kind) < 0                ? " or more"
                                 : " to " + std::to_string(maxOperands(kind))));
  std::vector<ValueType> types;
  std::vector<std::string> operandNames;
  for (ValueId v : operands) {
    if (v >= values_.size())
      throw IrError(kindName + ": operand %" + std::to_string(v) +
                    " is not a value of this module");
    types.push_back(values_[v].type);
    operandNames.push_back(describe(v));
  }
  std::vector<ValueType> resultTypes =
      inferResultTypes(kind, types, attrs, operandNames);
  Op op;
  op.kind = kind;
  op.operands = operands;
  op.attrs = std::move(attrs);
  op.annotations = annotations;
  const auto opIndex = static_cast<std::uint32_t>(ops_.size());
  for (std::size_t i = 0; i < resultTypes.size(); ++i) {
    const std::string name = i < names.size() ? names[i]
                             : namePrefix_.empty()
                                 ? std::string()
                                 : namePrefix_ + "/" + kindName;
    const ValueId id = newValue(name, std::move(resultTypes[i]),
                                ValueKind::OpResult, opIndex, std::nullopt);
    values_[id].resultIndex = static_cast<unsigned>(i);
    op.results.push_back(id);
  }
  ops_.push_back(std::move(op));
  return ops_.back().results;
}

void Module::addOutput(const std::string &name, ValueId value) {
  if (value >= values_.size())
    throw IrError("output '" + name + "': %" + std::to_string(value) +
                  " is not a value of this module");
  for (const Output &o : outputs_)
    if (o.name == name)
      throw IrError("output '" + name + "' is already defined (as " +
                    describe(o.value) + "); pick another name");
  outputs_.push_back({name, value});
}

void Module::record(std::vector<VariableRecord> &list, const char *what,
                    ValueId variable, ValueId v) {
  if (value(variable).kind != ValueKind::Variable)
    throw IrError(std::string(what) + ": " + describe(variable) +
                  " is not a variable");
  if (typeOf(variable) != typeOf(v))
    throw IrError(std::string(what) + " of " + describe(variable) + " (" +
                  typeOf(variable).toString() + ") cannot be " + describe(v) +
                  ", which is " + typeOf(v).toString());
  for (VariableRecord &r : list)
    if (r.variable == variable) {
      r.value = v;
      return;
    }
  list.push_back({variable, v});
}

void Module::setUpdate(ValueId variable, ValueId v) {
  record(updates_, "the update", variable, v);
}

void Module::setGradient(ValueId variable, ValueId gradient) {
  record(gradients_, "the gradient", variable, gradient);
}

void Module::setStateOf(ValueId state, ValueId owner) {
  if (value(owner).kind != ValueKind::Variable)
    throw IrError("optimizer state " + describe(state) + " belongs to " +
                  describe(owner) + ", which is not a variable");
  record(states_, "the optimizer state", state, owner);
}

void Module::setUpdateCondition(ValueId flag, unsigned period) {
  if (!typeOf(flag).shape.empty())
    throw IrError("the update condition " + describe(flag) +
                  " must be a scalar, not " + typeOf(flag).toString());
  if (period == 0)
    throw IrError("the update condition's period must be at least 1 run");
  condition_ = flag;
  period_ = period;
}

void Module::addReset(ValueId variable) {
  if (value(variable).kind != ValueKind::Variable)
    throw IrError("a reset names " + describe(variable) +
                  ", which is not a variable");
  if (std::find(resets_.begin(), resets_.end(), variable) == resets_.end())
    resets_.push_back(variable);
}

namespace {

std::optional<ValueId> find(const std::vector<VariableRecord> &list,
                            ValueId variable) {
  for (const VariableRecord &r : list)
    if (r.variable == variable)
      return r.value;
  return std::nullopt;
}

} // namespace

std::optional<ValueId> Module::updateOf(ValueId variable) const {
  return find(updates_, variable);
}

std::optional<ValueId> Module::gradientOf(ValueId variable) const {
  return find(gradients_, variable);
}

void Module::setHyperParameter(ValueId variable, const std::string &name) {
  const ValueInfo &info = value(variable);
  if (name.empty())
    throw IrError("a hyper-parameter record of " + describe(variable) +
                  " needs a name");
  if (info.kind != ValueKind::Variable || variableOf(variable).trainable ||
      !info.type.shape.empty())
    throw IrError("hyper-parameter \"" + name +
                  "\" must be held by a "
                  "non-trainable scalar variable, and " +
                  describe(variable) + " (" + info.type.toString() +
                  ") is not one");
  for (HyperParameterRecord &r : hyperParameters_) {
    if (r.name == name && r.variable != variable)
      throw IrError("hyper-parameter \"" + name + "\" is already held by " +
                    describe(r.variable) + "; give " + describe(variable) +
                    " another name");
    if (r.variable == variable) {
      r.name = name;
      return;
    }
  }
  hyperParameters_.push_back({variable, name});
}

std::optional<ValueId> Module::hyperParameter(std::string_view name) const {
  for (const HyperParameterRecord &r : hyperParameters_)
    if (r.name == name)
      return r.variable;
  return std::nullopt;
}

bool Module::isHyperParameter(ValueId variable) const {
  for (const HyperParameterRecord &r : hyperParameters_)
    if (r.variable == variable)
      return true;
  return false;
}

const ValueInfo &Module::value(ValueId id) const {
  if (id >= values_.size())
    throw IrError("%" + std::to_string(id) + " is not a value of module '" +
                  name_ + "' (it has " + std::to_string(values_.size()) +
                  " values)");
  return values_[id];
}

ValueInfo &Module::mutableValue(ValueId id) {
  (void)value(id);
  return values_[id];
}

std::optional<ValueId> Module::findValue(std::string_view name) const {
  auto it = names_.find(std::string(name));
  if (it == names_.end())
    return std::nullopt;
  return it->second;
}

std::string Module::describe(ValueId id) const {
  if (id < values_.size() && !values_[id].name.empty())
    return "'" + values_[id].name + "'";
  return "%" + std::to_string(id);
}

std::string Module::setName(ValueId id, const std::string &name) {
  ValueInfo &v = mutableValue(id);
  if (v.name == name)
    return name;
  if (!v.name.empty())
    names_.erase(v.name);
  v.name = uniqueName(name);
  if (!v.name.empty())
    names_[v.name] = id;
  return v.name;
}

const Variable &Module::variableOf(ValueId id) const {
  const ValueInfo &v = value(id);
  if (v.kind != ValueKind::Variable)
    throw IrError(describe(id) + " is not a variable");
  return variables_.at(v.def);
}

void Module::setInitialiser(ValueId id, Initialiser init) {
  const Variable &v = variableOf(id);
  const ValueInfo &info = value(id);
  try {
    checkInitialiser(init, info.type.dtype, info.type.shape);
  } catch (const Error &e) {
    throw IrError("variable '" + info.name + "': " + e.what());
  }
  variables_[&v - variables_.data()].init = std::move(init);
}

const Constant &Module::constantOf(ValueId id) const {
  const ValueInfo &v = value(id);
  if (v.kind != ValueKind::Constant)
    throw IrError(describe(id) + " is not a constant");
  return constants_.at(v.def);
}

const Op &Module::producer(ValueId id) const {
  const ValueInfo &v = value(id);
  if (v.kind != ValueKind::OpResult)
    throw IrError(describe(id) + " is not the result of an operation");
  return ops_.at(v.def);
}

ValueId Module::output(std::string_view name) const {
  for (const Output &o : outputs_)
    if (o.name == name)
      return o.value;
  std::string known;
  for (const Output &o : outputs_)
    known += (known.empty() ? "" : ", ") + o.name;
  throw IrError("module '" + name_ + "' has no output '" + std::string(name) +
                "' (outputs: " + (known.empty() ? "none" : known) + ")");
}

} // namespace tessera::ir
