// Flattens the program trees into a list of draft steps with jumps, and plans
// the temporaries that bring vertex operands to their tile.
#include "CompilerState.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>

namespace tessera::compiler {
namespace {

using program::ProgramKind;

std::string str(std::size_t v) { return std::to_string(v); }

bool isList(codelet::Shape s) {
  return s == codelet::Shape::VectorList || s == codelet::Shape::ScalarList;
}

std::string vertexName(const GraphData &d, unsigned v) {
  const VertexData &vd = d.vertices[v];
  return "vertex " + str(v) + " (class " + vd.vertexClass->info.name +
         ", compute set \"" + d.computeSets[vd.computeSet].name + "\")";
}

// A field operand can be used in place when it is one contiguous run inside
// a single mapping interval on the vertex's own tile.
// One contiguous run inside one mapping interval: a vertex could address it
// directly, wherever it lives.
bool contiguousInOneInterval(const State &s, const Tensor &t, unsigned *tile) {
  const auto &runs = t.runs();
  if (runs.size() != 1 || (runs[0].stride != 1 && runs[0].count != 1))
    return false;
  const Run &r = runs[0];
  const VariableData &v = s.vars[r.var];
  auto [t0, idx] = locate(v, static_cast<std::size_t>(r.start));
  *tile = t0;
  return v.mapping[idx].end >= static_cast<std::size_t>(r.start + r.count);
}

bool usableInPlace(const State &s, const Tensor &t, unsigned tile) {
  unsigned where = 0;
  return t.numElements() == 0 ||
         (contiguousInOneInterval(s, t, &where) && where == tile);
}

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
    return pc() - 1;
  }

  Draft named(const program::ProgramNode &n) {
    Draft d;
    d.step.name = s_.intern(n.debugName);
    return d;
  }

  void visitConditional(const program::Program &p) {
    ++conditional_;
    visit(p);
    --conditional_;
  }

