// The acceptance case of pipelining: an MLP of four wide float32 layers,
// trained with Adam, does not fit one IPU (its weights and their two Adam
// moments alone are 86% of the IPU's memory, and the gradients come on
// top): compiling it for one IPU fails with the out-of-memory error naming
// a tile. Pipelined over 4 IPUs, one wide layer per IPU, it compiles and
// trains.
//
// Scaled down 16 times to run in seconds: 1024-wide layers on IPUs of 92
// tiles (1472 / 16) have the same weights-to-memory ratio as 4096-wide
// layers on full ipu2s (kWidth = 4096 and kTiles = 1472 pass too, in 50 s
// and 7.7 GB of host memory).
#include "tessera/nn/Model.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

using namespace tessera::nn;
namespace data = tessera::data;
namespace passes = tessera::passes;
using data::HostTensor;

namespace {

constexpr std::size_t kWidth = 1024, kTiles = 92, kClasses = 10, kBatch = 2,
                      kMicro = 4;

Sequential wideMlp() {
  return Sequential({Input({kWidth}), Dense(kWidth, "relu"),
                     Dense(kWidth, "relu"), Dense(kWidth, "relu"),
                     Dense(kWidth, "relu"), Dense(kClasses)},
                    "wide", 3);
}

CompileOptions onIpus(unsigned ipus) {
  CompileOptions o;
  o.optimizer = passes::Adam{1e-4};
  o.fromLogits = true;
  o.stepsPerExecution = kMicro;
  o.config.autoSelectIpus = ipus;
  o.config.ipuModel.tilesPerIpu = kTiles; // of 624 KiB each
  return o;
}

data::Dataset examples() {
  const std::size_t n = kBatch * kMicro;
  std::vector<float> xs(n * kWidth);
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = float(std::sin(0.013 * double(i)));
  std::vector<int> ys(n);
  for (std::size_t i = 0; i < n; ++i)
    ys[i] = int(i % kClasses);
  return data::Dataset::fromTensors(
             {HostTensor::fromValues<float>({n, kWidth}, xs),
              HostTensor::fromValues<int>({n}, ys)})
      .batch(kBatch, true);
}

std::vector<float> firstKernel(Model &m) {
  const tessera::session::Checkpoint w = m.getWeights();
  const auto v = w.variables[0].second.values<float>();
  return {v.begin(), v.end()};
}

FitOptions quiet() {
  FitOptions f;
  f.verbose = Verbosity::Silent;
  return f;
}

} // namespace

TEST(TooLargeForOneIpu, FailsOnOneIpuNamingATileAndTrainsPipelinedOverFour) {
  Sequential one = wideMlp();
  one.compile(onIpus(1));
  std::string error = "no out-of-memory error";
  try {
    one.prepareTraining(examples().spec());
  } catch (const tessera::MemoryError &e) {
    error = e.what();
  }
  EXPECT_TRUE(std::regex_search(
      error, std::regex("^out of memory on tile [0-9]+ \\(IPU 0\\): it needs "
                        "[0-9]+ bytes but a tile has 638976")))
      << error;

  Sequential four = wideMlp();
  four.setPipelineStageAssignment({0, 1, 2, 3, 3});
  PipeliningOptions p;
  p.accumulation.count = kMicro;
  four.setPipeliningOptions(p);
  four.compile(onIpus(4));
  // The training session, compiled once; fit() then reuses it.
  four.prepareTraining(examples().spec());
  const std::vector<float> before = firstKernel(four);
  const History h = four.fit(examples(), quiet());
  const double loss = logValue(h.epochs[0], "loss");
  EXPECT_TRUE(std::isfinite(loss)) << loss;
  EXPECT_NE(firstKernel(four), before)
      << "one weight update after the 4 micro-batches";
  const FitStats &stats = four.lastFitStats();
  ASSERT_EQ(stats.memoryPerIpu.size(), 4u);
  for (const FitStats::IpuMemory &m : stats.memoryPerIpu)
    EXPECT_LE(m.peakTileBytes, 638976u);
}
