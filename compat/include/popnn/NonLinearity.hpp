/// \file
/// popnn non-linearities and their gradients.
#pragma once

#include <poplar/Graph.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/NonLinearity.hpp>

namespace popnn {
using tessera::ops::nonLinearity;
using tessera::ops::nonLinearityInPlace;
using tessera::ops::nonLinearityInputGradient;
using tessera::ops::NonLinearityType;
} // namespace popnn
