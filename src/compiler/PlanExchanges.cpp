// Plans how each compute set's vertex operands reach their tile: which
// field elements are used in place and which get a temporary on the
// vertex's tile, filled by a gather exchange before the compute step (and
// written back by a scatter after it).
#include "CompilerState.hpp"

#include "tessera/support/Error.hpp"

#include <string>
#include <vector>

namespace tessera::compiler {
namespace {

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
bool contiguousInOneInterval(const State &s, const Tensor &t, unsigned *tile,
                             Locator &locator) {
  const auto &runs = t.runs();
  if (runs.size() != 1 || (runs[0].stride != 1 && runs[0].count != 1))
    return false;
  const Run &r = runs[0];
  const std::span<const TileInterval> m = s.mapping(r.var);
  auto [t0, idx] = locator(r.var, m, static_cast<std::size_t>(r.start));
  *tile = t0;
  return m[idx].end >= static_cast<std::size_t>(r.start + r.count);
}

bool usableInPlace(const State &s, const Tensor &t, unsigned tile,
                   Locator &locator) {
  unsigned where = 0;
  return (contiguousInOneInterval(s, t, &where, locator) && where == tile) ||
         elementsOf(t) == 0;
}

// Appends a touch, joined to the last one when it touches the same
// variable in the same way: joined touches give the same liveness, as
// reads repeat and writes only add up their elements.
void addTouch(std::vector<Touch> &touches, std::uint32_t var, bool read,
              bool write, std::uint64_t elements) {
  if (!touches.empty()) {
    Touch &last = touches.back();
    if (last.var == var && last.read == read && last.write == write) {
      last.elements += elements;
      return;
    }
  }
  touches.push_back({elements, var, read, write});
}

class OperandPlanner {
public:
  explicit OperandPlanner(State &s) : s_(s) {}

