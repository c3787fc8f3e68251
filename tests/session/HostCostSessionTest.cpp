// The host side of a session's runs: one step per execution pays a run's
// round trip every step, which device time alone does not show.
#include "tessera/session/Session.hpp"

#include "tessera/device/HostCost.hpp"
#include "tessera/passes/Optimizer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace tessera;
using namespace tessera::session;
using data::HostTensor;

namespace {

constexpr std::size_t kBatch = 4, kIn = 3, kSteps = 100;

// loss = mse(x w, y), trained by SGD.
ir::Module linearModel() {
  ir::Module m("linear");
  ir::Builder b(m);
  ir::Value x = b.input("x", FLOAT, {kBatch, kIn});
  ir::Value y = b.input("y", FLOAT, {kBatch, 1});
  ir::Value w = b.variable("w", {kIn, 1}, ir::init::values({0.1, -0.2, 0.3}));
  ir::Value loss = meanSquaredError(matmul(x, w), y);
  b.output("loss", loss);
  passes::TrainingOptions o;
  o.optimizer = passes::SGD{0.05, 0};
  passes::makeTrainingStep(m, loss, o);
  return m;
}

data::Dataset dataset() {
  std::vector<float> xs(kBatch * kIn), ys(kBatch);
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = std::sin(float(i));
  for (std::size_t i = 0; i < ys.size(); ++i)
    ys[i] = std::cos(float(i));
  return data::Dataset::fromTensors(
             {HostTensor::fromValues<float>({1, kBatch, kIn}, xs),
              HostTensor::fromValues<float>({1, kBatch, 1}, ys)})
      .repeat();
}

struct PerStep {
  double device = 0, hostInclusive = 0;
  HostCycles host; // of one run
};

// kSteps steps in runs of stepsPerExecution steps.
PerStep train(unsigned stepsPerExecution) {
  Config c;
  c.ipuModel.tilesPerIpu = 16;
  Session s(linearModel(), c, {{"x", "y"}, {"loss"}, stepsPerExecution});
  s.compile();
  Infeed in(dataset());
  Outfeed out;
  s.connect(in, out);
  for (std::size_t r = 0; r < kSteps / stepsPerExecution; ++r)
    s.run();
  return {double(s.estimatedCyclesPerRun()) / stepsPerExecution,
          double(s.estimatedHostInclusiveCyclesPerRun()) / stepsPerExecution,
          s.estimatedHostCyclesPerRun()};
}

} // namespace

TEST(SessionHostCost, OneStepPerExecutionPaysTheRunRoundTripEveryStep) {
  const PerStep one = train(1), hundred = train(100);
  // The device program per step is the same (but for the loop's control
  // step, a few cycles).
  EXPECT_NEAR(one.device, hundred.device, 0.002 * hundred.device);
  // A run's fixed host cost: its round trip and one set-up per stream (x,
  // y and loss). Callbacks are per step, the same in both.
  const CostFigures costs;
  const double clock = 1.33e9;
  const double perRun =
      (costs.hostRunMicroseconds + 3 * costs.hostStreamSetupMicroseconds) *
      1e-6 * clock;
  EXPECT_NEAR(double(one.host.runs + one.host.streamSetups), perRun, 1);
  EXPECT_NEAR(double(hundred.host.runs + hundred.host.streamSetups), perRun, 1);
  EXPECT_EQ(one.host.callbacks * 100, hundred.host.callbacks);
  const double expected = perRun * (1 - 1.0 / 100);
  EXPECT_NEAR(one.hostInclusive - hundred.hostInclusive, expected,
              2 + std::abs(one.device - hundred.device));
  EXPECT_GT(one.hostInclusive - one.device,
            hundred.hostInclusive - hundred.device);
}
