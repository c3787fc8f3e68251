#include "tessera/engine/Profile.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <unistd.h>

namespace tessera {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// A hand-made executable: 2 IPUs x 4 tiles, one step of each cost group, a
// loop body run six times, and memory on six of the eight tiles.
//
// step kind        name         ipuCycles     count  count x cycles
//   0  StreamIn    load         3000, 3000    2      6000, 6000
//   1  Sync        sync         1000, 1000    2      2000, 2000
//   2  Compute     layer/add     120,   80    6       720,  480
//   3  Exchange    layer/exch     50,   70    6       300,  420
//   4  RepeatEnd   loop           10,   10    6        60,   60
//   5  Compute     layer/mul       0,  500    3         0, 1500
//   6  StreamOut   store        2000,    0    2      4000,    0
//   7  End         (none)       no estimate   0
// totals                                            13080, 10460
// ---------------------------------------------------------------------------

Step step(StepKind kind, std::uint32_t name, std::uint32_t a = 0,
          std::uint32_t b = 0, std::uint32_t c = 0) {
  Step s;
  s.kind = kind;
  s.name = name;
  s.a = a;
  s.b = b;
  s.c = c;
  return s;
}

StepEstimate estimate(std::vector<std::uint64_t> cycles,
                      std::uint64_t bytes = 0) {
  StepEstimate e;
  e.ipuCycles = std::move(cycles);
  e.bytesExchanged = bytes;
  return e;
}

// Appends a variable to \p exe with its name and shape in the tables.
void addVariable(Executable &exe, std::string name, Type type,
                 std::vector<std::uint64_t> shape, std::uint64_t bytes,
                 std::uint32_t tiles, bool alwaysLive, std::uint32_t begin = 0,
                 std::uint32_t end = 0) {
  VariableInfo v;
  v.name = static_cast<std::uint32_t>(exe.variableNames.size());
  exe.variableNames.push_back(std::move(name));
  v.rank = static_cast<std::uint32_t>(shape.size());
  v.shapeBegin = exe.variableShapes.size();
  exe.variableShapes.insert(exe.variableShapes.end(), shape.begin(),
                            shape.end());
  v.type = type;
  v.bytes = bytes;
  v.tiles = tiles;
  v.alwaysLive = alwaysLive;
  v.liveBegin = begin;
  v.liveEnd = end;
  exe.variables.push_back(v);
}

VertexInstance vertexOn(std::uint32_t tile) {
  VertexInstance v;
  v.tile = tile;
  return v;
}

Executable makeExecutable() {
  Executable exe;
  exe.arch = "ipu2";
  exe.numIPUs = 2;
  exe.tilesPerIPU = 4;
  exe.bytesPerTile = 638976;
  exe.clockHz = 1.33e9;
  exe.strings = {"",           "load", "sync",      "layer/add",
                 "layer/exch", "loop", "layer/mul", "store"};
  exe.steps = {
      step(StepKind::StreamIn, 1),         step(StepKind::Sync, 2),
      step(StepKind::Compute, 3, 0, 3, 0), step(StepKind::Exchange, 4),
      step(StepKind::RepeatEnd, 5),        step(StepKind::Compute, 6, 3, 2, 1),
      step(StepKind::StreamOut, 7),        step(StepKind::End, 0)};
  exe.estimates = {estimate({3000, 3000}, 64), estimate({1000, 1000}),
                   estimate({120, 80}),        estimate({50, 70}, 256),
                   estimate({10, 10}),         estimate({0, 500}),
                   estimate({2000, 0}, 32),    estimate({})};
  exe.tileCycleTiles = {0, 1, 4, 5, 6};
  exe.tileCycles = {120, 100, 80, 500, 400};
  exe.estimates[2].firstTileCycle = 0;
  exe.estimates[2].numTileCycles = 3;
  exe.estimates[5].firstTileCycle = 3;
  exe.estimates[5].numTileCycles = 2;
  exe.vertices = {vertexOn(0), vertexOn(1), vertexOn(4), vertexOn(5),
                  vertexOn(6)};
  exe.computeSetNames = {"layer/add", "layer/mul", "unused"};

  exe.tileMemory.assign(8, TileMemory{});
  auto &m = exe.tileMemory;
  m[0].alwaysLive = 1000, m[0].vertexState = 100, m[0].code = 200;
  m[1].alwaysLive = 500, m[1].notAlwaysLive = 300, m[1].vertexState = 50,
  m[1].code = 200;
  m[3].constants = 64;
  m[4].alwaysLive = 2000, m[4].temporaries = 128, m[4].vertexState = 60,
  m[4].code = 200;
  m[5].notAlwaysLive = 4000, m[5].vertexState = 40, m[5].code = 200;
  m[6].alwaysLive = 10, m[6].vertexState = 40, m[6].code = 200;
  // Per tile: 1300, 1050, 0, 64, 2388, 4240, 250, 0; total 9292.

  addVariable(exe, "weights", Type::FLOAT, {4, 8}, 128, 2, true, 0, 8);
  addVariable(exe, "acts", Type::HALF, {16}, 32, 1, false, 2, 5);
  addVariable(exe, "big", Type::FLOAT, {1000}, 4000, 1, false, 1, 6);
  return exe;
}

ExecutionCounts makeCounts() {
  ExecutionCounts c;
  c.runs = 2;
  c.stepCounts = {2, 2, 6, 6, 6, 3, 2, 0};
  c.trace = {0, 1, 2, 3, 4, 2, 3, 4, 5};
  c.ipuClocks = {14000, 13500}; // as an engine left them
  c.gatewayCycles = 250;
  return c;
}

std::string summary(const Executable &exe, const ExecutionCounts &counts,
                    const OptionFlags &options = {}) {
  std::ostringstream os;
  printProfileSummary(os, exe, counts, options);
  return os.str();
}

using Cycles = std::vector<std::uint64_t>;

// ---------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------

TEST(Profile, GraphFactsWithoutCountsHaveNoExecutionSection) {
  const json p = makeProfile(makeExecutable(), nullptr);
  EXPECT_EQ(p["format"], "tessera-profile");
  EXPECT_EQ(p["version"], 1);
  EXPECT_FALSE(p.contains("execution"));
  const json &t = p["target"];
  EXPECT_EQ(t["arch"], "ipu2");
  EXPECT_EQ(t["numIPUs"], 2);
  EXPECT_EQ(t["tilesPerIPU"], 4);
  EXPECT_EQ(t["bytesPerTile"], 638976);
  EXPECT_DOUBLE_EQ(t["clockHz"].get<double>(), 1.33e9);
  EXPECT_EQ(t["replicationFactor"], 1);
}

TEST(Profile, MemorySumsCategoriesAndKeepsOneColumnPerCategory) {
  const json mem = makeProfile(makeExecutable(), nullptr)["graph"]["memory"];
  EXPECT_EQ(mem["total"], 9292);
  const json &c = mem["byCategory"];
  EXPECT_EQ(c["alwaysLive"], 3510);
  EXPECT_EQ(c["notAlwaysLive"], 4300);
  EXPECT_EQ(c["constants"], 64);
  EXPECT_EQ(c["temporaries"], 128);
  EXPECT_EQ(c["vertexState"], 290);
  EXPECT_EQ(c["code"], 1000);
  EXPECT_EQ(mem["perTile"]["alwaysLive"].get<Cycles>(),
            (Cycles{1000, 500, 0, 0, 2000, 0, 10, 0}));
  EXPECT_EQ(mem["perTile"]["code"].get<Cycles>(),
            (Cycles{200, 200, 0, 0, 200, 200, 200, 0}));
  EXPECT_EQ(mem["perTile"]["total"].get<Cycles>(),
            (Cycles{1300, 1050, 0, 64, 2388, 4240, 250, 0}));
  EXPECT_EQ(mem["maxTile"], 5);
  EXPECT_EQ(mem["maxTileBytes"], 4240);
}

TEST(Profile, GraphListsVariablesVerticesComputeSetsAndSteps) {
  const json g = makeProfile(makeExecutable(), nullptr)["graph"];
  ASSERT_EQ(g["variables"].size(), 3u);
  const json &acts = g["variables"][1];
  EXPECT_EQ(acts["name"], "acts");
  EXPECT_EQ(acts["type"], "half");
  EXPECT_EQ(acts["shape"].get<Cycles>(), Cycles{16});
  EXPECT_EQ(acts["bytes"], 32);
  EXPECT_EQ(acts["tiles"], 1);
  EXPECT_EQ(acts["alwaysLive"], false);
  EXPECT_EQ(acts["liveBegin"], 2);
  EXPECT_EQ(acts["liveEnd"], 5);

  EXPECT_EQ(g["verticesPerTile"].get<Cycles>(),
            (Cycles{1, 1, 0, 0, 1, 1, 1, 0}));
  ASSERT_EQ(g["computeSets"].size(), 3u);
  EXPECT_EQ(g["computeSets"][0]["name"], "layer/add");
  EXPECT_EQ(g["computeSets"][0]["vertices"], 3);
  EXPECT_EQ(g["computeSets"][1]["vertices"], 2);
  EXPECT_EQ(g["computeSets"][2]["vertices"], 0);

  const json &steps = g["steps"];
  ASSERT_EQ(steps.size(), 8u);
  EXPECT_EQ(steps[0]["kind"], "streamIn");
  EXPECT_EQ(steps[0]["group"], "host");
  EXPECT_EQ(steps[0]["name"], "load");
  EXPECT_EQ(steps[0]["bytes"], 64);
  EXPECT_EQ(steps[3]["kind"], "exchange");
  EXPECT_EQ(steps[3]["ipuCycles"].get<Cycles>(), (Cycles{50, 70}));
  EXPECT_EQ(steps[3]["bytes"], 256);
  EXPECT_EQ(steps[4]["kind"], "repeatEnd");
  EXPECT_EQ(steps[4]["group"], "control");
  EXPECT_EQ(steps[5]["kind"], "compute");
  EXPECT_EQ(steps[5]["computeSet"], 1);
  EXPECT_EQ(steps[5]["vertices"], 2);
  // A step without an estimate costs zero on every IPU.
  EXPECT_EQ(steps[7]["kind"], "end");
  EXPECT_EQ(steps[7]["ipuCycles"].get<Cycles>(), (Cycles{0, 0}));
}

TEST(Profile, TotalCyclesAreCountsTimesEstimatesPerIpu) {
  const Executable exe = makeExecutable();
  const ExecutionCounts counts = makeCounts();
  const json x = makeProfile(exe, &counts)["execution"];
  EXPECT_EQ(x["runs"], 2);
  EXPECT_EQ(x["stepsExecuted"], 27);
  EXPECT_EQ(x["totalCycles"].get<Cycles>(), (Cycles{13080, 10460}));
  const json &k = x["cyclesByKind"];
  EXPECT_EQ(k["compute"].get<Cycles>(), (Cycles{720, 1980}));
  EXPECT_EQ(k["exchange"].get<Cycles>(), (Cycles{300, 420}));
  EXPECT_EQ(k["sync"].get<Cycles>(), (Cycles{2000, 2000}));
  EXPECT_EQ(k["host"].get<Cycles>(), (Cycles{10000, 6000}));
  EXPECT_EQ(k["control"].get<Cycles>(), (Cycles{60, 60}));

  // Only the seven steps that ran; step 7 (count 0) is left out.
  const json &steps = x["steps"];
  ASSERT_EQ(steps.size(), 7u);
  EXPECT_EQ(steps[2]["step"], 2);
  EXPECT_EQ(steps[2]["count"], 6);
  EXPECT_EQ(steps[2]["cycles"].get<Cycles>(), (Cycles{720, 480}));
  EXPECT_EQ(steps[5]["cycles"].get<Cycles>(), (Cycles{0, 1500}));
  for (const json &s : steps)
    EXPECT_NE(s["step"], 7);
}

// Each IPU's clock runs on its own, except at external syncs: the load
// (streamed to both IPUs), the Sync and the exchange (cycles on both IPUs:
// it crosses between them) start when the later IPU is ready. Before the
// Timeline the starts were sums per IPU, as if IPU 1 could start the
// exchange (at 4080) before IPU 0 had finished computing (at 4120).
TEST(Profile, TraceStartsWaitForTheLaterIpuAtSyncs) {
  const Executable exe = makeExecutable();
  const ExecutionCounts counts = makeCounts();
  const json x = makeProfile(exe, &counts)["execution"];
  EXPECT_FALSE(x["traceComplete"].get<bool>()); // 9 of 27 steps traced
  const json &trace = x["trace"];
  ASSERT_EQ(trace.size(), 9u);
  const std::vector<Cycles> starts = {{0, 0},       {3000, 3000}, {4000, 4000},
                                      {4120, 4120}, {4190, 4190}, {4200, 4200},
                                      {4320, 4320}, {4390, 4390}, {4400, 4400}};
  for (std::size_t i = 0; i < trace.size(); ++i) {
    EXPECT_EQ(trace[i]["step"], counts.trace[i]) << "entry " << i;
    EXPECT_EQ(trace[i]["start"].get<Cycles>(), starts[i]) << "entry " << i;
  }
  EXPECT_EQ(trace[2]["kind"], "compute");
  EXPECT_EQ(trace[2]["name"], "layer/add");
  EXPECT_EQ(trace[2]["cycles"].get<Cycles>(), (Cycles{120, 80}));
  EXPECT_EQ(trace[8]["name"], "layer/mul");
}

TEST(Profile, TraceOfEveryStepIsComplete) {
  const Executable exe = makeExecutable();
  ExecutionCounts counts;
  counts.runs = 1;
  counts.stepCounts = {1, 1, 1, 0, 0, 0, 0, 0};
  counts.trace = {0, 1, 2};
  counts.ipuClocks = {4120, 4080};
  const json x = makeProfile(exe, &counts)["execution"];
  EXPECT_TRUE(x["traceComplete"].get<bool>());
  EXPECT_EQ(x["totalCycles"].get<Cycles>(), (Cycles{4120, 4080}));
  EXPECT_EQ(x["elapsedCycles"], 4120);
}

TEST(Profile, ElapsedCyclesAreTheLatestClockPlusGatewayCycles) {
  const Executable exe = makeExecutable();
  const ExecutionCounts counts = makeCounts();
  EXPECT_EQ(elapsedCycles(exe, counts), 14250u);
  EXPECT_EQ(makeProfile(exe, &counts)["execution"]["elapsedCycles"], 14250);
  EXPECT_THAT(summary(exe, counts),
              HasSubstr("Elapsed cycles:               14,250 ("));
}

TEST(Profile, ElapsedCyclesOfOneIpuAreCountsTimesCycles) {
  Executable exe = makeExecutable();
  exe.numIPUs = 1;
  for (StepEstimate &e : exe.estimates)
    if (!e.ipuCycles.empty())
      e.ipuCycles = {e.ipuCycles.front()};
  ExecutionCounts counts = makeCounts();
  counts.ipuClocks.clear();
  // 6000 + 2000 + 720 + 300 + 60 + 0 + 4000, and the gateway's 250.
  EXPECT_EQ(elapsedCycles(exe, counts), 13330u);
  counts.runs = 0;
  counts.gatewayCycles = 0;
  counts.stepCounts.assign(8, 0);
  EXPECT_EQ(elapsedCycles(exe, counts), 0u);
}

TEST(Profile, ComputeTileCyclesListCostliestComputeStepsFirst) {
  const Executable exe = makeExecutable();
  const ExecutionCounts counts = makeCounts();
  const json t = makeProfile(exe, &counts)["execution"]["computeTileCycles"];
  // Step 5 costs 3 x 500 on its slower IPU, step 2 only 6 x 120.
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0]["step"], 5);
  EXPECT_EQ(t[0]["count"], 3);
  EXPECT_EQ(t[0]["tiles"].get<Cycles>(), (Cycles{5, 6}));
  EXPECT_EQ(t[0]["cycles"].get<Cycles>(), (Cycles{500, 400}));
  EXPECT_EQ(t[1]["step"], 2);
  EXPECT_EQ(t[1]["tiles"].get<Cycles>(), (Cycles{0, 1, 4}));
  EXPECT_EQ(t[1]["cycles"].get<Cycles>(), (Cycles{120, 100, 80}));
}

