/// \file
/// popnn losses and accuracy: Tessera's (which add to a Sequence), and the
/// PopLibs forms that return the Program computing them.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Loss.hpp>

namespace popnn {
using tessera::ops::calcAccuracy;
using tessera::ops::calcLoss;
using tessera::ops::LossType;
using tessera::ops::MASKED_LABEL_CODE;
TESSERA_INLINE_VAR constexpr LossType SUM_SQUARED_LOSS =
    LossType::SUM_SQUARED_LOSS;
TESSERA_INLINE_VAR constexpr LossType CROSS_ENTROPY_LOSS =
    LossType::CROSS_ENTROPY_LOSS;

/// The program writing each row's loss and deltas and adding the number of
/// correct rows to \p numCorrect (see tessera::ops::calcLoss).
inline poplar::program::Program
calcLoss(poplar::Graph &graph, const poplar::Tensor &modelOutputs,
         const poplar::Tensor &expected, const poplar::Tensor &loss,
         const poplar::Tensor &deltas, const poplar::Tensor &numCorrect,
         LossType lossType, const poplar::DebugContext &debugContext = {}) {
  poplar::program::Sequence prog;
  tessera::ops::calcLoss(graph, modelOutputs, expected, loss, deltas,
                         numCorrect, lossType, prog, debugContext);
  return prog;
}

/// The program writing each row's loss and deltas.
inline poplar::program::Program
calcLoss(poplar::Graph &graph, const poplar::Tensor &modelOutputs,
         const poplar::Tensor &expected, const poplar::Tensor &loss,
         const poplar::Tensor &deltas, LossType lossType,
         const poplar::DebugContext &debugContext = {}) {
  poplar::program::Sequence prog;
  tessera::ops::calcLoss(graph, modelOutputs, expected, loss, deltas, lossType,
                         prog, debugContext);
  return prog;
}

/// The program adding to \p numCorrect the rows whose largest output is at
/// their label.
inline poplar::program::Program
calcAccuracy(poplar::Graph &graph, const poplar::Tensor &modelOutputs,
             const poplar::Tensor &expected, const poplar::Tensor &numCorrect,
             const poplar::DebugContext &debugContext = {}) {
  poplar::program::Sequence prog;
  tessera::ops::calcAccuracy(graph, modelOutputs, expected, numCorrect, prog,
                             debugContext);
  return prog;
}
} // namespace popnn
