// bench_matmul: the matmul acceptance figures, each against OpenBLAS on one
// thread measured in the same iterations (interleaved, medians):
// - fp32 matMul 512 x 512 x 512 on a full ipu2 target (1472 tiles), engine on
//   one host thread, timing engine.run() of the compiled program (operands
//   laid out by createMatMulInputLHS / RHS): target >= 0.5x OpenBLAS sgemm.
// - the per-tile block kernel alone (the MatMulBlock vertex's host kernel)
//   on the block shape that plan gives each tile: target >= 0.8x OpenBLAS
//   sgemm on the same shape.
// - the estimated cycles of an fp16 (half partials) 1024^3 product on ipu2
//   against the AMP peak bound 1024^3 / (64 x 1472), and against a one-tile
//   plan (compiled only, nothing runs): targets <= 2x and >= 100x.
#include "BenchCommon.hpp"

#include "ops/matmul/MatMulKernel.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/ops/MatMul.hpp"

#include <cblas.h>

#include <cmath>
#include <ctime>
#include <memory>
#include <vector>

namespace {

using tessera::bench::maxDifference;
using tessera::bench::processCpuSeconds;
using tessera::bench::values;

using namespace tessera;
using tessera::bench::Clock;
using tessera::bench::fixed;

constexpr std::size_t kSize = 512;

struct Loaded {
  Device device;
  std::unique_ptr<Engine> engine;
  ops::MatMulPlan plan;
  double compileSeconds = 0;
};

Loaded buildEngine(const std::vector<float> &a, const std::vector<float> &b) {
  Loaded l;
  IPUModel model("ipu2");
  l.device = model.createDevice();
  Graph g(l.device.getTarget());
  ops::addCodelets(g);
  const std::vector<std::size_t> as{kSize, kSize}, bs{kSize, kSize};
  Tensor A = ops::createMatMulInputLHS(g, FLOAT, as, bs, "A");
  Tensor B = ops::createMatMulInputRHS(g, FLOAT, as, bs, "B");
  g.createHostWrite("a", A);
  g.createHostWrite("b", B);
  program::Sequence prog;
  Tensor C = ops::matMul(g, A, B, prog, "C");
  g.createHostRead("c", C);
  l.plan = ops::planMatMul(g.getTarget(), FLOAT, FLOAT, as, bs);
  const auto t0 = Clock::now();
  l.engine = std::make_unique<Engine>(g, prog,
                                      OptionFlags{{"engine.hostThreads", "1"}});
  l.compileSeconds = tessera::bench::secondsSince(t0);
  l.engine->load(l.device);
  l.engine->writeTensor("a", a.data(), a.data() + a.size());
  l.engine->writeTensor("b", b.data(), b.data() + b.size());
  return l;
}

void sgemm(std::size_t m, std::size_t n, std::size_t k, const float *a,
           const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k),
              1.0f, a, int(k), b, int(n), 0.0f, c, int(n));
}

void BM_MatMul512Engine(benchmark::State &state) {
  openblas_set_num_threads(1);
  const auto a = values(kSize * kSize, 1), b = values(kSize * kSize, 2);
  Loaded l = buildEngine(a, b);
  std::vector<float> c(kSize * kSize), ref(kSize * kSize);
  l.engine->run(); // first touch of tile memory and scratch buffers
  l.engine->readTensor("c", c.data(), c.data() + c.size());
  sgemm(kSize, kSize, kSize, a.data(), b.data(), ref.data());
  const double error = maxDifference(c, ref);
  std::vector<double> engineMs, blasMs, engineCpu, blasCpu;
  for (auto _ : state) {
    const double c0 = processCpuSeconds();
    auto t0 = Clock::now();
    l.engine->run();
    const double e = tessera::bench::secondsSince(t0);
    const double c1 = processCpuSeconds();
    t0 = Clock::now();
    sgemm(kSize, kSize, kSize, a.data(), b.data(), ref.data());
    benchmark::DoNotOptimize(ref.data());
    const double p = tessera::bench::secondsSince(t0);
    const double c2 = processCpuSeconds();
    state.SetIterationTime(e);
    engineMs.push_back(e * 1e3);
    blasMs.push_back(p * 1e3);
    engineCpu.push_back(c1 - c0);
    blasCpu.push_back(c2 - c1);
  }
  const double ms = tessera::bench::median(engineMs);
  const double peer = tessera::bench::median(blasMs);
  const double ratio = peer / ms;
  // On a shared machine the wall clock also counts time spent waiting for
  // a core; the ratio of CPU times shows what a quiet machine would.
  const double cpuRatio =
      tessera::bench::median(blasCpu) / tessera::bench::median(engineCpu);
  const double gflops = 2.0 * kSize * kSize * kSize / (ms * 1e6);
  state.counters["engine_ms"] = ms;
  state.counters["openblas_ms"] = peer;
  state.counters["ratio_vs_openblas"] = ratio;
  state.counters["gflops"] = gflops;
  tessera::bench::addResult(
      "matmul512_fp32_1472tiles_vs_openblas",
      fixed(ratio, 2) + " engine_ms=" + fixed(ms, 2) + " openblas_ms=" +
          fixed(peer, 2) + " engine_gflops=" + fixed(gflops, 1) +
          " cpu_time_ratio=" + fixed(cpuRatio, 2) + " max_abs_error=" +
          fixed(error, 6) + " compile_s=" + fixed(l.compileSeconds, 2) +
          " plan=[" + l.plan.toString() + "] target>=0.5 " +
          tessera::bench::verdict(ratio >= 0.5));
}

