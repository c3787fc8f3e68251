#include "tessera/device/IPUModel.hpp"

#include "DeviceImpl.hpp"

#include <fmt/format.h>

namespace tessera {

IPUModel::IPUModel(const char *version_) : version(version_) {
  const Target preset = Target::createIPUTarget(1, version);
  tilesPerIPU = preset.getTilesPerIPU();
  memoryBytesPerTile = preset.getBytesPerTile();
  tileClockFrequency = preset.getTileClockFrequency();
  exchangeBytesPerCycle = preset.getExchangeBytesPerCycle();
  numWorkerContexts = preset.getNumWorkerContexts();
  ipuLinkBandwidth = preset.getIpuLinkBandwidth();
  hostLinkBandwidth = preset.getHostLinkBandwidth();
}

Target IPUModel::getTarget(const OptionFlags &opts) const {
  const CostFigures presetCosts;
  unsigned syncOnChip = minIPUSyncDelay, syncAcross = minIPUSyncDelay;
  if (relativeSyncDelay == RelativeSyncDelayType::AUTO) {
    syncOnChip += presetCosts.syncCyclesOnChip;
    syncAcross += presetCosts.syncCyclesAcrossIpus;
  }
  OptionFlags fields{
      {"tilesPerIPU", std::to_string(tilesPerIPU)},
      {"bytesPerTile", std::to_string(memoryBytesPerTile)},
      {"tileClockFrequency", fmt::format("{}", tileClockFrequency)},
      {"exchangeBytesPerCycle", std::to_string(exchangeBytesPerCycle)},
      {"numWorkerContexts", std::to_string(numWorkerContexts)},
      {"ipuLinkBandwidth", fmt::format("{}", ipuLinkBandwidth)},
      {"hostLinkBandwidth", fmt::format("{}", hostLinkBandwidth)},
      {"syncCyclesOnChip", std::to_string(syncOnChip)},
      {"syncCyclesAcrossIpus", std::to_string(syncAcross)},
  };
  return Target::createIPUTarget(numIPUs, version, merged(fields, opts));
}

Device IPUModel::createDevice(const OptionFlags &opts) const {
  auto impl = std::make_unique<Device::Impl>(getTarget(opts));
  impl->type = TargetType::IPU_MODEL;
  return Device(std::move(impl));
}

} // namespace tessera
