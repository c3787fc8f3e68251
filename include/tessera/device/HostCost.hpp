/// \file
/// The host side of a device run: what a run costs outside the device
/// program, which the compiler's step estimates (device time) leave out.
/// Each Engine::run pays a round trip (the host starts the program, the
/// device syncs with it, the host learns that it has ended), a set-up per
/// stream the run uses, and a hand-off per stream transfer that a host
/// function or StreamCallback serves. The figures are CostFigures'
/// hostRunMicroseconds, hostStreamSetupMicroseconds and
/// hostCallbackMicroseconds; this is the one formula that applies them.
#pragma once

#include "tessera/device/Target.hpp"

#include <cmath>
#include <cstdint>

namespace tessera {

/// What a number of runs asked of the host.
struct HostActivity {
  /// Engine::run calls.
  std::uint64_t runs = 0;
  /// Streams the runs used, counted once per run and replica.
  std::uint64_t streamSetups = 0;
  /// Stream transfers served by a host function or StreamCallback.
  std::uint64_t callbackTransfers = 0;
};

/// Estimated host-side cycles (at the tile clock), by cause.
struct HostCycles {
  std::uint64_t runs = 0, streamSetups = 0, callbacks = 0;
  std::uint64_t total() const { return runs + streamSetups + callbacks; }
  HostCycles &operator+=(const HostCycles &o) {
    runs += o.runs;
    streamSetups += o.streamSetups;
    callbacks += o.callbacks;
    return *this;
  }
};

/// The host-side cycles of \p activity, at \p clockHz, with \p costs'
/// host figures.
inline HostCycles hostCycles(const CostFigures &costs, double clockHz,
                             const HostActivity &activity) {
  const auto cycles = [&](double microseconds, std::uint64_t count) {
    return static_cast<std::uint64_t>(
        std::llround(microseconds * 1e-6 * clockHz * double(count)));
  };
  HostCycles h;
  h.runs = cycles(costs.hostRunMicroseconds, activity.runs);
  h.streamSetups =
      cycles(costs.hostStreamSetupMicroseconds, activity.streamSetups);
  h.callbacks =
      cycles(costs.hostCallbackMicroseconds, activity.callbackTransfers);
  return h;
}

} // namespace tessera