TEST(Profile, EmptyExecutableHasNoMaxTile) {
  Executable exe;
  exe.numIPUs = 1;
  const json p = makeProfile(exe, nullptr);
  EXPECT_EQ(p["graph"]["memory"]["total"], 0);
  EXPECT_TRUE(p["graph"]["memory"]["maxTile"].is_null());
  EXPECT_TRUE(p["graph"]["steps"].empty());
}

// ---------------------------------------------------------------------------
// Text summary
// ---------------------------------------------------------------------------

TEST(ProfileSummary, ShowsMemoryTotalsByCategoryAndPerTileExtremes) {
  const std::string s = summary(makeExecutable(), makeCounts());
  EXPECT_THAT(s, HasSubstr("Memory Usage:\n"));
  EXPECT_THAT(s, HasSubstr("9,292 B (9.1 KB), 0.2% of 5,111,808 B"));
  EXPECT_THAT(s, HasSubstr("Always-live variables:      3,510 B"));
  EXPECT_THAT(s, HasSubstr("Not-always-live variables:  4,300 B"));
  EXPECT_THAT(s, HasSubstr("Code:                       1,000 B"));
  EXPECT_THAT(s, HasSubstr("over the 6 of 8 tiles used"));
  EXPECT_THAT(s, HasSubstr("Maximum:                    4,240 B (4.1 KB) "
                           "(tile 5,"));
  EXPECT_THAT(s, HasSubstr("Mean:                       1,548 B"));
  EXPECT_THAT(s, HasSubstr("Minimum:                    64 B (tile 3)"));
}

