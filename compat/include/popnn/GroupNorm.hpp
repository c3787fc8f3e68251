/// \file
/// popnn group normalisation (popnn::gn), as Tessera's.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Norms.hpp>

namespace popnn {
namespace gn {
using tessera::ops::groupNormalise;
using tessera::ops::groupNormGradients;
using tessera::ops::groupNormStatistics;
} // namespace gn
} // namespace popnn
