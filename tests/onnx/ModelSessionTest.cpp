// ModelBuilder writes ONNX models; ModelSession runs them on the IPU Model
// with PopART's data flow (anchors) and trains them.
#include "tessera/onnx/ModelSession.hpp"
#include "tessera/onnx/ModelBuilder.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>

using namespace tessera;
namespace tx = tessera::onnx;
using ::testing::HasSubstr;

namespace {

tx::ModelSessionOptions smallIpu() {
  tx::ModelSessionOptions o;
  o.config.ipuModel.tilesPerIpu = 4;
  return o;
}

std::vector<float> floats(const data::HostTensor &t) {
  const auto *p = static_cast<const float *>(t.data());
  return {p, p + t.numElements()};
}

data::HostTensor tensor(ir::Shape shape, std::vector<float> v) {
  return data::HostTensor::fromValues<float>(std::move(shape), v);
}

// y = x * 2 + 1 on x [2].
std::string affineModel() {
  tx::ModelBuilder b;
  const std::string x = b.addInput(FLOAT, {2}, "x");
  const std::string two = b.addInitializer(FLOAT, {}, {2}, "two");
  const std::string one = b.addInitializer(FLOAT, {}, {1}, "one");
  const std::string y = b.addNode("Mul", {x, two})[0];
  b.addOutput(b.addNode("Add", {y, one}, {}, 1, "out")[0]);
  return b.modelProto();
}

} // namespace

TEST(ModelBuilder, WritesAModelTheImporterReads) {
  tx::ModelBuilder b(13);
  const std::string x = b.addInput(FLOAT, {4, 2}, "x");
  const std::string w =
      b.addInitializer(FLOAT, {2, 3}, {1, 2, 3, 4, 5, 6}, "w");
  b.setIpu(1);
  const std::string y = b.addNode("MatMul", {x, w})[0];
  b.setIpu(std::nullopt);
  const std::string z = b.addNode("Relu", {y})[0];
  b.setTensorPipelineStage(z, 0);
  b.addOutput(z);
  EXPECT_EQ(b.tensorType(y), (ir::ValueType{FLOAT, {4, 3}}));
  tx::ImportOptions pipelining;
  pipelining.pipelining = true;
  const tx::ImportedModel im = tx::importModel(b.modelProto(), pipelining);
  const auto &ops = im.module.ops();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].annotations.ipu, 1u);
  EXPECT_EQ(ops[1].annotations.ipu, std::nullopt);
  EXPECT_EQ(ops[1].annotations.pipelineStage, 0u);
}

TEST(ModelSession, InferenceReturnsEveryBatchForAnchorAll) {
  tx::ModelSession s(affineModel(),
                     {.batchesPerStep = 3, .anchors = {{"out:0", {}}}},
                     smallIpu());
  s.prepareDevice();
  s.weightsFromHost();
  auto r = s.run({{"x", tensor({3, 2}, {0, 1, 2, 3, 4, 5})}});
  EXPECT_EQ(r.at("out:0").shape(), (ir::Shape{3, 2}));
  EXPECT_EQ(s.anchorShape("out:0"), (ir::Shape{3, 2}));
  EXPECT_EQ(floats(r.at("out:0")), (std::vector<float>{1, 3, 5, 7, 9, 11}));
}

TEST(ModelSession, AnchorModesFinalEveryNAndSum) {
  tx::ModelSession s(affineModel(),
                     {.batchesPerStep = 4,
                      .anchors = {{"out:0", {tx::AnchorMode::EVERY_N, 2}},
                                  {"Mul_0:0", {tx::AnchorMode::SUM}}}},
                     smallIpu());
  s.prepareDevice();
  auto r = s.run({{"x", tensor({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})}});
  EXPECT_EQ(floats(r.at("out:0")), (std::vector<float>{5, 7, 13, 15}));
  EXPECT_EQ(floats(r.at("Mul_0:0")), (std::vector<float>{24, 32}));
  tx::ModelSession f(
      affineModel(),
      {.batchesPerStep = 4, .anchors = {{"out:0", {tx::AnchorMode::FINAL}}}},
      smallIpu());
  f.prepareDevice();
  r = f.run({{"x", tensor({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})}});
  EXPECT_EQ(floats(r.at("out:0")), (std::vector<float>{13, 15}));
}

TEST(ModelSession, WriteWeightsThenWeightsFromHostChangesTheModel) {
  tx::ModelSession s(affineModel(), {.anchors = {{"out:0", {}}}}, smallIpu());
  s.prepareDevice();
  s.writeWeights({{"two", data::HostTensor::scalar<float>(10)}});
  s.weightsFromHost();
  auto r = s.run({{"x", tensor({2}, {1, 2})}});
  EXPECT_EQ(floats(r.at("out:0")), (std::vector<float>{11, 21}));
}