TEST(ProfileSummary, ShowsTotalCyclesPerIpuWithTimeAtClockRate) {
  const std::string s = summary(makeExecutable(), makeCounts());
  EXPECT_THAT(s, HasSubstr("Execution:\n"));
  EXPECT_THAT(s, HasSubstr("Total cycles:\n"));
  EXPECT_THAT(s, HasSubstr("IPU 0: 13,080 cycles (9.83 us at 1.33 GHz)"));
  EXPECT_THAT(s, HasSubstr("IPU 1: 10,460 cycles (7.86 us at 1.33 GHz)"));
  EXPECT_THAT(s, HasSubstr("Runs:                         2"));
  EXPECT_THAT(s, HasSubstr("Steps executed:               27"));
}

TEST(ProfileSummary, ShowsCyclesByStepKind) {
  const std::string s = summary(makeExecutable(), makeCounts());
  EXPECT_THAT(s, HasSubstr("Cycles by step kind:"));
  // host on IPU 0: 10,000 of 13,080 cycles.
  EXPECT_THAT(s, HasSubstr("host                 10,000 ( 76.5%)"));
  EXPECT_THAT(s, HasSubstr("compute                 720 (  5.5%)"));
  EXPECT_THAT(s, HasSubstr("control"));
  EXPECT_THAT(s, HasSubstr("exchange"));
  EXPECT_THAT(s, HasSubstr("sync"));
}

