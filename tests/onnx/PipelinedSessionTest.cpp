// PopART's pipelining: with ImportOptions::pipelining the nodes'
// "__pipeline_stage" attributes become IR stages and their
// "__ipu_number" the stages' IPUs; a pipelined ModelSession trains as the
// same model with the same gradient accumulation on one IPU; and what
// pipelining cannot run is an error saying what to change.
#include "tessera/onnx/ModelBuilder.hpp"
#include "tessera/onnx/ModelSession.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <set>

using namespace tessera;
namespace tx = tessera::onnx;
using ::testing::HasSubstr;

namespace {

constexpr unsigned kLayers = 4, kRows = 2, kIn = 6, kWidth = 8, kOut = 3;

std::vector<double> wobble(std::size_t n, double phase) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = 0.4 * std::sin(phase + 1.7 * double(i));
  return v;
}

// Four dense layers (tanh between them) and a mean squared error. With
// \p placed, layer k is pipeline stage k on IPU ipuOf[k].
std::string fourLayers(bool placed,
                       std::array<unsigned, kLayers> ipuOf = {0, 1, 2, 3}) {
  tx::ModelBuilder b(13);
  std::string h = b.addInput(FLOAT, {kRows, kIn}, "x");
  const std::string y = b.addInput(FLOAT, {kRows, kOut}, "y");
  for (unsigned k = 0; k < kLayers; ++k) {
    if (placed) {
      b.setPipelineStage(k);
      b.setIpu(ipuOf[k]);
    }
    const std::size_t in = k == 0 ? kIn : kWidth;
    const std::size_t out = k + 1 == kLayers ? kOut : kWidth;
    const std::string w = b.addInitializer(
        FLOAT, {in, out}, wobble(in * out, 0.3 * k), "w" + std::to_string(k));
    const std::string bias =
        b.addInitializer(FLOAT, {out}, wobble(out, k), "b" + std::to_string(k));
    h = b.addNode("Add", {b.addNode("MatMul", {h, w})[0], bias})[0];
    if (k + 1 < kLayers) {
      h = b.addNode("Tanh", {h})[0];
    } else {
      const std::string d = b.addNode("Sub", {h, y})[0];
      b.addOutput(b.addNode("ReduceMean", {b.addNode("Mul", {d, d})[0]},
                            {{"keepdims", std::int64_t{0}}}, 1, "loss")[0]);
    }
  }
  return b.modelProto();
}

tx::ModelSessionOptions training(unsigned ipus, unsigned accumulation,
                                 bool pipelining) {
  tx::ModelSessionOptions o;
  o.config.ipuModel.tilesPerIpu = 4;
  o.config.autoSelectIpus = ipus;
  o.training = tx::TrainingSpec{"loss:0", passes::SGD{0.05, 0.9}, accumulation};
  o.pipelining = pipelining;
  return o;
}

struct Trained {
  std::vector<float> losses;
  std::map<std::string, data::HostTensor> weights;
  /// The pipeline stages the session's module has.
  std::set<unsigned> stages;
};

// \p runs runs of 3 weight updates of \p accumulation micro-batches.
Trained train(const std::string &model, const tx::ModelSessionOptions &o,
              unsigned runs) {
  const unsigned steps = 3, n = o.training->accumulationFactor;
  tx::ModelSession s(model,
                     {.batchesPerStep = steps, .anchors = {{"loss:0", {}}}}, o);
  s.prepareDevice();
  Trained t;
  std::size_t row = 0;
  for (unsigned r = 0; r < runs; ++r) {
    std::vector<float> xs, ys;
    for (std::size_t i = 0; i < steps * n * kRows; ++i, ++row) {
      for (std::size_t j = 0; j < kIn; ++j)
        xs.push_back(float(std::sin(0.37 * double(row * kIn + j))));
      for (std::size_t j = 0; j < kOut; ++j)
        ys.push_back(float(std::cos(0.21 * double(row + j))));
    }
    auto out = s.run(
        {{"x",
          data::HostTensor::fromValues<float>({steps * n, kRows, kIn}, xs)},
         {"y",
          data::HostTensor::fromValues<float>({steps * n, kRows, kOut}, ys)}});
    const auto loss = out.at("loss:0").values<float>();
    t.losses.insert(t.losses.end(), loss.begin(), loss.end());
  }
  t.weights = s.readWeights();
  for (const ir::Op &op : s.module().ops())
    if (op.annotations.pipelineStage)
      t.stages.insert(*op.annotations.pipelineStage);
  return t;
}

} // namespace

TEST(PipelineImport, StagesAreIgnoredWithoutPipelining) {
  const std::string model = fourLayers(true, {1, 0, 1, 0});
  const tx::ImportedModel plain = tx::importModel(model);
  for (const ir::Op &op : plain.module.ops())
    EXPECT_EQ(op.annotations.pipelineStage, std::nullopt);
  EXPECT_EQ(plain.stages, 0u);
  EXPECT_EQ(plain.module.ops().front().annotations.ipu, 1u);

  tx::ImportOptions o;
  o.pipelining = true;
  const tx::ImportedModel staged = tx::importModel(model, o);
  EXPECT_EQ(staged.module.ops().front().annotations.pipelineStage, 0u);
  EXPECT_EQ(staged.module.ops().back().annotations.pipelineStage, 3u);
  EXPECT_EQ(staged.stages, 4u);
  EXPECT_EQ(staged.stageIpus, (std::vector<unsigned>{1, 0, 1, 0}));
}