TEST(ModelSession, SgdStepsMatchTheGradientComputedByHand) {
  // loss = mean((x . w - t)^2) over 2 rows; dloss/dw = 2/2 sum (x.w - t) x.
  tx::ModelBuilder b(13);
  const std::string x = b.addInput(FLOAT, {2, 2}, "x");
  const std::string t = b.addInput(FLOAT, {2, 1}, "t");
  const std::string w = b.addInitializer(FLOAT, {2, 1}, {0.5, -0.5}, "w");
  const std::string p = b.addNode("MatMul", {x, w})[0];
  const std::string d = b.addNode("Sub", {p, t})[0];
  const std::string sq = b.addNode("Mul", {d, d})[0];
  const std::string loss = b.addNode(
      "ReduceMean", {sq}, {{"keepdims", std::int64_t{0}}}, 1, "loss")[0];
  b.addOutput(loss);
  tx::ModelSessionOptions o = smallIpu();
  o.training = tx::TrainingSpec{loss, passes::SGD{.learningRate = 0.1}};
  tx::ModelSession s(b.modelProto(),
                     {.batchesPerStep = 2, .anchors = {{loss, {}}}}, o);
  s.prepareDevice();
  // The same batch twice: x = [[1, 2], [3, 4]], t = [[1], [0]].
  const std::vector<float> xs{1, 2, 3, 4, 1, 2, 3, 4}, ts{1, 0, 1, 0};
  auto r = s.run({{"x", tensor({2, 2, 2}, xs)}, {"t", tensor({2, 2, 1}, ts)}});
  // Host reference of the two steps.
  double w0 = 0.5, w1 = -0.5;
  std::vector<double> losses;
  for (int step = 0; step < 2; ++step) {
    const double e0 = 1 * w0 + 2 * w1 - 1, e1 = 3 * w0 + 4 * w1 - 0;
    losses.push_back((e0 * e0 + e1 * e1) / 2);
    const double g0 = e0 * 1 + e1 * 3, g1 = e0 * 2 + e1 * 4;
    w0 -= 0.1 * g0;
    w1 -= 0.1 * g1;
  }
  const auto got = floats(r.at(loss));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], losses[0], 1e-5 * std::abs(losses[0]));
  EXPECT_NEAR(got[1], losses[1], 1e-5 * std::abs(losses[1]));
  const auto weights = s.readWeights();
  EXPECT_NEAR(floats(weights.at("w"))[0], w0, 1e-5);
  EXPECT_NEAR(floats(weights.at("w"))[1], w1, 1e-5);
  // modelToHost writes the trained weights into the ONNX file.
  const std::string path = ::testing::TempDir() + "trained.onnx";
  s.modelToHost(path);
  const tx::ImportedModel im = tx::importModelFile(path);
  const auto &init = im.module.variables().at(0).init.values;
  EXPECT_NEAR(init[0], w0, 1e-5);
  EXPECT_NEAR(init[1], w1, 1e-5);
  std::remove(path.c_str());
}

TEST(ModelSession, UpdateOptimizerChangesTheLearningRateAndMomentum) {
  // loss = mean((x . w - t)^2) on one row x = [1, 2], t = 1.
  tx::ModelBuilder b(13);
  const std::string x = b.addInput(FLOAT, {1, 2}, "x");
  const std::string t = b.addInput(FLOAT, {1, 1}, "t");
  const std::string w = b.addInitializer(FLOAT, {2, 1}, {0.5, -0.5}, "w");
  const std::string d =
      b.addNode("Sub", {b.addNode("MatMul", {x, w})[0], t})[0];
  const std::string loss =
      b.addNode("ReduceMean", {b.addNode("Mul", {d, d})[0]},
                {{"keepdims", std::int64_t{0}}}, 1, "loss")[0];
  b.addOutput(loss);
  tx::ModelSessionOptions o = smallIpu();
  o.training = tx::TrainingSpec{loss, passes::SGD{0.1, 0.5}};
  tx::ModelSession s(b.modelProto(), {.anchors = {{loss, {}}}}, o);
  EXPECT_THROW(s.updateOptimizer(passes::SGD{0.02, 0.8}), OptionError);
  s.prepareDevice();
  double w0 = 0.5, w1 = -0.5, b0 = 0, b1 = 0;
  for (auto [lr, m] : {std::pair{0.1, 0.5}, std::pair{0.02, 0.8}}) {
    if (lr != 0.1)
      s.updateOptimizer(passes::SGD{lr, m});
    s.run({{"x", tensor({1, 2}, {1, 2})}, {"t", tensor({1, 1}, {1})}});
    const double e = w0 + 2 * w1 - 1;
    b0 = m * b0 + 2 * e;
    b1 = m * b1 + 4 * e;
    w0 -= lr * b0;
    w1 -= lr * b1;
  }
  const auto got = floats(s.readWeights().at("w"));
  EXPECT_NEAR(got[0], w0, 1e-6);
  EXPECT_NEAR(got[1], w1, 1e-6);
  EXPECT_THAT([&] { s.updateOptimizer(passes::Adam{}); },
              ::testing::ThrowsMessage<OptionError>(
                  HasSubstr("what is compiled in (SGD and Adam)")));
  tx::ModelSession inference(affineModel(), {}, smallIpu());
  EXPECT_THROW(inference.updateOptimizer(passes::SGD{}), OptionError);
}

