#include "tessera/device/CostFormulas.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

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

namespace {

// A link of \p bandwidth bytes per second with \p fixedCycles of latency;
// the estimate counts tile cycles.
std::uint64_t linkCycles(const Target &target, std::uint64_t bytes,
                         double bandwidth, unsigned fixedCycles) {
  return bytes ? transferCycles(bytes,
                                bandwidth / target.getTileClockFrequency()) +
                     fixedCycles
               : 0;
}

} // namespace

std::uint64_t ipuLinkCycles(const Target &target, std::uint64_t bytes) {
  return linkCycles(target, bytes, target.getIpuLinkBandwidth(),
                    target.costs().ipuLinkFixedCycles);
}

std::uint64_t hostTransferCycles(const Target &target, std::uint64_t hostBytes,
                                 std::uint64_t remoteBytes) {
  if (!hostBytes && !remoteBytes)
    return 0;
  const double clock = target.getTileClockFrequency();
  // The host link's figure counts both directions; a transfer uses one.
  // Streaming memory sits behind the IPU-Machine's gateway, not the host's
  // PCIe link: its bytes go at the remote memory's own bandwidth.
  return transferCycles(hostBytes, target.getHostLinkBandwidth() / 2 / clock) +
         transferCycles(remoteBytes,
                        target.getRemoteMemoryBandwidth() / clock) +
         target.costs().hostTransferFixedCycles;
}

std::uint64_t gwLinkCycles(const Target &target, std::uint64_t bytes) {
  return linkCycles(target, bytes, target.getGwLinkBandwidth(),
                    target.costs().gwLinkFixedCycles);
}

std::uint64_t computeCycles(const Target &target,
                            std::uint64_t busiestWorkerCycles,
                            std::uint64_t vertices) {
  return target.getNumWorkerContexts() * busiestWorkerCycles +
         target.costs().supervisorCyclesPerVertex * vertices;
}

std::uint64_t multiVertexWorkerCycles(const Target &target,
                                      std::vector<std::uint64_t> shareCycles,
                                      unsigned workers) {
  if (shareCycles.empty())
    return 0;
  std::sort(shareCycles.begin(), shareCycles.end(), std::greater<>());
  std::vector<std::uint64_t> load(workers, 0);
  for (std::uint64_t c : shareCycles)
    *std::min_element(load.begin(), load.end()) += c;
  const std::uint64_t starts =
      (shareCycles.size() - 1) *
      std::uint64_t(target.costs().supervisorCyclesPerVertex);
  return *std::max_element(load.begin(), load.end()) +
         (starts + workers - 1) / workers;
}

} // namespace tessera::cost
