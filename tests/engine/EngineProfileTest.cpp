// Profiles written by a running engine: engine options and the
// TESSERA_ENGINE_OPTIONS environment variable, as POPLAR_ENGINE_OPTIONS.
#include "TestGraphs.hpp"

#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tessera;
using namespace tessera::program;
using tessera::test::addTestCodelets;
using tessera::test::modelDevice;
using ::testing::HasSubstr;

namespace {

std::filesystem::path freshDir(const std::string &name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("tessera-profile-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

void buildAndRun(const OptionFlags &options) {
  Device device = modelDevice(4, 2);
  Graph g(device.getTarget());
  addTestCodelets(g);
  Tensor x = g.addVariable(FLOAT, {16}, "x");
  mapTensorLinearly(g, x, 1, 1);
  g.setInitialValue(x, 1.0f);
  Tensor y = g.addVariable(FLOAT, {16}, "y");
  g.setTileMapping(y, 6); // IPU 1
  ComputeSet cs = g.addComputeSet("addOne");
  g.setTileMapping(g.addVertex(cs, "AddOneVertex", {{"x", x.slice(0, 4)}}), 0);
  Engine e(g, Sequence{Execute(cs), Copy(x, y)}, options);
  e.load(device);
  e.run();
}

nlohmann::json readProfile(const std::filesystem::path &dir) {
  std::ifstream in(dir / "profile.json");
  EXPECT_TRUE(in.good()) << dir;
  return nlohmann::json::parse(in);
}

} // namespace

TEST(EngineProfile, AutoReportOptionWritesGraphAndExecution) {
  const auto dir = freshDir("option");
  buildAndRun({{"autoReport.all", "true"},
               {"autoReport.directory", dir.string()}});
  const nlohmann::json p = readProfile(dir);
  EXPECT_EQ(p["target"]["numIPUs"], 2);
  EXPECT_EQ(p["execution"]["runs"], 1);
  EXPECT_GT(p["execution"]["totalCycles"][0].get<std::uint64_t>(), 0u);
  EXPECT_GT(p["execution"]["totalCycles"][1].get<std::uint64_t>(), 0u);
  EXPECT_FALSE(p["graph"]["variables"].empty());
  std::filesystem::remove_all(dir);
}

TEST(EngineProfile, EnvironmentVariableOverridesOptions) {
  const auto dir = freshDir("env");
  const std::string json = "{\"autoReport.all\":\"true\","
                           "\"autoReport.directory\":\"" +
                           dir.string() + "\"}";
  ::setenv("TESSERA_ENGINE_OPTIONS", json.c_str(), 1);
  buildAndRun({});
  ::unsetenv("TESSERA_ENGINE_OPTIONS");
  EXPECT_TRUE(std::filesystem::exists(dir / "profile.json"));
  std::filesystem::remove_all(dir);
}

TEST(EngineProfile, MalformedEnvironmentOptionsAreAnError) {
  ::setenv("TESSERA_ENGINE_OPTIONS", "{\"autoReport.all\": ", 1);
  EXPECT_THROW(buildAndRun({}), OptionError);
  ::unsetenv("TESSERA_ENGINE_OPTIONS");
}

TEST(EngineProfile, SummaryReportsMemoryAndCycles) {
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor a = g.addVariable(FLOAT, {100}, "a");
  Tensor b = g.addVariable(FLOAT, {100}, "b");
  g.setTileMapping(a, 0);
  g.setTileMapping(b, 3);
  g.setInitialValue(a, 2.0f);
  Engine e(g, Repeat(10, Copy(a, b)));
  e.load(device);
  e.run();
  std::ostringstream os;
  e.printProfileSummary(os);
  EXPECT_THAT(os.str(), HasSubstr("Memory Usage:"));
  EXPECT_THAT(os.str(), HasSubstr("Total cycles:"));
  // 10 copies of 400 bytes at 4 bytes a cycle: at least 1000 cycles.
  EXPECT_GE(e.getCycleCounts()[0], 1000u);
}