TEST(ModelSession, DataFlowErrorsNameTheProblem) {
  EXPECT_THROW(tx::ModelSession(affineModel(), {.anchors = {{"nope", {}}}}),
               OptionError);
  EXPECT_THROW(tx::ModelSession(affineModel(), {.anchors = {{"x", {}}}}),
               OptionError);
  EXPECT_THROW(
      tx::ModelSession(affineModel(),
                       {.batchesPerStep = 3,
                        .anchors = {{"out:0", {tx::AnchorMode::EVERY_N, 2}}}}),
      OptionError);
  tx::ModelSessionOptions o;
  o.training = tx::TrainingSpec{"out:0"};
  try {
    tx::ModelSession s(affineModel(), {}, o);
    FAIL() << "trained on a non-scalar loss";
  } catch (const OptionError &e) {
    EXPECT_THAT(e.what(), HasSubstr("float[2]"));
  }
}

TEST(ModelSession, RunChecksTheDeviceAndTheInputs) {
  tx::ModelSession s(affineModel(),
                     {.batchesPerStep = 2, .anchors = {{"out:0", {}}}},
                     smallIpu());
  EXPECT_THROW(s.run({{"x", tensor({2, 2}, {0, 1, 2, 3})}}), OptionError);
  s.prepareDevice();
  try {
    s.run({{"x", tensor({2}, {0, 1})}});
    FAIL() << "ran with one batch of two";
  } catch (const StreamError &e) {
    EXPECT_THAT(e.what(), HasSubstr("must hold 2"));
  }
  EXPECT_THROW(s.run({}), StreamError);
}

TEST(ModelSession, NodesPlacedOnTwoIpusRunSharded) {
  tx::ModelBuilder b;
  const std::string x = b.addInput(FLOAT, {2}, "x");
  const std::string two = b.addInitializer(FLOAT, {}, {2}, "two");
  b.setIpu(0);
  const std::string y = b.addNode("Mul", {x, two})[0];
  b.setIpu(1);
  const std::string z = b.addNode("Add", {y, two})[0];
  b.addOutput(z);
  tx::ModelSessionOptions o = smallIpu();
  o.config.autoSelectIpus = 2;
  tx::ModelSession s(b.modelProto(), {.anchors = {{z, {}}}}, o);
  EXPECT_EQ(s.module().ops().back().annotations.ipu, 1u);
  s.prepareDevice();
  auto r = s.run({{"x", tensor({2}, {1, 2})}});
  EXPECT_EQ(floats(r.at(z)), (std::vector<float>{4, 6}));
}

namespace {

// loss = mean((x . w - t)^2) over 2 rows, w [2, 1] starting at (0.5, -0.5).
std::string regressionModel() {
  tx::ModelBuilder b(13);
  const std::string x = b.addInput(FLOAT, {2, 2}, "x");
  const std::string t = b.addInput(FLOAT, {2, 1}, "t");
  const std::string w = b.addInitializer(FLOAT, {2, 1}, {0.5, -0.5}, "w");
  const std::string d =
      b.addNode("Sub", {b.addNode("MatMul", {x, w})[0], t})[0];
  b.addOutput(b.addNode("ReduceMean", {b.addNode("Mul", {d, d})[0]},
                        {{"keepdims", std::int64_t{0}}}, 1, "loss")[0]);
  return b.modelProto();
}

// dloss/dw at w for one batch.
std::array<double, 2> gradient(const std::vector<float> &x,
                               const std::vector<float> &t, double w0,
                               double w1) {
  std::array<double, 2> g{0, 0};
  for (int r = 0; r < 2; ++r) {
    const double e = x[2 * r] * w0 + x[2 * r + 1] * w1 - t[r];
    g[0] += e * x[2 * r];
    g[1] += e * x[2 * r + 1];
  }
  return g;
}

} // namespace

