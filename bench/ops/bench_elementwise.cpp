// bench_elementwise: the elementwise acceptance figure, against memcpy
// measured in the same iterations (interleaved, medians):
// - fp32 add of two 16M-element tensors (64 MiB each) mapped linearly over a
//   full ipu2 target (1472 tiles), engine on one host thread, timing
//   engine.run() of the compiled program: target >= 0.5x memcpy bandwidth.
//   Bandwidth counts bytes read plus bytes written, as STREAM does: the add
//   moves 3 x 64 MiB (two reads, one write), memcpy of one 64 MiB tensor
//   moves 2 x 64 MiB.
// - the estimated cycles of the add against its own bound (every tile
//   adding its share at Poplar's ~1.5 tile cycles per float).
#include "BenchCommon.hpp"

#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/ops/Elementwise.hpp"

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using tessera::bench::values;

using namespace tessera;
using tessera::bench::Clock;
using tessera::bench::fixed;

constexpr std::size_t kElements = std::size_t(16) << 20;

struct Loaded {
  Device device;
  std::unique_ptr<Engine> engine;
  double compileSeconds = 0;
  std::uint64_t cycles = 0;
};

Loaded buildEngine(const std::vector<float> &a, const std::vector<float> &b) {
  Loaded l;
  IPUModel model("ipu2");
  l.device = model.createDevice();
  Graph g(l.device.getTarget());
  ops::addCodelets(g);
  Tensor A = g.addVariable(FLOAT, {kElements}, "A");
  Tensor B = g.addVariable(FLOAT, {kElements}, "B");
  mapTensorLinearly(g, A);
  mapTensorLinearly(g, B);
  g.createHostWrite("a", A);
  g.createHostWrite("b", B);
  program::Sequence prog;
  Tensor C = ops::add(g, A, B, prog, "C");
  g.createHostRead("c", C);
  const auto t0 = Clock::now();
  l.engine = std::make_unique<Engine>(g, prog,
                                      OptionFlags{{"engine.hostThreads", "1"}});
  l.compileSeconds = tessera::bench::secondsSince(t0);
  l.engine->load(l.device);
  l.engine->writeTensor("a", a.data(), a.data() + a.size());
  l.engine->writeTensor("b", b.data(), b.data() + b.size());
  l.engine->run(); // first touch of tile memory
  for (std::uint64_t c : l.engine->getCycleCounts())
    l.cycles += c;
  return l;
}

void BM_Add16MEngine(benchmark::State &state) {
  const auto a = values(kElements, 1), b = values(kElements, 2);
  Loaded l = buildEngine(a, b);
  std::vector<float> c(kElements);
  l.engine->readTensor("c", c.data(), c.data() + c.size());
  double error = 0;
  for (std::size_t i = 0; i < kElements; ++i)
    error = std::max(error, double(std::fabs(c[i] - (a[i] + b[i]))));
  // The peer copies one input tensor into a buffer of its own, touched once
  // beforehand so that neither side pays for first-touch page faults.
  std::vector<float> dst(kElements, 0.0f);
  std::vector<double> engineMs, copyMs;
  for (auto _ : state) {
    auto t0 = Clock::now();
    l.engine->run();
    const double e = tessera::bench::secondsSince(t0);
    t0 = Clock::now();
    std::memcpy(dst.data(), a.data(), kElements * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
    const double p = tessera::bench::secondsSince(t0);
    state.SetIterationTime(e);
    engineMs.push_back(e * 1e3);
    copyMs.push_back(p * 1e3);
  }
  const double ms = tessera::bench::median(engineMs);
  const double peer = tessera::bench::median(copyMs);
  const double bytes = double(kElements * sizeof(float));
  const double addGBps = 3 * bytes / (ms * 1e6);
  const double copyGBps = 2 * bytes / (peer * 1e6);
  const double ratio = addGBps / copyGBps;
  // Poplar's figures: ~1.5 tile cycles per float add on a full tile.
  const double bound = 1.5 * double(kElements) / 1472.0;
  state.counters["engine_ms"] = ms;
  state.counters["memcpy_ms"] = peer;
  state.counters["ratio_vs_memcpy"] = ratio;
  tessera::bench::addResult(
      "add16M_fp32_1472tiles_vs_memcpy_bandwidth",
      fixed(ratio, 2) + " engine_ms=" + fixed(ms, 2) +
          " memcpy_ms=" + fixed(peer, 2) + " engine_GBps=" + fixed(addGBps, 1) +
          " memcpy_GBps=" + fixed(copyGBps, 1) + " max_abs_error=" +
          fixed(error, 6) + " compile_s=" + fixed(l.compileSeconds, 2) +
          " est_cycles=" + std::to_string(l.cycles) +
          " est_vs_1.5_cycles_per_float=" + fixed(double(l.cycles) / bound, 2) +
          " target>=0.5 " + tessera::bench::verdict(ratio >= 0.5));
}

BENCHMARK(BM_Add16MEngine)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

} // namespace

int main(int argc, char **argv) { return tessera::bench::runMain(argc, argv); }
