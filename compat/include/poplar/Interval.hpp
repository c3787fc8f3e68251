/// \file
/// Poplar's Interval: a half-open range [begin, end) of element indices.
#pragma once

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

using tessera::Interval;

} // namespace poplar
