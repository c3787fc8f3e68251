// Pipelined training on the IPU Model: the schedules' ticks follow their
// definitions (session/Pipeline.hpp); a 4-stage model trained pipelined
// over 4 IPUs, with each schedule, ends with the weights of the same model
// trained with plain gradient accumulation on one IPU; and what a pipeline
// cannot run is a one-line error saying what to change.
#include "tessera/session/Pipeline.hpp"

#include "tessera/passes/TrainingPasses.hpp"
#include "tessera/session/Session.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace tessera;
using namespace tessera::session;
using data::HostTensor;
using ::testing::HasSubstr;

namespace {

constexpr unsigned kStages = 4, kMicro = 2, kIn = 6, kWidth = 8, kOut = 3;

std::vector<double> wobble(std::size_t n, double phase) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = 0.4 * std::sin(phase + 1.7 * double(i));
  return v;
}

// Four dense layers (tanh between them) and a squared-error loss; with
// \p staged, layer k is pipeline stage k. Trained with SGD and momentum,
// gradients accumulated over \p count micro-batches (MEAN).
ir::Module fourLayers(bool staged, unsigned count, bool recompute = false) {
  ir::Module m("four_layers");
  ir::Builder b(m);
  ir::Value h = b.input("x", FLOAT, {kMicro, kIn});
  const ir::Value y = b.input("y", FLOAT, {kMicro, kOut});
  ir::Value loss;
  for (unsigned k = 0; k < kStages; ++k) {
    std::optional<ir::StageScope> stage;
    if (staged)
      stage.emplace(b, k);
    const std::size_t in = k == 0 ? kIn : kWidth;
    const std::size_t out = k + 1 == kStages ? kOut : kWidth;
    const ir::Value w = b.variable("w" + std::to_string(k), {in, out},
                                   ir::init::values(wobble(in * out, 0.3 * k)));
    const ir::Value bias = b.variable("b" + std::to_string(k), {out},
                                      ir::init::values(wobble(out, k)));
    h = ir::matmul(h, w) + bias;
    if (k + 1 < kStages)
      h = ir::tanh(h);
    else
      loss = ir::reduceMean(ir::meanSquaredError(h, y));
  }
  b.output("loss", loss);
  passes::TrainingPassOptions o;
  o.training.optimizer = passes::SGD{0.05, 0.9};
  o.accumulation.count = count;
  o.recompute = recompute;
  passes::runTrainingPasses(m, o);
  return m;
}

struct Trained {
  Checkpoint weights;
  std::vector<float> losses;
};

// \p steps steps of \p count micro-batches of a fixed regression problem.
Trained train(const ir::Module &m, unsigned count, unsigned steps,
              const Config &config) {
  const std::size_t micro = std::size_t(count) * steps;
  std::vector<float> xs, ys;
  for (std::size_t i = 0; i < micro * kMicro; ++i) {
    for (std::size_t j = 0; j < kIn; ++j)
      xs.push_back(float(std::sin(0.37 * double(i * kIn + j))));
    for (std::size_t j = 0; j < kOut; ++j)
      ys.push_back(float(std::cos(0.21 * double(i + j))));
  }
  Session s(m, config, {{"x", "y"}, {"loss"}, unsigned(micro)});
  s.compile();
  Infeed in(data::Dataset::fromTensors(
      {HostTensor::fromValues<float>({micro, kMicro, kIn}, xs),
       HostTensor::fromValues<float>({micro, kMicro, kOut}, ys)}));
  Outfeed out;
  s.connect(in, out);
  s.run();
  Trained t{s.readVariables(), {}};
  for (const data::Element &e : out.dequeueAll())
    t.losses.push_back(e[0].values<float>()[0]);
  return t;
}

Config smallIpus(unsigned ipus) {
  Config c;
  c.ipuModel.tilesPerIpu = 16;
  c.autoSelectIpus = ipus;
  return c;
}

void expectSameWeights(const Checkpoint &got, const Checkpoint &want) {
  ASSERT_EQ(got.variables.size(), want.variables.size());
  for (std::size_t v = 0; v < got.variables.size(); ++v) {
    const auto &[name, t] = got.variables[v];
    ASSERT_EQ(name, want.variables[v].first);
    const auto a = t.values<float>(),
               b = want.variables[v].second.values<float>();
    ASSERT_EQ(a.size(), b.size()) << name;
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-5 * std::abs(b[i]) + 1e-6)
          << name << "[" << i << "]";
  }
}

} // namespace

TEST(PipelineTicks, GroupedRunsForwardThenBackwardTicksPerStep) {
  const auto ticks = pipelineTicks(PipelineSchedule::Grouped, 2, 2);
  // Steps 0..2: F ticks {F0(0)}, {F0(1) F1(0)}, {F1(1)}; B ticks start at
  // step 1 with B1(0).
  const std::vector<PipelineTick> want{
      {{0, false, 0}}, {{0, false, 1}, {1, false, 0}}, {{1, true, 0}},
      {{1, false, 1}}, {{0, true, 0}, {1, true, 1}},   {{0, true, 1}}};
  EXPECT_EQ(ticks, want);
}

