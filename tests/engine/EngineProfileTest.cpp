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
#include <memory>
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

// A loaded engine of a small two-IPU program that has run once.
struct RanEngine {
  Device device = modelDevice(4, 2);
  std::unique_ptr<Engine> engine;
  explicit RanEngine(const OptionFlags &options) {
    Graph g(device.getTarget());
    addTestCodelets(g);
    Tensor x = g.addVariable(FLOAT, {16}, "x");
    mapTensorLinearly(g, x, 1, 1);
    g.setInitialValue(x, 1.0f);
    Tensor y = g.addVariable(FLOAT, {16}, "y");
    g.setTileMapping(y, 6); // IPU 1
    ComputeSet cs = g.addComputeSet("addOne");
    g.setTileMapping(g.addVertex(cs, "AddOneVertex", {{"x", x.slice(0, 4)}}),
                     0);
    engine =
        std::make_unique<Engine>(g, Sequence{Execute(cs), Copy(x, y)}, options);
    engine->load(device);
    engine->run();
  }
};

void buildAndRun(const OptionFlags &options) { RanEngine e(options); }

// Makes \p dir a file, so that nothing can be written into it.
void blockFolder(const std::filesystem::path &dir) {
  std::filesystem::remove_all(dir);
  std::ofstream(dir) << "in the way";
}

nlohmann::json readProfile(const std::filesystem::path &dir) {
  std::ifstream in(dir / "profile.json");
  EXPECT_TRUE(in.good()) << dir;
  return nlohmann::json::parse(in);
}

} // namespace

TEST(EngineProfile, AutoReportOptionWritesGraphAndExecution) {
  const auto dir = freshDir("option");
  buildAndRun(
      {{"autoReport.all", "true"}, {"autoReport.directory", dir.string()}});
  const nlohmann::json p = readProfile(dir);
  EXPECT_EQ(p["target"]["numIPUs"], 2);
  EXPECT_EQ(p["execution"]["runs"], 1);
  EXPECT_GT(p["execution"]["totalCycles"][0].get<std::uint64_t>(), 0u);
  EXPECT_GT(p["execution"]["totalCycles"][1].get<std::uint64_t>(), 0u);
  EXPECT_FALSE(p["graph"]["variables"].empty());
  std::filesystem::remove_all(dir);
}

TEST(EngineProfile, APendingReportThatCannotBeWrittenIsAnError) {
  const auto dir = freshDir("pending");
  RanEngine e(
      {{"autoReport.all", "true"}, {"autoReport.directory", dir.string()}});
  // The graph profile was written at load; the folder goes away after.
  ASSERT_TRUE(std::filesystem::exists(dir / "profile.json"));
  blockFolder(dir);
  try {
    e.engine->writePendingReport();
    ADD_FAILURE() << "the lost profile was not reported";
  } catch (const Error &err) {
    EXPECT_THAT(err.what(), HasSubstr("cannot write the profile to folder \"" +
                                      dir.string() + "\""));
  }
  // Reported once: the engine's destructor does not try again.
  ::testing::internal::CaptureStderr();
  e.engine.reset();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  std::filesystem::remove_all(dir);
}

TEST(EngineProfile, APendingReportIsWrittenOnceWithTheRunsSoFar) {
  const auto dir = freshDir("pending-written");
  RanEngine e(
      {{"autoReport.all", "true"}, {"autoReport.directory", dir.string()}});
  e.engine->run();
  e.engine->writePendingReport();
  EXPECT_EQ(readProfile(dir)["execution"]["runs"], 2);
  std::filesystem::remove(dir / "profile.json");
  e.engine.reset(); // nothing ran since: nothing to write
  EXPECT_FALSE(std::filesystem::exists(dir / "profile.json"));
  std::filesystem::remove_all(dir);
}

TEST(EngineProfile, AProfileLostAtTeardownIsPrintedWhateverTheLogLevel) {
  const auto dir = freshDir("teardown");
  RanEngine e(
      {{"autoReport.all", "true"}, {"autoReport.directory", dir.string()}});
  blockFolder(dir);
  ::testing::internal::CaptureStderr();
  e.engine.reset();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("tessera: error: the engine's profile was not "
                             "written: cannot write the profile to folder"));
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

TEST(EngineOptions, HostThreadsHaveACeiling) {
  // 20000 threads died of std::system_error under a memory limit.
  try {
    buildAndRun({{"engine.hostThreads", "20000"}});
    ADD_FAILURE() << "20000 host threads were accepted";
  } catch (const OptionError &e) {
    EXPECT_THAT(e.what(), HasSubstr("invalid value \"20000\" for engine option "
                                    "\"engine.hostThreads\": expected an "
                                    "unsigned integer from 0 to 1024"));
  }
}
