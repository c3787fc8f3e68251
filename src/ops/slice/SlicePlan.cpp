// The tile plan of the slicing ops: which tile handles which columns of the
// sliced tensor, and the layout (createSliceableTensor) under which that
// plan needs no exchange.
#include "SliceInternal.hpp"

#include "OpsInternal.hpp"

#include "tessera/ops/DynamicSlice.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>
#include <string>

namespace tessera::ops {
namespace {

std::string str(std::size_t v) { return std::to_string(v); }

constexpr int kUnset = -1, kMixed = -2;

// Marks columns [c0, c1) as touched by `tile`: a column touched by two
// tiles is mixed.
void paint(std::vector<int> &owner, std::size_t c0, std::size_t c1, int tile) {
  for (std::size_t c = c0; c < c1; ++c)
    owner[c] = owner[c] == kUnset || owner[c] == tile ? tile : kMixed;
}

struct Owners {
  std::vector<int> owner;
  std::vector<unsigned> used; // tiles holding elements of t2, in order
};

// owner[c]: the tile holding every element of column c of t2 ([rows, cols]),
// or kMixed. The mapping is read in whichever order has the fewer runs (a
// sliceable tensor's columns are runs of its variable, so in column order it
// has one interval per column, not one per element), and then painted an
// interval at a time.
Owners columnOwners(const Graph &graph, const Tensor &t2) {
  const std::size_t rows = t2.dim(0), cols = t2.dim(1);
  const Tensor byColumn = t2.transpose();
  const bool columnOrder = byColumn.runs().size() <= t2.runs().size();
  const TileMapping mapping = graph.getTileMapping(columnOrder ? byColumn : t2);
  Owners result;
  std::vector<int> &owner = result.owner;
  owner.assign(cols, kUnset);
  for (unsigned tile = 0; tile < mapping.size(); ++tile) {
    const int t = static_cast<int>(tile);
    if (!mapping[tile].empty())
      result.used.push_back(tile);
    for (const Interval &iv : mapping[tile]) {
      if (columnOrder) {
        paint(owner, iv.begin() / rows, (iv.end() - 1) / rows + 1, t);
        continue;
      }
      for (std::size_t i = iv.begin(); i < iv.end();) {
        const std::size_t c0 = i % cols;
        const std::size_t n = std::min(iv.end() - i, cols - c0);
        paint(owner, c0, c0 + n, t);
        i += n;
      }
    }
  }
  return result;
}

} // namespace

void checkSliceDims(const char *op, const std::vector<std::size_t> &shape,
                    const std::vector<std::size_t> &dims,
                    const std::vector<std::size_t> &sizes) {
  const std::string name(op);
  if (dims.empty())
    throw ShapeError(name + ": no dimension to slice; give at least one in "
                            "dims");
  if (dims.size() > maxSlicedDims())
    throw ShapeError(name + ": " + str(dims.size()) +
                     " dimensions are sliced; at most " + str(maxSlicedDims()) +
                     " can be sliced at once");
  if (sizes.size() != dims.size())
    throw ShapeError(name + ": " + str(dims.size()) + " dimensions but " +
                     str(sizes.size()) +
                     " sizes are given; give one size per dimension");
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] >= shape.size())
      throw ShapeError(name + ": dimension " + str(dims[k]) +
                       " is out of range for a tensor of rank " +
                       str(shape.size()) + " (shape " + shapeString(shape) +
                       ")");
    if (std::count(dims.begin(), dims.end(), dims[k]) > 1)
      throw ShapeError(name + ": dimension " + str(dims[k]) +
                       " is given twice in dims; each may be sliced once");
    if (sizes[k] == 0)
      throw ShapeError(name + ": the size for dimension " + str(dims[k]) +
                       " is 0; a slice has at least one element per "
                       "dimension");
    if (sizes[k] > shape[dims[k]])
      throw ShapeError(name + ": the size " + str(sizes[k]) +
                       " for dimension " + str(dims[k]) +
                       " is larger than the dimension (" + str(shape[dims[k]]) +
                       ") of the tensor of shape " + shapeString(shape) +
                       "; a slice cannot be larger than the tensor");
  }
}

std::vector<unsigned> slicedFirst(unsigned rank,
                                  const std::vector<std::size_t> &dims) {
  std::vector<unsigned> perm(dims.begin(), dims.end());
  for (unsigned d = 0; d < rank; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end())
      perm.push_back(d);
  return perm;
}

std::vector<ColumnRun> planColumns(const Graph &graph, const Tensor &t2) {
  const std::size_t cols = t2.dim(1);
  const auto [owner, used] = columnOwners(graph, t2);
  const auto mixed =
      static_cast<std::size_t>(std::count(owner.begin(), owner.end(), kMixed));
  const std::size_t perTile =
      used.empty() ? 1 : (mixed + used.size() - 1) / used.size();
  std::vector<ColumnRun> runs;
  std::size_t k = 0; // mixed columns dealt so far
  for (std::size_t c = 0; c < cols; ++c) {
    unsigned tile;
    if (owner[c] >= 0) {
      tile = static_cast<unsigned>(owner[c]);
    } else {
      TESSERA_INTERNAL_ASSERT(owner[c] == kMixed && !used.empty(),
                              "a column of a mapped tensor has no tile");
      tile = used[k++ / perTile];
    }
    if (!runs.empty() && runs.back().tile == tile && runs.back().end == c)
      ++runs.back().end;
    else
      runs.push_back({tile, c, c + 1});
  }
  return runs;
}

Tensor createSliceableTensor(Graph &graph, Type type,
                             const std::vector<std::size_t> &shape,
                             const std::vector<std::size_t> &dims,
                             const std::vector<std::size_t> &sizes,
                             std::size_t minGrainSize, const DebugContext &dc) {
  checkSliceDims("createSliceableTensor", shape, dims, sizes);
  // Stored as [other dims..., sliced dims...]: a column's elements are
  // consecutive, and tiles get whole columns.
  const auto rank = static_cast<unsigned>(shape.size());
  const std::vector<unsigned> perm = slicedFirst(rank, dims);
  const std::size_t numSliced = dims.size();
  std::vector<std::size_t> stored;
  std::size_t rows = 1;
  for (std::size_t k = numSliced; k < rank; ++k)
    stored.push_back(shape[perm[k]]);
  for (std::size_t k = 0; k < numSliced; ++k) {
    stored.push_back(shape[perm[k]]);
    rows *= shape[perm[k]];
  }
  Tensor var = graph.addVariable(
      type, stored, dc.name.empty() ? DebugContext("sliceable") : dc);
  mapTensorLinearly(graph, var, 0,
                    rows * std::max<std::size_t>(minGrainSize, 1));
  // Result dimension perm[k] is stored dimension (k + rank - numSliced) %
  // rank.
  std::vector<unsigned> back(rank);
  for (unsigned k = 0; k < rank; ++k)
    back[perm[k]] = static_cast<unsigned>((k + rank - numSliced) % rank);
  return var.dimShuffle(back);
}

Tensor createIndicesTensor(Graph &graph, const std::vector<std::size_t> &dims,
                           std::size_t numIndices, const DebugContext &dc) {
  if (dims.empty() || numIndices == 0)
    throw ShapeError("createIndicesTensor: " + str(numIndices) +
                     " indices over " + str(dims.size()) +
                     " dimensions; give at least one of each");
  Tensor t = graph.addVariable(UNSIGNED_INT, {numIndices, dims.size()},
                               dc.name.empty() ? DebugContext("indices") : dc);
  mapTensorLinearly(graph, t);
  return t;
}

} // namespace tessera::ops
