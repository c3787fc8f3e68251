// Private to ops/: the pieces of the slicing ops shared between their plan
// (SlicePlan.cpp), their ops (Slice.cpp) and their vertices
// (SliceVertices.cpp).
#pragma once

#include "tessera/graph/Graph.hpp"

#include <cstddef>
#include <vector>

namespace tessera::ops {

/// The most dimensions one slicing vertex slices at once.
unsigned maxSlicedDims();

/// Throws ShapeError unless \p dims are distinct dimensions of \p shape (at
/// least one, at most maxSlicedDims()) and each size is in [1, dimension].
void checkSliceDims(const char *op, const std::vector<std::size_t> &shape,
                    const std::vector<std::size_t> &dims,
                    const std::vector<std::size_t> &sizes);

/// \p dims followed by the other dimensions of a rank-\p rank tensor in
/// increasing order: the permutation that makes the sliced dimensions the
/// rows.
std::vector<unsigned> slicedFirst(unsigned rank,
                                  const std::vector<std::size_t> &dims);

/// Columns [begin, end) of a [rows, columns] view, handled on one tile.
struct ColumnRun {
  unsigned tile = 0;
  std::size_t begin = 0, end = 0;
};

/// Which tile handles each column of \p t2 ([rows, columns]): the tile
/// holding all of a column's elements, or, for a column spread over
/// several tiles, a share of the tiles holding \p t2 (mixed columns are
/// dealt out evenly over them, in order). Runs are in column order.
std::vector<ColumnRun> planColumns(const Graph &graph, const Tensor &t2);

} // namespace tessera::ops
