/// \file
/// Timeline: how the steps of an executable move each IPU's clock, so that
/// the estimated time of a multi-IPU run is the time a real one would take.
///
/// Each IPU runs its own instruction stream (Poplar builds one program per
/// IPU) and waits for the others only at an external sync. So:
/// - a compute step (its compute set and the sync inside it) advances the
///   clocks of the IPUs whose tiles run its vertices, each by its own
///   cycles; a compute set with no vertices advances every IPU by its own;
/// - an exchange, stream, remote-buffer or print step that costs cycles on
///   one IPU only advances that IPU;
/// - an exchange-like step with cycles on two or more IPUs (an inter-IPU
///   copy), a Sync step on a multi-IPU target and a cross-replica copy are
///   external syncs: every clock first moves to the latest clock, then all
///   advance by the step's largest per-IPU cycles;
/// - control flow advances every IPU by its own cycles;
/// - the End of a program advances every IPU by its own cycles, then aligns
///   them: a run returns to the host when its last IPU finishes, and the
///   next run starts on all IPUs together.
/// With one IPU every rule reduces to adding the step's cycles, so the
/// elapsed time of a single-IPU executable is the sum over its steps of
/// count x cycles.
#pragma once

#include "tessera/compiler/Executable.hpp"

#include <cstdint>
#include <vector>

namespace tessera {

class Timeline {
public:
  /// How a step moves the clocks.
  enum class Move : std::uint8_t {
    PerIpu, ///< each IPU by its own cycles (zero on IPUs it leaves alone)
    Sync,   ///< align to the latest clock, then all by the largest cycles
    RunEnd, ///< each by its own cycles, then align to the latest
  };

  /// Plans every step of \p exe (a step without an estimate costs nothing).
  explicit Timeline(const Executable &exe);

  unsigned numIPUs() const { return numIPUs_; }
  Move move(std::uint32_t step) const { return moves_[step]; }
  /// The cycles step \p step adds to IPU \p ipu under a PerIpu or RunEnd
  /// move (0 on an IPU a compute step does not touch); under Sync, the
  /// largest of the step's per-IPU cycles, whatever \p ipu.
  std::uint64_t cycles(std::uint32_t step, unsigned ipu) const;

  /// Moves \p clocks (numIPUs() entries) to where \p step starts: for a
  /// Sync move every IPU waits for the latest; otherwise nothing waits.
  void begin(std::uint32_t step, std::uint64_t *clocks) const {
    if (moves_[step] != Move::Sync)
      return;
    const std::uint64_t t = latest(clocks);
    for (unsigned i = 0; i < numIPUs_; ++i)
      clocks[i] = t;
  }

  /// Moves \p clocks (numIPUs() entries) over one execution of \p step,
  /// waiting included.
  void advance(std::uint32_t step, std::uint64_t *clocks) const;

  /// The latest of \p clocks (numIPUs() entries): the time elapsed.
  std::uint64_t latest(const std::uint64_t *clocks) const {
    std::uint64_t t = 0;
    for (unsigned i = 0; i < numIPUs_; ++i)
      t = clocks[i] > t ? clocks[i] : t;
    return t;
  }

private:
  unsigned numIPUs_;
  std::vector<Move> moves_;
  /// numIPUs_ entries per step: PerIpu/RunEnd cycles per IPU, or (Sync) the
  /// largest per-IPU cycles in every entry.
  std::vector<std::uint64_t> cycles_;
};

} // namespace tessera
