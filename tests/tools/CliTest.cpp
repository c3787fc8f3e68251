// The `tessera` program as users run it: help, `info` in text and JSON,
// and its user errors (one line, exit status 1).
#include "tools/ProfileFixture.hpp"
#include "tools/Subprocess.hpp"

#include "tessera/support/File.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

using namespace tessera;
using namespace tessera::testing;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace {

EnvOverrides systemEnv(const std::string &spec, const TempDir &dir) {
  return {{"TESSERA_SYSTEM", spec},
          {"TESSERA_SYSTEM_CONFIG", ""},
          {"TESSERA_SYSTEM_DIR", dir.path()}};
}

ProcessResult runTessera(const std::vector<std::string> &args,
                         const EnvOverrides &env = {}) {
  std::vector<std::string> argv{kTesseraCli};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv, env);
}

} // namespace

TEST(Cli, HelpListsTheSubcommandsAndTheirOptions) {
  ProcessResult r = runTessera({"--help"});
  EXPECT_EQ(r.exitCode, 0);
  for (const char *s : {"info", "monitor", "report"})
    EXPECT_THAT(r.out, HasSubstr(s));
  r = runTessera({"info", "--help"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_THAT(r.out, HasSubstr("--json"));
  EXPECT_THAT(r.out, HasSubstr("--device-id"));
  EXPECT_THAT(r.out, HasSubstr("TESSERA_SYSTEM"));
  r = runTessera({"monitor", "--help"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_THAT(r.out, HasSubstr("TESSERA_SYSTEM_DIR"));
  r = runTessera({"report", "--help"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_THAT(r.out, HasSubstr("PROFILE_DIR"));
  EXPECT_THAT(r.out, HasSubstr("--output"));
  EXPECT_THAT(r.out, HasSubstr("autoReport.all"));
}

TEST(Cli, ABadCommandLineGetsUsage) {
  ProcessResult r = runTessera({});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("A subcommand is required"));
  r = runTessera({"infoo"});
  EXPECT_NE(r.exitCode, 0);
  r = runTessera({"report"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("PROFILE_DIR is required"));
  r = runTessera({"info", "--device-id", "1", "--ipus", "2"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("excludes"));
}

TEST(Cli, InfoListsEveryDeviceWithItsIpus) {
  TempDir dir("cli-info");
  ProcessResult r = runTessera({"info"}, systemEnv("4xipu2", dir));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("System: 4 ipu2 IPUs (TESSERA_SYSTEM=4xipu2)"));
  EXPECT_THAT(r.out, HasSubstr("Tiles per IPU:    1,472"));
  EXPECT_THAT(r.out, HasSubstr("Devices (7 of 7;"));
  EXPECT_THAT(r.out, HasSubstr("   4  0-1       2  ipu2  2,944"));
  EXPECT_THAT(r.out, HasSubstr("   6  0-3       4  ipu2  5,888"));

  r = runTessera({"info", "--json"}, systemEnv("8xipu21", dir));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["system"]["ipus"], 8);
  EXPECT_EQ(j["system"]["arch"], "ipu21");
  EXPECT_EQ(j["system"]["systemDirectory"], dir.path());
  ASSERT_EQ(j["devices"].size(), 15u); // 8 + 4 + 2 + 1
  for (std::size_t id = 0; id < 15; ++id)
    EXPECT_EQ(j["devices"][id]["id"], id);
  EXPECT_EQ(j["devices"][8]["ipus"], json({0, 1}));
  EXPECT_EQ(j["devices"][13]["ipus"], json({4, 5, 6, 7}));
  EXPECT_EQ(j["devices"][14]["ipus"], json({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(j["devices"][14]["tiles"], 8 * 1472);
  EXPECT_EQ(j["devices"][14]["memoryBytes"], 8ull * 1472 * 638976);

  r = runTessera({"info", "--json", "-n", "4"}, systemEnv("8xipu21", dir));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json fours = json::parse(r.out)["devices"];
  ASSERT_EQ(fours.size(), 2u);
  EXPECT_EQ(fours[0]["id"], 12);
  EXPECT_EQ(fours[1]["id"], 13);
  EXPECT_EQ(fours[1]["ipus"], json({4, 5, 6, 7}));
}

TEST(Cli, InfoOptionsListsTheEngineOptionsAndTheInertOnes) {
  ProcessResult r = runTessera({"info", "--options"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("autoReport.all"));
  EXPECT_THAT(r.out, HasSubstr("debug.retainDebugInformation"));
  EXPECT_THAT(r.out, HasSubstr("exchange.streamBufferOverlap"));
  EXPECT_THAT(r.out, HasSubstr("no effect on the IPU Model: stream buffers "
                               "live in host memory"));
}

TEST(Cli, InfoErrorsSayWhatExists) {
  TempDir dir("cli-info-errors");
  ProcessResult r = runTessera({"info", "-d", "99"}, systemEnv("4xipu2", dir));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("tessera info: error: no device has id 99: "
                               "this system of 4 ipu2 IPUs has device ids 0 "
                               "to 6"));
  r = runTessera({"info", "-n", "3"}, systemEnv("4xipu2", dir));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("--ipus 3: no device of this system has 3 "
                               "IPUs; its devices have 1, 2, 4 IPUs"));
  r = runTessera({"info"}, systemEnv("4xgpu", dir));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("unknown IPU architecture \"gpu\""));
  r = runTessera({"monitor"}, systemEnv("lots", dir));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("tessera monitor: error: TESSERA_SYSTEM="
                               "\"lots\" is not a system description"));
}

TEST(Cli, ReportWritesThePage) {
  TempDir out("cli-report");
  const std::string page = out.path() + "/page.html";
  ProcessResult r = runTessera({"report", twoIpuProfile().dir.path(), "-o",
                                page, "--title", "Two IPUs"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("wrote " + page + ": 2 IPU(s), memory "));
  EXPECT_THAT(r.out, HasSubstr("cycles on the slowest IPU"));
  EXPECT_THAT(readFile(page), HasSubstr("<title>Two IPUs</title>"));
}

TEST(Cli, ReportDefaultsToTheProfileFolder) {
  TempDir dir("cli-report-default");
  writeFileAtomically(dir.path() + "/profile.json",
                      twoIpuProfile().profile.dump());
  ProcessResult r = runTessera({"report", dir.path()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/report.html"));
}

TEST(Cli, ReportErrorsAreOneClearLine) {
  TempDir dir("cli-report-errors");
  ProcessResult r = runTessera({"report", dir.path() + "/missing"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("tessera report: error: profile folder"));
  EXPECT_THAT(r.err, HasSubstr("does not exist"));

  r = runTessera({"report", dir.path()});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("has no profile.json"));

  writeFileAtomically(dir.path() + "/profile.json", "{\"format\": ");
  r = runTessera({"report", dir.path()});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("is not valid JSON"));

  json future = twoIpuProfile().profile;
  future["version"] = 7;
  writeFileAtomically(dir.path() + "/profile.json", future.dump());
  r = runTessera({"report", dir.path()});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("profile format version 7 is not one this "
                               "tessera reads"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/report.html"));

  r = runTessera(
      {"report", twoIpuProfile().dir.path(), "--max-trace-blocks", "0"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("--max-trace-blocks"));

  writeFileAtomically(dir.path() + "/blocker", "x");
  r = runTessera({"report", twoIpuProfile().dir.path(), "-o",
                  dir.path() + "/blocker/page.html"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot write the report to"));
  EXPECT_THAT(r.err, Not(HasSubstr("\n\n")));
}

namespace {

// Exit status 1 and one line on standard error: "tessera <command>: error:
// <message>" (no abort, no core dump, no usage text).
void expectOneLineError(const ProcessResult &r, const std::string &command,
                        const std::string &message) {
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("tessera " + command + ": error: "));
  EXPECT_THAT(r.err, HasSubstr(message));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

} // namespace

TEST(Cli, HostileArgumentsAreOneLineErrorsInEverySubcommand) {
  TempDir dir("cli-hostile");
  const EnvOverrides system = systemEnv("4xipu2", dir);
  expectOneLineError(runTessera({"info", "-d", "4294967295"}, system), "info",
                     "no device has id 4294967295");
  expectOneLineError(runTessera({"info"}, systemEnv("65536xipu2", dir)), "info",
                     "a system has 1 to 1024 IPUs, not 65536");
  expectOneLineError(runTessera({"monitor"}, systemEnv("65536xipu2", dir)),
                     "monitor", "a system has 1 to 1024 IPUs, not 65536");
  // --tiles 4294967295 died of std::bad_alloc.
  expectOneLineError(runTessera({"train", "--tiles", "4294967295"}), "train",
                     "--tiles must be 1 to 16384, got 4294967295");
  expectOneLineError(
      runTessera(
          {"bench", "dataset", "fashion-mnist", "--prefetch", "1000000000000"}),
      "bench", "--prefetch must be 1 to 1024 elements, got 1000000000000");
  expectOneLineError(runTessera({"bench", "dataset", "/dev/zero"}), "bench",
                     "unknown dataset \"/dev/zero\"");
  // A million nested arrays overflowed the stack of the profile checker.
  writeFileAtomically(dir.path() + "/profile.json",
                      "{\"format\": " + std::string(1000000, '[') +
                          std::string(1000000, ']') + "}");
  expectOneLineError(runTessera({"report", dir.path()}), "report",
                     "nests arrays and objects more than 64 deep");
}

TEST(Cli, RunningOutOfMemoryIsAOneLineErrorNotAnAbort) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a memory limit leaves AddressSanitizer no room";
#endif
  // Under a 150 MB address-space limit each command meets std::bad_alloc,
  // which used to escape main and abort with a core dump.
  TempDir dir("cli-oom");
  const auto limited = [](const std::string &args) {
    return runProcess({"/bin/sh", "-c",
                       "ulimit -v 150000; exec '" + kTesseraCli + "' " + args});
  };
  const std::string oom = "out of host memory (std::bad_alloc)";
  // Ten million numbers: more than 150 MB as JSON values. The parse fails,
  // and freeing the half-built array allocates too, in a destructor: that
  // bad_alloc ends in std::terminate, which must not abort either.
  std::string numbers = "{\"format\": [0";
  for (int i = 1; i < 10000000; ++i)
    numbers += ",0";
  writeFileAtomically(dir.path() + "/profile.json", numbers + "]}");
  expectOneLineError(limited("report '" + dir.path() + "'"), "report", oom);
  // Five million rows: 40 MB of text, more as tensors.
  std::string rows = "a,b,c,d\n";
  for (int i = 0; i < 5000000; ++i)
    rows += "1,2,3,4\n";
  writeFileAtomically(dir.path() + "/big.csv", rows);
  expectOneLineError(limited("bench dataset '" + dir.path() + "/big.csv'"),
                     "bench", oom);
  // The largest model allowed: 128 IPUs of 16384 tiles.
  expectOneLineError(limited("train --no-cache --ipus 128 --tiles 16384"),
                     "train", oom);
}
