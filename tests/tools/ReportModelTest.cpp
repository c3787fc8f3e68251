// The report model derived from a real two-IPU profile: every figure the
// page draws, checked against the profile and the engine's own counts.
#include "tools/ProfileFixture.hpp"

#include "tessera/report/Report.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

using namespace tessera;
using namespace tessera::testing;
using nlohmann::json;
using ::testing::HasSubstr;

namespace {

json model(const json &profile, report::ReportOptions options = {}) {
  return report::makeReportModel(profile, options);
}

std::uint64_t sum(const json &values) {
  std::uint64_t s = 0;
  for (const json &v : values)
    s += v.get<std::uint64_t>();
  return s;
}

const json *row(const json &rows, const std::string &name) {
  for (const json &r : rows)
    if (r["name"] == name)
      return &r;
  ADD_FAILURE() << "no row " << name;
  return nullptr;
}

} // namespace

TEST(ReportModel, TheProgramRanCorrectly) {
  const TwoIpuProfile &p = twoIpuProfile();
  EXPECT_EQ(p.sums, twoIpuExpectedSums(kFixtureTiles));
  EXPECT_EQ(p.profile["target"]["numIPUs"], 2);
}

TEST(ReportModel, SummaryTimeIsTheEnginesElapsedCycles) {
  const TwoIpuProfile &p = twoIpuProfile();
  const json s = model(p.profile)["summary"];
  EXPECT_EQ(p.profile["execution"]["elapsedCycles"], p.engineElapsed);
  EXPECT_EQ(s["elapsedCycles"], p.engineElapsed);
  EXPECT_EQ(s["maxCycles"],
            *std::max_element(p.engineCycles.begin(), p.engineCycles.end()));
  // A profile from before elapsed cycles were written: the busiest IPU's.
  json old = p.profile;
  old["execution"].erase("elapsedCycles");
  EXPECT_EQ(model(old)["summary"]["elapsedCycles"], s["maxCycles"]);
}

TEST(ReportModel, TileMemoryAndWorstTilesMatchTheProfile) {
  const json &profile = twoIpuProfile().profile;
  const json m = model(profile);
  const json &totals = profile["graph"]["memory"]["perTile"]["total"];
  ASSERT_EQ(totals.size(), 2u * kFixtureTiles);
  EXPECT_EQ(m["summary"]["totalBytes"], sum(totals));
  EXPECT_EQ(m["memory"]["total"], sum(totals));
  ASSERT_EQ(m["memory"]["perIpu"].size(), 2u);
  std::uint64_t perIpu = 0;
  for (const json &ipu : m["memory"]["perIpu"]) {
    perIpu += ipu["bytes"].get<std::uint64_t>();
    EXPECT_EQ(ipu["tilesUsed"], kFixtureTiles);
    const std::size_t t = ipu["maxTile"];
    EXPECT_EQ(t / kFixtureTiles, ipu["ipu"].get<std::size_t>());
    EXPECT_EQ(totals[t], ipu["maxTileBytes"]);
  }
  EXPECT_EQ(perIpu, sum(totals));
  const json &worst = m["memory"]["worstTiles"];
  ASSERT_EQ(worst.size(), 10u);
  EXPECT_EQ(worst[0]["tile"], profile["graph"]["memory"]["maxTile"]);
  for (std::size_t i = 0; i < worst.size(); ++i) {
    const std::size_t t = worst[i]["tile"];
    EXPECT_EQ(worst[i]["bytes"], totals[t]);
    EXPECT_EQ(worst[i]["ipu"], t / kFixtureTiles);
    EXPECT_EQ(worst[i]["tileOnIpu"], t % kFixtureTiles);
    if (i) {
      EXPECT_LE(worst[i]["bytes"], worst[i - 1]["bytes"]);
    }
  }
  std::uint64_t categories = 0;
  for (const json &c : m["memory"]["categories"])
    categories += c["bytes"].get<std::uint64_t>();
  EXPECT_EQ(categories, sum(totals));
}