  void visit(const program::Program &p) {
    const program::ProgramNode &n = p.node();
    switch (n.kind) {
    case ProgramKind::Sequence:
      for (const auto &c : n.children)
        visit(c);
      return;
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
      planComputeSet(n.id);
    if (!plan.gathers.empty() || !plan.costOnlyGathers.empty()) {
      Draft d = named(n);
      d.planCopies = &plan.gathers;
      d.planCostOnlyCopies = &plan.costOnlyGathers;
      emit(StepKind::Exchange, std::move(d));
    }
    Draft d = named(n);
    d.computeSet = static_cast<int>(n.id);
    emit(StepKind::Compute, std::move(d));
    if (!plan.scatters.empty()) {
      Draft d2 = named(n);
      d2.planCopies = &plan.scatters;
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

  void planComputeSet(unsigned cs) {
    ComputeSetPlan &plan = s_.csPlans[cs];
    plan.planned = true;
    writtenVars_.clear();
    for (unsigned v : s_.data.computeSets[cs].vertices) {
      const VertexData &vd = s_.data.vertices[v];
      const auto &fields = vd.vertexClass->info.fields;
      for (unsigned f = 0; f < fields.size(); ++f) {
        if (fields[f].direction == codelet::Direction::Output ||
            fields[f].direction == codelet::Direction::InOut)
          for (const Tensor &t : vd.fields[f].tensors)
            for (const Run &r : t.runs())
              writtenVars_.insert(r.var);
      }
    }
    for (unsigned v : s_.data.computeSets[cs].vertices)
      planVertex(plan, v);
    planHostKernel(cs);
  }

  // Runs cs's host kernel in its place when every field of the kernel's
  // vertices (checked as any vertex is) is one contiguous piece of one tile
  // interval (read and written where it lies) and cs writes nothing through
  // temporaries. cs's gathers are then only costed: nothing reads their
  // temporaries.
  void planHostKernel(unsigned cs) {
    const std::optional<unsigned> kernel = s_.data.computeSets[cs].hostKernel;
    ComputeSetPlan &plan = s_.csPlans[cs];
    if (!kernel || !s_.options.hostKernels || !plan.scatters.empty())
      return;
    for (unsigned v : s_.data.computeSets[*kernel].vertices) {
      const VertexData &vd = checkedVertex(v);
      const auto &fields = vd.vertexClass->info.fields;
      for (unsigned f = 0; f < fields.size(); ++f) {
        if (fields[f].direction == codelet::Direction::State)
          continue;
        unsigned tile = 0;
        for (const Tensor &t : vd.fields[f].tensors)
          if (!contiguousInOneInterval(s_, t, &tile))
            return;
      }
    }
    plan.hostKernel = static_cast<int>(*kernel);
    s_.csPlans[*kernel].planned = true;
    plan.costOnlyGathers.insert(plan.costOnlyGathers.end(),
                                plan.gathers.begin(), plan.gathers.end());
    plan.gathers.clear();
  }

  // Vertex v, which must be mapped to a tile and have every field set: each
  // scalar state given a value, each edge and list element connected.
  const VertexData &checkedVertex(unsigned v) const {
    const VertexData &vd = s_.data.vertices[v];
    if (!vd.tile)
      throw GraphError(vertexName(s_.data, v) +
                       " is not mapped to a tile; call "
                       "graph.setTileMapping(vertex, tile)");
    const auto &fields = vd.vertexClass->info.fields;
    for (unsigned f = 0; f < fields.size(); ++f) {
      const codelet::FieldInfo &fi = fields[f];
      const FieldBinding &b = vd.fields[f];
      // Built only for an error: this runs for every field of every vertex.
      auto where = [&] {
        return vertexName(s_.data, v) + " field \"" + fi.name + "\"";
      };
      if (fi.direction == codelet::Direction::State) {
        if (!b.connected && fi.shape == codelet::Shape::Scalar)
          throw GraphError(where() +
                           " has no value; set it with "
                           "graph.setInitialValue(v[\"" +
                           fi.name + "\"], value)");
        continue;
      }
      const bool list = isList(fi.shape);
      if (!b.connected && !(list && b.size && *b.size == 0))
        throw GraphError(where() +
                         " is not connected; connect a tensor with "
                         "graph.connect(v[\"" +
                         fi.name + "\"], tensor)");
      if (list && b.size && b.tensors.size() != *b.size)
        throw GraphError(where() + " has size " + str(*b.size) + " but " +
                         str(b.tensors.size()) +
                         " elements are connected; connect every element");
      for (unsigned i = 0; i < b.tensors.size(); ++i)
        if (!b.tensors[i].valid())
          throw GraphError(where() + " element " + str(i) +
                           " is not connected");
    }
    return vd;
  }

  void planVertex(ComputeSetPlan &plan, unsigned v) {
    const VertexData &vd = checkedVertex(v);
    const auto &fields = vd.vertexClass->info.fields;
    for (unsigned f = 0; f < fields.size(); ++f) {
      if (fields[f].direction == codelet::Direction::State)
        continue;
      const std::vector<Tensor> &ts = vd.fields[f].tensors;
      remote_.clear();
      for (unsigned i = 0; i < ts.size(); ++i)
        if (!usableInPlace(s_, ts[i], *vd.tile))
          remote_.push_back(i);
      if (!remote_.empty())
        addTemporaries(plan, v, f, fields[f]);
    }
  }

  // One temporary on v's tile for the field's elements remote_ (a
  // convolution's rows arrive as dozens of elements): each element gets a
  // slice starting on a kAlign boundary, so the bytes are those of one
  // temporary per element, as the layout aligns blocks.
  void addTemporaries(ComputeSetPlan &plan, unsigned v, unsigned f,
                      const codelet::FieldInfo &fi) {
    const VertexData &vd = s_.data.vertices[v];
    const std::vector<Tensor> &ts = vd.fields[f].tensors;
    const Type type = ts[remote_.front()].elementType();
    // Elements an element's slice spans, its alignment gap included.
    auto span = [&](unsigned i) {
      return alignUp(ts[i].numElements() * typeSize(type)) / typeSize(type);
    };
    std::size_t total = 0, used = 0;
    for (unsigned i : remote_) {
      total += span(i);
      used += ts[i].numElements();
    }
    VariableData tmp;
    tmp.name = vd.vertexClass->info.name + "." + fi.name + "/operand";
    tmp.type = type;
    tmp.numElements = total;
    tmp.shape = {total};
    tmp.mapping.push_back({0, total, *vd.tile});
    const auto id = static_cast<std::uint32_t>(s_.vars.size());
    s_.vars.push_back(std::move(tmp));
    s_.intervalAddr.emplace_back();
    s_.temporaryGaps.push_back(total - used);
    std::size_t offset = 0;
    for (unsigned i : remote_) {
      const std::size_t n = ts[i].numElements();
      Tensor temp(type, {n},
                  {Run{id, static_cast<std::int64_t>(offset), 1,
                       static_cast<std::int64_t>(n)}});
      offset += span(i);
      addElementCopies(plan, v, f, i, std::move(temp), fi.direction);
    }
  }

  // Substitutes temp for field element (v, f, i) and plans its copies.
  void addElementCopies(ComputeSetPlan &plan, unsigned v, unsigned f,
                        unsigned i, Tensor temp, codelet::Direction direction) {
    const Tensor &t = s_.data.vertices[v].fields[f].tensors[i];
    unsigned srcTile = 0;
    // The IPU would copy the operand over the exchange; the simulator lets
    // the vertex read a contiguous source where it lies, since no vertex of
    // this compute set writes the source and so the result cannot differ.
    // The temporary keeps its memory and the copy keeps its cost.
    const Tensor flat = t.flatten();
    if (direction == codelet::Direction::Input &&
        contiguousInOneInterval(s_, t, &srcTile) &&
        !writtenVars_.count(t.runs()[0].var)) {
      s_.substitute(v, f, i, temp, flat);
      plan.costOnlyGathers.emplace_back(flat, std::move(temp));
      return;
    }
    s_.substitute(v, f, i, temp, Tensor());
    if (direction != codelet::Direction::Output)
      plan.gathers.emplace_back(flat, temp);
    if (direction != codelet::Direction::Input)
      plan.scatters.emplace_back(std::move(temp), flat);
  }

  State &s_;
  int program_ = -1;
  int conditional_ = 0;
  std::vector<std::uint32_t> calls_;
  std::unordered_set<std::uint32_t> writtenVars_; ///< by the planned set
  std::vector<unsigned> remote_; ///< field elements needing a temporary
};

} // namespace

void flattenPrograms(State &s, const std::vector<program::Program> &programs) {
  s.csPlans.resize(s.data.computeSets.size());
  Flattener(s).flatten(programs);
}

} // namespace tessera::compiler