TEST(ProfileSummary, ListsCostliestStepsUpToMaxSteps) {
  const Executable exe = makeExecutable();
  const std::string all = summary(exe, makeCounts());
  EXPECT_THAT(all, HasSubstr("Costliest steps (7 of 7 executed"));
  // Order by count x slowest IPU: load 6000, store 4000, sync 2000, ...
  const auto load = all.find("6,000 / 6,000  load");
  const auto store = all.find("4,000 / 0  store");
  const auto mul = all.find("0 / 1,500  layer/mul");
  ASSERT_NE(load, std::string::npos) << all;
  ASSERT_NE(store, std::string::npos) << all;
  ASSERT_NE(mul, std::string::npos) << all;
  EXPECT_LT(load, store);
  EXPECT_LT(store, mul);
  EXPECT_THAT(all, HasSubstr("streamIn"));

  const std::string two = summary(exe, makeCounts(), {{"maxSteps", "2"}});
  EXPECT_THAT(two, HasSubstr("Costliest steps (2 of 7 executed"));
  EXPECT_THAT(two, HasSubstr("  load"));
  EXPECT_THAT(two, HasSubstr("  store"));
  EXPECT_THAT(two, Not(HasSubstr("layer/mul")));
}

TEST(ProfileSummary, ShowVarStorageListsLargestVariablesFirst) {
  const Executable exe = makeExecutable();
  EXPECT_THAT(summary(exe, makeCounts()), Not(HasSubstr("Largest variables")));
  const std::string s =
      summary(exe, makeCounts(), {{"showVarStorage", "true"}});
  EXPECT_THAT(s, HasSubstr("Largest variables (3 of 3):"));
  // Poplar's variable storage: weights always live, acts and big not.
  EXPECT_THAT(s, HasSubstr("Variable Storage:\n"));
  EXPECT_THAT(s, HasSubstr("Always live:                  128 B in 1 "));
  EXPECT_THAT(s, HasSubstr("Not always live:              4,032 B (3.9 KB) "
                           "in 2 variables"));
  EXPECT_THAT(summary(exe, makeCounts()), Not(HasSubstr("Variable Storage")));
  const auto big = s.find("big");
  const auto weights = s.find("weights");
  const auto acts = s.find("acts");
  ASSERT_NE(big, std::string::npos);
  EXPECT_LT(big, weights);
  EXPECT_LT(weights, acts);
  EXPECT_THAT(s, HasSubstr("steps 2-5"));
  EXPECT_THAT(s, HasSubstr("[4,8]"));
  const std::string one = summary(
      exe, makeCounts(), {{"showVarStorage", "true"}, {"maxVariables", "1"}});
  EXPECT_THAT(one, HasSubstr("Largest variables (1 of 3):"));
  EXPECT_THAT(one, Not(HasSubstr("weights")));
}

