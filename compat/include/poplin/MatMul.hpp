/// \file
/// poplin matrix products, as Tessera's, and the forms taking a
/// PlanningCache (which changes nothing here).
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <poplin/PlanningCache.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/MatMul.hpp>

#include <vector>

namespace poplin {
using tessera::ops::createMatMulInputLHS;
using tessera::ops::createMatMulInputRHS;
using tessera::ops::matMul;
using tessera::ops::matMulAcc;
using tessera::ops::matMulGrouped;

inline poplar::Tensor
matMul(poplar::Graph &graph, const poplar::Tensor &A, const poplar::Tensor &B,
       poplar::program::Sequence &prog, const poplar::Type &outputType,
       const poplar::DebugContext &debugContext,
       const poplar::OptionFlags &options, PlanningCache *cache) {
  (void)cache;
  return tessera::ops::matMul(graph, A, B, prog, outputType, debugContext,
                              options);
}
inline poplar::Tensor matMul(poplar::Graph &graph, const poplar::Tensor &A,
                             const poplar::Tensor &B,
                             poplar::program::Sequence &prog,
                             const poplar::DebugContext &debugContext,
                             const poplar::OptionFlags &options,
                             PlanningCache *cache) {
  (void)cache;
  return tessera::ops::matMul(graph, A, B, prog, debugContext, options);
}
inline poplar::Tensor
createMatMulInputLHS(poplar::Graph &graph, const poplar::Type &type,
                     const poplar::Type &outputType,
                     const std::vector<std::size_t> &aShape,
                     const std::vector<std::size_t> &bShape,
                     const poplar::DebugContext &debugContext,
                     const poplar::OptionFlags &options, PlanningCache *cache) {
  (void)cache;
  return tessera::ops::createMatMulInputLHS(graph, type, outputType, aShape,
                                            bShape, debugContext, options);
}
inline poplar::Tensor
createMatMulInputRHS(poplar::Graph &graph, const poplar::Type &type,
                     const poplar::Type &outputType,
                     const std::vector<std::size_t> &aShape,
                     const std::vector<std::size_t> &bShape,
                     const poplar::DebugContext &debugContext,
                     const poplar::OptionFlags &options, PlanningCache *cache) {
  (void)cache;
  return tessera::ops::createMatMulInputRHS(graph, type, outputType, aShape,
                                            bShape, debugContext, options);
}
} // namespace poplin
