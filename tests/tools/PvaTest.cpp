// The pva reader: what it reads back from a real two-IPU run agrees with
// the profile and the engine's cycle counts; the debug file's contexts
// form a tree; unusable paths and files give a ReportError.
#include "tools/ProfileFixture.hpp"

#include "tessera/support/File.hpp"

#include <pva/pva.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

using namespace tessera;
using namespace tessera::testing;
using ::testing::HasSubstr;

namespace {

const pva::Report &fixtureReport() {
  static const pva::Report report =
      pva::openReport(twoIpuProfile().dir.path() + "/profile.pop",
                      twoIpuProfile().dir.path() + "/debug.cbor");
  return report;
}

std::string openError(const std::string &path, const std::string &debug) {
  try {
    pva::openReport(path, debug);
  } catch (const pva::ReportError &e) {
    return e.what();
  }
  ADD_FAILURE() << "openReport accepted " << path << " " << debug;
  return {};
}

} // namespace

TEST(Pva, TargetAndMemoryMatchTheProfile) {
  const pva::Compilation &c = fixtureReport().compilation();
  const nlohmann::json &p = twoIpuProfile().profile;
  EXPECT_EQ(c.target().numIPUs(), 2u);
  EXPECT_EQ(c.target().tilesPerIpu(), kFixtureTiles);
  EXPECT_EQ(c.target().numTiles(), 2 * kFixtureTiles);
  EXPECT_EQ(c.target().bytesPerIPU(),
            kFixtureTiles * p["target"]["bytesPerTile"].get<std::uint64_t>());
  ASSERT_EQ(c.tiles().size(), 2 * kFixtureTiles);
  std::uint64_t sum = 0;
  for (const pva::Tile &t : c.tiles()) {
    sum += t.memory().total().includingGaps();
    EXPECT_EQ(t.ipu(), t.number() / kFixtureTiles);
  }
  EXPECT_EQ(sum, c.totalMemory().includingGaps());
  EXPECT_EQ(sum, p["graph"]["memory"]["total"].get<std::uint64_t>());
  EXPECT_EQ(c.graph().numComputeSets(), p["graph"]["computeSets"].size());
  EXPECT_EQ(c.graph().numVars(), p["graph"]["variables"].size());
  EXPECT_GT(c.graph().numVertices(), 0u);
  EXPECT_THAT(fixtureReport().poplarVersion().string(), HasSubstr("Tessera"));
}

// The steps' starts follow the engine's per-IPU clocks, which wait for the
// other IPU at syncs: the last step (the end of the run) ends on the later
// IPU at the engine's elapsed time. (Before the clocks, each IPU's end was
// its busy cycles, as if it never waited.)
TEST(Pva, ExecutionStepsEndAtTheEnginesElapsedCycles) {
  const pva::Execution &e = fixtureReport().execution();
  ASSERT_TRUE(e.available());
  ASSERT_TRUE(e.complete());
  ASSERT_FALSE(e.steps().empty());
  EXPECT_EQ(e.steps().size(), e.stepsExecuted());
  const pva::ExecutionStep &last = e.steps().back();
  std::uint64_t end = 0;
  for (std::size_t ipu = 0; ipu < last.ipuCycles().size(); ++ipu)
    end = std::max(end, last.ipuCyclesFrom()[ipu] + last.ipuCycles()[ipu]);
  EXPECT_EQ(end, twoIpuProfile().engineElapsed);
  bool brokenDown = false;
  for (const pva::ExecutionStep &s : e.steps()) {
    EXPECT_EQ(s.cyclesTo() - s.cyclesFrom(), s.cycles());
    EXPECT_EQ(s.cycles(),
              *std::max_element(s.ipuCycles().begin(), s.ipuCycles().end()));
    if (!s.cyclesByTile().empty()) {
      brokenDown = true;
      EXPECT_EQ(s.program().type(), "compute");
      EXPECT_EQ(s.cyclesByTile().size(), 2 * kFixtureTiles);
      // A tile's cycles bound its IPU's cycles for the step.
      for (std::size_t t = 0; t < s.cyclesByTile().size(); ++t)
        EXPECT_LE(s.cyclesByTile()[t], s.ipuCycles()[t / kFixtureTiles]);
    }
  }
  EXPECT_TRUE(brokenDown);
}