TEST(ReportModel, LivenessCountsEachVariableOverItsClosedRange) {
  const json &profile = twoIpuProfile().profile;
  const json l = model(profile)["liveness"];
  const std::size_t steps = profile["graph"]["steps"].size();
  ASSERT_EQ(l["notAlwaysLive"].size(), steps);
  std::uint64_t always = 0, peak = 0;
  for (const json &v : profile["graph"]["variables"])
    if (v["alwaysLive"].get<bool>())
      always += v["bytes"].get<std::uint64_t>();
  EXPECT_EQ(l["alwaysLiveBytes"], always);
  for (std::size_t s = 0; s < steps; ++s) {
    std::uint64_t live = 0;
    for (const json &v : profile["graph"]["variables"])
      if (!v["alwaysLive"].get<bool>() && v["liveBegin"] <= s &&
          s <= v["liveEnd"])
        live += v["bytes"].get<std::uint64_t>();
    EXPECT_EQ(l["notAlwaysLive"][s], live) << "step " << s;
    peak = std::max(peak, live);
  }
  EXPECT_GT(peak, 0u);
  EXPECT_EQ(l["peakBytes"], peak + always);
  EXPECT_EQ(l["notAlwaysLive"][l["peakStep"].get<std::size_t>()], peak);
  EXPECT_FALSE(l["largestAtPeak"].empty());
}

TEST(ReportModel, TraceLanesAddUpToTheEngineCycleCounts) {
  const TwoIpuProfile &p = twoIpuProfile();
  const json tr = model(p.profile)["trace"];
  ASSERT_TRUE(tr["available"].get<bool>());
  EXPECT_TRUE(tr["complete"].get<bool>());
  ASSERT_EQ(tr["lanes"].size(), 2u);
  for (std::size_t ipu = 0; ipu < 2; ++ipu) {
    const json &lane = tr["lanes"][ipu];
    EXPECT_EQ(lane["cycles"], p.engineCycles[ipu]) << "IPU " << ipu;
    EXPECT_EQ(lane["drawnCycles"], p.engineCycles[ipu]);
    std::uint64_t blocks = 0;
    for (const json &b : lane["blocks"]) {
      blocks += b[1].get<std::uint64_t>();
      EXPECT_GT(b[1].get<std::uint64_t>(), 0u);
    }
    EXPECT_EQ(blocks, p.engineCycles[ipu]);
    for (const char *g : {"compute", "exchange", "sync", "host", "control"})
      EXPECT_EQ(lane["byGroup"][g],
                p.profile["execution"]["cyclesByKind"][g][ipu])
          << g << " on IPU " << ipu;
  }
  // Both IPUs compute, exchange (the copy crosses the links) and sync.
  for (const char *g : {"compute", "exchange", "sync"})
    for (std::size_t ipu = 0; ipu < 2; ++ipu)
      EXPECT_GT(tr["lanes"][ipu]["byGroup"][g].get<std::uint64_t>(), 0u)
          << g << " on IPU " << ipu;
  const json &labels = tr["labels"];
  EXPECT_NE(std::find(labels.begin(), labels.end(), "layer1/scale"),
            labels.end());
  EXPECT_NE(std::find(labels.begin(), labels.end(), "layer1/toIpu1"),
            labels.end());
}

TEST(ReportModel, TraceBeyondMaxTraceBlocksIsCountedNotDrawn) {
  const TwoIpuProfile &p = twoIpuProfile();
  report::ReportOptions options;
  options.maxTraceBlocks = 3;
  const json tr = model(p.profile, options)["trace"];
  for (std::size_t ipu = 0; ipu < 2; ++ipu) {
    const json &lane = tr["lanes"][ipu];
    EXPECT_EQ(lane["blocks"].size(), 3u);
    EXPECT_EQ(lane["hiddenBlocks"].get<std::size_t>() + 3,
              lane["entries"].get<std::size_t>());
    EXPECT_EQ(lane["cycles"], p.engineCycles[ipu]);
    EXPECT_LT(lane["drawnCycles"], lane["cycles"]);
  }
}

