/// \file
/// Poplar's TargetType: IPU (hardware, here the simulated system's IPUs) or
/// IPU_MODEL.
#pragma once

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

using tessera::TargetType;

} // namespace poplar
