// Pipelined training against the same model on one IPU, in one run:
//
// 1. The estimate: samples per second of the IPU Model's estimated step
//    time, 4 stages over 4 IPUs (Grouped) against all 4 layers on 1 IPU
//    with the same tiles per IPU and the same gradient accumulation N, for
//    N = 4, 16 and 64. Each layer has a whole IPU's tiles either way, so
//    the pipeline's ideal is S = 4 times the throughput, less the ramp,
//    (S - 1) / (N + S - 1) of a step, and the inter-IPU transfers.
// 2. The host: wall time per micro-batch of pipelined training against
//    unpipelined training of the same model (one step per run, best of 5
//    runs after a warm-up): what simulating the schedule itself costs.
//
// Prints RESULT lines: pipeline_estimate_speedup_n<N> (target >= 1 at N = 4,
// >= 2 at N = 64) and pipeline_host_time (target <= 1.5).
#include "tessera/passes/TrainingPasses.hpp"
#include "tessera/session/Session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

using namespace tessera;
using namespace tessera::session;

namespace {

constexpr unsigned kStages = 4, kBatch = 16, kWidth = 256, kTiles = 64;

ir::Module model(bool staged, unsigned n) {
  ir::Module m("bench_pipeline");
  ir::Builder b(m);
  ir::Value h = b.input("x", FLOAT, {kBatch, kWidth});
  const ir::Value y = b.input("y", FLOAT, {kBatch, kWidth});
  for (unsigned k = 0; k < kStages; ++k) {
    std::optional<ir::StageScope> stage;
    if (staged)
      stage.emplace(b, k);
    const ir::Value w = b.variable("w" + std::to_string(k), {kWidth, kWidth},
                                   ir::init::uniform(-0.05, 0.05, k + 1));
    h = ir::tanh(ir::matmul(h, w));
  }
  {
    std::optional<ir::StageScope> stage;
    if (staged)
      stage.emplace(b, kStages - 1);
    b.output("loss", ir::reduceMean(ir::meanSquaredError(h, y)));
  }
  passes::TrainingPassOptions o;
  o.training.optimizer = passes::SGD{0.01, 0.9};
  o.accumulation.count = n;
  passes::runTrainingPasses(m, o, {});
  return m;
}

struct Measured {
  double samplesPerSecond = 0; // from the estimate
  double hostSecondsPerMicroBatch = 0;
};

Measured measure(bool staged, unsigned n, unsigned runs) {
  Config c;
  c.ipuModel.tilesPerIpu = kTiles;
  c.autoSelectIpus = staged ? kStages : 1;
  c.syntheticData = true;
  Session s(model(staged, n), c, {{"x", "y"}, {}, n});
  s.compile();
  s.run(); // warm-up
  double best = 1e30;
  for (unsigned r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    s.run();
    const std::chrono::duration<double> dt =
        std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  Measured m;
  const double seconds = double(s.estimatedCyclesPerRun()) / s.clockHz();
  m.samplesPerSecond = double(n) * kBatch / seconds;
  m.hostSecondsPerMicroBatch = best / n;
  return m;
}

void result(const std::string &name, double ratio, double target,
            bool atLeast) {
  const bool ok = atLeast ? ratio >= target : ratio <= target;
  std::printf("RESULT %s ratio=%.3f target=%s%.2f %s\n", name.c_str(), ratio,
              atLeast ? ">=" : "<=", target, ok ? "OK" : "MISS");
}

} // namespace

int main() {
  bool ok = true;
  for (unsigned n : {4u, 16u, 64u}) {
    const Measured one = measure(false, n, n == 16 ? 5 : 1);
    const Measured piped = measure(true, n, n == 16 ? 5 : 1);
    const double speedUp = piped.samplesPerSecond / one.samplesPerSecond;
    std::printf("N=%u: 1 IPU %.0f samples/s, 4 stages %.0f samples/s "
                "(estimated); ramp (S-1)/(N+S-1) = %.3f\n",
                n, one.samplesPerSecond, piped.samplesPerSecond,
                double(kStages - 1) / (n + kStages - 1));
    const double target = n == 64 ? 2.0 : 1.0;
    result(fmt::format("pipeline_estimate_speedup_n{}", n), speedUp, target,
           true);
    ok &= speedUp >= target;
    if (n == 16) {
      const double host =
          piped.hostSecondsPerMicroBatch / one.hostSecondsPerMicroBatch;
      std::printf("host time per micro-batch: 1 IPU %.3f ms, pipelined "
                  "%.3f ms\n",
                  one.hostSecondsPerMicroBatch * 1e3,
                  piped.hostSecondsPerMicroBatch * 1e3);
      result("pipeline_host_time", host, 1.5, false);
      ok &= host <= 1.5;
    }
  }
  return ok ? 0 : 1;
}
