/// \file
/// popops one-hot encoding and iota, made of Tessera's elementwise maps
/// (tessera/ops/Elementwise.hpp).
///
/// encodeOneHot(graph, indices, encoded, prog) writes row i of the [N, C]
/// tensor \p encoded as 1 at column indices[i] and 0 elsewhere (in
/// encoded's type); the overload with \p on and \p off (tensors of one
/// element, of encoded's type) writes those instead. \p indices are N
/// UNSIGNED_INT or INT values (INT read as UNSIGNED_INT). A row whose index
/// is MASKED_LABEL_CODE (~0u, -1 as INT) or any other value not below C is
/// all off, as PopLibs encodes it.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <popops/EncodingConstants.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Elementwise.hpp>

#include <string>
#include <vector>

namespace popops {

using tessera::ops::iota;

namespace detail {
// The indices as UNSIGNED_INT [N, 1], after checking them against the
// [N, C] output.
inline poplar::Tensor oneHotIndices(const poplar::Tensor &indices,
                                    const poplar::Tensor &encoded) {
  if (encoded.rank() != 2)
    throw tessera::ShapeError(
        "encodeOneHot: the encoded tensor must be [N, C], not " +
        encoded.shapeToString() + "; reshape it to two dimensions");
  if (indices.numElements() != encoded.dim(0))
    throw tessera::ShapeError(
        "encodeOneHot: " + std::to_string(indices.numElements()) +
        " indices for the " + std::to_string(encoded.dim(0)) +
        " rows of the encoded tensor " + encoded.shapeToString() +
        "; give one index per row");
  if (indices.elementType() != poplar::UNSIGNED_INT &&
      indices.elementType() != poplar::INT)
    throw tessera::TypeError(
        std::string("encodeOneHot: indices must be UNSIGNED_INT or INT, not ") +
        tessera::typeNameC(indices.elementType()));
  return indices.flatten()
      .reinterpret(poplar::UNSIGNED_INT)
      .reshape({encoded.dim(0), 1});
}

// True where column (flat index mod C) is the row's index _1.
inline tessera::ops::expr::Expr isHot(std::size_t columns) {
  namespace expr = tessera::ops::expr;
  return expr::Equal(expr::_1, expr::Index() %
                                   expr::Const(static_cast<unsigned>(columns)));
}
} // namespace detail

/// Sets \p encoded [N, C] to the one-hot rows of \p indices [N] (1 on, 0
/// off; see the file comment).
inline void encodeOneHot(poplar::Graph &graph, const poplar::Tensor &indices,
                         const poplar::Tensor &encoded,
                         poplar::program::Sequence &prog,
                         const poplar::DebugContext &debugContext = {}) {
  namespace expr = tessera::ops::expr;
  const poplar::Tensor rows = detail::oneHotIndices(indices, encoded);
  tessera::ops::mapWithOutput(
      graph, expr::Cast(detail::isHot(encoded.dim(1)), encoded.elementType()),
      {rows}, encoded, prog, {debugContext, "encodeOneHot"});
}

/// As encodeOneHot, writing the value of \p on at each row's index and
/// the value of \p off elsewhere (each a tensor of one element).
inline void encodeOneHot(poplar::Graph &graph, const poplar::Tensor &indices,
                         const poplar::Tensor &encoded,
                         poplar::program::Sequence &prog,
                         const poplar::Tensor &on, const poplar::Tensor &off,
                         const poplar::DebugContext &debugContext = {}) {
  namespace expr = tessera::ops::expr;
  const poplar::Tensor rows = detail::oneHotIndices(indices, encoded);
  const poplar::Tensor values[] = {on, off};
  for (const poplar::Tensor &v : values) {
    if (v.numElements() != 1 || v.elementType() != encoded.elementType())
      throw tessera::ShapeError(
          "encodeOneHot: on and off must each be one element of the encoded "
          "tensor's type (" +
          std::string(tessera::typeNameC(encoded.elementType())) + "), not a " +
          std::string(tessera::typeNameC(v.elementType())) +
          " tensor of shape " + v.shapeToString());
  }
  tessera::ops::mapWithOutput(
      graph, expr::Select(expr::_2, expr::_3, detail::isHot(encoded.dim(1))),
      {rows, on.reshape({1, 1}), off.reshape({1, 1})}, encoded, prog,
      {debugContext, "encodeOneHot"});
}

} // namespace popops
