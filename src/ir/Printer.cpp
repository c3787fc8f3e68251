// The text form's writer. Leaves come first, then operations in program
// order, then outputs; unnamed values are numbered by their position in
// that order, so parsing the text and printing again gives the same text.
#include "Format.hpp"
#include "TextLexer.hpp"

#include "tessera/ir/Text.hpp"

#include <cctype>
#include <ostream>
#include <sstream>

namespace tessera::ir {

namespace {

using detail::formatFloat;
using detail::quote;

class Printer {
public:
  Printer(const Module &m, std::ostream &os) : m_(m), os_(os) {}
  void run();

private:
  std::string ref(ValueId id) const;
  void number(ValueId id);
  void leaf(ValueId id);
  void op(const Op &op);
  void annotations(const Annotations &a, std::optional<unsigned> ipu);
  void attribute(const AttrValue &v);

  const Module &m_;
  std::ostream &os_;
  std::vector<std::size_t> position_;
  std::size_t next_ = 0;
};

std::string Printer::ref(ValueId id) const {
  const std::string &name = m_.value(id).name;
  if (name.empty())
    return "%" + std::to_string(position_.at(id));
  return "%" + (detail::isIdentifier(name) ? name : quote(name));
}

void Printer::number(ValueId id) { position_.at(id) = next_++; }

void Printer::annotations(const Annotations &a, std::optional<unsigned> ipu) {
  if (ipu)
    os_ << " @ipu(" << *ipu << ")";
  if (a.pipelineStage)
    os_ << " @stage(" << *a.pipelineStage << ")";
  if (a.recompute)
    os_ << " @recompute";
  if (a.backward)
    os_ << " @backward";
  if (a.weightUpdate)
    os_ << " @weight_update";
}

void Printer::leaf(ValueId id) {
  const ValueInfo &v = m_.value(id);
  os_ << "  " << ref(id) << " = ";
  if (v.kind == ValueKind::Input) {
    os_ << "input : " << v.type.toString();
  } else if (v.kind == ValueKind::Variable) {
    const Variable &var = m_.variableOf(id);
    os_ << "variable" << (var.trainable ? "" : " nontrainable") << " : "
        << v.type.toString() << " init " << var.init.toString();
  } else {
    const Constant &c = m_.constantOf(id);
    os_ << "constant : " << v.type.toString() << " ";
    if (c.data.size() == 1) {
      os_ << formatFloat(c.data[0]);
    } else {
      os_ << "[";
      for (std::size_t i = 0; i < c.data.size(); ++i)
        os_ << (i ? ", " : "") << formatFloat(c.data[i]);
      os_ << "]";
    }
  }
  annotations({}, v.ipu);
  os_ << "\n";
}

void Printer::attribute(const AttrValue &v) {
  if (const auto *i = std::get_if<std::int64_t>(&v)) {
    os_ << *i;
  } else if (const auto *d = std::get_if<double>(&v)) {
    os_ << formatFloat(*d);
  } else if (const auto *s = std::get_if<std::string>(&v)) {
    os_ << quote(*s);
  } else {
    const auto &l = std::get<std::vector<std::int64_t>>(v);
    os_ << "[";
    for (std::size_t i = 0; i < l.size(); ++i)
      os_ << (i ? ", " : "") << l[i];
    os_ << "]";
  }
}

void Printer::op(const Op &op) {
  os_ << "  ";
  for (std::size_t i = 0; i < op.results.size(); ++i)
    os_ << (i ? ", " : "") << ref(op.results[i]);
  os_ << " = " << opKindName(op.kind) << "(";
  for (std::size_t i = 0; i < op.operands.size(); ++i)
    os_ << (i ? ", " : "") << ref(op.operands[i]);
  os_ << ")";
  if (!op.attrs.all().empty()) {
    os_ << " {";
    bool first = true;
    for (const auto &[name, value] : op.attrs.all()) {
      os_ << (first ? "" : ", ") << name << " = ";
      attribute(value);
      first = false;
    }
    os_ << "}";
  }
  os_ << " :";
  for (std::size_t i = 0; i < op.results.size(); ++i)
    os_ << (i ? ", " : " ") << m_.typeOf(op.results[i]).toString();
  annotations(op.annotations, op.annotations.ipu);
  os_ << "\n";
}

void Printer::run() {
  position_.assign(m_.numValues(), 0);
  for (ValueId id = 0; id < m_.numValues(); ++id)
    if (m_.value(id).kind != ValueKind::OpResult)
      number(id);
  for (const Op &o : m_.ops())
    for (ValueId r : o.results)
      number(r);
  os_ << "module" << (m_.name().empty() ? "" : " " + quote(m_.name()))
      << " {\n";
  for (ValueId id = 0; id < m_.numValues(); ++id)
    if (m_.value(id).kind != ValueKind::OpResult)
      leaf(id);
  for (const Op &o : m_.ops())
    op(o);
  for (const Output &o : m_.outputs())
    os_ << "  output " << quote(o.name) << " = " << ref(o.value) << "\n";
  for (const VariableRecord &r : m_.updates())
    os_ << "  update " << ref(r.variable) << " = " << ref(r.value) << "\n";
  for (const VariableRecord &r : m_.gradients())
    os_ << "  gradient " << ref(r.variable) << " = " << ref(r.value) << "\n";
  for (const VariableRecord &r : m_.states())
    os_ << "  state " << ref(r.variable) << " of " << ref(r.value) << "\n";
  for (const HyperParameterRecord &r : m_.hyperParameters())
    os_ << "  hyper " << ref(r.variable) << " " << quote(r.name) << "\n";
  if (const auto c = m_.updateCondition())
    os_ << "  condition " << ref(*c) << " every " << m_.updatePeriod() << "\n";
  for (ValueId v : m_.resets())
    os_ << "  reset " << ref(v) << "\n";
  os_ << "}\n";
}

} // namespace

void print(const Module &module, std::ostream &os) {
  Printer(module, os).run();
}

std::string print(const Module &module) {
  std::ostringstream os;
  print(module, os);
  return os.str();
}

} // namespace tessera::ir
