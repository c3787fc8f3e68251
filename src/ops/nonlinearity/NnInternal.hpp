// Private to ops/: what the nn ops (NonLinearity.cpp, Loss.cpp, Norms.cpp)
// share with their vertices (NnVertices.cpp): the codes stored in the
// vertices' state, and the plan that gives whole rows to tiles.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <cstddef>
#include <vector>

namespace tessera::ops::nn {

/// What a softmax-rows vertex computes (its `mode` field).
enum SoftmaxMode : unsigned {
  kSoftmax = 0,
  kSoftmaxStable = 1,
  kLogSoftmax = 2
};

/// What a loss vertex computes (its `lossType` field): LossType's values.
enum LossCode : unsigned { kSumSquared = 0, kCrossEntropy = 1 };

/// Cross-entropy takes log(max(p, kLogFloor)), so a zero probability gives a
/// large finite loss rather than infinity.
inline constexpr float kLogFloor = 1e-7f;

/// Rows [begin, end) of a 2-D tensor, run by one vertex on \p tile.
struct RowPiece {
  unsigned tile = 0;
  std::size_t begin = 0, end = 0;
};

/// Splits the rows of the 2-D \p rows by where they live: a row belongs to
/// the tile holding its first element (rows with an unmapped first element
/// are dealt round the tiles), and each tile's rows are cut into at most
/// \p maxPerTile runs of consecutive rows of about equal size, one per
/// worker.
std::vector<RowPiece> splitRowsByTile(const Graph &graph, const Tensor &rows,
                                      unsigned maxPerTile = 6);

/// Whether \p buffers rows of \p rowSize elements of \p type fit in an
/// eighth of a tile: the rows then run as fused vertices on one tile each,
/// leaving the tile room for everything else it holds.
bool rowsFitOnTile(const Graph &graph, std::size_t rowSize, Type type,
                   unsigned buffers);

/// How a row-wise op runs: whole rows on one tile, spread over tiles with
/// reductions, or chosen by rowsFitOnTile.
enum class Plan { Auto, Rows, Reduce };

/// The op's options: "plan" is "auto" (the default), "rows" or "reduce".
/// Throws OptionError, naming \p component, for anything else.
Plan parsePlan(const char *component, const OptionFlags &options);

/// Whether to run the rows of the 2-D \p rows (the output whose mapping
/// places them) on one tile each under \p plan: for Auto, when \p buffers
/// rows fit on a tile and the cost model estimates whole rows on their
/// tiles (each worker a row at a time) at most as many cycles as spreading
/// every row over tiles with reductions and maps.
bool useRows(Plan plan, const Graph &graph, const Tensor &rows,
             unsigned buffers);
/// The rows [begin, end) of the 2-D \p t, one tensor each (a vertex's list
/// field).
std::vector<Tensor> rowList(const Tensor &t, std::size_t begin,
                            std::size_t end);

} // namespace tessera::ops::nn