TEST(ProfileSummary, PoplarsShowOptionsListEveryStepAndEachIpusMemory) {
  const Executable exe = makeExecutable();
  const std::string s = summary(exe, makeCounts(),
                                {{"maxSteps", "2"},
                                 {"showExecutionSteps", "true"},
                                 {"showPerIpuMemoryUsage", "true"}});
  // maxSteps still bounds the costliest steps; every step that ran is
  // listed after them, in program order (step 7 never ran).
  EXPECT_THAT(s, HasSubstr("Costliest steps (2 of 7 executed"));
  const auto steps = s.find("Execution steps (7 of 8 ran");
  ASSERT_NE(steps, std::string::npos) << s;
  std::size_t at = steps;
  for (const char *row : {"      0  ", "      1  ", "      2  ", "      3  ",
                          "      4  ", "      5  ", "      6  "}) {
    const auto next = s.find(row, at);
    ASSERT_NE(next, std::string::npos) << row << " after " << at << "\n" << s;
    at = next;
  }
  EXPECT_EQ(s.find("      7  ", steps), std::string::npos) << s;
  // Each IPU's memory closes "Memory Usage", before "Execution". Tiles 0-3
  // hold 1300 + 1050 + 0 + 64 bytes, tiles 4-7 2388 + 4240 + 250.
  const auto byIpu = s.find("  By IPU:\n    IPU 0: 2,414");
  ASSERT_NE(byIpu, std::string::npos) << s;
  EXPECT_LT(s.find("Memory Usage:"), byIpu);
  EXPECT_LT(byIpu, s.find("Execution:"));
  EXPECT_THAT(s, HasSubstr("IPU 1: 6,878"));
  // IPU 1's always-live variables: tiles 4 and 6.
  EXPECT_THAT(s.substr(s.find("IPU 1: 6,878")),
              HasSubstr("Always-live variables:    2,010 B"));
  const std::string plain = summary(exe, makeCounts());
  EXPECT_THAT(plain, Not(HasSubstr("By IPU")));
  EXPECT_THAT(plain, Not(HasSubstr("Execution steps")));
}

