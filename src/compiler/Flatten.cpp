// Flattens the program trees into a list of draft steps with jumps; each
// compute set's operands are planned (PlanExchanges.cpp) when a program
// first executes it.
#include "CompilerState.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <string>

namespace tessera::compiler {
namespace {

using program::ProgramKind;

std::string str(std::size_t v) { return std::to_string(v); }

class Flattener {
public:
  explicit Flattener(State &s) : s_(s) {}

  void flatten(const std::vector<program::Program> &programs) {
    for (std::size_t i = 0; i < programs.size(); ++i) {
      program_ = static_cast<int>(i);
      s_.exe.programEntry.push_back(pc());
      visit(programs[i]);
      emit(StepKind::End);
    }
    // Function bodies follow the programs; each exists once.
    program_ = -1;
    std::vector<std::uint32_t> entry;
    for (const auto &f : s_.data.functions) {
      entry.push_back(pc());
      visit(f);
      emit(StepKind::Return);
    }
    for (std::uint32_t d : calls_)
      s_.drafts[d].step.a = entry[s_.drafts[d].step.a];
  }

private:
  std::uint32_t pc() const {
    return static_cast<std::uint32_t>(s_.drafts.size());
  }

  std::uint32_t emit(StepKind kind, Draft d = {}) {
    d.step.kind = kind;
    d.program = program_;
    d.conditional = conditional_ > 0;
    s_.drafts.push_back(std::move(d));
    s_.exe.stepScopes.push_back(scope_);
    return pc() - 1;
  }

  Draft named(const program::ProgramNode &n) {
    Draft d;
    d.step.name = s_.intern(n.debugName);
    return d;
  }

  static constexpr std::uint32_t kNoScope = Executable::kNoScope;

  void visitConditional(const program::Program &p) {
    ++conditional_;
    visit(p);
    --conditional_;
  }

  void visit(const program::Program &p) {
    const program::ProgramNode &n = p.node();
    switch (n.kind) {
    case ProgramKind::Sequence: {
      // A named sequence is a scope of the trace (the outermost one names
      // the steps: a pipeline's stage passes, not the ops inside them).
      const std::uint32_t outer = scope_;
      if (!n.debugName.empty() && scope_ == kNoScope)
        scope_ = s_.intern(n.debugName);
      for (const auto &c : n.children)
        visit(c);
      scope_ = outer;
      return;
    }
    case ProgramKind::Execute:
      return visitExecute(n);
    case ProgramKind::Copy: {
      Draft d = named(n);
      d.copies.emplace_back(n.tensors[0], n.tensors[1]);
      emit(StepKind::Exchange, std::move(d));
      return;
    }
    case ProgramKind::StreamToTensor:
    case ProgramKind::TensorToStream:
      return visitStream(n);
    case ProgramKind::RemoteToTensor:
    case ProgramKind::TensorToRemote:
      return visitRemote(n);
    case ProgramKind::Repeat:
      return visitRepeat(n);
    case ProgramKind::RepeatWhileTrue:
    case ProgramKind::RepeatWhileFalse:
      return visitWhile(n);
    case ProgramKind::If:
      return visitIf(n);
    case ProgramKind::Switch:
      return visitSwitch(n);
    case ProgramKind::Call: {
      if (n.id >= s_.data.functions.size())
        throw GraphError("Call: function " + str(n.id) +
                         " does not belong to this graph");
      Draft d = named(n);
      d.step.a = n.id;
      calls_.push_back(emit(StepKind::Call, std::move(d)));
      return;
    }
    case ProgramKind::Sync: {
      Draft d = named(n);
      d.step.c = static_cast<std::uint32_t>(n.syncType);
      emit(StepKind::Sync, std::move(d));
      return;
    }
    case ProgramKind::PrintTensor: {
      Draft d = named(n);
      d.tensors = {n.tensors[0]};
      d.step.a = s_.intern(n.message);
      emit(StepKind::Print, std::move(d));
      return;
    }
    case ProgramKind::WriteUndef: {
      // A no-op jump to the next step that liveness reads as a fresh start
      // of the tensor's lifetime.
      Draft d = named(n);
      d.tensors = {n.tensors[0]};
      d.step.a = pc() + 1;
      d.step.c = 1;
      emit(StepKind::Jump, std::move(d));
      return;
    }
    case ProgramKind::Abort: {
      Draft d = named(n);
      d.step.a = s_.intern(n.message);
      emit(StepKind::Abort, std::move(d));
      return;
    }
    case ProgramKind::CrossReplicaCopy: {
      Draft d = named(n);
      d.copies.emplace_back(n.tensors[0], n.tensors[1]);
      d.step.c = static_cast<std::uint32_t>(s_.exe.replicaPairs.size());
      d.step.count = n.replicaMap.size();
      const unsigned replicas = s_.data.replicationFactor;
      for (const auto &[from, to] : n.replicaMap) {
        if (from >= replicas || to >= replicas)
          throw GraphError(
              "CrossReplicaCopy: replica " + str(std::max(from, to)) +
              " does not exist; the graph has " + str(replicas) + " replicas");
        s_.exe.replicaPairs.emplace_back(from, to);
      }
      emit(StepKind::CrossReplica, std::move(d));
      return;
    }
    case ProgramKind::AbortOnCondition: {
      Draft d = named(n);
      d.step.a = s_.intern(n.message);
      d.tensors = {n.tensors[0]};
      emit(StepKind::AbortIf, std::move(d));
      return;
    }
    }
    TESSERA_INTERNAL_ASSERT(false, "unknown program kind");
  }

