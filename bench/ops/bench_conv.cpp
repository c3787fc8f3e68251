// bench_conv: the convolution acceptance figure and the figures around it,
// each against a peer measured in the same iterations (interleaved,
// medians):
// - fp32 convolution 3x3, 64 -> 64 channels, 32x32, batch 8, padding 1, on
//   a full ipu2 target (1472 tiles), engine on one host thread, timing
//   engine.run() of the compiled program (operands laid out by createInput
//   and createWeights): target >= 0.4x an im2col + OpenBLAS sgemm baseline
//   on one thread (im2col of each batch entry, then one sgemm per entry).
// - the same convolution on a one-tile target (with enough memory): the
//   vertex's host kernel with no exchange, against the same baseline.
// - the weight gradient of that convolution on the full target, against
//   im2col + sgemm of dOut x im2col^T; and the same for the CNN's second
//   convolution (32 -> 64 channels, 13x13, batch 32), whose plan gives
//   each tile a few output channels.
// - the estimated cycles of the forward pass against the AMP bound MACs /
//   (16 x 1472).
#include "BenchCommon.hpp"

#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/ops/Conv.hpp"

#include <cblas.h>

#include <cmath>
#include <ctime>
#include <memory>
#include <vector>

namespace {

using tessera::bench::processCpuSeconds;
using tessera::bench::values;

using namespace tessera;
using tessera::bench::Clock;
using tessera::bench::fixed;

ops::ConvParams benchParams() {
  ops::ConvParams p(FLOAT, 8, {32, 32}, {3, 3}, 64, 64);
  p.paddingLower = p.paddingUpper = {1, 1};
  return p;
}

// The second convolution of `tessera train --model cnn` (Keras' Conv2D(64,
// 3) on 13x13x32 maps, batch 32, no padding): a weight-gradient plan that
// gives each tile a few output channels.
ops::ConvParams cnnParams() {
  return ops::ConvParams(FLOAT, 32, {13, 13}, {3, 3}, 32, 64);
}

std::size_t product(const std::vector<std::size_t> &s) {
  std::size_t n = 1;
  for (std::size_t d : s)
    n *= d;
  return n;
}

struct Loaded {
  Device device;
  std::unique_ptr<Engine> engine;
  double compileSeconds = 0;
  std::uint64_t cycles = 0;
};

// Forward (and, when weightGrad, the weight gradient from "dy") of p on a
// model of `tiles` tiles.
Loaded buildEngine(const ops::ConvParams &p, unsigned tiles, bool weightGrad,
                   const std::vector<float> &x, const std::vector<float> &w,
                   const std::vector<float> &dy) {
  Loaded l;
  IPUModel model("ipu2");
  model.tilesPerIPU = tiles;
  // One tile measures the kernel alone: give it room for the whole problem.
  if (tiles == 1)
    model.memoryBytesPerTile = 64 << 20;
  l.device = model.createDevice();
  Graph g(l.device.getTarget());
  ops::addCodelets(g);
  Tensor in = ops::createInput(g, p, "in");
  Tensor weights = ops::createWeights(g, p, "weights");
  g.createHostWrite("x", in);
  g.createHostWrite("w", weights);
  program::Sequence prog;
  if (weightGrad) {
    Tensor deltas = g.addVariable(FLOAT, p.getOutputShape(), "deltas");
    mapTensorLinearly(g, deltas);
    g.createHostWrite("dy", deltas);
    g.createHostRead(
        "out", ops::convolutionWeightGradient(g, deltas, in, p, prog, "dw"));
  } else {
    g.createHostRead("out",
                     ops::convolution(g, in, weights, p, false, prog, "conv"));
  }
  const auto t0 = Clock::now();
  l.engine = std::make_unique<Engine>(g, prog,
                                      OptionFlags{{"engine.hostThreads", "1"}});
  l.compileSeconds = tessera::bench::secondsSince(t0);
  l.engine->load(l.device);
  l.engine->writeTensor("x", x.data(), x.data() + x.size());
  l.engine->writeTensor("w", w.data(), w.data() + w.size());
  if (weightGrad)
    l.engine->writeTensor("dy", dy.data(), dy.data() + dy.size());
  l.engine->run();
  for (std::uint64_t c : l.engine->getCycleCounts())
    l.cycles += c;
  return l;
}

// The baseline's im2col: col[(ci, kh, kw)][oh * W' + ow] of one entry.
void im2col(const ops::ConvParams &p, const float *x, float *col) {
  const std::size_t C = p.inputChannelsPerConvGroup, H = p.inputFieldShape[0],
                    W = p.inputFieldShape[1], kH = p.kernelShape[0],
                    kW = p.kernelShape[1];
  const std::size_t oH = p.getOutputSize(0), oW = p.getOutputSize(1);
  const long pl = p.paddingLower[0], pw = p.paddingLower[1];
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t kh = 0; kh < kH; ++kh)
      for (std::size_t kw = 0; kw < kW; ++kw) {
        float *row = col + ((c * kH + kh) * kW + kw) * oH * oW;
        for (std::size_t oh = 0; oh < oH; ++oh) {
          const long ih = long(oh + kh) - pl;
          float *dst = row + oh * oW;
          if (ih < 0 || ih >= long(H)) {
            std::fill(dst, dst + oW, 0.0f);
            continue;
          }
          const float *src = x + (c * H + std::size_t(ih)) * W;
          for (std::size_t ow = 0; ow < oW; ++ow) {
            const long iw = long(ow + kw) - pw;
            dst[ow] = iw >= 0 && iw < long(W) ? src[iw] : 0.0f;
          }
        }
      }
}

