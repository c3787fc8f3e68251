/// \file
/// popnn pooling (popnn::pooling::pool and its input gradient) and
/// popnn::PoolingType, as Tessera's.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Pooling.hpp>

namespace popnn {
using tessera::ops::PoolingType;
namespace pooling {
using tessera::ops::pool;
using tessera::ops::poolInputGradient;
using tessera::ops::PoolParams;
} // namespace pooling
} // namespace popnn
