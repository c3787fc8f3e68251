// Gradient accumulation on the IPU Model: a session running micro-batches
// in a device loop ends with the weights the interpreter computes for the
// same accumulated steps, and a half accumulator stays close to them.
#include "tessera/passes/GradientAccumulation.hpp"
#include "tessera/session/Session.hpp"

#include "tessera/ir/Interpreter.hpp"
#include "tessera/passes/Optimizer.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace tessera;
using namespace tessera::session;
using data::HostTensor;

namespace {

constexpr std::size_t kMicro = 2, kIn = 3, kCount = 4, kSteps = 2 * kCount;

// loss = mean((x w + b - y)^2); with \p sharded, x w runs on IPU 0 and the
// rest on IPU 1.
ir::Module accumulatedLinear(const passes::GradientAccumulationOptions &o,
                             bool sharded = false) {
  ir::Module m("linear");
  ir::Builder b(m);
  ir::Value x = b.input("x", FLOAT, {kMicro, kIn});
  ir::Value y = b.input("y", FLOAT, {kMicro, 1});
  ir::Value w = b.variable("w", {kIn, 1}, ir::init::values({0.1, -0.2, 0.3}));
  ir::Value bias = b.variable("b", {1}, ir::init::zeros());
  ir::Value xw, loss;
  {
    ir::ShardScope s(b, 0);
    xw = matmul(x, w);
  }
  {
    ir::ShardScope s(b, sharded ? 1 : 0);
    loss = reduceMean(meanSquaredError(xw + bias, y));
  }
  b.output("loss", loss);
  passes::TrainingOptions t;
  t.optimizer = passes::SGD{0.1, 0.9};
  passes::makeTrainingStep(m, loss, t);
  passes::accumulateGradients(m, o);
  return m;
}

// kSteps micro-batches of y = 2 x0 - x1 + 0.5 x2 + 1.
std::pair<std::vector<float>, std::vector<float>> microBatches() {
  std::vector<float> xs, ys;
  for (std::size_t i = 0; i < kSteps * kMicro; ++i) {
    const float a = std::sin(float(i)), c = std::cos(float(i)),
                d = float(i % 7) / 7;
    xs.insert(xs.end(), {a, c, d});
    ys.push_back(2 * a - c + 0.5f * d + 1);
  }
  return {xs, ys};
}

// The variables after kSteps steps in a device loop.
Checkpoint trainOnDevice(const ir::Module &m, unsigned ipus = 1) {
  Config c;
  c.ipuModel.tilesPerIpu = 16;
  c.autoSelectIpus = ipus;
  Session s(m, c, {{"x", "y"}, {"loss"}, kSteps});
  s.compile();
  auto [xs, ys] = microBatches();
  Infeed in(data::Dataset::fromTensors(
      {HostTensor::fromValues<float>({kSteps, kMicro, kIn}, xs),
       HostTensor::fromValues<float>({kSteps, kMicro, 1}, ys)}));
  Outfeed out;
  s.connect(in, out);
  s.run();
  EXPECT_EQ(out.size(), kSteps);
  return s.readVariables();
}

// The same steps in the interpreter (double precision), by variable name.
ir::Feeds trainInterpreted(const ir::Module &m) {
  auto [xs, ys] = microBatches();
  ir::Feeds vars;
  for (std::size_t step = 0; step < kSteps; ++step) {
    ir::Feeds feeds = vars;
    feeds["x"] = {FLOAT,
                  {kMicro, kIn},
                  {xs.begin() + step * kMicro * kIn,
                   xs.begin() + (step + 1) * kMicro * kIn}};
    feeds["y"] = {
        FLOAT,
        {kMicro, 1},
        {ys.begin() + step * kMicro, ys.begin() + (step + 1) * kMicro}};
    const ir::Evaluation e = ir::interpret(m, feeds);
    vars = ir::variablesAfterRun(m, e, std::move(vars));
  }
  return vars;
}

void expectVariablesNear(const Checkpoint &device, const ir::Feeds &host,
                         double rel) {
  for (const auto &[name, tensor] : device.variables) {
    const HostTensor asFloat = tensor.cast(FLOAT);
    const auto got = asFloat.values<float>();
    const std::vector<double> &want = host.at(name).values;
    ASSERT_EQ(got.size(), want.size()) << name;
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], rel * (1 + std::abs(want[i])))
          << name << " element " << i;
  }
}

} // namespace

TEST(GradientAccumulationSession, DeviceLoopMatchesTheInterpreter) {
  const ir::Module m = accumulatedLinear({.count = kCount});
  const Checkpoint device = trainOnDevice(m);
  const ir::Feeds host = trainInterpreted(m);
  // Two applications moved w away from its start.
  EXPECT_GT(std::abs(host.at("w").values[0] - 0.1), 1e-3);
  expectVariablesNear(device, host, 1e-5);
}

TEST(GradientAccumulationSession, HalfAccumulatorsStayClose) {
  const ir::Module m = accumulatedLinear(
      {.count = kCount,
       .reduction = passes::AccumulationReduction::RUNNING_MEAN,
       .accumulatorType = HALF});
  const Checkpoint device = trainOnDevice(m);
  // The interpreter does not round halves: the device's half accumulators
  // differ from it by about half's precision, and from float ones.
  expectVariablesNear(device, trainInterpreted(m), 1e-3);
  const Checkpoint single = trainOnDevice(accumulatedLinear(
      {.count = kCount,
       .reduction = passes::AccumulationReduction::RUNNING_MEAN}));
  EXPECT_NE(device.variables[0].second, single.variables[0].second)
      << "half accumulators gave the float result exactly";
}

TEST(GradientAccumulationSession, ShardedAccumulatorsLiveWithTheirGradients) {
  const ir::Module m = accumulatedLinear({.count = kCount}, /*sharded=*/true);
  // w's gradient comes from the matmul's backward pass on IPU 0, b's from
  // IPU 1; their accumulators live there too.
  EXPECT_EQ(m.value(*m.findValue("w/accumulator")).ipu, 0u);
  EXPECT_EQ(m.value(*m.findValue("b/accumulator")).ipu, 1u);
  expectVariablesNear(trainOnDevice(m, 2), trainInterpreted(m), 1e-5);
}
