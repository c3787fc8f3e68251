// Acceptance: the report of a two-IPU run, loaded in headless Chromium,
// draws every chart (both IPUs' traces and memory per tile), and the
// figures its script reads back from what it drew match profile.json. The
// page, the profile and a screenshot stay in the build folder
// (TESSERA_TOOLS_ARTIFACT_DIR) for people to look at.
#include "tools/ProfileFixture.hpp"
#include "tools/Subprocess.hpp"

#include "tessera/support/File.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#ifndef TESSERA_TOOLS_ARTIFACT_DIR
#error "TESSERA_TOOLS_ARTIFACT_DIR must name a folder for test artifacts"
#endif

using namespace tessera;
using namespace tessera::testing;
using nlohmann::json;
using ::testing::HasSubstr;

namespace {

const char *const kChromium = "/usr/bin/chromium";

std::vector<std::string> chromium(const TempDir &profileDir) {
  return {kChromium, "--headless", "--no-sandbox", "--disable-gpu",
          "--user-data-dir=" + profileDir.path()};
}

std::string unescapeHtml(std::string text) {
  const std::pair<const char *, const char *> entities[] = {
      {"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}};
  for (const auto &[from, to] : entities)
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + 1))
      text.replace(at, std::strlen(from), to);
  return text;
}

// The #report-status element of the dumped DOM: its data-status and text.
std::pair<std::string, std::string> reportStatus(const std::string &dom) {
  const std::string open = "<pre id=\"report-status\" data-status=\"";
  const std::size_t at = dom.find(open);
  if (at == std::string::npos)
    return {"absent", ""};
  const std::size_t quote = dom.find('"', at + open.size());
  const std::size_t textBegin = dom.find('>', quote) + 1;
  const std::size_t textEnd = dom.find("</pre>", textBegin);
  return {dom.substr(at + open.size(), quote - at - open.size()),
          unescapeHtml(dom.substr(textBegin, textEnd - textBegin))};
}

std::size_t count(const std::string &text, const std::string &what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

// What the page must have drawn, computed from profile.json alone.
void expectDrawnMatchesProfile(const json &drawn, const json &profile) {
  const json &charts = drawn["charts"];
  const json &perTile = profile["graph"]["memory"]["perTile"]["total"];
  std::uint64_t bytes = 0, maxBytes = 0;
  for (const json &b : perTile) {
    bytes += b.get<std::uint64_t>();
    maxBytes = std::max(maxBytes, b.get<std::uint64_t>());
  }
  const std::size_t numIPUs = profile["target"]["numIPUs"];
  EXPECT_EQ(charts["tileMemory"]["ipus"], numIPUs);
  EXPECT_EQ(charts["tileMemory"]["tiles"], perTile.size());
  EXPECT_EQ(charts["tileMemory"]["bytes"], bytes);
  EXPECT_EQ(charts["tileMemory"]["maxBytes"], maxBytes);
  EXPECT_EQ(charts["tileMemory"]["worstTiles"], 10);
  EXPECT_EQ(charts["categories"]["bytes"], profile["graph"]["memory"]["total"]);

  const json &vars = profile["graph"]["variables"];
  std::uint64_t varBytes = 0, always = 0, peak = 0;
  for (const json &v : vars) {
    varBytes += v["bytes"].get<std::uint64_t>();
    if (v["alwaysLive"].get<bool>())
      always += v["bytes"].get<std::uint64_t>();
  }
  EXPECT_EQ(charts["variables"]["rows"], vars.size());
  EXPECT_EQ(charts["variables"]["bytes"], varBytes);
  const std::size_t steps = profile["graph"]["steps"].size();
  for (std::size_t s = 0; s < steps; ++s) {
    std::uint64_t live = always;
    for (const json &v : vars)
      if (!v["alwaysLive"].get<bool>() && v["liveBegin"] <= s &&
          s <= v["liveEnd"])
        live += v["bytes"].get<std::uint64_t>();
    peak = std::max(peak, live);
  }
  EXPECT_EQ(charts["liveness"]["points"], steps);
  EXPECT_EQ(charts["liveness"]["peakBytes"], peak);

  // The page draws each lane's first kMaxBlocks blocks (the report's
  // default maxTraceBlocks) and counts the rest as hidden.
  constexpr std::size_t kMaxBlocks = 2000;
  const json &e = profile["execution"];
  ASSERT_TRUE(e["traceComplete"].get<bool>());
  ASSERT_EQ(charts["trace"]["lanes"].size(), numIPUs);
  for (std::size_t ipu = 0; ipu < numIPUs; ++ipu) {
    const json &lane = charts["trace"]["lanes"][ipu];
    std::size_t blocks = 0, hidden = 0;
    std::uint64_t cycles = 0;
    std::map<std::string, std::uint64_t> byGroup;
    for (const json &t : e["trace"]) {
      const std::uint64_t c = t["cycles"][ipu].get<std::uint64_t>();
      if (c == 0)
        continue;
      if (blocks == kMaxBlocks) {
        ++hidden;
        continue;
      }
      ++blocks;
      cycles += c;
      byGroup[profile["graph"]["steps"][t["step"].get<std::size_t>()]["group"]
                  .get<std::string>()] += c;
    }
    EXPECT_EQ(lane["ipu"], ipu);
    EXPECT_EQ(lane["blocks"], blocks) << "IPU " << ipu;
    EXPECT_EQ(lane["hidden"], hidden) << "IPU " << ipu;
    EXPECT_EQ(lane["cycles"], cycles) << "IPU " << ipu;
    if (hidden == 0) {
      EXPECT_EQ(lane["cycles"], e["totalCycles"][ipu]) << "IPU " << ipu;
    }
    for (const auto &[group, c] : e["cyclesByKind"].items())
      EXPECT_EQ(lane["byGroup"][group], byGroup[group])
          << group << " on IPU " << ipu;
  }
  std::uint64_t opCycles = 0;
  for (const json &s : e["steps"]) {
    std::uint64_t slowest = 0;
    for (const json &c : s["cycles"])
      slowest = std::max(slowest, c.get<std::uint64_t>());
    opCycles += slowest;
  }
  EXPECT_EQ(charts["operations"]["cycles"], opCycles);
  EXPECT_EQ(charts["debugNames"]["cycles"], opCycles);
  EXPECT_GT(charts["operations"]["segments"].get<int>(), 0);
  // One memory chart per IPU, categories, variables, liveness, trace and
  // operations.
  EXPECT_EQ(drawn["svgCharts"], numIPUs + 5);
}

// Renders the profile in \p profileDir as `artifact`.html, draws it in
// headless Chromium, checks the drawn figures against \p profile and keeps
// a screenshot `artifact`.png. Returns the drawn DOM ("" when Chromium is
// absent, after marking the test skipped).
std::string drawAndCheck(const std::string &profileDir, const json &profile,
                         const std::string &artifact) {
  const std::string artifacts = TESSERA_TOOLS_ARTIFACT_DIR;
  std::filesystem::create_directories(artifacts);
  const std::string page = artifacts + "/" + artifact + ".html";
  const std::string shot = artifacts + "/" + artifact + ".png";
  std::filesystem::remove(shot);
  writeFileAtomically(artifacts + "/" + artifact + "_profile.json",
                      profile.dump());
  ProcessResult made =
      runProcess({kTesseraCli, "report", profileDir, "-o", page});
  EXPECT_EQ(made.exitCode, 0) << made.err;
  if (made.exitCode != 0)
    return "";

  if (!std::filesystem::exists(kChromium)) {
    ADD_FAILURE() << kChromium << " is absent, so the page cannot be drawn; "
                  << "install Debian's chromium package (scripts/deps.sh)";
    return "";
  }
  TempDir browserProfile("chromium");
  std::vector<std::string> dump = chromium(browserProfile);
  dump.push_back("--dump-dom");
  dump.push_back("file://" + page);
  ProcessResult dom = runProcess(dump, {}, 120);
  EXPECT_EQ(dom.exitCode, 0) << dom.err;
  const auto [state, text] = reportStatus(dom.out);
  EXPECT_EQ(state, "ok") << text;
  if (state != "ok")
    return "";
  const json drawn = json::parse(text);
  expectDrawnMatchesProfile(drawn, profile);

  // The drawn SVG itself: a block per lane entry and a chart per IPU.
  std::size_t blocks = 0;
  for (const json &lane : drawn["charts"]["trace"]["lanes"])
    blocks += lane["blocks"].get<std::size_t>();
  EXPECT_EQ(count(dom.out, "class=\"block\""), blocks);
  EXPECT_EQ(count(dom.out, "class=\"chart tile-chart\""),
            profile["target"]["numIPUs"].get<std::size_t>());
  EXPECT_THAT(dom.out, HasSubstr("IPU 1"));

  std::vector<std::string> capture = chromium(browserProfile);
  capture.push_back("--screenshot=" + shot);
  capture.push_back("--window-size=1300,5200");
  capture.push_back("file://" + page);
  ProcessResult shotRun = runProcess(capture, {}, 120);
  EXPECT_EQ(shotRun.exitCode, 0) << shotRun.err;
  const std::string png = readFile(shot);
  EXPECT_GT(png.size(), 20000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  return dom.out;
}

} // namespace

TEST(ReportBrowser, TwoIpuReportDrawsEveryChartWithTheProfilesNumbers) {
  const TwoIpuProfile &p = twoIpuProfile();
  const std::string dom = drawAndCheck(p.dir.path(), p.profile, "two_ipu_report");
  EXPECT_THAT(dom, HasSubstr("layer1/scale"));
}

// Acceptance: `tessera train --ipus 2 --profile` on Fashion-MNIST (a short
// run on 16-tile IPUs): both IPUs' traces and memory are drawn, with the
// model's layer names on the operations.
TEST(ReportBrowser, ShardedTrainingReportShowsBothIpusAndLayerNames) {
  TempDir dir("train-profile");
  const std::string prof = dir.path() + "/prof";
  ProcessResult trained = runProcess(
      {kTesseraCli, "train", "--ipus", "2", "--tiles", "16", "--epochs", "1",
       "--train-examples", "1600", "--test-examples", "100",
       "--steps-per-execution", "50", "--no-cache", "--profile", prof},
      {}, 300);
  ASSERT_EQ(trained.exitCode, 0) << trained.err;
  std::ifstream in(prof + "/profile.json");
  ASSERT_TRUE(in.good()) << "no profile in " << prof;
  const json profile = json::parse(in);
  ASSERT_EQ(profile["target"]["numIPUs"], 2);
  for (std::size_t ipu = 0; ipu < 2; ++ipu)
    EXPECT_GT(profile["execution"]["totalCycles"][ipu].get<std::uint64_t>(),
              0u)
        << "IPU " << ipu << " ran nothing";
  const std::string dom =
      drawAndCheck(prof, profile, "sharded_training_report");
  // Forward ops by layer, backward ops after the forward op they undo.
  EXPECT_THAT(dom, HasSubstr("dense_1/matmul"));
  EXPECT_THAT(dom, HasSubstr("dense_1/matmul/grad/"));
}
