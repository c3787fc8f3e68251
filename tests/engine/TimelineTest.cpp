// The elapsed time of multi-IPU programs (Timeline): IPUs run side by side
// and wait for each other only at external syncs. Each program is built so
// that the expected figure follows from the compiler's per-step estimates
// by the reasoning in its comment, and differs from the old estimate (the
// busiest IPU's busy cycles, max of getCycleCounts) where the rule matters.
#include "TestGraphs.hpp"

#include "tessera/engine/Profile.hpp"
#include "tessera/engine/Timeline.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

using namespace tessera;
using namespace tessera::program;
using tessera::test::addTestCodelets;
using tessera::test::modelDevice;

namespace {

using Cycles = std::vector<std::uint64_t>;

// One empty vertex on \p tile whose estimate is \p cycles worker cycles.
ComputeSet busy(Graph &g, const std::string &name, unsigned tile,
                std::uint64_t cycles) {
  ComputeSet cs = g.addComputeSet(name);
  VertexRef v = g.addVertex(cs, "EmptyVertex");
  g.setTileMapping(v, tile);
  g.setPerfEstimate(v, cycles);
  return cs;
}

// The steps an engine ran, in program order, as "kind" or "kind:name"
// (compute steps: their compute set), to check each test runs the steps its
// reasoning assumes.
std::vector<std::string> ranSteps(const Engine &e) {
  const Executable &exe = e.getExecutable();
  const ExecutionCounts &counts = e.getExecutionCounts();
  std::vector<std::string> out;
  for (std::size_t s = 0; s < exe.steps.size(); ++s) {
    if (!counts.stepCounts[s])
      continue;
    const Step &st = exe.steps[s];
    switch (st.kind) {
    case StepKind::Compute:
      out.push_back("compute:" + exe.computeSetNames[st.c]);
      break;
    case StepKind::Exchange:
      out.push_back("exchange");
      break;
    case StepKind::Sync:
      out.push_back("sync");
      break;
    case StepKind::End:
      out.push_back("end");
      break;
    default:
      out.push_back("other");
    }
  }
  return out;
}

// The per-IPU estimate of the only step of \p kind (compute steps: of
// compute set \p name).
Cycles cyclesOf(const Engine &e, StepKind kind, const std::string &name = "") {
  const Executable &exe = e.getExecutable();
  for (std::size_t s = 0; s < exe.steps.size(); ++s)
    if (exe.steps[s].kind == kind &&
        (kind != StepKind::Compute ||
         exe.computeSetNames[exe.steps[s].c] == name))
      return exe.estimates[s].ipuCycles;
  ADD_FAILURE() << "no such step";
  return {};
}

std::uint64_t busiest(const Engine &e) {
  const Cycles c = e.getCycleCounts();
  return *std::max_element(c.begin(), c.end());
}

std::uint64_t largest(const Cycles &c) {
  return *std::max_element(c.begin(), c.end());
}

// Two IPUs of 4 tiles: tiles 0-3 are IPU 0, tiles 4-7 IPU 1. Work on IPU 0,
// then (when \p between is set) that program, then work on IPU 1.
struct TwoStages {
  Device device = modelDevice(4, 2);
  std::unique_ptr<Engine> engine;
  Cycles first, last, end;

  TwoStages(const std::function<Program(Graph &)> &between,
            const OptionFlags &options = {}) {
    Graph g(device.getTarget());
    addTestCodelets(g);
    ComputeSet a = busy(g, "stage0", 0, 1000);
    ComputeSet b = busy(g, "stage1", 4, 800);
    Sequence seq{Execute(a)};
    if (between)
      seq.add(between(g));
    seq.add(Execute(b));
    engine = std::make_unique<Engine>(g, seq, options);
    engine->load(device);
    engine->run();
    first = cyclesOf(*engine, StepKind::Compute, "stage0");
    last = cyclesOf(*engine, StepKind::Compute, "stage1");
    end = cyclesOf(*engine, StepKind::End);
  }
};

// An inter-IPU copy from IPU 0 to IPU 1.
Program copyAcross(Graph &g) {
  Tensor x = g.addVariable(FLOAT, {256}, "x");
  Tensor y = g.addVariable(FLOAT, {256}, "y");
  g.setTileMapping(x, 1); // IPU 0
  g.setTileMapping(y, 5); // IPU 1
  return Copy(x, y);
}

} // namespace

