/// \file
/// popops::selectScalarFromRows, made of Tessera's elementwise maps and
/// reduce (tessera/ops/Elementwise.hpp, tessera/ops/Reduce.hpp).
///
/// selectScalarFromRows(graph, params, indices, prog) gives the [N] tensor
/// whose element i is params[i][indices[i]], for \p params a FLOAT or HALF
/// [N, W] tensor and \p indices N UNSIGNED_INT (or INT, read as
/// UNSIGNED_INT) values. As PopLibs documents: an index equal to
/// MASKED_LABEL_CODE (~0u) gives 0, and any other index not below W gives
/// NaN.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <popops/EncodingConstants.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Elementwise.hpp>
#include <tessera/ops/Reduce.hpp>

#include <limits>
#include <string>

namespace popops {

/// params[i][indices[i]] for each row i (see the file comment).
inline poplar::Tensor
selectScalarFromRows(poplar::Graph &graph, const poplar::Tensor &params,
                     const poplar::Tensor &indices,
                     poplar::program::Sequence &prog,
                     const poplar::DebugContext &debugContext = {}) {
  namespace expr = tessera::ops::expr;
  const poplar::Type type = params.elementType();
  if (params.rank() != 2 || (type != poplar::FLOAT && type != poplar::HALF))
    throw tessera::TypeError(
        "selectScalarFromRows: params must be a FLOAT or HALF [N, W] tensor, "
        "not " +
        std::string(tessera::typeNameC(type)) + " " + params.shapeToString());
  if (indices.numElements() != params.dim(0) ||
      (indices.elementType() != poplar::UNSIGNED_INT &&
       indices.elementType() != poplar::INT))
    throw tessera::ShapeError(
        "selectScalarFromRows: indices must be " +
        std::to_string(params.dim(0)) +
        " UNSIGNED_INT values (one per row of params " +
        params.shapeToString() + "), not " +
        std::string(tessera::typeNameC(indices.elementType())) + " " +
        indices.shapeToString());
  const poplar::DebugContext dc(debugContext, "selectScalarFromRows");
  const poplar::Tensor rows =
      indices.flatten().reinterpret(poplar::UNSIGNED_INT);
  const unsigned width = static_cast<unsigned>(params.dim(1));
  // Every element but the picked one is replaced by zero, so the row's sum
  // is the picked value exactly (0 for a row whose index picks nothing).
  const expr::Expr picked =
      expr::Select(expr::_1, expr::Const(0.0f),
                   expr::Equal(expr::_2, expr::Index() % expr::Const(width)));
  const poplar::Tensor only = tessera::ops::map(
      graph, picked, {params, rows.reshape({params.dim(0), 1})}, prog, dc);
  const poplar::Tensor sums = tessera::ops::reduce(
      graph, only, {1}, tessera::ops::Operation::ADD, prog, dc);
  const expr::Expr outOfRange =
      expr::NotEqual(expr::_2, expr::Const(MASKED_LABEL_CODE)) &&
      expr::Gte(expr::_2, expr::Const(width));
  return tessera::ops::map(
      graph,
      expr::Select(expr::Const(std::numeric_limits<float>::quiet_NaN()),
                   expr::_1, outOfRange),
      {sums, rows}, prog, dc);
}

} // namespace popops
