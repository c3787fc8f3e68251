// Replicated training: two replicas, each taking its own batches from the
// infeed and averaging gradients across replicas, take the same steps as
// one model trained on both batches at once.
#include "tessera/session/Session.hpp"

#include "tessera/ir/Interpreter.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/support/Error.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace tessera;
using namespace tessera::session;
using data::HostTensor;

namespace {

constexpr std::size_t kBatch = 4, kIn = 3, kElements = 10, kSteps = 5;

ir::Module linear(std::size_t batch, bool replicated) {
  ir::Module m("linear");
  ir::Builder b(m);
  ir::Value x = b.input("x", FLOAT, {batch, kIn});
  ir::Value y = b.input("y", FLOAT, {batch, 1});
  ir::Value w = b.variable("w", {kIn, 1}, ir::init::values({0.1, -0.2, 0.3}));
  ir::Value bias = b.variable("b", {1}, ir::init::zeros());
  ir::Value loss = reduceMean(meanSquaredError(matmul(x, w) + bias, y));
  b.output("loss", loss);
  passes::TrainingOptions o;
  o.optimizer = passes::SGD{0.1};
  o.crossReplicaMean = replicated;
  passes::makeTrainingStep(m, loss, o);
  return m;
}

// kElements batches of y = 2 x0 - x1 + 0.5 x2 + 1, row-major.
std::pair<std::vector<float>, std::vector<float>> batches() {
  std::vector<float> xs, ys;
  for (std::size_t i = 0; i < kElements * kBatch; ++i) {
    const float a = std::sin(float(i)), c = std::cos(float(3 * i)),
                d = float(i % 5) / 5;
    xs.insert(xs.end(), {a, c, d});
    ys.push_back(2 * a - c + 0.5f * d + 1);
  }
  return {xs, ys};
}

// One run of kSteps steps of two replicas of the linear model (on 8-tile
// IPUs) on the batches: every replica's losses, and the weights after.
struct ReplicatedRun {
  std::vector<data::Element> losses;
  Checkpoint weights;
};

ReplicatedRun trainReplicated(bool crossReplicaMean,
                              const std::vector<float> &xs,
                              const std::vector<float> &ys) {
  Config c;
  c.ipuModel.tilesPerIpu = 8;
  c.replicationFactor = 2;
  Session s(linear(kBatch, crossReplicaMean), c,
            {{"x", "y"}, {"loss"}, kSteps});
  s.compile();
  Infeed in(data::Dataset::fromTensors(
      {HostTensor::fromValues<float>({kElements, kBatch, kIn}, xs),
       HostTensor::fromValues<float>({kElements, kBatch, 1}, ys)}));
  Outfeed out;
  s.connect(in, out);
  s.run();
  return {out.dequeueAll(), s.readVariables()};
}

} // namespace

TEST(Replication, TwoReplicasStepAsOneModelOnBothBatches) {
  auto [xs, ys] = batches();
  const ReplicatedRun run = trainReplicated(true, xs, ys);
  // One element per replica per step, in replica order.
  const std::vector<data::Element> &losses = run.losses;
  ASSERT_EQ(losses.size(), 2 * kSteps);

  // Replica r of step k took element 2k + r: together, rows 8k .. 8k + 7.
  const ir::Module m = linear(2 * kBatch, false);
  ir::Feeds feeds;
  for (std::size_t k = 0; k < kSteps; ++k) {
    const std::size_t rows = 2 * kBatch;
    feeds["x"] = {FLOAT,
                  {rows, kIn},
                  std::vector<double>(xs.begin() + k * rows * kIn,
                                      xs.begin() + (k + 1) * rows * kIn)};
    feeds["y"] = {FLOAT,
                  {rows, 1},
                  std::vector<double>(ys.begin() + k * rows,
                                      ys.begin() + (k + 1) * rows)};
    const ir::Evaluation e = ir::interpret(m, feeds);
    const double want = e.output("loss").values[0];
    const double got = (losses[2 * k][0].values<float>()[0] +
                        losses[2 * k + 1][0].values<float>()[0]) /
                       2;
    EXPECT_NEAR(got, want, 1e-5 * std::abs(want) + 1e-6) << "step " << k;
    // The replicas' batches differ, so their own losses do too.
    EXPECT_NE(losses[2 * k][0].values<float>()[0],
              losses[2 * k + 1][0].values<float>()[0]);
    for (const auto &[var, next] : passes::variableUpdates(m))
      feeds[m.value(var).name] = e.at(next);
  }
  for (const auto &[name, t] : run.weights.variables)
    for (std::size_t i = 0; i < t.numElements(); ++i)
      EXPECT_NEAR(t.values<float>()[i], feeds.at(name).values[i], 1e-5)
          << name << "[" << i << "]";
}

TEST(Replication, WithoutCrossReplicaMeanReplicasDrift) {
  auto [xs, ys] = batches();
  const std::vector<data::Element> losses =
      trainReplicated(false, xs, ys).losses;
  // Each replica trained on its own batches only: replica 0's first step
  // matches a single model on element 0 alone.
  const ir::Module m = linear(kBatch, false);
  ir::Feeds feeds;
  feeds["x"] = {FLOAT, {kBatch, kIn},
                std::vector<double>(xs.begin(), xs.begin() + kBatch * kIn)};
  feeds["y"] = {FLOAT, {kBatch, 1},
                std::vector<double>(ys.begin(), ys.begin() + kBatch)};
  const double want = ir::interpret(m, feeds).output("loss").values[0];
  EXPECT_NEAR(losses[0][0].values<float>()[0], want, 1e-5);
}

TEST(Replication, ZeroReplicasIsAnError) {
  Config c;
  c.replicationFactor = 0;
  EXPECT_THROW(Session(linear(kBatch, true), c, {{"x", "y"}, {"loss"}, 1}),
               OptionError);
}
