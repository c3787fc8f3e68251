/// \file
/// PopLibs' poputil tile mapping helpers: mapTensorLinearly spreads a
/// tensor over all tiles in grains (one vector by default, at least 128
/// bytes a tile).
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Tensor.hpp>
#include <poputil/exceptions.hpp>

#include <tessera/graph/Graph.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poputil {

using tessera::mapTensorLinearly;

} // namespace poputil