TEST(PipelineImport, VirtualGraphsAreTheStagesWhenNoNodeHasAStage) {
  tx::ModelBuilder b;
  const std::string x = b.addInput(FLOAT, {2}, "x");
  b.setIpu(0);
  const std::string y = b.addNode("Neg", {x})[0];
  b.setIpu(1);
  b.addOutput(b.addNode("Exp", {y})[0]);
  tx::ImportOptions o;
  o.pipelining = true;
  const tx::ImportedModel im = tx::importModel(b.modelProto(), o);
  EXPECT_EQ(im.module.ops()[0].annotations.pipelineStage, 0u);
  EXPECT_EQ(im.module.ops()[1].annotations.pipelineStage, 1u);
  EXPECT_EQ(im.stageIpus, (std::vector<unsigned>{0, 1}));
}

TEST(PipelineImport, AStageOnTwoIpusIsAnErrorNamingIt) {
  tx::ModelBuilder b;
  const std::string x = b.addInput(FLOAT, {2}, "x");
  b.setPipelineStage(0);
  b.setIpu(0);
  const std::string y = b.addNode("Neg", {x})[0];
  b.setPipelineStage(1);
  const std::string z = b.addNode("Exp", {y})[0];
  b.setIpu(1);
  b.addOutput(b.addNode("Neg", {z}, {}, 1, "late")[0]);
  tx::ImportOptions o;
  o.pipelining = true;
  EXPECT_THAT([&] { tx::importModel(b.modelProto(), o); },
              ::testing::ThrowsMessage<OptionError>(
                  HasSubstr("pipeline stage 1 is spread over IPUs 0")));
  // Without pipelining the stages are ignored and the nodes shard.
  EXPECT_NO_THROW(tx::importModel(b.modelProto()));
}

TEST(PipelineImport, AStageWithoutNodesIsAnError) {
  tx::ModelBuilder b;
  const std::string x = b.addInput(FLOAT, {2}, "x");
  b.setPipelineStage(0);
  const std::string y = b.addNode("Neg", {x})[0];
  b.setPipelineStage(2);
  b.addOutput(b.addNode("Exp", {y})[0]);
  tx::ImportOptions o;
  o.pipelining = true;
  EXPECT_THAT(
      [&] { tx::importModel(b.modelProto(), o); },
      ::testing::ThrowsMessage<OptionError>(HasSubstr("no node in stage 1")));
}

TEST(PipelinedSession, TrainsAsGradientAccumulationOnOneIpu) {
  constexpr unsigned kAccumulation = 4, kRuns = 3;
  const Trained want =
      train(fourLayers(false), training(1, kAccumulation, false), kRuns);
  // Stage k on IPU 3 - k: the mapping comes from the nodes.
  const Trained got = train(fourLayers(true, {3, 2, 1, 0}),
                            training(4, kAccumulation, true), kRuns);
  EXPECT_EQ(got.stages, (std::set<unsigned>{0, 1, 2, 3}));
  EXPECT_TRUE(want.stages.empty());
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (std::size_t i = 0; i < got.losses.size(); ++i)
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-5 * want.losses[i])
        << "micro-batch " << i;
  EXPECT_LT(want.losses.back(), 0.8 * want.losses.front());
  for (const auto &[name, w] : want.weights) {
    const auto a = got.weights.at(name).values<float>(), b = w.values<float>();
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-5 * std::abs(b[i]) + 1e-6) << name << i;
  }
}

TEST(PipelinedSession, MappingComesFromTheNodesIpus) {
  // Stage 3 on IPU 4 of a 4-IPU device: the session names it.
  EXPECT_THAT(
      [] {
        tx::ModelSession s(fourLayers(true, {0, 1, 2, 4}), {},
                           training(4, 4, true));
        s.prepareDevice();
      },
      ::testing::ThrowsMessage<OptionError>(
          HasSubstr("puts stage 3 on IPU 4, but the model has 4 IPUs")));
}

TEST(PipelinedSession, AccumulationBelowTheStagesIsAnError) {
  EXPECT_THAT(
      [] { tx::ModelSession(fourLayers(true), {}, training(4, 2, true)); },
      ::testing::ThrowsMessage<OptionError>(
          HasSubstr("accumulation factor of at least the number of stages "
                    "(PopART's rule")));
  EXPECT_THAT(
      [] { tx::ModelSession(fourLayers(true), {}, training(4, 1, true)); },
      ::testing::ThrowsMessage<OptionError>(HasSubstr("at least 4")));
}

TEST(PipelinedSession, InferenceRunsTheStagesSharded) {
  tx::ModelSessionOptions o;
  o.config.ipuModel.tilesPerIpu = 4;
  o.config.autoSelectIpus = 4;
  o.pipelining = true;
  tx::ModelSession s(fourLayers(true), {.anchors = {{"loss:0", {}}}}, o);
  for (const ir::Op &op : s.module().ops())
    EXPECT_EQ(op.annotations.pipelineStage, std::nullopt);
  s.prepareDevice();
  std::vector<float> xs(kRows * kIn, 0.5f), ys(kRows * kOut, 0.25f);
  const auto out =
      s.run({{"x", data::HostTensor::fromValues<float>({kRows, kIn}, xs)},
             {"y", data::HostTensor::fromValues<float>({kRows, kOut}, ys)}});
  EXPECT_GT(out.at("loss:0").values<float>()[0], 0.0f);
}
