/// \file
/// Poplar's Device: a set of IPUs to load an engine onto, attached and
/// detached.
#pragma once

#include <poplar/exceptions.hpp>
#include <poplar/Target.hpp>
#include <poplar/TargetType.hpp>

#include <tessera/device/Device.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::Device;

} // namespace poplar