// IPU 1 needs IPU 0's data: it starts the copy when IPU 0 has finished its
// stage, so the run is stage 0, then the copy, then stage 1, one after the
// other. The old estimate let IPU 1 run its part alongside stage 0.
TEST(Timeline, WorkThatCrossesIpusTakesTheSumOfItsParts) {
  TwoStages t(copyAcross);
  const Engine &e = *t.engine;
  ASSERT_EQ(ranSteps(e), (std::vector<std::string>{"compute:stage0", "exchange",
                                                   "compute:stage1", "end"}));
  const Cycles copy = cyclesOf(e, StepKind::Exchange);
  ASSERT_GT(copy[0], 0u);
  ASSERT_GT(copy[1], 0u);
  const std::uint64_t parts = t.first[0] + largest(copy) + t.last[1] + t.end[0];
  EXPECT_EQ(e.getElapsedCycles(), parts);
  EXPECT_GT(e.getElapsedCycles(), busiest(e));
}

// Nothing connects the two stages: the IPUs run them side by side and meet
// at the end of the run. An IPU without a compute set's vertices takes no
// part in its sync, so the elapsed time is the busiest IPU's busy cycles.
TEST(Timeline, IndependentWorkOnTwoIpusOverlaps) {
  TwoStages t(nullptr);
  const Engine &e = *t.engine;
  ASSERT_EQ(ranSteps(e), (std::vector<std::string>{"compute:stage0",
                                                   "compute:stage1", "end"}));
  const std::uint64_t overlapped = std::max(t.first[0], t.last[1]) + t.end[0];
  EXPECT_EQ(e.getElapsedCycles(), overlapped);
  EXPECT_LT(e.getElapsedCycles(), t.first[0] + t.last[1]);
  EXPECT_EQ(e.getElapsedCycles(), busiest(e));
  // The end of a run aligns the IPUs: a second run takes as long again.
  t.engine->run();
  EXPECT_EQ(e.getElapsedCycles(), 2 * overlapped);
}

// A Sync makes IPU 1 wait for IPU 0 although no data moves.
TEST(Timeline, SyncAlignsTheClocks) {
  TwoStages t([](Graph &) -> Program { return Sync(SyncType::GLOBAL); });
  const Engine &e = *t.engine;
  ASSERT_EQ(ranSteps(e), (std::vector<std::string>{"compute:stage0", "sync",
                                                   "compute:stage1", "end"}));
  const Cycles sync = cyclesOf(e, StepKind::Sync);
  EXPECT_EQ(e.getElapsedCycles(),
            t.first[0] + largest(sync) + t.last[1] + t.end[0]);
  EXPECT_GT(e.getElapsedCycles(), busiest(e));
}

// An exchange within IPU 1 does not wait for IPU 0: stage 0 overlaps the
// copy and stage 1.
TEST(Timeline, ExchangeWithinOneIpuWaitsForNoOtherIpu) {
  TwoStages t([](Graph &g) -> Program {
    Tensor x = g.addVariable(FLOAT, {256}, "x");
    Tensor y = g.addVariable(FLOAT, {256}, "y");
    g.setTileMapping(x, 5);
    g.setTileMapping(y, 6);
    return Copy(x, y);
  });
  const Engine &e = *t.engine;
  ASSERT_EQ(ranSteps(e), (std::vector<std::string>{"compute:stage0", "exchange",
                                                   "compute:stage1", "end"}));
  const Cycles copy = cyclesOf(e, StepKind::Exchange);
  ASSERT_EQ(copy[0], 0u);
  EXPECT_EQ(e.getElapsedCycles(),
            std::max(t.first[0], copy[1] + t.last[1]) + t.end[0]);
}

// With one IPU every rule adds the step's cycles: the elapsed time is the
// sum of count x cycles over the steps, today's figure, run after run.
TEST(Timeline, OneIpuElapsedIsTheSumOfStepCycles) {
  Device device = modelDevice(4, 1);
  Graph g(device.getTarget());
  addTestCodelets(g);
  ComputeSet a = busy(g, "a", 0, 300);
  ComputeSet b = busy(g, "b", 2, 500);
  Tensor x = g.addVariable(FLOAT, {64}, "x");
  Tensor y = g.addVariable(FLOAT, {64}, "y");
  g.setTileMapping(x, 1);
  g.setTileMapping(y, 3);
  Engine e(g, Sequence{Repeat(3, Sequence{Execute(a), Copy(x, y)}),
                       Sync(SyncType::INTERNAL), Execute(b)});
  e.load(device);
  for (int run = 0; run < 2; ++run) {
    e.run();
    const Executable &exe = e.getExecutable();
    const ExecutionCounts &counts = e.getExecutionCounts();
    std::uint64_t sum = 0;
    for (std::size_t s = 0; s < exe.steps.size(); ++s)
      sum += counts.stepCounts[s] * exe.estimates[s].ipuCycles.at(0);
    EXPECT_EQ(e.getElapsedCycles(), sum) << "run " << run;
    EXPECT_EQ(e.getElapsedCycles(), e.getCycleCounts()[0]) << "run " << run;
  }
  EXPECT_TRUE(e.getExecutionCounts().ipuClocks.empty());
}

