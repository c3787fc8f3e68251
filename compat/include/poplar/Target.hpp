/// \file
/// Poplar's Target: the machine a graph is built for
/// (Target::createIPUTarget(numIPUs, "ipu2")).
#pragma once

#include <poplar/exceptions.hpp>
#include <poplar/TargetType.hpp>
#include <poplar/Type.hpp>

#include <tessera/device/Target.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::Target;

} // namespace poplar
