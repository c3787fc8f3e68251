/// \file
/// Poplar's SyncType: the scope of a program::Sync (INTERNAL: the tiles of
/// one IPU; EXTERNAL and GLOBAL: every IPU).
#pragma once

#include <tessera/graph/Program.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::program::SyncType;

} // namespace poplar
