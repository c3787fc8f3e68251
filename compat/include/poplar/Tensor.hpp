/// \file
/// Poplar's Tensor: a view of graph variables (slices, transposes, reshapes
/// and the rest never copy), with concat and append.
#pragma once

#include <poplar/exceptions.hpp>
#include <poplar/Interval.hpp>
#include <poplar/Type.hpp>

#include <tessera/graph/Tensor.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::append;
using tessera::concat;
using tessera::Tensor;

} // namespace poplar