  void plan(unsigned cs) {
    ComputeSetPlan &plan = s_.csPlans[cs];
    plan.planned = true;
    // Compute sets are planned once each: cs + 1 marks the variables cs
    // writes without clearing the marks of the sets before.
    written_ = cs + 1;
    s_.writtenBy.resize(s_.numGraphVars, 0);
    for (unsigned v : s_.data.computeSets[cs].vertices) {
      const VertexData &vd = s_.data.vertices[v];
      const auto &fields = vd.vertexClass->info.fields;
      for (unsigned f = 0; f < fields.size(); ++f) {
        if (fields[f].direction == codelet::Direction::Output ||
            fields[f].direction == codelet::Direction::InOut)
          for (const Tensor &t : vd.fields[f].tensors)
            for (const Run &r : t.runs())
              s_.writtenBy[r.var] = written_;
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
  // temporaries. Paired kernels (Graph::pairHostKernels) run both or
  // neither, decided when the second of the two compute sets is planned
  // (until then, the first's gathers stay real).
  void planHostKernel(unsigned cs) {
    ComputeSetPlan &plan = s_.csPlans[cs];
    plan.kernelUsable = kernelUsable(cs);
    const std::optional<unsigned> pair = s_.data.computeSets[cs].hostKernelPair;
    if (!pair) {
      if (plan.kernelUsable)
        useHostKernel(cs);
      return;
    }
    const ComputeSetPlan &other = s_.csPlans[*pair];
    if (other.planned && other.kernelUsable && plan.kernelUsable) {
      useHostKernel(cs);
      useHostKernel(*pair);
    }
  }

  bool kernelUsable(unsigned cs) {
    const std::optional<unsigned> kernel = s_.data.computeSets[cs].hostKernel;
    if (!kernel || !s_.options.hostKernels || !s_.csPlans[cs].scatters.empty())
      return false;
    for (unsigned v : s_.data.computeSets[*kernel].vertices) {
      const VertexData &vd = checkedVertex(v);
      const auto &fields = vd.vertexClass->info.fields;
      for (unsigned f = 0; f < fields.size(); ++f) {
        if (fields[f].direction == codelet::Direction::State)
          continue;
        unsigned tile = 0;
        for (const Tensor &t : vd.fields[f].tensors)
          if (!contiguousInOneInterval(s_, t, &tile, locator_))
            return false;
      }
    }
    return true;
  }

  void useHostKernel(unsigned cs) {
    ComputeSetPlan &plan = s_.csPlans[cs];
    const unsigned kernel = *s_.data.computeSets[cs].hostKernel;
    plan.hostKernel = static_cast<int>(kernel);
    s_.csPlans[kernel].planned = true;
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
      const FieldTensors &ts = vd.fields[f].tensors;
      remote_.clear();
      for (unsigned i = 0; i < ts.size(); ++i)
        if (!usableInPlace(s_, ts[i], *vd.tile, locator_))
          remote_.push_back(i);
      if (!remote_.empty())
        addTemporaries(plan, v, f, fields[f]);
      addTouches(plan, v, f, fields[f].direction);
    }
  }

  // Records what field f of v reads and writes: its temporaries, and its
  // own tensors where no temporary replaces them or the vertex reads them
  // in place (they must not share bytes with what the compute set writes).
  // Touches of different variables may come in any order (each variable's
  // liveness depends only on its own touches), so the field's temporary,
  // touched by nothing else, gets one touch for all its elements.
  void addTouches(ComputeSetPlan &plan, unsigned v, unsigned f,
                  codelet::Direction direction) {
    const bool read = direction != codelet::Direction::Output;
    const bool write = direction != codelet::Direction::Input;
    const FieldTensors &ts = s_.data.vertices[v].fields[f].tensors;
    auto touch = [&](std::uint32_t var, bool r, bool w, std::uint64_t n) {
      addTouch(plan.touches, var, r, w, n);
    };
    Touch temporary;
    for (unsigned i = 0; i < ts.size(); ++i) {
      const std::optional<Substitution> sub = s_.substitution(v, f, i);
      if (!sub) {
        for (const Run &r : ts[i].runs())
          touch(r.var, read, write, static_cast<std::uint64_t>(r.count));
        continue;
      }
      temporary.var = sub->var;
      temporary.elements += sub->count;
      if (sub->inPlace)
        for (const Run &r : ts[i].runs())
          touch(r.var, true, false, static_cast<std::uint64_t>(r.count));
    }
    if (temporary.elements > 0)
      touch(temporary.var, read, write, temporary.elements);
  }

  // One temporary on v's tile for the field's elements remote_ (a
  // convolution's rows arrive as dozens of elements): each element gets a
  // slice starting on a kAlign boundary, so the bytes are those of one
  // temporary per element, as the layout aligns blocks.
  void addTemporaries(ComputeSetPlan &plan, unsigned v, unsigned f,
                      const codelet::FieldInfo &fi) {
    const VertexData &vd = s_.data.vertices[v];
    const FieldTensors &ts = vd.fields[f].tensors;
    const Type type = ts[remote_.front()].elementType();
    // Elements an element's slice spans, its alignment gap included.
    auto span = [&](std::size_t n) {
      return alignUp(n * typeSize(type)) / typeSize(type);
    };
    counts_.clear();
    std::size_t total = 0, used = 0;
    for (unsigned i : remote_) {
      counts_.push_back(elementsOf(ts[i]));
      total += span(counts_.back());
      used += counts_.back();
    }
    Temporary tmp;
    tmp.interval = {0, total, *vd.tile};
    tmp.gap = total - used;
    tmp.name = nameOf(vd.vertexClass, f);
    tmp.type = type;
    const auto id = static_cast<std::uint32_t>(s_.numVars());
    s_.temporaries.push_back(tmp);
    std::size_t offset = 0;
    gathered_ = scattered_ = 0;
    for (std::size_t k = 0; k < remote_.size(); ++k) {
      Substitution sub;
      sub.var = id;
      sub.offset = offset;
      sub.count = counts_[k];
      offset += span(counts_[k]);
      addElementCopies(plan, v, f, remote_[k], sub, fi.direction);
    }
    // The temporary's touches, one for all its elements.
    if (gathered_ > 0)
      addTouch(plan.gatherTouches, id, false, true, gathered_);
    if (scattered_ > 0)
      addTouch(plan.scatterTouches, id, true, false, scattered_);
  }

  // The index in temporaryNames of the name of field f's temporaries.
  std::uint32_t nameOf(const RegisteredVertex *cls, unsigned f) {
    const auto [it, added] = s_.temporaryNameOf.try_emplace(
        {cls, f}, static_cast<std::uint32_t>(s_.temporaryNames.size()));
    if (added)
      s_.temporaryNames.push_back(cls->info.name + "." +
                                  cls->info.fields[f].name + "/operand");
    return it->second;
  }

  // Substitutes sub for field element (v, f, i) and plans its copies.
  void addElementCopies(ComputeSetPlan &plan, unsigned v, unsigned f,
                        unsigned i, Substitution sub,
                        codelet::Direction direction) {
    const Tensor &t = s_.data.vertices[v].fields[f].tensors[i];
    unsigned srcTile = 0;
    // The IPU would copy the operand over the exchange; the simulator lets
    // the vertex read a contiguous source where it lies, since no vertex of
    // this compute set writes the source and so the result cannot differ.
    // The temporary keeps its memory and the copy keeps its cost.
    if (direction == codelet::Direction::Input &&
        contiguousInOneInterval(s_, t, &srcTile, locator_) &&
        s_.writtenBy[t.runs()[0].var] != written_) {
      sub.inPlace = true;
      s_.substitute(v, f, i, sub);
      addFieldCopies(plan.costOnlyGathers, v, f, true);
      gatherTouches(plan, t, sub.count);
      return;
    }
    s_.substitute(v, f, i, sub);
    if (direction != codelet::Direction::Output) {
      addFieldCopies(plan.gathers, v, f, false);
      gatherTouches(plan, t, sub.count);
    }
    if (direction != codelet::Direction::Input) {
      addFieldCopies(plan.scatters, v, f, false);
      for (const Run &r : t.runs())
        addTouch(plan.scatterTouches, r.var, false, true,
                 static_cast<std::uint64_t>(r.count));
      scattered_ += sub.count;
    }
  }

  // Lists field f of v among `copies` when its last entry is not already
  // that field: the field's elements are planned one after the other.
  static void addFieldCopies(std::vector<FieldCopies> &copies, unsigned v,
                             unsigned f, bool inPlace) {
    if (copies.empty() || copies.back().vertex != v ||
        copies.back().field != f || copies.back().inPlace != inPlace)
      copies.push_back({v, f, inPlace});
  }

  void gatherTouches(ComputeSetPlan &plan, const Tensor &t,
                     std::uint64_t count) {
    for (const Run &r : t.runs())
      addTouch(plan.gatherTouches, r.var, true, false,
               static_cast<std::uint64_t>(r.count));
    gathered_ += count;
  }

private:
  State &s_;
  Locator locator_;
  std::uint64_t gathered_ = 0, scattered_ = 0; ///< of the field's temporary
  std::uint32_t written_ = 0;    ///< State::writtenBy's mark of the planned set
  std::vector<unsigned> remote_; ///< field elements needing a temporary
  std::vector<std::size_t> counts_; ///< the elements of each of remote_
};

} // namespace

void planOperandExchanges(State &s, unsigned computeSet) {
  OperandPlanner(s).plan(computeSet);
}

} // namespace tessera::compiler
