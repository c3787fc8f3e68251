// bench_train_step: the engine's host time per training step, and how it
// scales from 1 to 2 host threads (engine.hostThreads). The model is the
// MLP of `tessera train --model mlp` (784-256-128-10, ReLU, softmax,
// sparse cross-entropy, Adam) at batch 128 and 32, trained on synthetic
// data made once on the device, so no input pipeline shares the host's
// cores with the engine: the figure is the simulator's own. Each thread
// count runs its own compiled model; their runs of 100 steps alternate
// and each keeps its best, as the machine is shared.
//
// Prints per batch size `RESULT train_step_threads_b<B> ...` with the
// speed-up of 2 threads over 1 (target >= 1.6 at batch 128).
#include "tessera/data/Dataset.hpp"
#include "tessera/nn/Layers.hpp"
#include "tessera/nn/Model.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

using namespace tessera;

namespace {

constexpr unsigned kStepsPerRun = 100;

std::unique_ptr<nn::Sequential> trainedMlp(unsigned threads) {
  auto model = std::make_unique<nn::Sequential>(
      std::vector<nn::LayerRef>{nn::Input({784}), nn::Dense(256, "relu"),
                                nn::Dense(128, "relu"),
                                nn::Dense(10, "softmax")},
      "mlp", 1);
  nn::CompileOptions c;
  c.optimizer = passes::Adam{0.0005};
  c.stepsPerExecution = kStepsPerRun;
  c.config.syntheticData = true;
  c.syntheticDataInitializer = "uniform";
  // Config::hostThreads, not engineOptions' "engine.hostThreads": the
  // session sets that flag from hostThreads (0: every core) over whatever
  // engineOptions says, so the "1 thread" model ran on both cores.
  c.config.hostThreads = threads;
  model->compile(c);
  return model;
}

double cpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct PerStep {
  double wall = 1e30, cpu = 1e30; ///< seconds: the best of the runs
};

// One run of kStepsPerRun steps: the host seconds per step it took, wall
// and CPU (the CPU time of all threads, which a busy machine inflates
// less than the wall time; it includes the fit's own bookkeeping).
void runOnce(nn::Model &model, const data::Dataset &data, PerStep &best) {
  nn::FitOptions fit;
  fit.verbose = nn::Verbosity::Silent;
  const double cpu0 = cpuSeconds();
  model.fit(data, fit);
  best.cpu = std::min(best.cpu, (cpuSeconds() - cpu0) / kStepsPerRun);
  best.wall = std::min(best.wall, model.lastFitStats().hostSecondsPerStep);
}

} // namespace

int main() {
  const unsigned rounds = 7;
  bool ok = true;
  for (unsigned batch : {128u, 32u}) {
    const std::size_t n = std::size_t(batch) * kStepsPerRun;
    data::HostTensor x(FLOAT, {n, 784}), y(INT, {n});
    const data::Dataset set =
        data::Dataset::fromTensors({x, y}).batch(batch, true);
    auto one = trainedMlp(1), two = trainedMlp(2);
    PerStep warm, t1, t2;
    runOnce(*one, set, warm); // warm-up: first-touch of memory, threads
    runOnce(*two, set, warm);
    for (unsigned r = 0; r < rounds; ++r) {
      runOnce(*one, set, t1);
      runOnce(*two, set, t2);
    }
    const double best1 = t1.wall, best2 = t2.wall;
    const double speedup = best1 / best2;
    const bool pass = batch != 128 || speedup >= 1.6;
    ok = ok && pass;
    std::printf("train step batch %u: %.3f ms on 1 thread (CPU %.3f ms), "
                "%.3f ms on 2 (CPU %.3f ms)\n",
                batch, best1 * 1e3, t1.cpu * 1e3, best2 * 1e3, t2.cpu * 1e3);
    std::printf("RESULT train_step_threads_b%u speedup=%.2f %s%s\n", batch,
                speedup, batch == 128 ? "target>=1.6 " : "",
                batch == 128 ? (pass ? "OK" : "MISS") : "INFO");
  }
  return ok ? 0 : 1;
}
