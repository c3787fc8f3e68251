/// \file
/// Poplar's stream callbacks: StreamCallback (prefetch / fetch / complete)
/// and LegacyStreamCallback (invoke).
#pragma once

#include <tessera/engine/StreamCallback.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::LegacyStreamCallback;
using tessera::StreamCallback;

} // namespace poplar
