// Concurrent pipeline stages (session/Pipeline.hpp): a stage split into
// sub-stages with the same inputs, each on its own IPU. A 3-stage model
// whose middle stage is two concurrent sub-stages trains pipelined to the
// weights of plain gradient accumulation on one IPU; the estimate runs the
// sub-stages side by side; and a mapping the model cannot use is an error.
#include "tessera/session/Pipeline.hpp"

#include "tessera/engine/Engine.hpp"
#include "tessera/engine/Profile.hpp"
#include "tessera/passes/TrainingPasses.hpp"
#include "tessera/session/Session.hpp"
#include "tessera/support/Error.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

using namespace tessera;
using namespace tessera::session;
using data::HostTensor;
using ::testing::HasSubstr;

namespace {

constexpr unsigned kIn = 6, kWidth = 8, kOut = 3;

std::vector<double> wobble(std::size_t n, double phase) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = 0.4 * std::sin(phase + 1.7 * double(i));
  return v;
}

enum class Split { None, Concurrent };

// Stage 0: h = tanh(x w0 + b0). Stage 1, two concurrent sub-stages (@ipu(0)
// and @ipu(1)) reading h: a = tanh(h wa), c = tanh(h wc) (\p width wide).
// Stage 2: a squared error of a va + c vc. SGD with momentum, gradients
// accumulated (MEAN) over \p count micro-batches.
ir::Module branches(Split split, unsigned count, std::size_t batch = 2,
                    std::size_t width = kWidth) {
  ir::Module m("branches");
  ir::Builder b(m);
  const ir::Value x = b.input("x", FLOAT, {batch, kIn});
  const ir::Value y = b.input("y", FLOAT, {batch, kOut});
  const bool staged = split == Split::Concurrent;
  const auto var = [&](const std::string &name, std::size_t in, std::size_t out,
                       double phase) {
    return b.variable(name, {in, out},
                      ir::init::values(wobble(in * out, phase)));
  };
  ir::Value h;
  {
    std::optional<ir::StageScope> s;
    if (staged)
      s.emplace(b, 0);
    h = ir::tanh(ir::matmul(x, var("w0", kIn, width, 0.1)) +
                 b.variable("b0", {width}, ir::init::values(wobble(width, 2))));
  }
  ir::Value branch[2];
  for (unsigned j = 0; j < 2; ++j) {
    std::optional<ir::StageScope> s;
    std::optional<ir::ShardScope> sub;
    if (staged) {
      s.emplace(b, 1);
      sub.emplace(b, j);
    }
    branch[j] = ir::tanh(
        ir::matmul(h, var(j ? "wc" : "wa", width, width, 0.7 + 0.5 * j)));
  }
  ir::Value loss;
  {
    std::optional<ir::StageScope> s;
    if (staged)
      s.emplace(b, 2);
    const ir::Value out = ir::matmul(branch[0], var("va", width, kOut, 1.3)) +
                          ir::matmul(branch[1], var("vc", width, kOut, 1.9));
    loss = ir::reduceMean(ir::meanSquaredError(out, y));
  }
  b.output("loss", loss);
  passes::TrainingPassOptions o;
  o.training.optimizer = passes::SGD{0.05, 0.9};
  o.accumulation.count = count;
  passes::runTrainingPasses(m, o);
  return m;
}

Config ipus(unsigned n) {
  Config c;
  c.ipuModel.tilesPerIpu = 16;
  c.autoSelectIpus = n;
  return c;
}

struct Trained {
  Checkpoint weights;
  std::vector<float> losses;
};

Trained train(const ir::Module &m, unsigned count, unsigned steps,
              const Config &config) {
  const std::size_t micro = std::size_t(count) * steps;
  std::vector<float> xs, ys;
  for (std::size_t i = 0; i < micro * 2; ++i) {
    for (std::size_t j = 0; j < kIn; ++j)
      xs.push_back(float(std::sin(0.37 * double(i * kIn + j))));
    for (std::size_t j = 0; j < kOut; ++j)
      ys.push_back(float(std::cos(0.21 * double(i + j))));
  }
  Session s(m, config, {{"x", "y"}, {"loss"}, unsigned(micro)});
  s.compile();
  Infeed in(data::Dataset::fromTensors(
      {HostTensor::fromValues<float>({micro, 2, kIn}, xs),
       HostTensor::fromValues<float>({micro, 2, kOut}, ys)}));
  Outfeed out;
  s.connect(in, out);
  s.run();
  Trained t{s.readVariables(), {}};
  for (const data::Element &e : out.dequeueAll())
    t.losses.push_back(e[0].values<float>()[0]);
  return t;
}

