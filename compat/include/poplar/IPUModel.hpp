/// \file
/// Poplar's IPUModel: set its public fields (numIPUs, tilesPerIPU, ...) and
/// call createDevice() for a simulated device.
#pragma once

#include <poplar/Device.hpp>
#include <poplar/OptionFlags.hpp>
#include <poplar/Target.hpp>

#include <tessera/device/IPUModel.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::IPUModel;

} // namespace poplar
