/// \file
/// Control programs (Poplar's poplar::program): Sequence, Execute, Copy,
/// Repeat, RepeatWhileTrue/False, If, Switch, Call, Sync, PrintTensor,
/// WriteUndef, Abort, AbortOnCondition. Programs are cheap handles to an
/// immutable tree (a Sequence may still be appended to); the compiler
/// flattens the tree into the engine's step list.
#pragma once

#include "tessera/graph/DebugContext.hpp"
#include "tessera/graph/GraphTypes.hpp"
#include "tessera/graph/Tensor.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessera {
namespace program {

class Program;

/// What kind of program a node is.
enum class ProgramKind : std::uint8_t {
  Sequence,
  Execute,
  Copy,
  StreamToTensor,
  TensorToStream,
  RemoteToTensor,
  TensorToRemote,
  Repeat,
  RepeatWhileTrue,
  RepeatWhileFalse,
  If,
  Switch,
  Call,
  Sync,
  PrintTensor,
  WriteUndef,
  Abort,
  AbortOnCondition,
  CrossReplicaCopy,
};

/// Synchronisation scope of a Sync program.
enum class SyncType : std::uint8_t { INTERNAL, EXTERNAL, GLOBAL };

/// The data of one program node; read by the compiler.
struct ProgramNode {
  ProgramKind kind = ProgramKind::Sequence;
  std::string debugName;
  std::vector<Program> children;        // bodies, branches, sequence members
  std::vector<Tensor> tensors;          // operands (src/dst, predicate, ...)
  unsigned id = 0;                      // compute set, stream, buffer, function
  std::uint64_t count = 0;              // Repeat count
  std::vector<std::int32_t> caseValues; // Switch: value of children[i]
  bool hasDefault = false;              // Switch: last child is the default
  bool hasOffset = false; // remote copies: tensors[1] is an offset
  std::string message;    // PrintTensor title, Abort message
  std::vector<std::pair<unsigned, unsigned>> replicaMap; // source -> dest
  SyncType syncType = SyncType::INTERNAL;
};

/// A program: a handle to a node.
class Program {
public:
  Program();
  const ProgramNode &node() const { return *node_; }
  bool isEmpty() const;

protected:
  explicit Program(ProgramKind kind, const DebugContext &dc = {});
  ProgramNode &mutableNode() { return *node_; }
  std::shared_ptr<ProgramNode> node_;
};

/// Runs its members in order.
class Sequence : public Program {
public:
  Sequence(const DebugContext &dc = {}); // NOLINT: Sequence() is common
  Sequence(std::initializer_list<Program> programs,
           const DebugContext &dc = {});
  void add(const Program &p);
};

/// Runs every vertex of a compute set (one compute superstep).
class Execute : public Program {
public:
  explicit Execute(ComputeSet cs, const DebugContext &dc = {});
};

/// Copies tensor to tensor (same element count and type), a host stream to
/// a tensor, a tensor to a host stream, or between a remote buffer and a
/// tensor (an optional offset tensor picks the buffer's repeat).
class Copy : public Program {
public:
  Copy(const Tensor &src, const Tensor &dst, bool dontOutline = false,
       const DebugContext &dc = {});
  Copy(const DataStream &stream, const Tensor &dst, bool optimiseMemory = false,
       const DebugContext &dc = {});
  Copy(const Tensor &src, const DataStream &stream, bool optimiseMemory = false,
       const DebugContext &dc = {});
  Copy(const RemoteBuffer &buffer, const Tensor &dst,
       const DebugContext &dc = {});
  Copy(const RemoteBuffer &buffer, const Tensor &dst, const Tensor &offset,
       const DebugContext &dc = {});
  Copy(const Tensor &src, const RemoteBuffer &buffer,
       const DebugContext &dc = {});
  Copy(const Tensor &src, const RemoteBuffer &buffer, const Tensor &offset,
       const DebugContext &dc = {});
};

/// Runs \p body \p count times.
class Repeat : public Program {
public:
  Repeat(unsigned count, const Program &body, const DebugContext &dc = {});
};

/// Runs \p cond, then \p body while the scalar \p predicate is non-zero.
class RepeatWhileTrue : public Program {
public:
  RepeatWhileTrue(const Program &cond, const Tensor &predicate,
                  const Program &body, const DebugContext &dc = {});
};

/// Runs \p cond, then \p body while the scalar \p predicate is zero.
class RepeatWhileFalse : public Program {
public:
  RepeatWhileFalse(const Program &cond, const Tensor &predicate,
                   const Program &body, const DebugContext &dc = {});
};

/// Runs \p trueBody when the scalar \p predicate is non-zero, else
/// \p falseBody.
class If : public Program {
public:
  If(const Tensor &predicate, const Program &trueBody,
     const Program &falseBody = Sequence(), const DebugContext &dc = {});
};

/// Runs the body whose value equals the scalar integer \p control, or the
/// default body.
class Switch : public Program {
public:
  explicit Switch(const Tensor &control, const DebugContext &dc = {});
  Switch(const Tensor &control,
         const std::vector<std::pair<std::int32_t, Program>> &cases,
         const DebugContext &dc = {});
  Switch(const Tensor &control,
         const std::vector<std::pair<std::int32_t, Program>> &cases,
         const Program &defaultCase, const DebugContext &dc = {});
  Switch &add(std::int32_t value, const Program &body);
};

/// Runs a Function made by Graph::addFunction; its code exists once.
class Call : public Program {
public:
  explicit Call(Function f, const DebugContext &dc = {});
};

/// Waits for all tiles (INTERNAL) or all IPUs (EXTERNAL, GLOBAL).
class Sync : public Program {
public:
  explicit Sync(SyncType type, const DebugContext &dc = {});
};

/// Prints a tensor to the engine's output stream as Poplar does:
/// `title: [1.0000000 2.0000000]`.
class PrintTensor : public Program {
public:
  explicit PrintTensor(const Tensor &t, const DebugContext &dc = {});
  PrintTensor(const std::string &title, const Tensor &t,
              const DebugContext &dc = {});
};

/// Marks a tensor's contents as undefined: its lifetime starts afresh.
class WriteUndef : public Program {
public:
  explicit WriteUndef(const Tensor &t, const DebugContext &dc = {});
};

/// Stops the run with a RuntimeError carrying \p message.
class Abort : public Program {
public:
  explicit Abort(const std::string &message = "", const DebugContext &dc = {});
};

/// Stops the run with a RuntimeError when the scalar \p predicate is
/// non-zero.
class AbortOnCondition : public Program {
public:
  AbortOnCondition(const Tensor &predicate, const std::string &message = "",
                   const DebugContext &dc = {});
};

/// Copies \p src of each source replica to \p dst of its destination
/// replica (replicaMap: source replica -> destination replica), over the
/// IPU-links. Replicas not named as destinations keep their \p dst.
class CrossReplicaCopy : public Program {
public:
  CrossReplicaCopy(const Tensor &src, const Tensor &dst,
                   const std::map<unsigned, unsigned> &replicaMap,
                   const DebugContext &dc = {});
};

} // namespace program
} // namespace tessera
