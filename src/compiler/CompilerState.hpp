// Private to the compiler: the state shared by its phases (flatten, layout,
// lowering, cost model).
#pragma once

#include "tessera/compiler/Executable.hpp"
#include "tessera/compiler/Options.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/graph/Graph.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tessera::compiler {

/// Tile memory blocks start on kAlign-byte boundaries and take whole
/// multiples of it.
constexpr std::uint64_t kAlign = 8;
inline std::uint64_t alignUp(std::uint64_t bytes) {
  return (bytes + kAlign - 1) & ~(kAlign - 1);
}

/// A compiler temporary: one interval on its vertex's tile, without an
/// initial value. Its name (vertex class, field and "/operand") is kept once
/// in State::temporaryNames: a large graph has about a million temporaries.
struct Temporary {
  TileInterval interval; ///< [0, its elements) on its tile
  /// Its elements that no step writes: the alignment gaps between the
  /// field elements it holds.
  std::size_t gap = 0;
  std::uint32_t name = 0;
  Type type = Type::FLOAT;
};

/// A vertex field element read or written through a compiler temporary:
/// elements [offset, offset + count) of variable `var` on the vertex's tile.
/// When the vertex reads its own tensor in place instead (inPlace; DESIGN.md
/// section 5.4), the temporary still takes its tile memory and its exchange
/// is still costed.
struct Substitution {
  std::uint64_t offset = 0, count = 0;
  std::uint32_t var = 0;
  bool inPlace = false;
  Run run() const {
    return {var, static_cast<std::int64_t>(offset), 1,
            static_cast<std::int64_t>(count)};
  }
};

/// The planned copies of a vertex field's substituted elements, in element
/// order: those read in place or those not (inPlace), between each
/// element's own tensor and its slice of the field's temporary. A gather
/// copies from the tensors, a scatter to them (State::forEachCopy).
struct FieldCopies {
  std::uint32_t vertex = 0, field = 0;
  bool inPlace = false;
};

/// Elements of a variable that a step reads or writes.
struct Touch {
  std::uint64_t elements = 0;
  std::uint32_t var = 0;
  bool read = false, write = false;
};

/// A step before addresses are known: its operands are tensors.
struct Draft {
  Step step;
  /// Exchange: (src, dst) pairs; streams, prints: one tensor; predicated
  /// steps: the predicate last.
  std::vector<Tensor> tensors;
  std::vector<std::pair<Tensor, Tensor>> copies;
  /// A compute set's gathers (and the gathers costed as the IPU would move
  /// them, whose destination the simulator never fills because the vertex
  /// reads the source in place) or its scatters: its plan's lists
  /// (ComputeSetPlan, planned before any of its steps is drafted and not
  /// changed after), shared by every Execute of the set.
  const std::vector<FieldCopies> *gathers = nullptr;
  const std::vector<FieldCopies> *costOnlyGathers = nullptr;
  const std::vector<FieldCopies> *scatters = nullptr;
  /// With gathers or scatters: what they read and write (ComputeSetPlan).
  const std::vector<Touch> *touches = nullptr;
  int computeSet = -1;
  int program = -1;         ///< -1 inside a function body
  bool conditional = false; ///< may not run every time its program runs
};

/// A loop's step range [begin, end] (end: the backward jump).
struct LoopRange {
  std::uint32_t begin = 0, end = 0;
};

/// Vertex fields whose tensors are replaced by compiler temporaries.
struct ComputeSetPlan {
  bool planned = false;
  std::vector<FieldCopies> gathers; ///< before compute
  /// Gathers the simulator skips: the vertex reads the source in place.
  std::vector<FieldCopies> costOnlyGathers;
  std::vector<FieldCopies> scatters; ///< after compute
  /// What the vertices read and write, temporaries included, in the order
  /// of their fields and elements, for the liveness analysis (Layout.cpp);
  /// consecutive touches of a variable in the same way are one.
  std::vector<Touch> touches;
  /// The same for the gathers (costed ones included) and the scatters. A
  /// gather step reads graph variables and writes temporaries, a scatter
  /// the reverse, so no variable is both read and written in one and the
  /// order of their touches does not matter.
  std::vector<Touch> gatherTouches, scatterTouches;
  std::uint32_t firstVertex = 0; ///< in Executable order
  /// The host kernel run in this compute set's place, or -1.
  int hostKernel = -1;
  /// Whether the graph's host kernel could run in its place (a paired
  /// kernel also needs its pair's).
  bool kernelUsable = false;
};

/// Everything the phases share.
struct State {
  State(const Graph &g, const EngineOptions &o);