BENCHMARK(BM_MatMul512Engine)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(60);

// The block kernel on the block shape the 512^3 plan gives each tile.
void BM_MatMulBlockKernel(benchmark::State &state) {
  openblas_set_num_threads(1);
  const ops::MatMulPlan plan = ops::planMatMul(
      Target::createIPUTarget(1), FLOAT, FLOAT, {kSize, kSize}, {kSize, kSize});
  const std::size_t m = plan.mBlock, k = plan.kBlock, n = plan.nBlock;
  const auto a = values(m * k, 3), b = values(k * n, 4);
  std::vector<float> c(m * n), ref(m * n);
  std::vector<const float *> aRows(m), bRows(k);
  for (std::size_t i = 0; i < m; ++i)
    aRows[i] = a.data() + i * k;
  for (std::size_t i = 0; i < k; ++i)
    bRows[i] = b.data() + i * n;
  // Enough calls per sample that the clock's resolution does not matter.
  const int calls = std::max(1, int(2e7 / double(m * n * k)));
  std::vector<double> oursUs, blasUs;
  for (auto _ : state) {
    auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i)
      ops::matmul::gemm(m, n, k, aRows.data(), bRows.data(), c.data(), n,
                        false);
    benchmark::DoNotOptimize(c.data());
    const double e = tessera::bench::secondsSince(t0) / calls;
    t0 = Clock::now();
    for (int i = 0; i < calls; ++i)
      sgemm(m, n, k, a.data(), b.data(), ref.data());
    benchmark::DoNotOptimize(ref.data());
    const double p = tessera::bench::secondsSince(t0) / calls;
    state.SetIterationTime(e);
    oursUs.push_back(e * 1e6);
    blasUs.push_back(p * 1e6);
  }
  const double us = tessera::bench::median(oursUs);
  const double peer = tessera::bench::median(blasUs);
  const double ratio = peer / us;
  state.counters["kernel_us"] = us;
  state.counters["openblas_us"] = peer;
  state.counters["ratio_vs_openblas"] = ratio;
  tessera::bench::addResult(
      "matmul_block_kernel_vs_openblas",
      fixed(ratio, 2) + " block=" + std::to_string(m) + "x" +
          std::to_string(k) + "x" + std::to_string(n) +
          " kernel_us=" + fixed(us, 3) + " openblas_us=" + fixed(peer, 3) +
          " kernel_gflops=" + fixed(2.0 * double(m * n * k) / (us * 1e3), 1) +
          " max_abs_error=" + fixed(maxDifference(c, ref), 6) +
          " target>=0.8 " + tessera::bench::verdict(ratio >= 0.8));
}

BENCHMARK(BM_MatMulBlockKernel)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);

// Estimated cycles of compiling an fp16 product on `target`.
std::uint64_t fp16Cycles(const Target &target, std::size_t s) {
  Graph g(target);
  ops::addCodelets(g);
  const OptionFlags half{{"partialsType", "half"}};
  const std::vector<std::size_t> shape{s, s};
  Tensor A = ops::createMatMulInputLHS(g, HALF, shape, shape, "A", half);
  Tensor B = ops::createMatMulInputRHS(g, HALF, shape, shape, "B", half);
  program::Sequence prog;
  ops::matMul(g, A, B, prog, "C", half);
  return compileGraph(g, {prog}).stepCyclesOnce();
}

void BM_MatMulFp16Estimate(benchmark::State &state) {
  constexpr std::size_t s = 1024;
  std::uint64_t full = 0, single = 0;
  double seconds = 0;
  const Target one = Target::createIPUTarget(
      1, "ipu2", {{"tilesPerIPU", "1"}, {"bytesPerTile", "67108864"}});
  for (auto _ : state) {
    const auto t0 = Clock::now();
    full = fp16Cycles(Target::createIPUTarget(1), s);
    seconds = tessera::bench::secondsSince(t0);
    single = fp16Cycles(one, s);
    state.SetIterationTime(seconds);
  }
  const double bound = double(s) * s * s / (64.0 * 1472);
  const double overBound = double(full) / bound;
  const double speedup = double(single) / double(full);
  const ops::MatMulPlan plan =
      ops::planMatMul(Target::createIPUTarget(1), HALF, HALF, {s, s}, {s, s},
                      {{"partialsType", "half"}});
  tessera::bench::addResult(
      "matmul_fp16_1024_cycles",
      std::to_string(full) + " bound=" + fixed(bound, 0) +
          " ratio_to_bound=" + fixed(overBound, 2) + " target<=2 " +
          tessera::bench::verdict(overBound <= 2.0) + " one_tile_cycles=" +
          std::to_string(single) + " speedup_vs_one_tile=" + fixed(speedup, 1) +
          " target>=100 " + tessera::bench::verdict(speedup >= 100) +
          " compile_s=" + fixed(seconds, 2) + " plan=[" + plan.toString() +
          "]");
}

BENCHMARK(BM_MatMulFp16Estimate)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

} // namespace

int main(int argc, char **argv) { return tessera::bench::runMain(argc, argv); }