TEST(Pva, DebugContextsFormATreeOfTheNames) {
  const auto &contexts = fixtureReport().debugContexts();
  ASSERT_FALSE(contexts.empty());
  std::uint64_t rootComputeSets = 0;
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    const pva::DebugContext &c = contexts[i];
    if (c.parent() < 0) {
      rootComputeSets += c.computeSets();
      EXPECT_EQ(c.path().find('/'), std::string::npos);
      continue;
    }
    ASSERT_LT(static_cast<std::size_t>(c.parent()), i);
    const pva::DebugContext &p = contexts[c.parent()];
    EXPECT_EQ(p.path() + "/" + c.name(), c.path());
    EXPECT_LE(c.computeSets() + c.variables() + c.steps(),
              p.computeSets() + p.variables() + p.steps());
  }
  std::uint64_t named = 0;
  for (const pva::ComputeSet &cs : fixtureReport().compilation().computeSets())
    named += !cs.name().empty();
  EXPECT_EQ(rootComputeSets, named);
}

TEST(Pva, TheFolderAndProfileJsonOpenToo) {
  const std::string dir = twoIpuProfile().dir.path();
  EXPECT_EQ(pva::openReport(dir).compilation().tiles().size(),
            2 * kFixtureTiles);
  EXPECT_EQ(pva::openReport(dir + "/profile.json").execution().steps().size(),
            fixtureReport().execution().steps().size());
}

TEST(Pva, UnusablePathsAndFilesAreReportErrors) {
  const std::string dir = twoIpuProfile().dir.path();
  EXPECT_THAT(openError(dir + "/debug.cbor", ""),
              HasSubstr("neither a report folder nor a profile.json"));
  EXPECT_THAT(openError("/nonexistent/profile.pop", ""),
              HasSubstr("does not exist"));
  TempDir bad("pva");
  const std::string garbage = bad.path() + "/debug.cbor";
  writeFileAtomically(garbage, std::string("\xff\x00\x13", 3));
  EXPECT_THAT(openError(dir, garbage),
              HasSubstr("is not a CBOR debug-info file"));
  const std::vector<std::uint8_t> other =
      nlohmann::json::to_cbor(nlohmann::json{{"format", "popart"}});
  writeFileAtomically(garbage, std::string(other.begin(), other.end()));
  EXPECT_THAT(openError(dir, garbage),
              HasSubstr("is not a Tessera debug-info file"));
  nlohmann::json loop = {{"format", "tessera-debug-info"},
                         {"version", 1},
                         {"contexts",
                          {{{"path", "a"},
                            {"parent", 0},
                            {"computeSets", 0},
                            {"variables", 0},
                            {"steps", 0}}}}};
  const std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(loop);
  writeFileAtomically(garbage, std::string(bytes.begin(), bytes.end()));
  EXPECT_THAT(openError(dir, garbage),
              HasSubstr("names parent 0, which does not come before it"));
  // 100000 nested one-element arrays, then a null.
  std::string deep(100000, '\x81');
  writeFileAtomically(garbage, deep + '\xf6');
  EXPECT_THAT(openError(dir, garbage), HasSubstr("more than 16 deep"));
  loop["contexts"][0]["parent"] = nullptr;
  loop["contexts"][0]["steps"] = "many";
  const std::vector<std::uint8_t> typed = nlohmann::json::to_cbor(loop);
  writeFileAtomically(garbage, std::string(typed.begin(), typed.end()));
  EXPECT_THAT(openError(dir, garbage), HasSubstr("the report is damaged"));
}
