/// \file
/// popnn layer normalisation (popnn::ln), as Tessera's.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Norms.hpp>

namespace popnn {
namespace ln {
using tessera::ops::layerNormalise;
using tessera::ops::layerNormGradients;
using tessera::ops::layerNormStatistics;
} // namespace ln
} // namespace popnn