// The peer: im2col + sgemm per batch entry (forward), or im2col + one
// accumulating sgemm per entry (weight gradient).
void baseline(const ops::ConvParams &p, bool weightGrad, const float *x,
              const float *w, const float *dy, float *out,
              std::vector<float> &col) {
  const std::size_t Cin = p.inputChannelsPerConvGroup,
                    Cout = p.outputChannelsPerConvGroup;
  const std::size_t K = Cin * p.kernelShape[0] * p.kernelShape[1];
  const std::size_t P = p.getOutputSize(0) * p.getOutputSize(1);
  const std::size_t inSize = Cin * p.inputFieldShape[0] * p.inputFieldShape[1];
  for (std::size_t n = 0; n < p.batchSize; ++n) {
    im2col(p, x + n * inSize, col.data());
    if (weightGrad)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(Cout), int(K),
                  int(P), 1.0f, dy + n * Cout * P, int(P), col.data(), int(P),
                  n ? 1.0f : 0.0f, out, int(K));
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(Cout), int(P),
                  int(K), 1.0f, w, int(K), col.data(), int(P), 0.0f,
                  out + n * Cout * P, int(P));
  }
}

void runComparison(benchmark::State &state, const ops::ConvParams &p,
                   unsigned tiles, bool weightGrad, const std::string &name,
                   double target) {
  openblas_set_num_threads(1);
  const auto x = values(product(p.getInputShape()), 1);
  const auto w = values(product(p.getWeightsShape()), 2);
  const auto dy = values(product(p.getOutputShape()), 3);
  Loaded l = buildEngine(p, tiles, weightGrad, x, w, dy);
  const std::size_t outElems =
      weightGrad ? product(p.getWeightsShape()) : product(p.getOutputShape());
  std::vector<float> got(outElems), ref(outElems);
  std::vector<float> col(p.inputChannelsPerConvGroup * 9 * p.getOutputSize(0) *
                         p.getOutputSize(1));
  l.engine->readTensor("out", got.data(), got.data() + got.size());
  baseline(p, weightGrad, x.data(), w.data(), dy.data(), ref.data(), col);
  double error = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    error = std::max(error, double(std::fabs(got[i] - ref[i])));
  std::vector<double> engineMs, peerMs, engineCpu, peerCpu;
  for (auto _ : state) {
    const double c0 = processCpuSeconds();
    auto t0 = Clock::now();
    l.engine->run();
    const double e = tessera::bench::secondsSince(t0);
    const double c1 = processCpuSeconds();
    t0 = Clock::now();
    baseline(p, weightGrad, x.data(), w.data(), dy.data(), ref.data(), col);
    benchmark::DoNotOptimize(ref.data());
    const double q = tessera::bench::secondsSince(t0);
    const double c2 = processCpuSeconds();
    state.SetIterationTime(e);
    engineMs.push_back(e * 1e3);
    peerMs.push_back(q * 1e3);
    engineCpu.push_back(c1 - c0);
    peerCpu.push_back(c2 - c1);
  }
  const double ms = tessera::bench::median(engineMs);
  const double peer = tessera::bench::median(peerMs);
  const double ratio = peer / ms;
  // On a shared machine the wall clock also counts time spent waiting for
  // a core; the ratio of CPU times shows what a quiet machine would.
  const double cpuRatio =
      tessera::bench::median(peerCpu) / tessera::bench::median(engineCpu);
  const double gflops = 2.0 * double(p.getNumMacs()) / (ms * 1e6);
  state.counters["engine_ms"] = ms;
  state.counters["im2col_openblas_ms"] = peer;
  state.counters["ratio"] = ratio;
  state.counters["gflops"] = gflops;
  std::string text = fixed(ratio, 2) + " engine_ms=" + fixed(ms, 2) +
                     " im2col_openblas_ms=" + fixed(peer, 2) +
                     " engine_gflops=" + fixed(gflops, 1) +
                     " cpu_time_ratio=" + fixed(cpuRatio, 2) +
                     " max_abs_error=" + fixed(error, 6) +
                     " compile_s=" + fixed(l.compileSeconds, 2) +
                     " tiles=" + std::to_string(tiles) +
                     " est_cycles=" + std::to_string(l.cycles);
  if (target > 0)
    text += " target>=" + fixed(target, 1) + " " +
            tessera::bench::verdict(ratio >= target);
  tessera::bench::addResult(name, text);
  if (!weightGrad && tiles > 1) {
    // The AMP bound: every tile's MAC unit busy for the whole forward pass.
    const double bound = double(p.getNumMacs()) / (16.0 * tiles);
    tessera::bench::addResult("conv3x3_64ch_32x32_b8_estimate_vs_amp_bound",
                              fixed(double(l.cycles) / bound, 2) +
                                  " est_cycles=" + std::to_string(l.cycles) +
                                  " bound_cycles=" + fixed(bound, 0));
  }
}