TEST(PipelineTicks, InterleavedAlternatesForwardAndBackwardOnEachStage) {
  const unsigned S = 3, N = 5;
  const auto ticks = pipelineTicks(PipelineSchedule::Interleaved, S, N);
  EXPECT_EQ(ticks.size(), 2 * (N + S - 1));
  std::vector<std::vector<bool>> kinds(S);
  std::size_t runs = 0;
  for (const PipelineTick &t : ticks) {
    std::set<unsigned> stages;
    for (const StagePass &p : t) {
      EXPECT_TRUE(stages.insert(p.stage).second) << "one pass per stage";
      kinds[p.stage].push_back(p.backward);
      ++runs;
    }
  }
  EXPECT_EQ(runs, 2 * S * N);
  // In its steady state, each stage alternates F and B.
  for (unsigned s = 0; s < S; ++s)
    for (std::size_t k = S - s; k + 1 < 2 * N - (S - s); ++k)
      EXPECT_NE(kinds[s][k], kinds[s][k + 1]) << "stage " << s << " pass " << k;
}

TEST(PipelineTicks, SequentialRunsOnePassPerTick) {
  const auto ticks = pipelineTicks(PipelineSchedule::Sequential, 3, 2);
  ASSERT_EQ(ticks.size(), 12u);
  EXPECT_EQ(ticks[0], (PipelineTick{{0, false, 0}}));
  EXPECT_EQ(ticks[3], (PipelineTick{{2, true, 0}}));
  EXPECT_EQ(ticks[6], (PipelineTick{{0, false, 1}}));
}

TEST(PipelineTicks, FewerMicroBatchesThanStagesIsAnError) {
  EXPECT_THAT(
      [] { pipelineTicks(PipelineSchedule::Grouped, 4, 3); },
      ::testing::ThrowsMessage<OptionError>(HasSubstr("set it to at least 4")));
  EXPECT_NO_THROW(pipelineTicks(PipelineSchedule::Sequential, 4, 3));
}

TEST(PipelineSchedules, ParseByNameInAnyCase) {
  EXPECT_EQ(parseSchedule("interleaved"), PipelineSchedule::Interleaved);
  EXPECT_EQ(parseSchedule("Grouped"), PipelineSchedule::Grouped);
  EXPECT_EQ(parseSchedule("bubbly"), std::nullopt);
}

class PipelinedTraining
    : public ::testing::TestWithParam<std::tuple<PipelineSchedule, bool>> {};

TEST_P(PipelinedTraining, MatchesGradientAccumulationOnOneIpu) {
  const auto [schedule, recompute] = GetParam();
  constexpr unsigned kCount = 4, kSteps = 50;
  // The reference keeps its momentum on the tiles; the pipeline offloads
  // it (the default).
  Config one = smallIpus(1);
  one.pipeline.offloadOptimizerState = false;
  const Trained want = train(fourLayers(false, kCount), kCount, kSteps, one);
  Config c = smallIpus(kStages);
  c.pipeline.schedule = schedule;
  const Trained got =
      train(fourLayers(true, kCount, recompute), kCount, kSteps, c);
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (std::size_t i = 0; i < got.losses.size(); ++i)
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-5 * want.losses[i])
        << "micro-batch " << i;
  EXPECT_LT(want.losses.back(), 0.8 * want.losses.front());
  expectSameWeights(got.weights, want.weights);
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, PipelinedTraining,
    ::testing::Combine(::testing::Values(PipelineSchedule::Grouped,
                                         PipelineSchedule::Interleaved,
                                         PipelineSchedule::Sequential),
                       ::testing::Values(false, true)));

TEST(PipelineErrors, StagesWithoutGradientAccumulation) {
  EXPECT_THAT(
      [] {
        Session s(fourLayers(true, 1), smallIpus(kStages), {{"x", "y"}, {}, 1});
        s.compile();
      },
      ::testing::ThrowsMessage<OptionError>(
          HasSubstr("set a gradient accumulation count of at least 4")));
}

TEST(PipelineErrors, DeviceMappingNamingAMissingIpu) {
  Config c = smallIpus(kStages);
  c.pipeline.deviceMapping = {0, 1, 2, 4};
  EXPECT_THAT(
      [&] {
        Session s(fourLayers(true, 4), c, {{"x", "y"}, {}, 4});
        s.compile();
      },
      ::testing::ThrowsMessage<OptionError>(
          HasSubstr("puts stage 3 on IPU 4, but the model has 4 IPUs")));
}

TEST(PipelineErrors, StepsPerExecutionNotWholeSteps) {
  EXPECT_THAT(
      [] {
        Session s(fourLayers(true, 4), smallIpus(kStages), {{"x", "y"}, {}, 6});
        s.compile();
      },
      ::testing::ThrowsMessage<OptionError>(
          HasSubstr("make it a multiple of 4")));
}

TEST(PipelineErrors, AStageReadingALaterStage) {
  ir::Module m("backwards");
  ir::Builder b(m);
  ir::Value x = b.input("x", FLOAT, {2, 2});
  ir::Value w = b.variable("w", {2, 2}, ir::init::values({1, 2, 3, 4}));
  ir::Value h, out;
  {
    ir::StageScope s(b, 1);
    h = ir::matmul(x, w);
  }
  {
    ir::StageScope s(b, 0);
    out = ir::reduceMean(h * h);
  }
  b.output("loss", out);
  // The verifier refuses it as the pass pipeline builds the step.
  passes::TrainingPassOptions o;
  o.accumulation.count = 2;
  EXPECT_THAT([&] { passes::runTrainingPasses(m, o); },
              ::testing::Throws<ir::IrError>());
}