class ConcurrentStages : public ::testing::TestWithParam<PipelineSchedule> {};

TEST_P(ConcurrentStages, TrainLikeGradientAccumulationOnOneIpu) {
  constexpr unsigned kCount = 4, kSteps = 12;
  Config one = ipus(1);
  one.pipeline.offloadOptimizerState = false;
  const Trained want =
      train(branches(Split::None, kCount), kCount, kSteps, one);
  // The seed's mapping: the second sub-stage shares IPU 2 with stage 2.
  Config c = ipus(3);
  c.pipeline.schedule = GetParam();
  c.pipeline.deviceMapping = {0, {1, 2}, 2};
  const Trained got =
      train(branches(Split::Concurrent, kCount), kCount, kSteps, c);
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (std::size_t i = 0; i < got.losses.size(); ++i)
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-5 * want.losses[i])
        << "micro-batch " << i;
  EXPECT_LT(want.losses.back(), 0.8 * want.losses.front());
  ASSERT_EQ(got.weights.variables.size(), want.weights.variables.size());
  for (std::size_t v = 0; v < got.weights.variables.size(); ++v) {
    const auto &[name, t] = got.weights.variables[v];
    ASSERT_EQ(name, want.weights.variables[v].first);
    const auto a = t.values<float>(),
               b = want.weights.variables[v].second.values<float>();
    ASSERT_EQ(a.size(), b.size()) << name;
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-5 * std::abs(b[i]) + 1e-6)
          << name << "[" << i << "]";
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, ConcurrentStages,
                         ::testing::Values(PipelineSchedule::Grouped,
                                           PipelineSchedule::Interleaved,
                                           PipelineSchedule::Sequential));

// Per pass scope ("stage 1 forward, micro-batch 0, IPU 2"): when its steps
// before the tick's transfers start and end on their IPU, and the cycles
// they keep it busy; and the cycles of its steps after the transfers (a
// backward pass's gradient accumulation, in the same scope).
struct Span {
  double start = INFINITY, end = 0, busy = 0, tail = 0;
};

struct Estimate {
  double cycles = 0;
  std::map<std::string, Span> passes;
};

Estimate estimate(const std::vector<StageIpus> &mapping, unsigned count) {
  Config c = ipus(4);
  c.ipuModel.tilesPerIpu = 4;
  c.syntheticData = true;
  c.pipeline.schedule = PipelineSchedule::Sequential;
  c.pipeline.deviceMapping = mapping;
  c.engineOptions.set("debug.instrument", "true");
  c.engineOptions.set("autoReport.directory",
                      ::testing::TempDir() + "tessera_concurrent_estimates");
  Session s(branches(Split::Concurrent, count, 32, 128), c,
            {{"x", "y"}, {}, count});
  s.compile();
  s.run();
  Estimate out;
  out.cycles = double(s.estimatedCyclesPerRun());
  const nlohmann::json profile =
      makeProfile(s.engine().getExecutable(), &s.engine().getExecutionCounts());
  std::set<std::string> transferred;
  for (const nlohmann::json &entry : profile["execution"]["trace"]) {
    const nlohmann::json &step =
        profile["graph"]["steps"][entry["step"].get<std::size_t>()];
    if (!step.contains("scope")) {
      for (const auto &[scope, span] : out.passes)
        transferred.insert(scope);
      continue;
    }
    const std::string scope = step["scope"];
    const auto at = scope.rfind("IPU ");
    if (at == std::string::npos)
      continue;
    const unsigned ipu = unsigned(std::stoul(scope.substr(at + 4)));
    const double start = entry["start"][ipu].get<double>(),
                 cycles = entry["cycles"][ipu].get<double>();
    Span &sp = out.passes[scope];
    if (transferred.count(scope)) {
      sp.tail += cycles;
      continue;
    }
    sp.start = std::min(sp.start, start);
    sp.end = std::max(sp.end, start + cycles);
    sp.busy += cycles;
  }
  return out;
}