TEST(ModelSession, AccumulationAndReplicationAverageTwoBatchesPerStep) {
  const std::vector<float> xs{1, 2, 3, 4, 0, 1, 2, 0}, ts{1, 0, 2, -1};
  const auto g1 = gradient({1, 2, 3, 4}, {1, 0}, 0.5, -0.5);
  const auto g2 = gradient({0, 1, 2, 0}, {2, -1}, 0.5, -0.5);
  const double lr = 0.1;
  for (bool replicate : {false, true}) {
    tx::ModelSessionOptions o = smallIpu();
    o.training = tx::TrainingSpec{"loss:0", passes::SGD{.learningRate = lr}};
    if (replicate)
      o.config.replicationFactor = 2;
    else
      o.training->accumulationFactor = 2;
    tx::ModelSession s(regressionModel(), {.anchors = {{"loss:0", {}}}}, o);
    EXPECT_EQ(s.anchorShape("loss:0"), (ir::Shape{2})) << replicate;
    s.prepareDevice();
    s.run({{"x", tensor({2, 2, 2}, xs)}, {"t", tensor({2, 2, 1}, ts)}});
    const auto w = floats(s.readWeights().at("w"));
    EXPECT_NEAR(w[0], 0.5 - lr * (g1[0] + g2[0]) / 2, 1e-5) << replicate;
    EXPECT_NEAR(w[1], -0.5 - lr * (g1[1] + g2[1]) / 2, 1e-5) << replicate;
  }
}

namespace {

// loss = mean(batchNorm(x) * w) on x [4, 2], the batch norm in training
// mode (opset 15's attribute) with momentum 0.5.
std::string batchNormModel() {
  tx::ModelBuilder b(15);
  const std::string x = b.addInput(FLOAT, {4, 2}, "x");
  const std::string scale = b.addInitializer(FLOAT, {2}, {1, 1}, "scale");
  const std::string bias = b.addInitializer(FLOAT, {2}, {0, 0}, "bias");
  const std::string mean = b.addInitializer(FLOAT, {2}, {0, 0}, "mean");
  const std::string var = b.addInitializer(FLOAT, {2}, {1, 1}, "var");
  const std::string w = b.addInitializer(FLOAT, {2}, {1, -1}, "w");
  const auto bn = b.addNode("BatchNormalization", {x, scale, bias, mean, var},
                            {{"momentum", 0.5}, {"training_mode", 1}}, 3);
  const std::string yw = b.addNode("Mul", {bn[0], w})[0];
  b.addOutput(b.addNode("ReduceMean", {yw}, {{"keepdims", std::int64_t{0}}}, 1,
                        "loss")[0]);
  return b.modelProto();
}

} // namespace

TEST(ModelSession, TrainingMovesRunningStatisticsOnEveryMicroBatch) {
  tx::ModelSessionOptions o = smallIpu();
  o.training = tx::TrainingSpec{"loss:0", passes::SGD{.learningRate = 0.1}};
  o.training->accumulationFactor = 2;
  tx::ModelSession s(batchNormModel(), {.anchors = {{"loss:0", {}}}}, o);
  s.prepareDevice();
  // Channel 0: mean 2.5 then 10; channel 1: constant 1 then 0, 2, 0, 2.
  s.run({{"x", tensor({2, 4, 2}, {1, 1, 2, 1, 3, 1, 4, 1, //
                                  10, 0, 9, 2, 11, 0, 10, 2})}});
  const auto state = s.readState();
  const auto mean = floats(state.at("mean"));
  const auto var = floats(state.at("var"));
  EXPECT_NEAR(mean[0], (0 * 0.5 + 2.5 * 0.5) * 0.5 + 10 * 0.5, 1e-5);
  EXPECT_NEAR(mean[1], (0 * 0.5 + 1 * 0.5) * 0.5 + 1 * 0.5, 1e-5);
  // Unbiased batch variances: 5/3 then 2/3; 0 then 4/3.
  EXPECT_NEAR(var[0], (1 * 0.5 + 5.0 / 3 * 0.5) * 0.5 + 2.0 / 3 * 0.5, 1e-4);
  EXPECT_NEAR(var[1], (1 * 0.5 + 0 * 0.5) * 0.5 + 4.0 / 3 * 0.5, 1e-4);

  // Another session of the model takes this one's state.
  tx::ModelSession t(batchNormModel(), {.anchors = {{"loss:0", {}}}}, o);
  t.prepareDevice();
  EXPECT_EQ(t.writeState(state), state.size());
  EXPECT_EQ(floats(t.readState().at("var")), var);
}
