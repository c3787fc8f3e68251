// What tensor inspection costs the host: wall time per training step of
// fit() on the tensor-inspection tutorial's two-stage model
// (examples/keras/pipelining_inspection, pipelined over 2 IPUs, gradient
// accumulation 4, batch 32) with its outfeeds (MaybeOutfeed layers of both
// Dense layers' activations, the accumulated gradients of Dense_128) and
// two OutfeedCallbacks printing their statistics after each epoch, against
// the same model without them. Each is timed over whole fit() calls after
// a warm-up fit that compiles, alternating, best of 5.
//
// Prints RESULT inspection_overhead (target <= 1.2).
#include "Models.hpp"

#include "tessera/data/Dataset.hpp"
#include "tessera/nn/OutfeedCallback.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ostream>
#include <random>
#include <streambuf>

namespace nn = tessera::nn;
namespace data = tessera::data;
using namespace pipelining_inspection;

namespace {

constexpr std::size_t kSteps = 64, kBatch = 32;
constexpr unsigned kEpochs = 2, kAccumulation = 4;

// Fashion-MNIST-shaped examples: the timing does not depend on the pixels.
data::Dataset examples() {
  const std::size_t n = kSteps * kBatch;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> xs(n * 784);
  std::vector<int> ys(n);
  for (float &x : xs)
    x = pixel(gen);
  for (std::size_t i = 0; i < n; ++i)
    ys[i] = int(gen() % 10);
  return data::Dataset::fromTensors(
             {data::HostTensor::fromValues<float>({n, 28, 28, 1}, xs),
              data::HostTensor::fromValues<int>({n}, ys)})
      .batch(kBatch, true);
}

// Discards what the callbacks print (formatting it still counts).
struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};

// One of the two models, compiled by a first fit, timed by later ones.
struct Run {
  Queues q;
  NullBuffer nothing;
  std::ostream out{&nothing};
  std::unique_ptr<nn::Model> model;
  nn::FitOptions fit;
  data::Dataset train = examples();

  explicit Run(bool inspect) {
    if (inspect) {
      model = createModel(ModelType::Sequential, true, true, q, kAccumulation);
    } else {
      // The same layers but the MaybeOutfeed ones.
      std::vector<nn::LayerRef> all{nn::Input({28, 28, 1})};
      for (const nn::LayerRef &l : layers(true, q))
        if (!dynamic_cast<const nn::OutfeedLayer *>(l.get().get()))
          all.push_back(l);
      model = std::make_unique<nn::Sequential>(all, "sequential", 1);
      model->setPipelineStageAssignment({0, 0, 1, 1});
      nn::PipeliningOptions p;
      p.accumulation.count = kAccumulation;
      model->setPipeliningOptions(p);
    }
    nn::CompileOptions c;
    c.optimizer = tessera::passes::SGD{0.05};
    c.stepsPerExecution = kSteps;
    c.config.autoSelectIpus = 2;
    if (inspect)
      c.gradientOutfeed = {q.gradients, nn::GradientOutfeedMode::Accumulated};
    model->compile(c);
    fit.epochs = kEpochs;
    fit.verbose = nn::Verbosity::Silent;
    if (inspect) {
      nn::OutfeedCallbackOptions o;
      o.out = &out;
      o.name = "Gradients callback";
      fit.callbacks.push_back(
          std::make_shared<nn::OutfeedCallback>(q.gradients, o));
      o.name = "Multi-layer activations callback";
      fit.callbacks.push_back(
          std::make_shared<nn::OutfeedCallback>(q.multiActivations, o));
    }
    model->fit(train, fit); // compiles
  }

  double secondsPerStep() {
    const auto t0 = std::chrono::steady_clock::now();
    model->fit(train, fit);
    const std::chrono::duration<double> dt =
        std::chrono::steady_clock::now() - t0;
    return dt.count() / double(kSteps * kEpochs);
  }
};

} // namespace

int main() {
  try {
    // Alternating, best of 5 each: the machine's load changes both alike.
    Run without(false), with(true);
    double plain = 1e30, inspected = 1e30;
    for (int r = 0; r < 5; ++r) {
      plain = std::min(plain, without.secondsPerStep());
      inspected = std::min(inspected, with.secondsPerStep());
    }
    const double ratio = inspected / plain;
    std::printf("host time per step: without inspection %.3f ms, with "
                "outfeed layers, gradient outfeed and callbacks %.3f ms\n",
                plain * 1e3, inspected * 1e3);
    const bool ok = ratio <= 1.2;
    std::printf("RESULT inspection_overhead ratio=%.3f target=<=1.20 %s\n",
                ratio, ok ? "OK" : "MISS");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_inspection: %s\n", e.what());
    return 1;
  }
}
