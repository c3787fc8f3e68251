/// \file
/// Poplar's OptionFlags (string options for engines and compilers) and
/// readJSON.
#pragma once

#include <poplar/exceptions.hpp>
#include <tessera/support/OptionFlags.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::OptionFlags;
using tessera::readJSON;

} // namespace poplar
