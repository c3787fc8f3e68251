/// \file
/// poprand random generators and dropout.
#pragma once

#include <poplar/Graph.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Random.hpp>

namespace poprand {
using tessera::ops::bernoulli;
using tessera::ops::dropout;
using tessera::ops::normal;
using tessera::ops::truncatedNormal;
using tessera::ops::uniform;
} // namespace poprand
