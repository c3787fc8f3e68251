/// \file
/// What an engine records while it runs: how often each step ran, the
/// order of the first steps, (several IPUs) each IPU's clock, from which
/// the execution profile is derived with the compiler's per-step estimates,
/// and the host side of the runs.
#pragma once

#include "tessera/device/HostCost.hpp"

#include <cstdint>
#include <vector>

namespace tessera {

struct ExecutionCounts {
  std::uint64_t runs = 0;
  /// Times each step ran (indexed like Executable::steps).
  std::vector<std::uint64_t> stepCounts;
  /// The first steps executed, in order (bounded by traceLimit).
  std::vector<std::uint32_t> trace;
  std::size_t traceLimit = 100000;
  /// Estimated cycles of the cross-replica copies that crossed to replicas
  /// of other instances (Engine::setLocalReplicas): GW-Link traffic
  /// between IPU-Machines, which the compiler's per-step estimates (one
  /// machine's IPU-Links) leave out. Every IPU waits for it.
  std::uint64_t gatewayCycles = 0;
  /// What the runs asked of the host (HostCost.hpp): runs, stream set-ups
  /// and callback transfers.
  HostActivity hostActivity;
  /// The host-side cycles of those runs, at the figures of the target the
  /// engine was loaded on: time a run takes outside the device program,
  /// which elapsed (device) time leaves out and host-inclusive time adds.
  HostCycles hostCycles;
  /// Executables of several IPUs only (empty for one): each IPU's clock
  /// since the first run started, moved over every step run by the
  /// Timeline rule (gateway cycles not included). With one IPU the elapsed
  /// time is the sum of count x cycles over the steps, so nothing is kept.
  std::vector<std::uint64_t> ipuClocks;
};

} // namespace tessera