// With the Sequential schedule a tick runs one stage pass. The two
// sub-stages of stage 1, on IPUs 1 and 2, both start once the transfers of
// the tick before have synced the IPUs, and nothing in them syncs again,
// so the pair's passes take the longer of their times, max(a, c), where
// on one IPU (mapping {1, 1}) they take a + c. Each step thus saves, per
// micro-batch and direction, min(a, c). The backward passes' gradient
// accumulations (tails ta, tc) run after the tick's transfers, beside
// stage 0's backward pass on IPU 0, which hides them in whole or in part:
// they save between 0 and min(ta, tc) more. So the step's saving lies
// between the sum of the min(a, c) and that plus the sum of the
// min(ta, tc) (within 5%: the transfers to and from the sub-stages move
// the same bytes over two links instead of one).
TEST(ConcurrentStagesEstimate, SubStagesRunSideBySide) {
  constexpr unsigned kCount = 4;
  const Estimate side = estimate({0, {1, 2}, 3}, kCount);
  const Estimate one = estimate({0, {1, 1}, 3}, kCount);
  double saving = 0, hidden = 0;
  for (unsigned i = 0; i < kCount; ++i)
    for (const char *pass : {"forward", "backward"}) {
      const std::string name =
          fmt::format("stage 1 {}, micro-batch {}, IPU ", pass, i);
      const Span &a = side.passes.at(name + "1"),
                 &c = side.passes.at(name + "2");
      ASSERT_GT(a.busy, 0);
      ASSERT_GT(c.busy, 0);
      const double span = std::max(a.end, c.end) - std::min(a.start, c.start);
      EXPECT_EQ(a.start, c.start) << name;
      EXPECT_NEAR(span, std::max(a.busy, c.busy), 0.01 * span) << name;
      saving += std::min(a.busy, c.busy);
      hidden += std::min(a.tail, c.tail);
      // On one IPU the two run one after the other.
      const Span &serial = one.passes.at(name + "1");
      EXPECT_NEAR(serial.end - serial.start, a.busy + c.busy,
                  0.05 * (a.busy + c.busy))
          << name;
    }
  EXPECT_GT(hidden, 0);
  EXPECT_GE(one.cycles - side.cycles, 0.95 * saving);
  EXPECT_LE(one.cycles - side.cycles, 1.05 * (saving + hidden));
}

TEST(ConcurrentStagesErrors, SubStageOnAMissingIpu) {
  Config c = ipus(3);
  c.pipeline.deviceMapping = {0, {1, 3}, 2};
  EXPECT_THAT(
      [&] {
        Session s(branches(Split::Concurrent, 4), c, {{"x", "y"}, {}, 4});
        s.compile();
      },
      ::testing::ThrowsMessage<OptionError>(HasSubstr(
          "puts sub-stage 1 of stage 1 on IPU 3, but the model has 3 IPUs")));
}

TEST(ConcurrentStagesErrors, OneIpuForTwoSubStages) {
  Config c = ipus(3);
  c.pipeline.deviceMapping = {0, 1, 2};
  EXPECT_THAT(
      [&] {
        Session s(branches(Split::Concurrent, 4), c, {{"x", "y"}, {}, 4});
        s.compile();
      },
      ::testing::ThrowsMessage<OptionError>(
          HasSubstr("gives pipeline stage 1 1 IPU, but it has 2 concurrent "
                    "sub-stages")));
}

TEST(ConcurrentStagesErrors, DefaultMappingPutsSubStagesOnTheirOwnIpus) {
  // Units 0, 1, 2, 3 on IPUs 0 to 3: three IPUs are too few.
  EXPECT_THAT(
      [&] {
        Session s(branches(Split::Concurrent, 4), ipus(3), {{"x", "y"}, {}, 4});
        s.compile();
      },
      ::testing::ThrowsMessage<OptionError>(
          HasSubstr("puts stage 2 on IPU 3")));
}

} // namespace