// The profile's trace follows the same clocks: the copy starts on both IPUs
// when IPU 0 has finished stage 0 (not at 0 on IPU 1), stage 1 starts on
// IPU 1 when the copy is done, and the trace ends at the elapsed time.
TEST(Timeline, ProfileTraceStartsFollowTheClocks) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera-timeline-" + std::to_string(::getpid()));
  {
    TwoStages t(copyAcross, {{"autoReport.all", "true"},
                             {"autoReport.directory", dir.string()}});
    const Engine &e = *t.engine;
    const nlohmann::json x =
        makeProfile(e.getExecutable(), &e.getExecutionCounts())["execution"];
    ASSERT_TRUE(x["traceComplete"].get<bool>());
    const nlohmann::json &trace = x["trace"];
    ASSERT_EQ(trace.size(), 4u);
    const std::uint64_t c0 = t.first[0];
    const std::uint64_t copy = largest(cyclesOf(e, StepKind::Exchange));
    const std::uint64_t c1 = t.last[1];
    EXPECT_EQ(trace[0]["start"].get<Cycles>(), (Cycles{0, 0}));
    EXPECT_EQ(trace[1]["start"].get<Cycles>(), (Cycles{c0, c0}));
    EXPECT_EQ(trace[2]["start"].get<Cycles>(), (Cycles{c0 + copy, c0 + copy}));
    EXPECT_EQ(trace[3]["start"].get<Cycles>(),
              (Cycles{c0 + copy, c0 + copy + c1}));
    EXPECT_EQ(x["elapsedCycles"].get<std::uint64_t>(),
              c0 + copy + c1 + t.end[0]);
    EXPECT_EQ(x["elapsedCycles"].get<std::uint64_t>(), e.getElapsedCycles());
  }
  std::filesystem::remove_all(dir);
}

// The plan a Timeline makes of each step kind.
TEST(Timeline, StepKindsMoveTheClocksAsTheRuleSays) {
  TwoStages t(copyAcross);
  const Executable &exe = t.engine->getExecutable();
  const Timeline timeline(exe);
  ASSERT_EQ(timeline.numIPUs(), 2u);
  for (std::uint32_t s = 0; s < exe.steps.size(); ++s) {
    switch (exe.steps[s].kind) {
    case StepKind::Compute: {
      EXPECT_EQ(timeline.move(s), Timeline::Move::PerIpu);
      // Each stage's compute set touches one IPU; the other's clock stays.
      const bool first = exe.computeSetNames[exe.steps[s].c] == "stage0";
      EXPECT_EQ(timeline.cycles(s, first ? 1 : 0), 0u);
      EXPECT_EQ(timeline.cycles(s, first ? 0 : 1),
                exe.estimates[s].ipuCycles[first ? 0 : 1]);
      break;
    }
    case StepKind::Exchange:
      EXPECT_EQ(timeline.move(s), Timeline::Move::Sync);
      EXPECT_EQ(timeline.cycles(s, 0), largest(exe.estimates[s].ipuCycles));
      break;
    case StepKind::End:
      EXPECT_EQ(timeline.move(s), Timeline::Move::RunEnd);
      break;
    default:
      break;
    }
  }
  std::vector<std::uint64_t> clocks{100, 40};
  for (std::uint32_t s = 0; s < exe.steps.size(); ++s)
    if (exe.steps[s].kind == StepKind::Exchange) {
      timeline.begin(s, clocks.data());
      EXPECT_EQ(clocks, (Cycles{100, 100}));
      timeline.advance(s, clocks.data());
      EXPECT_EQ(clocks[0], 100 + largest(exe.estimates[s].ipuCycles));
      EXPECT_EQ(clocks[1], clocks[0]);
    }
}
