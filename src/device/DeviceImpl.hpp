/// \file
/// Device's private state, shared by the files that create devices.
#pragma once

#include "tessera/device/Device.hpp"

#include <string>
#include <vector>

namespace tessera {

struct Device::Impl {
  explicit Impl(Target t) : target(std::move(t)) {}

  Target target;
  TargetType type = TargetType::IPU_MODEL;
  unsigned id = 0;
  std::vector<unsigned> ipus;
  /// Where the system's lock files live (system devices only).
  std::string systemDir;
  bool attached = false;
  /// One locked file descriptor per IPU while attached.
  std::vector<int> lockFds;
};

} // namespace tessera
