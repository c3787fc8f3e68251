// Pipelined and gradient-accumulated nn models: a 4-layer MLP pipelined
// over 2 or 4 stages ends with the weights of the same MLP trained without
// pipelining with the same gradient accumulation count; summary() shows
// the stages; options that do not go together are one-line errors with
// their numbers.
#include "tessera/nn/Model.hpp"

#include "ErrorOf.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

using namespace tessera::nn;
using tessera::nn::test::errorOf;
namespace data = tessera::data;
namespace passes = tessera::passes;
namespace session = tessera::session;
using data::HostTensor;
using tessera::OptionError;
using ::testing::HasSubstr;

namespace {

constexpr std::size_t kIn = 6, kOut = 3, kBatch = 2, kSteps = 16;

Sequential fourLayerMlp() {
  return Sequential({Input({kIn}), Dense(8, "tanh"), Dense(8, "tanh"),
                     Dense(8, "tanh"), Dense(kOut)},
                    "mlp4", 7);
}

CompileOptions options(unsigned ipus, unsigned spe) {
  CompileOptions o;
  o.optimizer = passes::SGD{0.05, 0.9};
  o.loss = "mse";
  o.stepsPerExecution = spe;
  o.config.ipuModel.tilesPerIpu = 16;
  o.config.autoSelectIpus = ipus;
  return o;
}

// A fixed regression problem, fed in order.
History train(Model &m) {
  const std::size_t n = kBatch * kSteps;
  std::vector<float> xs, ys;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < kIn; ++j)
      xs.push_back(float(std::sin(0.37 * double(i * kIn + j))));
    for (std::size_t j = 0; j < kOut; ++j)
      ys.push_back(float(std::cos(0.21 * double(i + j))));
  }
  FitOptions f;
  f.epochs = 2;
  f.verbose = Verbosity::Silent;
  return m.fit(HostTensor::fromValues<float>({n, kIn}, xs),
               HostTensor::fromValues<float>({n, kOut}, ys), kBatch, f,
               /*shuffle=*/false);
}

session::Checkpoint accumulatedReference(unsigned count) {
  Sequential ref = fourLayerMlp();
  ref.setGradientAccumulationOptions({.count = count});
  ref.compile(options(1, 8));
  train(ref);
  return ref.getWeights();
}

void expectSameWeights(Model &got, const session::Checkpoint &want) {
  const session::Checkpoint have = got.getWeights();
  std::size_t compared = 0;
  for (const std::string &name : got.weightNames())
    for (const auto &[n, t] : have.variables)
      for (const auto &[wn, wt] : want.variables)
        if (n == name && wn == name) {
          const auto a = t.values<float>(), b = wt.values<float>();
          ASSERT_EQ(a.size(), b.size()) << name;
          for (std::size_t i = 0; i < a.size(); ++i)
            EXPECT_NEAR(a[i], b[i], 1e-5 * std::abs(b[i]) + 1e-6)
                << name << "[" << i << "]";
          ++compared;
        }
  EXPECT_EQ(compared, 8u); // four kernels and four biases
}

PipeliningOptions accumulating(unsigned count) {
  PipeliningOptions p;
  p.accumulation.count = count;
  return p;
}

} // namespace

TEST(Pipelining, FourStagesTrainToTheWeightsOfPlainAccumulation) {
  Sequential m = fourLayerMlp();
  m.setPipelineStageAssignment({0, 1, 2, 3});
  m.compile(options(4, 8));
  m.setPipeliningOptions(accumulating(4));
  const History h = train(m);
  EXPECT_LT(logValue(h.epochs.back(), "loss"),
            logValue(h.epochs.front(), "loss"));
  expectSameWeights(m, accumulatedReference(4));
}

TEST(Pipelining, DynamicLossScalingAcrossStagesKeepsTheWeights) {
  // The scale is read by the last stage's loss and every stage's weight
  // update; without overflow the weights are those of unscaled training.
  Sequential m = fourLayerMlp();
  m.setPipelineStageAssignment({0, 1, 2, 3});
  CompileOptions o = options(4, 8);
  o.lossScale = LossScaleOptions{true, 1024, 3};
  m.compile(o);
  m.setPipeliningOptions(accumulating(4));
  train(m);
  expectSameWeights(m, accumulatedReference(4));
  // Two epochs of 16 micro-batches: 8 finite updates at growth 3 double
  // the scale twice.
  EXPECT_EQ(m.lossScale(), 4096);
}

TEST(Pipelining, EachLayerBuildsItsForwardOpsInItsStage) {
  Sequential m = fourLayerMlp();
  m.setPipelineStageAssignment({0, 0, 1, 1});
  m.setPipeliningOptions(accumulating(2));
  m.compile(options(2, 2));
  const tessera::ir::Module t =
      m.trainingModule(kBatch, {"y", tessera::FLOAT, {kBatch, kOut}});
  std::map<std::string, std::set<unsigned>> stagesOf;
  for (const tessera::ir::Op &op : t.ops()) {
    if (op.annotations.backward || op.annotations.weightUpdate ||
        op.results.empty())
      continue;
    const std::string &name = t.value(op.results[0]).name;
    const std::string scope = name.substr(0, name.find('/'));
    ASSERT_TRUE(op.annotations.pipelineStage) << name;
    stagesOf[scope].insert(*op.annotations.pipelineStage);
  }
  EXPECT_EQ(stagesOf["dense"], std::set<unsigned>{0});
  EXPECT_EQ(stagesOf["dense_1"], std::set<unsigned>{0});
  EXPECT_EQ(stagesOf["dense_2"], std::set<unsigned>{1});
  EXPECT_EQ(stagesOf["loss"], std::set<unsigned>{1});
}

