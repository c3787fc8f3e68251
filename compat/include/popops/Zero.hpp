/// \file
/// popops::zero.
#pragma once

#include <poplar/Graph.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Elementwise.hpp>

namespace popops {
using tessera::ops::zero;
} // namespace popops