void BM_Conv3x3Engine1472Tiles(benchmark::State &state) {
  runComparison(state, benchParams(), 1472, false,
                "conv3x3_64ch_32x32_b8_fp32_1472tiles_vs_im2col_openblas", 0.4);
}
BENCHMARK(BM_Conv3x3Engine1472Tiles)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

void BM_Conv3x3Engine1Tile(benchmark::State &state) {
  runComparison(state, benchParams(), 1, false,
                "conv3x3_64ch_32x32_b8_fp32_1tile_vs_im2col_openblas", 0);
}
BENCHMARK(BM_Conv3x3Engine1Tile)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

void BM_Conv3x3WeightGrad1472Tiles(benchmark::State &state) {
  runComparison(state, benchParams(), 1472, true,
                "conv3x3_64ch_32x32_b8_weightgrad_1472tiles_vs_im2col_openblas",
                0);
}
BENCHMARK(BM_Conv3x3WeightGrad1472Tiles)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

void BM_CnnConv2WeightGrad1472Tiles(benchmark::State &state) {
  runComparison(state, cnnParams(), 1472, true,
                "cnn_conv2_32to64ch_13x13_b32_weightgrad_1472tiles_vs_im2col_"
                "openblas",
                0);
}
BENCHMARK(BM_CnnConv2WeightGrad1472Tiles)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

} // namespace

int main(int argc, char **argv) { return tessera::bench::runMain(argc, argv); }
