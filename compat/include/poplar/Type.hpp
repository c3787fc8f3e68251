/// \file
/// Poplar's element types: poplar::Type and its values FLOAT, HALF, INT,
/// UNSIGNED_INT, SHORT, UNSIGNED_SHORT, CHAR, SIGNED_CHAR, UNSIGNED_CHAR and
/// BOOL, aliasing Tessera's.
#pragma once

#include <tessera/support/Type.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::Type;

using tessera::BOOL;
using tessera::CHAR;
using tessera::FLOAT;
using tessera::HALF;
using tessera::INT;
using tessera::SHORT;
using tessera::SIGNED_CHAR;
using tessera::UNSIGNED_CHAR;
using tessera::UNSIGNED_INT;
using tessera::UNSIGNED_SHORT;

} // namespace poplar
