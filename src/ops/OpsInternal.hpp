// Private to ops/: the registration hook of each op family and the helpers
// every op uses to plan its work over tiles.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera::ops {

// Each family registers its vertices, with their estimators, here.
void registerElementwiseVertices(VertexRegistry &registry);
void registerReduceVertices(VertexRegistry &registry);
void registerMatMulVertices(VertexRegistry &registry);
void registerConvVertices(VertexRegistry &registry);
void registerRandomVertices(VertexRegistry &registry);
void registerNnVertices(VertexRegistry &registry);
void registerSliceVertices(VertexRegistry &registry);

/// The name of a vertex class templated on element types, as Poplar writes
/// them: templateName("tessera::ops::Map", {FLOAT, HALF}) is
/// "tessera::ops::Map<float,half>".
std::string templateName(const std::string &base,
                         std::initializer_list<Type> types);

/// A contiguous piece of a tensor's flattened elements that lives on one
/// tile: [begin, end) of the flattened tensor.
struct TilePiece {
  unsigned tile = 0;
  std::size_t begin = 0, end = 0;
};

/// A worker's share of a tile's elements: runs [begin, end) of the flat
/// tensor, all on \p tile.
struct WorkerPiece {
  unsigned tile = 0;
  std::vector<std::pair<std::size_t, std::size_t>> regions;
};

/// Splits the elements of \p t, tile by tile, into at most \p maxPerTile
/// worker pieces a tile (6: one per worker) of about equal size (multiples
/// of \p grain elements, but for a region's end). A piece may span several
/// of the tile's intervals, so a fragmented mapping still gives few
/// vertices (Poplar's 2-D vertices).
std::vector<WorkerPiece> splitByWorker(const Graph &graph, const Tensor &t,
                                       unsigned maxPerTile, std::size_t grain);

/// Splits the elements of \p t, tile by tile, into pieces for the tile's
/// workers: at most \p maxPerTile pieces a tile (6: one per worker), each a
/// multiple of \p grain elements except the last. Pieces follow the tile
/// mapping, so a vertex writing a piece writes only its own tile's memory.
std::vector<TilePiece> splitByTile(const Graph &graph, const Tensor &t,
                                   unsigned maxPerTile, std::size_t grain);

/// A run of elements of one variable that lies contiguous in one tile
/// interval: what a vertex can read or write where it lies.
struct MemoryPiece {
  Run run;
  unsigned tile = 0;
};

/// The elements of \p t in order, cut into the fewest memory pieces: a new
/// piece starts where the next element does not follow in the same tile
/// interval. (An unmapped element is a piece of its own.)
std::vector<MemoryPiece> memoryPieces(const Graph &graph, const Tensor &t);

/// memoryPieces as tensors, for connecting to a vertex list field.
std::vector<Tensor> memoryPieceTensors(const Graph &graph, const Tensor &t);

/// \p rows (each a row of an operand of a vertex on \p tile, in order) as
/// fewer list entries: consecutive rows merged into one entry where each
/// continues the last in memory within one tile interval, so the entry is
/// still read where it lies, and consecutive rows that lie wholly on other
/// tiles joined into one entry, which the compiler gathers in one exchange.
/// Any other row (partly on the tile, or unmapped) stays an entry of its
/// own. With \p oneTile the caller knows the rows will all live on the
/// vertex's tile (a variable it maps later), and contiguity alone merges
/// them. Vertices that take such entries cut them back into rows of a
/// known length.
std::vector<Tensor> mergeRows(const Graph &graph,
                              const std::vector<Tensor> &rows,
                              std::optional<unsigned> tile, bool oneTile);
/// A piece of a tensor (flatRuns' runs) as planners keep it: its run
/// inline when it is one (no allocation: a ResNet-50 makes millions of
/// pieces, most of them one run), else a 1-D tensor over its runs.
struct RunPiece {
  Run run;       ///< the piece, when it is one run (tensor invalid)
  Tensor tensor; ///< otherwise
  RunPiece() = default;
  RunPiece(Type type, ArrayView<Run> runs) {
    if (runs.size() == 1)
      run = runs[0];
    else
      tensor = Tensor(type, runs);
  }
  ArrayView<Run> runs() const {
    return tensor.valid() ? tensor.runs() : ArrayView<Run>(&run, 1);
  }
  std::size_t size() const {
    return tensor.valid() ? tensor.numElements()
                          : static_cast<std::size_t>(run.count);
  }
  Tensor toTensor(Type type) const {
    return tensor.valid() ? tensor : Tensor(type, ArrayView<Run>(&run, 1));
  }
};
/// mergeRows of rows given by their runs (each row's runs merged, as a
/// tensor's are), without a tensor per row.
std::vector<Tensor> mergeRowRuns(const Graph &graph, Type type,
                                 const std::vector<ArrayView<Run>> &rows,
                                 std::optional<unsigned> tile, bool oneTile);
/// mergeRows of the rows of \p rowLen elements that \p block's elements
/// are, in order, without making a tensor per row.
std::vector<Tensor> rowEntries(const Graph &graph, const Tensor &block,
                               std::size_t rowLen, std::optional<unsigned> tile,
                               bool oneTile);

/// The permutation of \p t's dimensions (for dimShuffle) under which its
/// elements are consecutive elements of one variable, when \p t is such a
/// permuted view but not contiguous as it is (a transpose of a contiguous
/// tensor); nullopt otherwise.
std::optional<std::vector<unsigned>> memoryOrder(const Tensor &t);

/// graph.clone(type, like) (like's tile mapping, and its order in memory
/// where it views one whole variable); a new variable mapped linearly when
/// \p like's mapping is incomplete or it is a broadcast view.
Tensor createLike(Graph &graph, const Tensor &like, Type type,
                  const DebugContext &dc);

/// A shape as text: "[2, 3]".
std::string shapeString(const std::vector<std::size_t> &shape);

/// Throws ShapeError unless a and b have equal shapes.
void checkSameShape(const char *op, const Tensor &a, const Tensor &b);

/// NumPy broadcasting: the shape \p a and \p b broadcast to, or ShapeError
/// naming both shapes.
std::vector<std::size_t> broadcastShape(const char *op,
                                        const std::vector<std::size_t> &a,
                                        const std::vector<std::size_t> &b);

/// A view of \p t broadcast to \p shape (NumPy rules: leading dims added,
/// size-1 dims repeated).
Tensor broadcastTo(const Tensor &t, const std::vector<std::size_t> &shape);

} // namespace tessera::ops
