// What the IPU Model estimates for pipelined training follows the
// schedules' structure (session/Pipeline.hpp). For S equal stages, each of
// F + B cycles per micro-batch, and a weight update of U cycles, a step of
// N micro-batches takes
//
//   Sequential:  C = N S (F + B) + U          (the sharded model's time)
//   Grouped:     C = (N + S - 1)(F + B) + U   (S - 1 steps of ramp)
//   Interleaved: C = 2 (N + S - 1) max(F, B) + U
//
// so C is linear in N; its slope a is the steady state's cost of a
// micro-batch and its intercept c the ramp plus U. The tests fit a and c
// from two values of N and check, within 10%: a_sequential = S a_grouped
// (the pipeline's steady-state speed-up), (c_grouped - c_sequential) /
// a_grouped = S - 1 (the bubble: a fraction (S - 1) / (N + S - 1) of the
// step), the same for Interleaved, and Sequential = the sharded model.
// Memory: Interleaved stashes fewer micro-batches than Grouped, and
// recomputation fewer values.
#include "tessera/session/Pipeline.hpp"

#include "tessera/passes/TrainingPasses.hpp"
#include "tessera/session/Session.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace tessera;
using namespace tessera::session;

namespace {

constexpr unsigned kStages = 4, kBatch = 16, kWidth = 64;

enum class Split { Stages, Shards };

// S equal stages h = tanh(h w_s), the last with a squared-error loss.
ir::Module equalStages(Split split, unsigned count, bool recompute = false,
                       std::size_t batch = kBatch, std::size_t width = kWidth) {
  ir::Module m("equal_stages");
  ir::Builder b(m);
  ir::Value h = b.input("x", FLOAT, {batch, width});
  const ir::Value y = b.input("y", FLOAT, {batch, width});
  ir::Value loss;
  for (unsigned k = 0; k < kStages; ++k) {
    std::optional<ir::StageScope> stage;
    std::optional<ir::ShardScope> shard;
    if (split == Split::Stages)
      stage.emplace(b, k);
    else
      shard.emplace(b, k);
    const ir::Value w = b.variable("w" + std::to_string(k), {width, width},
                                   ir::init::constant(0.01));
    h = ir::tanh(ir::matmul(h, w));
    if (k + 1 == kStages)
      loss = ir::reduceMean(ir::meanSquaredError(h, y));
  }
  b.output("loss", loss);
  passes::TrainingPassOptions o;
  o.training.optimizer = passes::SGD{0.01};
  o.accumulation.count = count;
  o.recompute = recompute;
  passes::runTrainingPasses(m, o);
  return m;
}

Config fourIpus(PipelineSchedule schedule) {
  Config c;
  c.ipuModel.tilesPerIpu = 32;
  c.autoSelectIpus = kStages;
  c.syntheticData = true;
  c.pipeline.schedule = schedule;
  return c;
}

// Estimated cycles of one step of N micro-batches.
double cyclesPerStep(Split split, PipelineSchedule schedule, unsigned n) {
  Session s(equalStages(split, n), fourIpus(schedule), {{"x", "y"}, {}, n});
  s.compile();
  s.run();
  return double(s.estimatedCyclesPerRun());
}

struct Line {
  double slope, intercept;
};

Line fit(Split split, PipelineSchedule schedule) {
  const double c4 = cyclesPerStep(split, schedule, 4);
  const double c8 = cyclesPerStep(split, schedule, 8);
  const double slope = (c8 - c4) / 4;
  return {slope, c4 - 4 * slope};
}

// Data bytes (variables, always live or not) on IPU 0's tiles: stage 0
// stashes the most micro-batches.
std::uint64_t ipu0DataBytes(PipelineSchedule schedule, bool recompute) {
  // Activations larger than the weights, as in a convolutional model.
  Session s(equalStages(Split::Stages, 8, recompute, 128, 32),
            fourIpus(schedule), {{"x", "y"}, {}, 8});
  s.compile();
  const Executable &exe = s.engine().getExecutable();
  std::uint64_t bytes = 0;
  for (std::size_t t = 0; t < exe.tilesPerIPU && t < exe.tileMemory.size(); ++t)
    bytes += exe.tileMemory[t].alwaysLive + exe.tileMemory[t].notAlwaysLive;
  return bytes;
}

void expectWithin(double got, double want, double fraction,
                  const std::string &what) {
  EXPECT_NEAR(got, want, fraction * std::abs(want)) << what;
}

} // namespace

TEST(PipelineEstimates, GroupedRampIsSMinusOneSteadySteps) {
  const Line grouped = fit(Split::Stages, PipelineSchedule::Grouped);
  const Line sequential = fit(Split::Stages, PipelineSchedule::Sequential);
  ASSERT_GT(grouped.slope, 0);
  expectWithin(sequential.slope / grouped.slope, kStages, 0.1,
               "steady-state speed-up of S equal stages");
  expectWithin((grouped.intercept - sequential.intercept) / grouped.slope,
               kStages - 1, 0.1, "ramp-up and ramp-down, in steady steps");
}

TEST(PipelineEstimates, InterleavedRampIsSMinusOneOfItsSteadySteps) {
  const Line interleaved = fit(Split::Stages, PipelineSchedule::Interleaved);
  const Line grouped = fit(Split::Stages, PipelineSchedule::Grouped);
  const Line sequential = fit(Split::Stages, PipelineSchedule::Sequential);
  // Two ticks of max(F, B) per micro-batch: never faster than F + B.
  EXPECT_GE(interleaved.slope, 0.95 * grouped.slope);
  expectWithin((interleaved.intercept - sequential.intercept) /
                   interleaved.slope,
               kStages - 1, 0.1, "interleaved ramp, in steady steps");
}

TEST(PipelineEstimates, CyclesPerMicroBatchFallTowardTheSteadyState) {
  const double c4 = cyclesPerStep(Split::Stages, PipelineSchedule::Grouped, 4);
  const double c8 = cyclesPerStep(Split::Stages, PipelineSchedule::Grouped, 8);
  const double c16 =
      cyclesPerStep(Split::Stages, PipelineSchedule::Grouped, 16);
  EXPECT_GT(c4 / 4, c8 / 8);
  EXPECT_GT(c8 / 8, c16 / 16);
  const double steady = (c16 - c8) / 8;
  EXPECT_LT(c16 / 16 - steady, c4 / 4 - steady);
}

TEST(PipelineEstimates, SequentialEqualsTheShardedModel) {
  for (unsigned n : {4u, 8u}) {
    const double sharded =
        cyclesPerStep(Split::Shards, PipelineSchedule::Grouped, n);
    const double sequential =
        cyclesPerStep(Split::Stages, PipelineSchedule::Sequential, n);
    expectWithin(sequential, sharded, 0.1, "N = " + std::to_string(n));
  }
}

TEST(PipelineMemory, InterleavedStashesLessThanGroupedAndRecomputeLess) {
  const std::uint64_t grouped = ipu0DataBytes(PipelineSchedule::Grouped, false);
  const std::uint64_t interleaved =
      ipu0DataBytes(PipelineSchedule::Interleaved, false);
  const std::uint64_t recomputed =
      ipu0DataBytes(PipelineSchedule::Grouped, true);
  EXPECT_LT(interleaved, grouped);
  EXPECT_LT(recomputed, grouped);
}
