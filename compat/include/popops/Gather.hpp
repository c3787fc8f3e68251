/// \file
/// popops gather along one axis and the tensor laid out for it, made of
/// Tessera's multiSlice (tessera/ops/DynamicSlice.hpp).
///
/// gather(graph, input, indices, axis, prog, params) picks, for every
/// element of \p indices, the slice of \p input of depth 1 at that offset
/// along \p axis: the result has shape input.shape[:axis] + indices.shape +
/// input.shape[axis + 1:] (rank indices.rank() + input.rank() - 1).
/// \p indices are UNSIGNED_INT (INT is read as UNSIGNED_INT, so a negative
/// index is out of range). PopLibs leaves out-of-range indices undefined;
/// here, as multiSlice, their slices are zeros.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/DynamicSlice.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace popops {

/// How to lay out a gather. maxElementsPerTile is accepted for PopLibs'
/// programs; Tessera's plan (one tile per column of the input, see
/// tessera/ops/DynamicSlice.hpp) does not use it.
struct GatherParams {
  std::size_t maxElementsPerTile = 65535;

  GatherParams() = default;
  GatherParams(std::size_t maxElementsPerTile_) // NOLINT: implicit, as PopLibs
      : maxElementsPerTile(maxElementsPerTile_) {}
};

namespace detail {
inline void checkGatherAxis(const char *what, std::size_t rank, unsigned axis) {
  if (axis >= rank)
    throw tessera::ShapeError(
        std::string(what) + ": axis " + std::to_string(axis) +
        " is not a dimension of a rank-" + std::to_string(rank) +
        " input; pass an axis below " + std::to_string(rank));
}
} // namespace detail

/// A new tensor of \p operandShape laid out for gathering along \p axis:
/// createSliceableTensor's layout for slices of size 1 along \p axis.
inline poplar::Tensor
createGatherInput(poplar::Graph &graph, const poplar::Type &type,
                  const std::vector<std::size_t> &operandShape, unsigned axis,
                  GatherParams params = {},
                  const poplar::DebugContext &debugContext = {}) {
  (void)params;
  detail::checkGatherAxis("createGatherInput", operandShape.size(), axis);
  return tessera::ops::createSliceableTensor(graph, type, operandShape, {axis},
                                             {1}, 1, debugContext);
}

/// The slices of \p input at \p indices along \p axis (see the file
/// comment for the shape and out-of-range indices).
inline poplar::Tensor gather(poplar::Graph &graph, const poplar::Tensor &input,
                             const poplar::Tensor &indices, unsigned axis,
                             poplar::program::Sequence &prog,
                             const GatherParams &params,
                             const poplar::DebugContext &debugContext = {}) {
  (void)params;
  detail::checkGatherAxis("gather", input.rank(), axis);
  if (indices.elementType() != poplar::UNSIGNED_INT &&
      indices.elementType() != poplar::INT)
    throw tessera::TypeError(
        "gather: indices must be UNSIGNED_INT or INT, not " +
        std::string(tessera::typeNameC(indices.elementType())) +
        "; cast them first");
  const std::vector<std::size_t> inShape = input.shape();
  std::vector<std::size_t> outShape(inShape.begin(), inShape.begin() + axis);
  const std::vector<std::size_t> indexShape = indices.shape();
  outShape.insert(outShape.end(), indexShape.begin(), indexShape.end());
  outShape.insert(outShape.end(), inShape.begin() + axis + 1, inShape.end());
  if (indices.numElements() == 0)
    return graph.addVariable(input.elementType(), outShape, debugContext);
  const poplar::Tensor flat =
      indices.flatten().reinterpret(poplar::UNSIGNED_INT);
  // [M, ..., 1 (axis), ...] -> [M, ... (axis gone) ...] -> the indices'
  // dimension where the axis was, then the indices' own shape.
  poplar::Tensor slices =
      tessera::ops::multiSlice(graph, input, flat, axis, 1, prog, debugContext);
  slices = slices.squeeze({axis + 1}).dimRoll(0, axis);
  return slices.reshape(outShape);
}

} // namespace popops
