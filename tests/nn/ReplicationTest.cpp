// Data parallelism in one process: replicas average their gradients, so
// they stay identical and take the step one replica takes on their
// combined batch.
#include "tessera/nn/Model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace tessera::nn;
namespace data = tessera::data;
namespace passes = tessera::passes;
namespace session = tessera::session;
using data::HostTensor;

namespace {

constexpr std::size_t kExamples = 64, kFeatures = 8;

data::Dataset examples() {
  std::vector<float> xs;
  std::vector<int> ys;
  for (std::size_t i = 0; i < kExamples; ++i) {
    const int label = int(i % 3 == 0);
    for (std::size_t f = 0; f < kFeatures; ++f)
      xs.push_back((label ? 0.8f : -0.6f) +
                   0.5f * std::sin(float(i * 11 + f * 5)));
    ys.push_back(label);
  }
  return data::Dataset::fromTensors(
      {HostTensor::fromValues<float>({kExamples, kFeatures}, xs),
       HostTensor::fromValues<int>({kExamples}, ys)});
}

Sequential model() {
  return Sequential(
      {Input({kFeatures}), Dense(16, "relu"), Dense(2, "softmax")},
      "replicated", 7);
}

CompileOptions options(unsigned replicas) {
  CompileOptions o;
  o.optimizer = passes::SGD{0.1};
  o.stepsPerExecution = 2;
  o.config.ipuModel.tilesPerIpu = 16;
  o.config.replicationFactor = replicas;
  return o;
}

// Trains on every example once: `replicas` replicas of batch `batch`.
Sequential trained(unsigned replicas, std::size_t batch) {
  Sequential m = model();
  m.compile(options(replicas));
  FitOptions f;
  f.verbose = Verbosity::Silent;
  m.fit(examples().batch(batch, true), f);
  return m;
}

float maxDifference(const session::Checkpoint &a,
                    const session::Checkpoint &b) {
  EXPECT_EQ(a.variables.size(), b.variables.size());
  float worst = 0;
  for (std::size_t v = 0; v < a.variables.size(); ++v) {
    const HostTensor &x = a.variables[v].second, &y = b.variables[v].second;
    EXPECT_EQ(x.numElements(), y.numElements());
    for (std::size_t i = 0; i < x.numElements(); ++i)
      worst = std::max(worst,
                       std::abs(x.values<float>()[i] - y.values<float>()[i]));
  }
  return worst;
}

} // namespace

TEST(Replication, ReplicasStayIdenticalAndMatchOneReplicaOnTheCombinedBatch) {
  Sequential two = trained(2, 8);
  Sequential one = trained(1, 16);
  const session::Checkpoint r0 = two.getReplicaWeights(0);
  const session::Checkpoint r1 = two.getReplicaWeights(1);
  EXPECT_EQ(maxDifference(r0, r1), 0.0f);
  EXPECT_LT(maxDifference(r0, one.getWeights()), 1e-5f);
  // The steps moved the weights: equality is not both standing still.
  Sequential fresh = model();
  fresh.compile(options(1));
  EXPECT_GT(maxDifference(r0, fresh.getWeights()), 1e-3f);
}

TEST(Replication, AReplicaThatDoesNotExistIsAnError) {
  Sequential two = trained(2, 8);
  EXPECT_THROW(two.getReplicaWeights(2), tessera::StreamError);
}

TEST(Replication, ReplicasAgreeOnSkippingAnOverflowingStep) {
  // Half layers and a scale that overflows at first: the replicas average
  // their gradients before the overflow check, so they skip the same steps
  // and keep the same weights and scale.
  setGlobalPolicy("mixed_float16");
  Sequential m = model();
  setGlobalPolicy("float32");
  CompileOptions o = options(2);
  o.lossScale = LossScaleOptions{true, std::ldexp(1.0, 24), 2000};
  m.compile(o);
  FitOptions f;
  f.verbose = Verbosity::Silent;
  f.epochs = 8;
  m.fit(examples().batch(8, true), f);
  const session::Checkpoint r0 = m.getReplicaWeights(0);
  const session::Checkpoint r1 = m.getReplicaWeights(1);
  EXPECT_EQ(maxDifference(r0, r1), 0.0f);
  EXPECT_LT(m.lossScale(), std::ldexp(1.0, 24)) << m.lossScale();
  // Training went on after the skipped steps.
  Sequential fresh = model();
  fresh.compile(options(1));
  const session::Checkpoint start = fresh.getWeights();
  EXPECT_EQ(start.variables[0].first, r0.variables[0].first);
  const auto a = r0.variables[0].second.values<float>();
  const auto b = start.variables[0].second.values<float>();
  EXPECT_FALSE(std::equal(a.begin(), a.end(), b.begin()));
}
