/// \file
/// Slicing at offsets known only when the program runs (PopLibs' popops
/// DynamicSlice): dynamicSlice / dynamicUpdate take one offset per sliced
/// dimension; multiSlice / multiUpdate / multiUpdateAdd take many (an
/// embedding's gather and its gradient's scatter-add).
///
/// Offsets are UNSIGNED_INT tensors. Out-of-range offsets, as in PopLibs:
/// - dynamicSlice and dynamicUpdate clamp each offset to [0, N - size] (N
///   the dimension, size the slice's), so the slice is always in range;
/// - multiSlice gives zeros for an index whose slice does not fit (offset >
///   N - size), and multiUpdate / multiUpdateAdd ignore such an index.
///
/// The plan: the sliced tensor is seen as [rows, columns], a row being one
/// combination of the sliced dimensions and a column one of the others.
/// Every column is handled on one tile, by a vertex that reads the offsets
/// (which the compiler brings to the tile) and copies or updates that
/// column's picked rows; each column goes to the tile holding all its
/// elements, so a tensor from createSliceableTensor is sliced and updated
/// with no exchange but the offsets. Columns spread over several tiles are
/// spread evenly over the tensor's tiles and brought there by exchange (the
/// rearrangement PopLibs makes for such layouts), which the estimates
/// charge. A column is never split, so a column larger than a tile's memory
/// does not fit.
///
/// Options of every function here: none of Tessera's own (one plan serves
/// every use). Accepted and ignored (PopLibs' slice-planner hints, logged
/// once per process): "availableMemoryProportion", "planConstraints",
/// "operationForUpdate", "partialType" (any value), "indicesAreSorted",
/// "usedForSlice", "usedForUpdate" ("true" or "false"). Unknown keys are
/// OptionErrors with a did-you-mean hint.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <cstddef>
#include <vector>

namespace tessera {
namespace ops {

using program::Sequence;

/// A new tensor of \p shape laid out for slicing along \p dims: each tile
/// holds whole columns (all elements along the sliced dimensions, stored
/// together), at least \p minGrainSize columns per tile, spread linearly.
/// \p sizes (one per dim, the slice sizes to be used) are checked only.
Tensor createSliceableTensor(Graph &graph, Type type,
                             const std::vector<std::size_t> &shape,
                             const std::vector<std::size_t> &dims,
                             const std::vector<std::size_t> &sizes,
                             std::size_t minGrainSize = 1,
                             const DebugContext &dc = {});

/// An UNSIGNED_INT offsets tensor for multiSlice: [numIndices, dims.size()],
/// mapped linearly.
Tensor createIndicesTensor(Graph &graph, const std::vector<std::size_t> &dims,
                           std::size_t numIndices, const DebugContext &dc = {});

/// The slice of \p t of size sizes[k] along dims[k] starting at offset[k]
/// (clamped): t's shape with each sliced dimension replaced by its size.
/// \p offset is UNSIGNED_INT with one element per dim (shape [dims.size()],
/// or a scalar for one dim).
Tensor dynamicSlice(Graph &graph, const Tensor &t, const Tensor &offset,
                    const std::vector<std::size_t> &dims,
                    const std::vector<std::size_t> &sizes, Sequence &prog,
                    const DebugContext &dc = {},
                    const OptionFlags &options = {});

/// Writes \p s (shaped as dynamicSlice's result) into \p t at \p offset
/// (clamped). \p s must not overlap \p t.
void dynamicUpdate(Graph &graph, const Tensor &t, const Tensor &s,
                   const Tensor &offset, const std::vector<std::size_t> &dims,
                   const std::vector<std::size_t> &sizes, Sequence &prog,
                   const DebugContext &dc = {},
                   const OptionFlags &options = {});

/// One slice per row of \p offsets (UNSIGNED_INT [M, dims.size()], or [M]
/// for one dim): shape [M] followed by t's shape with each sliced dimension
/// replaced by its size (as PopLibs: [M, 1, E] for rows of a [N, E] table).
/// Slices of out-of-range indices are zeros.
Tensor multiSlice(Graph &graph, const Tensor &t, const Tensor &offsets,
                  const std::vector<std::size_t> &dims,
                  const std::vector<std::size_t> &sizes, Sequence &prog,
                  const DebugContext &dc = {}, const OptionFlags &options = {});
/// multiSlice along one dimension \p dim, \p size elements per index.
Tensor multiSlice(Graph &graph, const Tensor &t, const Tensor &offsets,
                  std::size_t dim, std::size_t size, Sequence &prog,
                  const DebugContext &dc = {}, const OptionFlags &options = {});

/// Writes slice m of \p s (shaped as multiSlice's result; sliced
/// dimensions of size 1 may be left out: [M, E] for a [N, E] table) into
/// \p t at row m of \p offsets. Out-of-range indices are ignored; when two
/// indices are equal the later one's slice is the one left.
void multiUpdate(Graph &graph, const Tensor &t, const Tensor &s,
                 const Tensor &offsets, const std::vector<std::size_t> &dims,
                 const std::vector<std::size_t> &sizes, Sequence &prog,
                 const DebugContext &dc = {}, const OptionFlags &options = {});
void multiUpdate(Graph &graph, const Tensor &t, const Tensor &s,
                 const Tensor &offsets, std::size_t dim, std::size_t size,
                 Sequence &prog, const DebugContext &dc = {},
                 const OptionFlags &options = {});

/// t[offsets[m]] += scale * s[m] for every m, FLOAT or HALF (computed in
/// float); equal indices all add, in index order. \p scale is a FLOAT (or
/// HALF) tensor of one element. Out-of-range indices are ignored.
void multiUpdateAdd(Graph &graph, const Tensor &t, const Tensor &s,
                    const Tensor &offsets, const Tensor &scale,
                    const std::vector<std::size_t> &dims,
                    const std::vector<std::size_t> &sizes, Sequence &prog,
                    const DebugContext &dc = {},
                    const OptionFlags &options = {});
void multiUpdateAdd(Graph &graph, const Tensor &t, const Tensor &s,
                    const Tensor &offsets, const Tensor &scale, std::size_t dim,
                    std::size_t size, Sequence &prog,
                    const DebugContext &dc = {},
                    const OptionFlags &options = {});

} // namespace ops
} // namespace tessera
