#include "tessera/graph/Program.hpp"

#include "tessera/support/Error.hpp"

#include <set>
#include <string>

namespace tessera::program {
namespace {

void checkScalar(const Tensor &t, const char *what) {
  if (!t.valid() || t.numElements() != 1)
    throw ShapeError(std::string(what) +
                     ": the predicate must be a tensor of one element, but "
                     "it has shape " +
                     (t.valid() ? t.shapeToString() : "(none)") +
                     "; pass a scalar tensor (shape {} or {1})");
}

} // namespace

Program::Program() : node_(std::make_shared<ProgramNode>()) {}

Program::Program(ProgramKind kind, const DebugContext &dc)
    : node_(std::make_shared<ProgramNode>()) {
  node_->kind = kind;
  node_->debugName = dc.name;
}

bool Program::isEmpty() const {
  if (node_->kind != ProgramKind::Sequence)
    return false;
  for (const Program &c : node_->children)
    if (!c.isEmpty())
      return false;
  return true;
}

Sequence::Sequence(const DebugContext &dc)
    : Program(ProgramKind::Sequence, dc) {}

Sequence::Sequence(std::initializer_list<Program> programs,
                   const DebugContext &dc)
    : Program(ProgramKind::Sequence, dc) {
  for (const Program &p : programs)
    add(p);
}

void Sequence::add(const Program &p) { mutableNode().children.push_back(p); }

Execute::Execute(ComputeSet cs, const DebugContext &dc)
    : Program(ProgramKind::Execute, dc) {
  mutableNode().id = cs.getId();
}

Copy::Copy(const Tensor &src, const Tensor &dst, bool, const DebugContext &dc)
    : Program(ProgramKind::Copy, dc) {
  if (!src.valid() || !dst.valid())
    throw ShapeError("Copy: source and destination must be tensors of a "
                     "graph, but one of them is empty");
  if (src.numElements() != dst.numElements())
    throw ShapeError("Copy: the source has " +
                     std::to_string(src.numElements()) + " elements (shape " +
                     src.shapeToString() + ") but the destination has " +
                     std::to_string(dst.numElements()) + " (shape " +
                     dst.shapeToString() +
                     "); copy between tensors of equal element counts");
  if (src.elementType() != dst.elementType())
    throw TypeError("Copy: the source holds " +
                    std::string(typeName(src.elementType())) +
                    " but the destination holds " +
                    std::string(typeName(dst.elementType())) +
                    "; cast first (popops::cast)");
  mutableNode().tensors = {src, dst};
}

namespace {
void checkStreamCopy(const DataStream &s, const Tensor &t, const char *dir) {
  if (s.numElements() != t.numElements())
    throw ShapeError(std::string("Copy ") + dir + " stream \"" + s.handle() +
                     "\": the stream carries " +
                     std::to_string(s.numElements()) +
                     " elements per copy but the tensor has " +
                     std::to_string(t.numElements()) + " (shape " +
                     t.shapeToString() + ")");
  if (s.elementType() != t.elementType())
    throw TypeError(std::string("Copy ") + dir + " stream \"" + s.handle() +
                    "\": the stream carries " +
                    std::string(typeName(s.elementType())) +
                    " but the tensor holds " +
                    std::string(typeName(t.elementType())));
}
void checkRemoteCopy(const RemoteBuffer &b, const Tensor &t) {
  if (b.numElements() != t.numElements())
    throw ShapeError("Copy with remote buffer \"" + b.handle() +
                     "\": a buffer slot holds " +
                     std::to_string(b.numElements()) +
                     " elements but the tensor has " +
                     std::to_string(t.numElements()));
  if (b.elementType() != t.elementType())
    throw TypeError("Copy with remote buffer \"" + b.handle() +
                    "\": the buffer holds " +
                    std::string(typeName(b.elementType())) +
                    " but the tensor holds " +
                    std::string(typeName(t.elementType())));
}
} // namespace

Copy::Copy(const DataStream &stream, const Tensor &dst, bool,
           const DebugContext &dc)
    : Program(ProgramKind::StreamToTensor, dc) {
  checkStreamCopy(stream, dst, "from");
  mutableNode().id = stream.getId();
  mutableNode().tensors = {dst};
}

Copy::Copy(const Tensor &src, const DataStream &stream, bool,
           const DebugContext &dc)
    : Program(ProgramKind::TensorToStream, dc) {
  checkStreamCopy(stream, src, "to");
  mutableNode().id = stream.getId();
  mutableNode().tensors = {src};
}

Copy::Copy(const RemoteBuffer &buffer, const Tensor &dst,
           const DebugContext &dc)
    : Program(ProgramKind::RemoteToTensor, dc) {
  checkRemoteCopy(buffer, dst);
  mutableNode().id = buffer.getId();
  mutableNode().tensors = {dst};
}

Copy::Copy(const RemoteBuffer &buffer, const Tensor &dst, const Tensor &offset,
           const DebugContext &dc)
    : Copy(buffer, dst, dc) {
  checkScalar(offset, "Copy from remote buffer (offset)");
  mutableNode().tensors.push_back(offset);
  mutableNode().hasOffset = true;
}

Copy::Copy(const Tensor &src, const RemoteBuffer &buffer,
           const DebugContext &dc)
    : Program(ProgramKind::TensorToRemote, dc) {
  checkRemoteCopy(buffer, src);
  mutableNode().id = buffer.getId();
  mutableNode().tensors = {src};
}

Copy::Copy(const Tensor &src, const RemoteBuffer &buffer, const Tensor &offset,
           const DebugContext &dc)
    : Copy(src, buffer, dc) {
  checkScalar(offset, "Copy to remote buffer (offset)");
  mutableNode().tensors.push_back(offset);
  mutableNode().hasOffset = true;
}

Repeat::Repeat(unsigned count, const Program &body, const DebugContext &dc)
    : Program(ProgramKind::Repeat, dc) {
  mutableNode().count = count;
  mutableNode().children = {body};
}

RepeatWhileTrue::RepeatWhileTrue(const Program &cond, const Tensor &predicate,
                                 const Program &body, const DebugContext &dc)
    : Program(ProgramKind::RepeatWhileTrue, dc) {
  checkScalar(predicate, "RepeatWhileTrue");
  mutableNode().children = {cond, body};
  mutableNode().tensors = {predicate};
}

RepeatWhileFalse::RepeatWhileFalse(const Program &cond,
                                   const Tensor &predicate,
                                   const Program &body, const DebugContext &dc)
    : Program(ProgramKind::RepeatWhileFalse, dc) {
  checkScalar(predicate, "RepeatWhileFalse");
  mutableNode().children = {cond, body};
  mutableNode().tensors = {predicate};
}

If::If(const Tensor &predicate, const Program &trueBody,
       const Program &falseBody, const DebugContext &dc)
    : Program(ProgramKind::If, dc) {
  checkScalar(predicate, "If");
  mutableNode().children = {trueBody, falseBody};
  mutableNode().tensors = {predicate};
}

Switch::Switch(const Tensor &control, const DebugContext &dc)
    : Program(ProgramKind::Switch, dc) {
  checkScalar(control, "Switch");
  if (isFloatingPoint(control.elementType()))
    throw TypeError("Switch: the control tensor holds " +
                    std::string(typeName(control.elementType())) +
                    "; it must hold an integer type");
  mutableNode().tensors = {control};
  mutableNode().hasDefault = true;
  mutableNode().children = {Program()};
}

Switch::Switch(const Tensor &control,
               const std::vector<std::pair<std::int32_t, Program>> &cases,
               const DebugContext &dc)
    : Switch(control, dc) {
  for (const auto &[value, body] : cases)
    add(value, body);
}

Switch::Switch(const Tensor &control,
               const std::vector<std::pair<std::int32_t, Program>> &cases,
               const Program &defaultCase, const DebugContext &dc)
    : Switch(control, cases, dc) {
  mutableNode().children.back() = defaultCase;
}

Switch &Switch::add(std::int32_t value, const Program &body) {
  ProgramNode &n = mutableNode();
  for (std::int32_t v : n.caseValues)
    if (v == value)
      throw GraphError("Switch: case " + std::to_string(value) +
                       " is added twice; each case value must be unique");
  // The default stays last.
  n.children.insert(n.children.end() - 1, body);
  n.caseValues.push_back(value);
  return *this;
}

Call::Call(Function f, const DebugContext &dc)
    : Program(ProgramKind::Call, dc) {
  mutableNode().id = f.getId();
}

Sync::Sync(SyncType type, const DebugContext &dc)
    : Program(ProgramKind::Sync, dc) {
  mutableNode().syncType = type;
}

PrintTensor::PrintTensor(const Tensor &t, const DebugContext &dc)
    : PrintTensor("", t, dc) {}

PrintTensor::PrintTensor(const std::string &title, const Tensor &t,
                         const DebugContext &dc)
    : Program(ProgramKind::PrintTensor, dc) {
  mutableNode().message = title;
  mutableNode().tensors = {t};
}

WriteUndef::WriteUndef(const Tensor &t, const DebugContext &dc)
    : Program(ProgramKind::WriteUndef, dc) {
  mutableNode().tensors = {t};
}

Abort::Abort(const std::string &message, const DebugContext &dc)
    : Program(ProgramKind::Abort, dc) {
  mutableNode().message = message;
}

AbortOnCondition::AbortOnCondition(const Tensor &predicate,
                                   const std::string &message,
                                   const DebugContext &dc)
    : Program(ProgramKind::AbortOnCondition, dc) {
  checkScalar(predicate, "AbortOnCondition");
  mutableNode().message = message;
  mutableNode().tensors = {predicate};
}

CrossReplicaCopy::CrossReplicaCopy(const Tensor &src, const Tensor &dst,
                                   const std::map<unsigned, unsigned> &map,
                                   const DebugContext &dc)
    : Program(ProgramKind::CrossReplicaCopy, dc) {
  Copy check(src, dst); // the same size and type rules as Copy
  std::set<unsigned> destinations;
  for (const auto &[from, to] : map)
    if (!destinations.insert(to).second)
      throw GraphError("CrossReplicaCopy: replica " + std::to_string(to) +
                       " is the destination of two sources; each replica "
                       "receives at most one copy");
  mutableNode().tensors = {src, dst};
  mutableNode().replicaMap.assign(map.begin(), map.end());
}

} // namespace tessera::program