TEST(ProfileSummary, TargetShowsReplicasAsPoplarDoes) {
  Executable exe = makeExecutable();
  exe.replicationFactor = 4;
  const std::string s = summary(exe, makeCounts());
  EXPECT_THAT(s, HasSubstr("Number of replicas:           4\n"));
  EXPECT_THAT(s, HasSubstr("IPUs per replica:             2\n"));
  EXPECT_THAT(s, HasSubstr("Tiles per replica:            8\n"));
}

TEST(ProfileSummary, UnknownOptionIsAnErrorSuggestingTheClosestKey) {
  std::ostringstream os;
  try {
    printProfileSummary(os, makeExecutable(), makeCounts(),
                        {{"showVarStorag", "true"}});
    FAIL() << "expected OptionError";
  } catch (const OptionError &e) {
    EXPECT_THAT(e.what(), HasSubstr("showVarStorag"));
    EXPECT_THAT(e.what(), HasSubstr("showVarStorage"));
  }
  EXPECT_TRUE(os.str().empty());
  EXPECT_THROW(summary(makeExecutable(), makeCounts(), {{"maxSteps", "many"}}),
               OptionError);
}

TEST(ProfileSummary, NothingRunSaysSo) {
  ExecutionCounts none;
  const std::string s = summary(makeExecutable(), none);
  EXPECT_THAT(s, HasSubstr("IPU 0: 0 cycles"));
  EXPECT_THAT(s, HasSubstr("No steps have run."));
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

class WriteProfile : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera-profile-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(WriteProfile, WritesJsonThatParsesBackIntoANewFolder) {
  const Executable exe = makeExecutable();
  const ExecutionCounts counts = makeCounts();
  const fs::path nested = dir_ / "a" / "b";
  writeProfile(nested.string(), exe, &counts);
  const json back = json::parse(readFile((nested / "profile.json").string()));
  EXPECT_EQ(back, makeProfile(exe, &counts));
  // Writing again replaces the files and leaves no temporaries behind:
  // profile.json and debug.cbor.
  writeProfile(nested.string(), exe, nullptr);
  EXPECT_FALSE(json::parse(readFile((nested / "profile.json").string()))
                   .contains("execution"));
  EXPECT_EQ(
      std::distance(fs::directory_iterator(nested), fs::directory_iterator()),
      2);
  EXPECT_TRUE(fs::is_regular_file(nested / "debug.cbor"));
}

TEST(DebugInfo, ContextsAreTheLevelsOfTheDebugNames) {
  const json profile = {
      {"graph",
       {{"computeSets", {{{"name", "dense/matmul"}}, {{"name", "dense/add"}}}},
        {"variables", {{{"name", "dense/kernel"}}, {{"name", ""}}}},
        {"steps", {{{"name", "dense/matmul"}}}}}}};
  const json info = makeDebugInfo(profile);
  EXPECT_EQ(info["format"], "tessera-debug-info");
  const json &c = info["contexts"];
  ASSERT_EQ(c.size(), 4u); // dense, dense/matmul, dense/add, dense/kernel
  EXPECT_EQ(c[0]["path"], "dense");
  EXPECT_TRUE(c[0]["parent"].is_null());
  EXPECT_EQ(c[0]["computeSets"], 2);
  EXPECT_EQ(c[0]["variables"], 1);
  EXPECT_EQ(c[0]["steps"], 1);
  EXPECT_EQ(c[1]["path"], "dense/matmul");
  EXPECT_EQ(c[1]["parent"], 0);
  EXPECT_EQ(c[1]["steps"], 1);
  EXPECT_EQ(c[3]["path"], "dense/kernel");
  EXPECT_EQ(c[3]["variables"], 1);
}

TEST_F(WriteProfile, FolderThatIsAFileIsAnErrorNamingIt) {
  fs::create_directories(dir_);
  const fs::path file = dir_ / "not-a-folder";
  writeFileAtomically(file.string(), "x");
  try {
    writeProfile(file.string(), makeExecutable(), nullptr);
    FAIL() << "expected Error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr(file.string()));
  }
}

} // namespace
} // namespace tessera