  const Graph &graph;
  const GraphData &data;
  const Target &target;
  EngineOptions options;
  /// The graph's variables (data.variables, not copied: they hold the
  /// initial values) followed by compiler temporaries (ids from
  /// numGraphVars on).
  std::size_t numGraphVars = 0;
  std::vector<Temporary> temporaries;
  std::vector<std::string> temporaryNames;
  /// The index in temporaryNames of the name of each (vertex class, field)
  /// that has temporaries.
  std::map<std::pair<const RegisteredVertex *, unsigned>, std::uint32_t>
      temporaryNameOf;
  /// Graph variable \p id, or null for a temporary.
  const VariableData *graphVar(std::uint32_t id) const {
    return id < numGraphVars ? &data.variables[id] : nullptr;
  }
  /// Variable \p id's tile intervals: sorted and contiguous.
  std::span<const TileInterval> mapping(std::uint32_t id) const {
    if (id < numGraphVars)
      return data.variables[id].mapping;
    return {&temporaries[id - numGraphVars].interval, 1};
  }
  Type type(std::uint32_t id) const {
    return id < numGraphVars ? data.variables[id].type
                             : temporaries[id - numGraphVars].type;
  }
  std::size_t numElements(std::uint32_t id) const {
    return id < numGraphVars ? data.variables[id].numElements
                             : temporaries[id - numGraphVars].interval.end;
  }
  const std::string &name(std::uint32_t id) const {
    return id < numGraphVars
               ? data.variables[id].name
               : temporaryNames[temporaries[id - numGraphVars].name];
  }
  std::size_t numVars() const { return numGraphVars + temporaries.size(); }
  std::vector<Draft> drafts;
  std::vector<LoopRange> loops;
  std::vector<ComputeSetPlan> csPlans;
  /// Per graph variable, 1 + the last compute set planned that writes it
  /// (planOperandExchanges), or 0.
  std::vector<std::uint32_t> writtenBy;
  /// Substitutions, kept only for the vertices and fields that have them
  /// (most vertices read every operand in place): per vertex, the index of
  /// its first field's FieldSlot, or -1; per field of such a vertex, its
  /// temporary and its first element's ElementSlot, or kNoSlot; per element
  /// of such a field, where it lies in the temporary (count 0: nowhere).
  struct FieldSlot {
    std::uint32_t var = kNoSlot, first = kNoSlot;
  };
  struct ElementSlot {
    std::uint32_t offset = 0;
    std::uint32_t count = 0; ///< the top bit: read in place
  };
  static constexpr std::uint32_t kNoSlot = 0xffffffffu;
  static constexpr std::uint32_t kInPlace = 0x80000000u;
  std::vector<std::int64_t> vertexSlots;
  std::vector<FieldSlot> fieldSlots;
  std::vector<ElementSlot> elementSlots;
  Substitution substitutionAt(std::uint32_t element, std::uint32_t var) const {
    const ElementSlot &e = elementSlots[element];
    Substitution sub;
    sub.offset = e.offset;
    sub.count = e.count & ~kInPlace;
    sub.var = var;
    sub.inPlace = (e.count & kInPlace) != 0;
    return sub;
  }
  /// Elements of variable \p var that no step writes (Temporary::gap).
  std::size_t gapElements(std::uint32_t var) const {
    return var < numGraphVars ? 0 : temporaries[var - numGraphVars].gap;
  }
  /// Byte address of each mapping interval of each variable: variable v's
  /// intervals from intervalAddr[firstInterval[v]] on (layoutMemory).
  std::vector<std::uint64_t> intervalAddr;
  std::vector<std::size_t> firstInterval;
  std::uint64_t &addrOf(std::uint32_t v, std::size_t interval) {
    return intervalAddr[firstInterval[v] + interval];
  }
  std::uint64_t addrOf(std::uint32_t v, std::size_t interval) const {
    return intervalAddr[firstInterval[v] + interval];
  }
  Executable exe;

  /// Calls fn(tensor, substitution) for each copy of \p copies in order.
  template <class F>
  void forEachCopy(const std::vector<FieldCopies> &copies, F &&fn) const {
    for (const FieldCopies &c : copies) {
      const FieldSlot &fs =
          fieldSlots[static_cast<std::size_t>(vertexSlots[c.vertex]) + c.field];
      const FieldTensors &ts = data.vertices[c.vertex].fields[c.field].tensors;
      for (std::uint32_t i = 0; i < ts.size(); ++i) {
        const ElementSlot &e = elementSlots[fs.first + i];
        if (e.count != 0 && ((e.count & kInPlace) != 0) == c.inPlace)
          fn(ts[i], substitutionAt(fs.first + i, fs.var));
      }
    }
  }

