/// \file
/// Poplar's DeviceManager: lists the (simulated) system's IPU devices and
/// hands them out (DeviceManager::createDeviceManager().getDevices(...)).
#pragma once

#include <poplar/exceptions.hpp>
#include <poplar/Device.hpp>
#include <poplar/TargetType.hpp>

#include <tessera/device/DeviceManager.hpp>

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
using tessera::DeviceManager;
using tessera::TargetType;

} // namespace poplar
