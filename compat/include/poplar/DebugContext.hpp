/// \file
/// Poplar's DebugContext: the name given to a graph object or program.
#pragma once

#include <tessera/graph/DebugContext.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::DebugContext;

} // namespace poplar
