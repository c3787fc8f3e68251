/// \file
/// popops::reduce, ReduceParams and Operation.
#pragma once

#include <poplar/Graph.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Reduce.hpp>

namespace popops {
using tessera::ops::Operation;
using tessera::ops::reduce;
using tessera::ops::ReduceParams;
using tessera::ops::reduceWithOutput;
} // namespace popops