TEST(ReportModel, OperationsSumStepCostsAndVariableMemory) {
  const json &profile = twoIpuProfile().profile;
  const json m = model(profile);
  std::uint64_t slowestTotal = 0;
  for (const json &s : profile["execution"]["steps"]) {
    std::uint64_t slowest = 0;
    for (const json &c : s["cycles"])
      slowest = std::max(slowest, c.get<std::uint64_t>());
    slowestTotal += slowest;
  }
  EXPECT_EQ(m["operations"]["totalCycles"], slowestTotal);
  EXPECT_EQ(m["debugNames"]["totalCycles"], slowestTotal);
  const std::uint64_t n = kFixtureTiles * kElementsPerTile;
  const json *layer1 = row(m["operations"]["rows"], "layer1");
  const json *layer2 = row(m["operations"]["rows"], "layer2");
  ASSERT_TRUE(layer1 && layer2);
  EXPECT_EQ((*layer1)["memoryBytes"], 2 * n * 4);
  EXPECT_EQ((*layer1)["variables"], 2);
  EXPECT_EQ((*layer2)["memoryBytes"], n * 4 + kFixtureTiles * 4);
  EXPECT_GT((*layer1)["byGroup"]["compute"].get<std::uint64_t>(), 0u);
  EXPECT_GT((*layer1)["byGroup"]["exchange"].get<std::uint64_t>(), 0u);
  EXPECT_GT((*layer2)["byGroup"]["sync"].get<std::uint64_t>(), 0u);
  const json *scale = row(m["debugNames"]["rows"], "layer1/scale");
  ASSERT_TRUE(scale);
  EXPECT_EQ((*scale)["runs"], kRepeats);
  EXPECT_EQ((*scale)["vertices"], kFixtureTiles);
  EXPECT_EQ((*scale)["byGroup"]["compute"], (*scale)["cycles"]);
  // Its vertices are all on IPU 0, the busier one.
  EXPECT_GT((*scale)["ipuCycles"][0], (*scale)["ipuCycles"][1]);
  // Rows come costliest first.
  const json &rows = m["debugNames"]["rows"];
  for (std::size_t i = 1; i < rows.size(); ++i)
    EXPECT_LE(rows[i]["cycles"], rows[i - 1]["cycles"]);
}

TEST(ReportModel, AGraphOnlyProfileHasNoTraceAndCostsOneRunPerStep) {
  json profile = twoIpuProfile().profile;
  profile.erase("execution");
  const json m = model(profile);
  EXPECT_FALSE(m["trace"]["available"].get<bool>());
  EXPECT_FALSE(m["summary"]["hasExecution"].get<bool>());
  EXPECT_FALSE(m["operations"]["fromExecution"].get<bool>());
  const json *scale = row(m["debugNames"]["rows"], "layer1/scale");
  ASSERT_TRUE(scale);
  EXPECT_EQ((*scale)["runs"], 1);
}

TEST(ReportModel, VariablesBeyondTheLimitAreSummed) {
  const json &profile = twoIpuProfile().profile;
  report::ReportOptions options;
  options.maxVariables = 1;
  const json v = model(profile, options)["variables"];
  const std::size_t count = profile["graph"]["variables"].size();
  EXPECT_EQ(v["count"], count);
  ASSERT_EQ(v["rows"].size(), 1u);
  EXPECT_EQ(v["otherCount"], count - 1);
  EXPECT_EQ(v["rows"][0]["bytes"].get<std::uint64_t>() +
                v["otherBytes"].get<std::uint64_t>(),
            v["totalBytes"].get<std::uint64_t>());
}