TEST(Pipelining, TwoInterleavedStagesWithRecomputationMatchToo) {
  Sequential m = fourLayerMlp();
  m.setPipelineStageAssignment({0, 0, 1, 1});
  PipeliningOptions p;
  p.accumulation.count = 4;
  p.schedule = session::PipelineSchedule::Interleaved;
  p.recompute = true;
  m.setPipeliningOptions(p);
  m.compile(options(2, 8));
  train(m);
  expectSameWeights(m, accumulatedReference(4));
}

TEST(Pipelining, StagesMayShareAnIpuThroughTheDeviceMapping) {
  Sequential m = fourLayerMlp();
  m.setPipelineStageAssignment({0, 1, 2, 3});
  PipeliningOptions p;
  p.accumulation.count = 4;
  p.schedule = session::PipelineSchedule::Sequential;
  p.deviceMapping = {0, 0, 1, 1};
  m.setPipeliningOptions(p);
  m.compile(options(2, 8));
  train(m);
  expectSameWeights(m, accumulatedReference(4));
}

TEST(Pipelining, AccumulationWithoutPipeliningDiffersFromNone) {
  // The reference must itself accumulate: with count 1 the weights differ.
  Sequential plain = fourLayerMlp();
  plain.compile(options(1, 8));
  train(plain);
  const session::Checkpoint acc = accumulatedReference(4);
  const auto a = plain.getWeights().variables[0].second.values<float>();
  const auto b = acc.variables[0].second.values<float>();
  double diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, double(std::abs(a[i] - b[i])));
  EXPECT_GT(diff, 1e-4);
}

TEST(Pipelining, SummaryShowsEachLayersStage) {
  Sequential m = fourLayerMlp();
  EXPECT_THAT(m.summary(), ::testing::Not(HasSubstr("Stage")));
  m.setPipelineStageAssignment({0, 0, 1, 1});
  const std::string s = m.summary();
  EXPECT_THAT(s, HasSubstr("Param #   Stage"));
  EXPECT_THAT(
      s, HasSubstr("dense_1 (Dense)              (None, 8)                 "
                   "72        0"));
  EXPECT_THAT(
      s, HasSubstr("dense_3 (Dense)              (None, 3)                 "
                   "27        1"));
}

TEST(PipeliningErrors, StageAssignmentOfTheWrongLengthOrOrder) {
  Sequential m = fourLayerMlp();
  EXPECT_THAT(errorOf<OptionError>([&] {
                m.setPipelineStageAssignment({0, 1, 2});
              }),
              HasSubstr("has 4 layers after its Input but the assignment "
                        "lists 3 stages"));
  EXPECT_THAT(
      errorOf<OptionError>([&] {
        m.setPipelineStageAssignment({0, 1, 0, 1});
      }),
      HasSubstr(
          "layer 3 (\"dense_2\") is on stage 0 after a layer on stage 1"));
  EXPECT_THAT(
      errorOf<OptionError>([&] {
        m.setPipelineStageAssignment({1, 1, 2, 2});
      }),
      HasSubstr(
          "the first layer (\"dense\") is on stage 1; stages start at 0"));
}

TEST(PipeliningErrors, LayersAddedAfterTheAssignment) {
  Sequential m = fourLayerMlp();
  m.setPipelineStageAssignment({0, 1, 2, 3});
  m.add(Dense(2));
  m.setPipeliningOptions(accumulating(4));
  m.compile(options(4, 8));
  EXPECT_THAT(m.summary(), ::testing::Not(HasSubstr("Stage")));
  EXPECT_THAT(errorOf<OptionError>([&] { train(m); }),
              HasSubstr("the pipeline stage assignment lists 4 stages but "
                        "model \"mlp4\" now has 5 layers after its Input"));
}

TEST(PipeliningErrors, AssignmentWithoutPipeliningOptions) {
  Sequential m = fourLayerMlp();
  m.setPipelineStageAssignment({0, 1, 2, 3});
  m.compile(options(4, 8));
  EXPECT_THAT(errorOf<ModelError>([&] { train(m); }),
              HasSubstr("has a pipeline stage assignment but was compiled "
                        "without pipelining options; call "
                        "setPipeliningOptions"));
}

TEST(PipeliningErrors, StepsPerExecutionNotAMultipleOfTheCount) {
  Sequential m = fourLayerMlp();
  m.setPipelineStageAssignment({0, 1, 2, 3});
  m.setPipeliningOptions(accumulating(4));
  m.compile(options(4, 2));
  EXPECT_THAT(errorOf<OptionError>([&] { train(m); }),
              HasSubstr("2 steps per execution is not a whole number of "
                        "weight updates of 4 micro-batches"));
  Sequential plain = fourLayerMlp();
  plain.setGradientAccumulationOptions({.count = 4});
  plain.compile(options(1, 2));
  EXPECT_THAT(errorOf<OptionError>([&] { train(plain); }),
              HasSubstr("make it a multiple of 4"));
}

TEST(PipeliningErrors, TooFewIpusOrMicroBatches) {
  Sequential m = fourLayerMlp();
  m.setPipelineStageAssignment({0, 1, 2, 3});
  m.setPipeliningOptions(accumulating(4));
  m.compile(options(2, 8));
  EXPECT_THAT(errorOf<OptionError>([&] { train(m); }),
              HasSubstr("need 4 IPUs but it is compiled for 2 "
                        "(config.autoSelectIpus)"));
  m.setPipeliningOptions(accumulating(2));
  m.compile(options(4, 8));
  EXPECT_THAT(errorOf<OptionError>([&] { train(m); }),
              HasSubstr("the Grouped schedule needs a gradient accumulation "
                        "count of at least the 4 pipeline stages, got 2"));
}
