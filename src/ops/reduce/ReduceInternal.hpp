// Private to ops/: the tile plan shared by reduce() and the top-k family.
//
// A reduction is planned on a canonical view of its input, [G, S, W, P]:
// the input's dimensions with size-1 dimensions dropped and neighbours of
// the same kind (kept or reduced) merged, the innermost reduced block as P,
// the innermost kept block as W, and the other blocks moved outwards (kept
// ones to G, reduced ones to S). Output g * W + w is then the reduction of
// view[g, :, w, :], and each row view[g, s] is contiguous in the view's
// order, so the elements a tile holds fall into few pieces of the form the
// reduction vertex reads (see ReduceKernels.hpp).
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/ops/Reduce.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::ops {

/// "tessera::ops::ReduceSquareAddUpdate<half,float>".
std::string reduceVertexName(Operation op, bool update, Type in, Type out);

/// What a reduction vertex's cost depends on besides its sizes.
struct ReduceCostShape {
  Operation op;
  Type in, out;
  bool update;
};

/// Worker cycles of a reduction vertex reading partials of the given sizes
/// into \p outputs outputs (the registered estimator of the Reduce classes).
std::uint64_t reduceWorkerCycles(const Target &t, const ReduceCostShape &v,
                                 const std::vector<std::uint32_t> &partials,
                                 std::uint32_t outputs);

namespace reduceplan {

/// The input seen as [G, S, W, P], flattened.
struct CanonicalView {
  Tensor flat;
  std::size_t G = 1, S = 1, W = 1, P = 1;
};

/// The canonical view of \p in reducing the dimensions marked in
/// \p reduced.
CanonicalView canonicalView(const Tensor &in, const std::vector<bool> &reduced);

/// Elements [begin, begin + rows * cover * q) of the canonical view reducing
/// into outputs [out, out + cover): element i*cover*q + j*q + r goes to
/// output out + j.
struct Piece {
  std::size_t begin = 0, out = 0, cover = 1, q = 1, rows = 1;
  std::size_t size() const { return rows * cover * q; }
  std::size_t outEnd() const { return out + cover; }
};

/// One vertex's work: pieces on one tile reducing into outputs
/// [outBegin, outEnd).
struct VertexWork {
  unsigned tile = 0;
  std::size_t outBegin = 0, outEnd = 0;
  std::vector<Piece> pieces;
};

/// Stage 1: on each tile, the pieces of the view the tile holds, grouped
/// into connected output ranges and split into at most \p workers vertices
/// a tile of roughly equal work (ranges of outputs where that keeps the
/// pieces long, else rows or element ranges, which gives an output several
/// partials on one tile). Deterministic: tiles in order, pieces in view
/// order.
std::vector<VertexWork> planStage1(const Graph &graph, const CanonicalView &cv,
                                   unsigned workers);

/// \p pieces restricted to outputs [begin, end).
std::vector<Piece> restrictPieces(const std::vector<Piece> &pieces,
                                  std::size_t begin, std::size_t end);

/// A run of outputs [begin, end) with the number of stage-1 vertices that
/// cover each of them; \p tile is their tile when all those vertices are on
/// one tile (else -1), \p vertex the covering vertex when count == 1.
struct Coverage {
  std::size_t begin = 0, end = 0;
  unsigned count = 0;
  long tile = -1;
  std::size_t vertex = 0;
};

/// The coverage of outputs [0, numOutputs) by \p work, in output order,
/// every output in exactly one run.
std::vector<Coverage> coverage(const std::vector<VertexWork> &work,
                               std::size_t numOutputs);

/// Where an output should live when the op creates it: with its only
/// contributing tile when there is one; otherwise the outputs are spread
/// evenly over all \p numTiles tiles in output order.
TileMapping ownerMapping(const std::vector<Coverage> &cov,
                         std::size_t numOutputs, unsigned numTiles);

/// A mapping as runs [begin, end) on a tile, sorted by begin.
struct OwnedRange {
  std::size_t begin = 0, end = 0;
  unsigned tile = 0;
};
std::vector<OwnedRange> ownedRanges(const TileMapping &mapping);

/// Stage 1 split by whether each vertex finishes its outputs: a finishing
/// vertex is the only contributor to its outputs and runs on their owner
/// tile; the others write partials that stage 2 reduces on the owners.
struct SplitWork {
  std::vector<VertexWork> finishing, partial;
};
SplitWork splitFinishing(const std::vector<VertexWork> &work,
                         const std::vector<Coverage> &cov,
                         const std::vector<OwnedRange> &owners);

/// A stage-2 vertex: outputs [begin, end) on \p tile, reading the partial
/// vertices \p sources (indices into SplitWork::partial), each over its
/// overlap with [begin, end).
struct Stage2Vertex {
  unsigned tile = 0;
  std::size_t begin = 0, end = 0;
  std::vector<std::size_t> sources;
};

/// Stage 2: the outputs no finishing vertex of \p split writes, on their
/// owner tiles, split into at most \p workers vertices a tile, each listing
/// the partials of \p sources (their outputs and tiles) that overlap it, in
/// source order so that results are deterministic.
std::vector<Stage2Vertex> planStage2(const std::vector<OwnedRange> &sources,
                                     const SplitWork &split,
                                     const std::vector<OwnedRange> &owners,
                                     unsigned workers);

/// The outputs and tiles of partial vertices, as stage-2 sources.
std::vector<OwnedRange> sourcesOf(const std::vector<VertexWork> &partial);

/// An intermediate level for partials (\p sources: their outputs and
/// tiles) of which some output has more than \p maxFanIn: groups of about
/// sqrt(fan-in) consecutive tiles each reduce their own partials, spreading
/// the group's outputs evenly over the group's tiles. The vertices' sources
/// index \p sources; the result is empty when no output needs the level.
/// This bounds what one tile receives and the number of exchanged pieces
/// (a tree, as PopLibs' intermediate reduction stages).
std::vector<Stage2Vertex>
planIntermediate(const std::vector<OwnedRange> &sources, unsigned workers,
                 std::size_t maxFanIn);

} // namespace reduceplan
} // namespace tessera::ops
