// A three-layer MLP trained for 100 steps on the IPU Model from fixed
// initial weights and batches gives, step by step, the losses of the same
// training run computed on the host in double precision.
#include "tessera/session/Session.hpp"

#include "tessera/ir/Interpreter.hpp"
#include "tessera/passes/Optimizer.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace tessera;
using namespace tessera::session;
using data::HostTensor;

namespace {

constexpr std::size_t kBatch = 8, kIn = 20, kHidden = 32, kClasses = 10;
constexpr std::size_t kBatches = 10, kSteps = 100, kStepsPerRun = 25;

ir::Module mlp() {
  ir::Module m("mlp3");
  ir::Builder b(m);
  ir::Value x = b.input("x", FLOAT, {kBatch, kIn});
  ir::Value labels = b.input("labels", INT, {kBatch});
  ir::Value w1 = b.variable("w1", {kIn, kHidden}, ir::init::glorotUniform(1));
  ir::Value b1 = b.variable("b1", {kHidden}, ir::init::zeros());
  ir::Value w2 =
      b.variable("w2", {kHidden, kHidden}, ir::init::glorotUniform(2));
  ir::Value b2 = b.variable("b2", {kHidden}, ir::init::zeros());
  ir::Value w3 =
      b.variable("w3", {kHidden, kClasses}, ir::init::glorotUniform(3));
  ir::Value b3 = b.variable("b3", {kClasses}, ir::init::zeros());
  ir::Value h = relu(matmul(x, w1) + b1);
  h = relu(matmul(h, w2) + b2);
  ir::Value loss =
      reduceMean(sparseSoftmaxCrossEntropy(matmul(h, w3) + b3, labels));
  b.output("loss", loss);
  passes::TrainingOptions o;
  o.optimizer = passes::SGD{0.05, 0.9};
  passes::makeTrainingStep(m, loss, o);
  return m;
}

// Inputs in [-1, 1] whose class is a function of them, so the loss falls.
struct Batches {
  std::vector<float> x;
  std::vector<int> labels;
};

Batches batches() {
  Batches d;
  for (std::size_t i = 0; i < kBatches * kBatch; ++i) {
    double sum = 0;
    for (std::size_t j = 0; j < kIn; ++j) {
      const float v = float(std::sin(0.37 * double(i * kIn + j) + 0.1 * j));
      d.x.push_back(v);
      sum += v * double(j % 3);
    }
    d.labels.push_back(int(std::abs(std::floor(sum * 3))) % int(kClasses));
  }
  return d;
}

} // namespace

TEST(MlpReference, HundredDeviceStepsMatchTheFloat64HostReference) {
  const Batches d = batches();
  Config config;
  config.ipuModel.tilesPerIpu = 16;
  Session s(mlp(), config, {{"x", "labels"}, {"loss"}, kStepsPerRun});
  s.compile();
  Infeed in(data::Dataset::fromTensors(
                {HostTensor::fromValues<float>({kBatches, kBatch, kIn}, d.x),
                 HostTensor::fromValues<int>({kBatches, kBatch}, d.labels)})
                .repeat());
  Outfeed out;
  s.connect(in, out);
  for (std::size_t r = 0; r < kSteps / kStepsPerRun; ++r)
    s.run();
  const std::vector<data::Element> losses = out.dequeueAll();
  ASSERT_EQ(losses.size(), kSteps);

  const ir::Module m = mlp();
  ir::Feeds feeds;
  for (std::size_t step = 0; step < kSteps; ++step) {
    const std::size_t k = step % kBatches;
    feeds["x"] = {FLOAT,
                  {kBatch, kIn},
                  std::vector<double>(d.x.begin() + k * kBatch * kIn,
                                      d.x.begin() + (k + 1) * kBatch * kIn)};
    feeds["labels"] = {INT,
                       {kBatch},
                       std::vector<double>(d.labels.begin() + k * kBatch,
                                           d.labels.begin() + (k + 1) * kBatch)};
    const ir::Evaluation e = ir::interpret(m, feeds);
    const double want = e.output("loss").values[0];
    const double got = losses[step][0].values<float>()[0];
    ASSERT_LE(std::abs(got - want), 1e-4 * std::abs(want))
        << "step " << step << ": device " << got << ", float64 " << want;
    for (const auto &[var, next] : passes::variableUpdates(m))
      feeds[m.value(var).name] = e.at(next);
  }
  // The run learned something, so the comparison covered real updates.
  EXPECT_LT(losses.back()[0].values<float>()[0],
            0.7 * losses.front()[0].values<float>()[0]);
}
