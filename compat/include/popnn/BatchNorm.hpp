/// \file
/// popnn batch normalisation (popnn::bn), as Tessera's.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Norms.hpp>

namespace popnn {
namespace bn {
using tessera::ops::batchNormalise;
using tessera::ops::batchNormGradients;
using tessera::ops::batchNormStatistics;
} // namespace bn
} // namespace popnn
