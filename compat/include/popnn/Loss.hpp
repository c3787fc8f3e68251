/// \file
/// popnn losses and accuracy.
#pragma once

#include <poplar/Graph.hpp>
#include <tessera/ops/Loss.hpp>

namespace popnn {
using tessera::ops::calcAccuracy;
using tessera::ops::calcLoss;
using tessera::ops::LossType;
TESSERA_INLINE_VAR constexpr LossType SUM_SQUARED_LOSS =
    LossType::SUM_SQUARED_LOSS;
TESSERA_INLINE_VAR constexpr LossType CROSS_ENTROPY_LOSS =
    LossType::CROSS_ENTROPY_LOSS;
} // namespace popnn
