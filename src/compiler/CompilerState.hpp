// Private to the compiler: the state shared by its phases (flatten, layout,
// lowering, cost model).
#pragma once

#include "tessera/compiler/Executable.hpp"
#include "tessera/compiler/Options.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/graph/Graph.hpp"

#include <cstdint>
#include <vector>

namespace tessera::compiler {

/// Tile memory blocks start on kAlign-byte boundaries and take whole
/// multiples of it.
constexpr std::uint64_t kAlign = 8;
inline std::uint64_t alignUp(std::uint64_t bytes) {
  return (bytes + kAlign - 1) & ~(kAlign - 1);
}

/// A step before addresses are known: its operands are tensors.
struct Draft {
  Step step;
  /// Exchange: (src, dst) pairs; streams, prints: one tensor; predicated
  /// steps: the predicate last.
  std::vector<Tensor> tensors;
  std::vector<std::pair<Tensor, Tensor>> copies;
  /// Exchange: copies costed as the IPU would move them, whose destination
  /// the simulator never fills because the vertex reads the source in place.
  std::vector<std::pair<Tensor, Tensor>> costOnlyCopies;
  /// A compute set's gathers or scatters: its plan's lists (ComputeSetPlan,
  /// planned before any of its steps is drafted and not changed after),
  /// shared by every Execute of the set rather than copied into each.
  const std::vector<std::pair<Tensor, Tensor>> *planCopies = nullptr;
  const std::vector<std::pair<Tensor, Tensor>> *planCostOnlyCopies = nullptr;
  const std::vector<std::pair<Tensor, Tensor>> &copyList() const {
    return planCopies ? *planCopies : copies;
  }
  const std::vector<std::pair<Tensor, Tensor>> &costOnlyList() const {
    return planCostOnlyCopies ? *planCostOnlyCopies : costOnlyCopies;
  }
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
  std::vector<std::pair<Tensor, Tensor>> gathers; ///< before compute
  /// Gathers the simulator skips: the vertex reads the source in place.
  std::vector<std::pair<Tensor, Tensor>> costOnlyGathers;
  std::vector<std::pair<Tensor, Tensor>> scatters; ///< after compute
  std::uint32_t firstVertex = 0;                   ///< in Executable order
  /// The host kernel run in this compute set's place, or -1.
  int hostKernel = -1;
};

/// Everything the phases share.
struct State {
  State(const Graph &g, const EngineOptions &o);

  const Graph &graph;
  const GraphData &data;
  const Target &target;
  EngineOptions options;
  /// The graph's variables followed by compiler temporaries.
  std::vector<VariableData> vars;
  std::size_t numGraphVars = 0;
  std::vector<Draft> drafts;
  std::vector<LoopRange> loops;
  std::vector<ComputeSetPlan> csPlans;
  /// A vertex field element replaced by a compiler temporary; when the
  /// vertex reads a contiguous source in place instead (DESIGN.md section
  /// 5.4), that source: the temporary still takes its tile memory and its
  /// exchange is still costed.
  struct Substitution {
    Tensor temporary, inPlaceSource;
  };
  std::vector<Substitution> substitutions;
  /// Per field element of every vertex (slot()), the index of its
  /// substitution, or -1.
  std::vector<std::int32_t> substitutionOf;
  /// For slot(): per vertex, the slot of its first field element and the
  /// index of its first field in fieldOffset; per field of each vertex, the
  /// offset of the field's first element from the vertex's.
  std::vector<std::size_t> vertexSlot;
  std::vector<std::uint32_t> vertexFieldStart, fieldOffset;
  /// Elements of each compiler temporary (from numGraphVars on) that no
  /// step writes: the alignment gaps between the field elements it holds.
  std::vector<std::size_t> temporaryGaps;
  std::size_t gapElements(std::uint32_t var) const {
    return var < numGraphVars ? 0 : temporaryGaps[var - numGraphVars];
  }
  /// Byte address of each mapping interval of each variable.
  std::vector<std::vector<std::uint64_t>> intervalAddr;
  Executable exe;

  /// The tensor a vertex field element reads or writes, after temporaries.
  const Tensor &fieldTensor(unsigned vertex, unsigned field,
                            unsigned index) const;
  /// The source a vertex field element reads in place instead of its
  /// temporary, or null.
  const Tensor *inPlaceSource(unsigned vertex, unsigned field,
                              unsigned index) const;
  /// Replaces field element (vertex, field, index) by \p temporary, read
  /// from \p inPlaceSource where that is valid.
  void substitute(unsigned vertex, unsigned field, unsigned index,
                  Tensor temporary, Tensor inPlaceSource);
  /// The index of field element (vertex, field, index) among all vertices'.
  std::size_t slot(unsigned vertex, unsigned field, unsigned index) const {
    return vertexSlot[vertex] + fieldOffset[vertexFieldStart[vertex] + field] +
           index;
  }
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

/// The tile of element \p e of variable \p v, and the interval index.
std::pair<unsigned, std::size_t> locate(const VariableData &v, std::size_t e);

} // namespace tessera::compiler
