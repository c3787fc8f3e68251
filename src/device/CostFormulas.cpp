#include "tessera/device/CostFormulas.hpp"

#include <cmath>

namespace tessera::cost {

std::uint64_t transferCycles(std::uint64_t bytes, double bytesPerCycle) {
  return bytes ? static_cast<std::uint64_t>(
                     std::ceil(static_cast<double>(bytes) / bytesPerCycle))
               : 0;
}

std::uint64_t exchangeTransferCycles(const Target &target,
                                     std::uint64_t bytes) {
  const std::uint64_t perCycle = target.getExchangeBytesPerCycle();
  return (bytes + perCycle - 1) / perCycle;
}

std::uint64_t syncCycles(const Target &target, bool crossIpu) {
  return crossIpu ? target.costs().syncCyclesAcrossIpus
                  : target.costs().syncCyclesOnChip;
}

std::uint64_t exchangeStepCycles(const Target &target,
                                 std::uint64_t busiestTileCycles,
                                 bool crossIpu) {
  return busiestTileCycles + target.costs().exchangeFixedCycles +
         syncCycles(target, crossIpu);
}

std::uint64_t exchangeCycles(const Target &target,
                             std::uint64_t busiestTileBytes) {
  return busiestTileBytes
             ? exchangeStepCycles(
                   target, exchangeTransferCycles(target, busiestTileBytes))
             : 0;
}

std::uint64_t ipuLinkCycles(const Target &target, std::uint64_t bytes) {
  if (!bytes)
    return 0;
  // Link bandwidth is per second; the estimate counts tile cycles.
  return transferCycles(bytes, target.getIpuLinkBandwidth() /
                                   target.getTileClockFrequency()) +
         target.costs().ipuLinkFixedCycles;
}

std::uint64_t computeCycles(const Target &target,
                            std::uint64_t busiestWorkerCycles,
                            std::uint64_t vertices) {
  return target.getNumWorkerContexts() * busiestWorkerCycles +
         target.costs().supervisorCyclesPerVertex * vertices;
}

} // namespace tessera::cost
