/// \file
/// popops::scaledAddTo and scaledSubtractFrom.
#pragma once

#include <poplar/Graph.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Elementwise.hpp>

namespace popops {
using tessera::ops::scaledAddTo;
using tessera::ops::scaledSubtractFrom;
} // namespace popops
