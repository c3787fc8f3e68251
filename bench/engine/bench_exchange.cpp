// bench_exchange: exchange bandwidth. A 16M-float variable (64 MiB) mapped
// linearly over the 1472 tiles of an ipu2 is copied into a variable whose
// mapping is rotated by one tile, so every byte crosses tiles. The target:
// engine.run() of that Copy moves the 64 MiB at >= 50% of the bandwidth of a
// host memcpy of 64 MiB between two buffers, timed in the same iterations.
// The engine runs on 1 and on 2 host threads; both are compared with the
// 1-thread memcpy (the acceptance ratio) and, for information, with a memcpy
// split over 2 threads of a pool like the engine's.
#include "BenchCommon.hpp"

#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/ThreadPool.hpp"

#include <cstring>
#include <memory>
#include <vector>

namespace {

using namespace tessera;
using tessera::bench::Clock;
using tessera::bench::fixed;

constexpr std::size_t kElements = std::size_t(16) << 20;  // 16M floats
constexpr std::size_t kBytes = kElements * sizeof(float); // 64 MiB
constexpr double kTargetRatio = 0.5;

struct Loaded {
  Device device;
  std::unique_ptr<Engine> engine;
  std::uint64_t bytesExchanged = 0;
  std::vector<float> expected; ///< src's contents, which dst must receive
};

float initialValue(std::size_t i) { return float(i % 1000003); }

Loaded buildEngine(unsigned hostThreads) {
  Loaded l;
  IPUModel model("ipu2");
  l.device = model.createDevice();
  Graph graph(l.device.getTarget());
  Tensor src = graph.addVariable(FLOAT, {kElements}, "src");
  Tensor dst = graph.addVariable(FLOAT, {kElements}, "dst");
  mapTensorLinearly(graph, src);
  // dst's elements on tile t+1 are src's elements on tile t.
  const TileMapping srcMap = graph.getTileMapping(src);
  TileMapping dstMap(srcMap.size());
  for (std::size_t t = 0; t < srcMap.size(); ++t)
    dstMap[(t + 1) % srcMap.size()] = srcMap[t];
  graph.setTileMapping(dst, dstMap);
  l.expected.resize(kElements);
  for (std::size_t i = 0; i < kElements; ++i)
    l.expected[i] = initialValue(i);
  graph.setInitialValue(src, l.expected);
  graph.createHostRead("dst", dst);
  l.engine = std::make_unique<Engine>(
      graph, program::Copy(src, dst),
      OptionFlags{{"engine.hostThreads", std::to_string(hostThreads)}});
  for (const StepEstimate &e : l.engine->getExecutable().estimates)
    l.bytesExchanged += e.bytesExchanged;
  l.engine->load(l.device);
  return l;
}

struct Buffers {
  std::vector<std::byte> a = std::vector<std::byte>(kBytes, std::byte{1});
  std::vector<std::byte> b = std::vector<std::byte>(kBytes, std::byte{2});
};

// 64 MiB copied by \p pool's workers in equal halves (or whole on one).
void pooledMemcpy(ThreadPool &pool, Buffers &buf) {
  const std::size_t parts = pool.size();
  pool.parallelFor(parts, [&](std::size_t k, unsigned) {
    const std::size_t begin = kBytes / parts * k;
    const std::size_t end = k + 1 == parts ? kBytes : kBytes / parts * (k + 1);
    std::memcpy(buf.b.data() + begin, buf.a.data() + begin, end - begin);
  });
}

double gbPerSecond(double seconds) { return double(kBytes) / seconds / 1e9; }

void BM_Exchange64MiB(benchmark::State &state) {
  const auto threads = static_cast<unsigned>(state.range(0));
  Loaded l = buildEngine(threads);
  Buffers buf;
  ThreadPool pool2(2);
  l.engine->run(); // first touch of the destination pages
  std::vector<double> engineS, memcpy1S, memcpy2S;
  for (auto _ : state) {
    auto t0 = Clock::now();
    l.engine->run();
    const double e = tessera::bench::secondsSince(t0);
    t0 = Clock::now();
    std::memcpy(buf.b.data(), buf.a.data(), kBytes);
    benchmark::ClobberMemory();
    const double m1 = tessera::bench::secondsSince(t0);
    t0 = Clock::now();
    pooledMemcpy(pool2, buf);
    benchmark::ClobberMemory();
    const double m2 = tessera::bench::secondsSince(t0);
    state.SetIterationTime(e);
    engineS.push_back(e);
    memcpy1S.push_back(m1);
    memcpy2S.push_back(m2);
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * kBytes);
  // The copy must really have happened: dst holds src's values.
  std::vector<float> got(kElements);
  l.engine->readTensor("dst", got.data(), got.data() + got.size());
  if (got != l.expected) {
    state.SkipWithError("the exchange did not copy src into dst");
    return;
  }
  const double engineGb = gbPerSecond(tessera::bench::median(engineS));
  const double memcpy1Gb = gbPerSecond(tessera::bench::median(memcpy1S));
  const double memcpy2Gb = gbPerSecond(tessera::bench::median(memcpy2S));
  const double ratio = engineGb / memcpy1Gb;
  state.counters["engine_GBps"] = engineGb;
  state.counters["memcpy1_GBps"] = memcpy1Gb;
  state.counters["memcpy2_GBps"] = memcpy2Gb;
  state.counters["ratio_vs_memcpy1"] = ratio;
  state.counters["ratio_vs_memcpy2"] = engineGb / memcpy2Gb;
  state.counters["bytes_exchanged_model"] = double(l.bytesExchanged);
  const std::string name = "exchange_GBps_" + std::to_string(threads) +
                           (threads == 1 ? "thread" : "threads");
  tessera::bench::addResult(
      name, fixed(engineGb) + " threads=" + std::to_string(threads) +
                " bytes=" + std::to_string(kBytes) + " memcpy_1thread_GBps=" +
                fixed(memcpy1Gb) + " ratio_vs_memcpy_1thread=" + fixed(ratio) +
                " memcpy_2threads_GBps=" + fixed(memcpy2Gb) +
                " ratio_vs_memcpy_2threads=" + fixed(engineGb / memcpy2Gb) +
                " target_ratio>=" + fixed(kTargetRatio) + " " +
                tessera::bench::verdict(ratio >= kTargetRatio));
}

BENCHMARK(BM_Exchange64MiB)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(40);

} // namespace

int main(int argc, char **argv) { return tessera::bench::runMain(argc, argv); }
