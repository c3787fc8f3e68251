// The plan is made once per executable so that advancing over a step is a
// few additions: the engine does it for every step a multi-IPU program runs.
#include "tessera/engine/Timeline.hpp"

#include <algorithm>

namespace tessera {
namespace {

// The IPUs whose tiles run a compute step's vertices, from the compiler's
// per-tile cycles (it charges a compute set's sync to those IPUs only;
// executables compiled before it did charged every IPU, and an IPU without
// the vertices still takes no part).
std::vector<bool> computeIpus(const Executable &exe, const StepEstimate &e,
                              unsigned ipus) {
  std::vector<bool> touched(ipus, false);
  const std::size_t end =
      std::min<std::size_t>(std::size_t(e.firstTileCycle) + e.numTileCycles,
                            exe.tileCycleTiles.size());
  const std::uint64_t perIpu = std::max<std::uint64_t>(exe.tilesPerIPU, 1);
  for (std::size_t i = e.firstTileCycle; i < end; ++i) {
    const std::uint64_t ipu = exe.tileCycleTiles[i] / perIpu;
    if (ipu < ipus)
      touched[ipu] = true;
  }
  return touched;
}

Timeline::Move moveOf(StepKind kind, const std::vector<std::uint64_t> &c) {
  switch (kind) {
  case StepKind::Exchange:
  case StepKind::StreamIn:
  case StepKind::StreamOut:
  case StepKind::RemoteIn:
  case StepKind::RemoteOut:
  case StepKind::Print:
    return std::count_if(c.begin(), c.end(),
                         [](std::uint64_t x) { return x != 0; }) > 1
               ? Timeline::Move::Sync
               : Timeline::Move::PerIpu;
  case StepKind::Sync:
  case StepKind::CrossReplica:
    return c.size() > 1 ? Timeline::Move::Sync : Timeline::Move::PerIpu;
  case StepKind::End:
    return Timeline::Move::RunEnd;
  default:
    return Timeline::Move::PerIpu;
  }
}

} // namespace

Timeline::Timeline(const Executable &exe)
    : numIPUs_(std::max<unsigned>(exe.numIPUs, 1)),
      moves_(exe.steps.size(), Move::PerIpu),
      cycles_(exe.steps.size() * numIPUs_, 0) {
  std::vector<std::uint64_t> c(numIPUs_);
  for (std::size_t s = 0; s < exe.steps.size(); ++s) {
    std::fill(c.begin(), c.end(), 0);
    if (s < exe.estimates.size()) {
      const StepEstimate &e = exe.estimates[s];
      std::copy_n(e.ipuCycles.begin(),
                  std::min<std::size_t>(e.ipuCycles.size(), numIPUs_),
                  c.begin());
      if (exe.steps[s].kind == StepKind::Compute && e.numTileCycles > 0) {
        const std::vector<bool> touched = computeIpus(exe, e, numIPUs_);
        for (unsigned i = 0; i < numIPUs_; ++i)
          c[i] = touched[i] ? c[i] : 0;
      }
    }
    moves_[s] = moveOf(exe.steps[s].kind, c);
    std::uint64_t *out = cycles_.data() + s * numIPUs_;
    if (moves_[s] == Move::Sync)
      std::fill_n(out, numIPUs_, *std::max_element(c.begin(), c.end()));
    else
      std::copy(c.begin(), c.end(), out);
  }
}

// Out of line and compiled without vectorisation (CMakeLists.txt): for the
// few IPUs of an executable, vector loops with their alias checks and
// remainders cost more than the additions. bench_steps under callgrind, 2
// IPUs: this adds 39 instructions a step to the engine's 20 (42 inlined
// and vectorised, 47 out of line and vectorised).
void Timeline::advance(std::uint32_t step, std::uint64_t *clocks) const {
  const std::uint64_t *c = cycles_.data() + std::size_t(step) * numIPUs_;
  const unsigned n = numIPUs_;
  switch (moves_[step]) {
  case Move::PerIpu:
    for (unsigned i = 0; i < n; ++i)
      clocks[i] += c[i];
    return;
  case Move::Sync: {
    const std::uint64_t t = latest(clocks) + c[0];
    for (unsigned i = 0; i < n; ++i)
      clocks[i] = t;
    return;
  }
  case Move::RunEnd: {
    for (unsigned i = 0; i < n; ++i)
      clocks[i] += c[i];
    const std::uint64_t t = latest(clocks);
    for (unsigned i = 0; i < n; ++i)
      clocks[i] = t;
    return;
  }
  }
}

std::uint64_t Timeline::cycles(std::uint32_t step, unsigned ipu) const {
  return cycles_[std::size_t(step) * numIPUs_ + ipu];
}

} // namespace tessera
