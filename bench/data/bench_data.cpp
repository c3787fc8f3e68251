// bench_data: how fast the dataset pipeline feeds a training loop. Each
// benchmark drains one epoch of 60000 Fashion-MNIST-sized elements (float
// [784] image, int label) per iteration; the peer is a hand-written loop
// that builds the same batches with memcpy, the floor for any pipeline that
// produces batches in fresh buffers. The acceptance target is more than a
// million images per second for fromTensors + batch(32).
#include "BenchCommon.hpp"

#include "tessera/data/Benchmark.hpp"
#include "tessera/data/Dataset.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include <time.h>

namespace {

using namespace tessera;
using namespace tessera::data;
using tessera::bench::Clock;
using tessera::bench::fixed;

constexpr std::size_t kImages = 60000, kPixels = 784, kBatch = 32;
constexpr double kTargetImagesPerSecond = 1e6;

struct Source {
  HostTensor images{FLOAT, {kImages, kPixels}};
  HostTensor labels{INT, {kImages}};
  Source() {
    std::mt19937 rng(1);
    for (float &v : images.values<float>())
      v = float(rng() % 256) / 255.0f;
    for (int &v : labels.values<int>())
      v = int(rng() % 10);
  }
};

const Source &source() {
  static const Source s;
  return s;
}

// The peer: batches of rows copied in \p order into reused buffers.
[[gnu::noinline]] std::size_t copyBatches(const std::vector<std::size_t> &order,
                                          std::vector<float> &images,
                                          std::vector<int> &labels) {
  const float *in = source().images.values<float>().data();
  const int *lab = source().labels.values<int>().data();
  std::size_t batches = 0;
  for (std::size_t b = 0; b + kBatch <= order.size(); b += kBatch, ++batches) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      std::memcpy(images.data() + i * kPixels, in + order[b + i] * kPixels,
                  kPixels * sizeof(float));
      labels[i] = lab[order[b + i]];
    }
    benchmark::DoNotOptimize(images.data());
  }
  return batches;
}

// CPU seconds of the whole process, worker threads included.
double processCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Drains one epoch of \p ds per iteration, timing it against the peer on
// the same order. The machine is shared, so the RESULT line gives the ratio
// to the peer, which cancels most of the noise, and the images per second
// of CPU time next to the wall-clock rate.
void drainAgainstPeer(benchmark::State &state, const Dataset &ds,
                      const std::vector<std::size_t> &peerOrder,
                      const std::string &name, bool hasTarget) {
  std::vector<float> peerImages(kBatch * kPixels);
  std::vector<int> peerLabels(kBatch);
  std::vector<double> rates, cpuRates, peerRates;
  for (auto _ : state) {
    auto t0 = Clock::now();
    const double cpu0 = processCpuSeconds();
    Iterator it = ds.iterator();
    Element batch;
    std::size_t images = 0;
    while (it.next(batch))
      images += batch[0].dim(0);
    const double s = tessera::bench::secondsSince(t0);
    const double cpu = processCpuSeconds() - cpu0;
    t0 = Clock::now();
    const std::size_t peerBatches =
        copyBatches(peerOrder, peerImages, peerLabels);
    const double p = tessera::bench::secondsSince(t0);
    state.SetIterationTime(s);
    rates.push_back(double(images) / s);
    cpuRates.push_back(double(images) / cpu);
    peerRates.push_back(double(peerBatches * kBatch) / p);
  }
  const double rate = tessera::bench::median(rates);
  const double cpuRate = tessera::bench::median(cpuRates);
  const double peer = tessera::bench::median(peerRates);
  state.counters["images_per_s"] = rate;
  state.counters["images_per_cpu_s"] = cpuRate;
  state.counters["peer_images_per_s"] = peer;
  std::string text = fixed(rate / 1e6, 2) +
                     "M images/s per_cpu_second=" + fixed(cpuRate / 1e6, 2) +
                     "M peer_memcpy=" + fixed(peer / 1e6, 2) +
                     "M ratio_vs_peer=" + fixed(rate / peer, 2);
  if (hasTarget)
    text += " target>=" + fixed(kTargetImagesPerSecond / 1e6, 1) + "M " +
            tessera::bench::verdict(rate >= kTargetImagesPerSecond);
  else
    text += " (informative)";
  tessera::bench::addResult(name, text);
}

std::vector<std::size_t> inOrder() {
  std::vector<std::size_t> order(kImages);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

void BM_FromTensorsBatch(benchmark::State &state) {
  Dataset ds = Dataset::fromTensors({source().images, source().labels})
                   .batch(kBatch, true);
  drainAgainstPeer(state, ds, inOrder(), "from_tensors_batch32", true);
}

void BM_ShuffleBatchPrefetch(benchmark::State &state) {
  Dataset ds = Dataset::fromTensors({source().images, source().labels})
                   .shuffle(kImages, 7)
                   .batch(kBatch, true)
                   .prefetch(autotune);
  std::vector<std::size_t> order = inOrder();
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  drainAgainstPeer(state, ds, order, "shuffle_batch32_prefetch", false);
}

// A map doing a little arithmetic per pixel (a brightness change), on
// state.range(0) threads: per element, or per batch of 32 as the data
// performance guides advise for cheap functions.
Element brighten(Element e) {
  for (float &v : e[0].values<float>())
    v = std::min(1.0f, v * 1.1f);
  return e;
}

void BM_ParallelMapPerElement(benchmark::State &state) {
  const auto workers = static_cast<std::size_t>(state.range(0));
  Dataset ds = Dataset::fromTensors({source().images, source().labels})
                   .map(brighten, workers)
                   .batch(kBatch, true)
                   .prefetch(autotune);
  drainAgainstPeer(state, ds, inOrder(),
                   "map_per_element_" + std::to_string(workers) + "workers",
                   false);
}

void BM_ParallelMapPerBatch(benchmark::State &state) {
  const auto workers = static_cast<std::size_t>(state.range(0));
  Dataset ds = Dataset::fromTensors({source().images, source().labels})
                   .batch(kBatch, true)
                   .map(brighten, workers)
                   .prefetch(autotune);
  drainAgainstPeer(state, ds, inOrder(),
                   "map_per_batch_" + std::to_string(workers) + "workers",
                   false);
}

BENCHMARK(BM_FromTensorsBatch)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(15);
BENCHMARK(BM_ShuffleBatchPrefetch)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(8);
BENCHMARK(BM_ParallelMapPerElement)
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
BENCHMARK(BM_ParallelMapPerBatch)
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// datasetBenchmark's own figures for the training pipeline, as a user sees
// them.
void reportDatasetBenchmark() {
  Dataset ds = Dataset::fromTensors({source().images, source().labels})
                   .shuffle(kImages, 7)
                   .batch(kBatch, true)
                   .repeat()
                   .prefetch(autotune);
  nlohmann::json stats = datasetBenchmark(ds, 3, kImages / kBatch);
  std::vector<double> rates;
  for (const auto &epoch : stats["epochs"])
    rates.push_back(double(epoch["elements_per_second"]) * kBatch);
  tessera::bench::addResult("dataset_benchmark_shuffle_batch32",
                            fixed(tessera::bench::median(rates) / 1e6, 2) +
                                "M images/s (median of 3 epochs; informative)");
}

} // namespace

int main(int argc, char **argv) {
  reportDatasetBenchmark();
  return tessera::bench::runMain(argc, argv);
}