  /// The substitution of field element (vertex, field, index), if any.
  std::optional<Substitution> substitution(unsigned vertex, unsigned field,
                                           unsigned index) const {
    const std::int64_t block = vertexSlots[vertex];
    if (block < 0)
      return std::nullopt;
    const FieldSlot &fs = fieldSlots[static_cast<std::size_t>(block) + field];
    if (fs.first == kNoSlot || elementSlots[fs.first + index].count == 0)
      return std::nullopt;
    return substitutionAt(fs.first + index, fs.var);
  }
  /// Replaces field element (vertex, field, index) by \p sub (every element
  /// of a field by the same temporary) and returns its ElementSlot.
  std::uint32_t substitute(unsigned vertex, unsigned field, unsigned index,
                           const Substitution &sub);
  std::uint32_t intern(const std::string &s);
};

/// Flattens programs and functions into drafts (Flatten.cpp).
void flattenPrograms(State &s, const std::vector<program::Program> &programs);
/// Plans compute set \p computeSet's operands: temporaries on the vertices'
/// tiles and the gathers and scatters that fill and drain them, into
/// State::csPlans (PlanExchanges.cpp). Throws GraphError for a vertex that
/// is unmapped or has a field not set.
void planOperandExchanges(State &s, unsigned computeSet);
/// Lays out every tile's memory and checks it fits (Layout.cpp).
void layoutMemory(State &s);
/// Resolves drafts into steps with addresses and copy ops (ResolveSteps.cpp).
void resolveSteps(State &s);
/// Fills the estimates of every step (CostModel.cpp).
void estimateSteps(State &s);

/// The elements of \p t, from its runs: the shape (which numElements()
/// multiplies) is another allocation, a cache miss per field element.
inline std::size_t elementsOf(const Tensor &t) {
  std::size_t n = 0;
  for (const Run &r : t.runs())
    n += static_cast<std::size_t>(r.count);
  return n;
}

/// The tile of element \p e of a variable mapped as \p m, and the
/// interval index.
std::pair<unsigned, std::size_t> locate(std::span<const TileInterval> m,
                                        std::size_t e);

/// locate() that searches outwards from the interval it found last in the
/// same variable (it remembers a few variables: a vertex's fields
/// alternate between theirs): operands visit a variable's elements mostly
/// in order, or in strides of a few intervals (a transposed read), and a
/// binary search over a variable spread on every tile misses the cache.
class Locator {
public:
  std::pair<unsigned, std::size_t>
  operator()(std::uint32_t id, std::span<const TileInterval> m, std::size_t e) {
    Recent *r = recent_;
    while (r != recent_ + kRecent && r->var != id)
      ++r;
    if (r == recent_ + kRecent) {
      const auto found = locate(m, e);
      r = &recent_[next_];
      next_ = (next_ + 1) % kRecent;
      *r = {id, found.second};
      return found;
    }
    std::size_t &idx = r->idx;
    if (m[idx].begin <= e && e < m[idx].end)
      return {m[idx].tile, idx};
    idx = search(m, idx, e);
    return {m[idx].tile, idx};
  }

private:
  // The interval holding e, bracketed from `from` with steps that double,
  // then searched: the intervals are sorted and contiguous.
  static std::size_t search(std::span<const TileInterval> m, std::size_t from,
                            std::size_t e) {
    std::size_t lo = 0, hi = m.size();
    if (e >= m[from].end) {
      lo = from + 1;
      for (std::size_t step = 1; lo + step <= m.size(); step *= 2) {
        if (e < m[lo + step - 1].end) {
          hi = lo + step;
          break;
        }
        lo += step;
      }
    } else {
      hi = from;
      for (std::size_t step = 1; step <= hi; step *= 2) {
        if (m[hi - step].begin <= e) {
          lo = hi - step;
          break;
        }
        hi -= step;
      }
    }
    const auto it = std::upper_bound(
        m.begin() + static_cast<std::ptrdiff_t>(lo),
        m.begin() + static_cast<std::ptrdiff_t>(hi), e,
        [](std::size_t x, const TileInterval &iv) { return x < iv.end; });
    TESSERA_INTERNAL_ASSERT(it != m.end() && it->begin <= e,
                            "element of an unmapped variable");
    return static_cast<std::size_t>(it - m.begin());
  }

  static constexpr std::size_t kRecent = 4;
  struct Recent {
    std::uint32_t var = 0xffffffffu;
    std::size_t idx = 0;
  };
  Recent recent_[kRecent];
  std::size_t next_ = 0;
};

} // namespace tessera::compiler