  void visitExecute(const program::ProgramNode &n) {
    if (n.id >= s_.data.computeSets.size())
      throw GraphError("Execute: compute set " + str(n.id) +
                       " does not belong to this graph");
    if (s_.data.computeSets[n.id].isHostKernel)
      throw GraphError("Execute: compute set \"" +
                       s_.data.computeSets[n.id].name +
                       "\" is another's host kernel (Graph::setHostKernel); "
                       "execute that compute set instead");
    ComputeSetPlan &plan = s_.csPlans[n.id];
    if (!plan.planned)
      planOperandExchanges(s_, n.id);
    if (!plan.gathers.empty() || !plan.costOnlyGathers.empty()) {
      Draft d = named(n);
      d.gathers = &plan.gathers;
      d.costOnlyGathers = &plan.costOnlyGathers;
      d.touches = &plan.gatherTouches;
      emit(StepKind::Exchange, std::move(d));
    }
    Draft d = named(n);
    d.computeSet = static_cast<int>(n.id);
    emit(StepKind::Compute, std::move(d));
    if (!plan.scatters.empty()) {
      Draft d2 = named(n);
      d2.scatters = &plan.scatters;
      d2.touches = &plan.scatterTouches;
      emit(StepKind::Exchange, std::move(d2));
    }
  }

  void visitStream(const program::ProgramNode &n) {
    const StreamData &sd = s_.data.streams.at(n.id);
    const bool in = n.kind == ProgramKind::StreamToTensor;
    if (sd.hostToDevice != in)
      throw GraphError("Copy: stream \"" + sd.handle + "\" is a " +
                       (sd.hostToDevice ? "host-to-device" : "device-to-host") +
                       " FIFO; it cannot be copied " +
                       (in ? "to a tensor" : "from a tensor"));
    Draft d = named(n);
    d.tensors = {n.tensors[0]};
    d.step.a = n.id;
    emit(in ? StepKind::StreamIn : StepKind::StreamOut, std::move(d));
  }

  void visitRemote(const program::ProgramNode &n) {
    Draft d = named(n);
    d.tensors = n.tensors;
    d.step.a = n.id;
    d.step.hasAddr = n.hasOffset;
    emit(n.kind == ProgramKind::RemoteToTensor ? StepKind::RemoteIn
                                               : StepKind::RemoteOut,
         std::move(d));
  }

  void visitRepeat(const program::ProgramNode &n) {
    if (n.count == 0)
      return;
    Draft d = named(n);
    d.step.a = s_.exe.numCounters++;
    d.step.count = n.count;
    const std::uint32_t start = emit(StepKind::RepeatStart, d);
    visit(n.children[0]);
    Draft e = named(n);
    e.step.a = d.step.a;
    e.step.b = start + 1;
    const std::uint32_t end = emit(StepKind::RepeatEnd, std::move(e));
    s_.drafts[start].step.b = end + 1;
    s_.loops.push_back({start, end});
  }

  void visitWhile(const program::ProgramNode &n) {
    const std::uint32_t top = pc();
    visit(n.children[0]);
    Draft d = named(n);
    d.tensors = {n.tensors[0]};
    const std::uint32_t test =
        emit(n.kind == ProgramKind::RepeatWhileTrue ? StepKind::JumpIfZero
                                                    : StepKind::JumpIfNonZero,
             std::move(d));
    visitConditional(n.children[1]);
    Draft back = named(n);
    back.step.a = top;
    const std::uint32_t end = emit(StepKind::Jump, std::move(back));
    s_.drafts[test].step.a = end + 1;
    s_.loops.push_back({top, end});
  }

  void visitIf(const program::ProgramNode &n) {
    Draft d = named(n);
    d.tensors = {n.tensors[0]};
    const std::uint32_t test = emit(StepKind::JumpIfZero, std::move(d));
    visitConditional(n.children[0]);
    if (n.children[1].isEmpty()) {
      s_.drafts[test].step.a = pc();
      return;
    }
    const std::uint32_t skip = emit(StepKind::Jump, named(n));
    s_.drafts[test].step.a = pc();
    visitConditional(n.children[1]);
    s_.drafts[skip].step.a = pc();
  }

  void visitSwitch(const program::ProgramNode &n) {
    Draft d = named(n);
    d.tensors = {n.tensors[0]};
    const std::uint32_t sw = emit(StepKind::Switch, std::move(d));
    const auto first = static_cast<std::uint32_t>(s_.exe.switchTable.size());
    std::vector<std::uint32_t> exits;
    for (std::size_t i = 0; i < n.caseValues.size(); ++i) {
      s_.exe.switchTable.emplace_back(n.caseValues[i], pc());
      visitConditional(n.children[i]);
      exits.push_back(emit(StepKind::Jump, named(n)));
    }
    s_.drafts[sw].step.c = pc();
    visitConditional(n.children.back());
    for (std::uint32_t j : exits)
      s_.drafts[j].step.a = pc();
    s_.drafts[sw].step.a = first;
    s_.drafts[sw].step.b =
        static_cast<std::uint32_t>(s_.exe.switchTable.size()) - first;
  }

  std::uint32_t scope_ = kNoScope;
  State &s_;
  int program_ = -1;
  int conditional_ = 0;
  std::vector<std::uint32_t> calls_;
};

} // namespace

void flattenPrograms(State &s, const std::vector<program::Program> &programs) {
  s.csPlans.resize(s.data.computeSets.size());
  Flattener(s).flatten(programs);
}

} // namespace tessera::compiler
