/// \file
/// PopART's DeviceManager and DeviceInfo: an IPU Model of some IPUs and
/// tiles per IPU (Tessera has no hardware to acquire).
#pragma once

#include <tessera/support/Error.hpp>

#include <map>
#include <memory>
#include <string>

namespace popart {

class DeviceInfo {
public:
  DeviceInfo(unsigned numIpus, unsigned tilesPerIpu)
      : numIpus_(numIpus), tilesPerIpu_(tilesPerIpu) {}
  unsigned getNumIpus() const { return numIpus_; }
  unsigned getTilesPerIPU() const { return tilesPerIpu_; }
  /// Accepted for compatibility: sessions attach when they prepare.
  bool attach() { return true; }
  void detach() {}

private:
  unsigned numIpus_, tilesPerIpu_;
};

class DeviceManager {
public:
  static DeviceManager &createDeviceManager() {
    static DeviceManager manager;
    return manager;
  }
  /// Options "numIPUs" and "tilesPerIPU" (default 1 and 1216, an IPU1).
  std::shared_ptr<DeviceInfo>
  createIpuModelDevice(const std::map<std::string, std::string> &options) {
    unsigned ipus = 1, tiles = 1216;
    for (const auto &[k, v] : options) {
      if (k == "numIPUs")
        ipus = static_cast<unsigned>(std::stoul(v));
      else if (k == "tilesPerIPU")
        tiles = static_cast<unsigned>(std::stoul(v));
      else if (k != "compileIPUCode" && k != "ipuVersion")
        throw tessera::OptionError("createIpuModelDevice: unknown option '" +
                                   k + "' (numIPUs, tilesPerIPU)");
    }
    return std::make_shared<DeviceInfo>(ipus, tiles);
  }
  /// A one-IPU model: Tessera runs everything on its IPU Model.
  std::shared_ptr<DeviceInfo> createCpuDevice() {
    return std::make_shared<DeviceInfo>(1, 1216);
  }
  /// An IPU Model of \p numIpus IPUs of 1472 tiles (an IPU2).
  std::shared_ptr<DeviceInfo> acquireAvailableDevice(int numIpus = 1) {
    return std::make_shared<DeviceInfo>(static_cast<unsigned>(numIpus), 1472);
  }
};

} // namespace popart
