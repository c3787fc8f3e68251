/// \file
/// poplin convolutions: ConvParams, createInput, createWeights, createBiases,
/// convolution and its gradients, addBias, as Tessera's, and the forms
/// taking a PlanningCache.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <poplin/PlanningCache.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Conv.hpp>

namespace poplin {
using tessera::ops::addBias;
using tessera::ops::convolution;
using tessera::ops::convolutionInputGradient;
using tessera::ops::convolutionWeightGradient;
using tessera::ops::convolutionWithOutput;
using tessera::ops::ConvParams;
using tessera::ops::createBiases;
using tessera::ops::createInput;
using tessera::ops::createWeights;

/// The PopLibs forms taking a PlanningCache (which changes nothing here).
inline poplar::Tensor createInput(poplar::Graph &graph,
                                  const ConvParams &params,
                                  const poplar::DebugContext &debugContext,
                                  const poplar::OptionFlags &options,
                                  PlanningCache *cache) {
  (void)cache;
  return tessera::ops::createInput(graph, params, debugContext, options);
}
inline poplar::Tensor createWeights(poplar::Graph &graph,
                                    const ConvParams &params,
                                    const poplar::DebugContext &debugContext,
                                    const poplar::OptionFlags &options,
                                    PlanningCache *cache) {
  (void)cache;
  return tessera::ops::createWeights(graph, params, debugContext, options);
}
inline poplar::Tensor
convolution(poplar::Graph &graph, const poplar::Tensor &in,
            const poplar::Tensor &weights, const ConvParams &params,
            bool transposeAndFlipWeights, poplar::program::Sequence &prog,
            const poplar::DebugContext &debugContext,
            const poplar::OptionFlags &options, PlanningCache *cache) {
  (void)cache;
  return tessera::ops::convolution(graph, in, weights, params,
                                   transposeAndFlipWeights, prog, debugContext,
                                   options);
}
} // namespace poplin
