// Acceptance: two processes each attach 2 of 4 IPUs; a third asking for 2
// gets a clear error; `tessera monitor` shows both holders; after one is
// killed, its IPUs are free again.
#include "tools/Subprocess.hpp"
#include "tools/ToolsTestPaths.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

using namespace tessera::testing;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

class MonitorTest : public ::testing::Test {
protected:
  MonitorTest()
      : dir_("monitor"), env_{{"TESSERA_SYSTEM", "4xipu2"},
                              {"TESSERA_SYSTEM_CONFIG", ""},
                              {"TESSERA_SYSTEM_DIR", dir_.path()}} {}

  nlohmann::json monitorJson() {
    ProcessResult r = runProcess({kTesseraCli, "monitor", "--json"}, env_);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  TempDir dir_;
  EnvOverrides env_;
};

// The states of IPUs 0-3 as "AAFF" (attached / free).
std::string ipuStates(const nlohmann::json &monitor) {
  std::string s;
  for (const auto &ipu : monitor["ipus"])
    s += ipu["state"] == "attached" ? 'A' : 'F';
  return s;
}

} // namespace

TEST_F(MonitorTest, HoldersAreExclusiveListedAndFreedWhenKilled) {
  ChildProcess a({kHelper, "hold", "2"}, env_);
  ASSERT_EQ(a.readLine(), "attached device 4");
  ChildProcess b({kHelper, "hold", "2"}, env_);
  ASSERT_EQ(b.readLine(), "attached device 5");

  // A third process asking for two IPUs is told who holds them.
  ProcessResult c = runProcess({kHelper, "hold", "2"}, env_);
  EXPECT_EQ(c.exitCode, 3);
  EXPECT_THAT(c.err, HasSubstr("no free device of 2 IPUs: each of the 2 "
                               "devices of 2 IPUs in this system of 4 IPUs "
                               "has an attached IPU"));
  EXPECT_THAT(c.err, HasSubstr("device 4 (IPUs 0-1): IPU 0 held by process " +
                               std::to_string(a.pid())));
  EXPECT_THAT(c.err, HasSubstr("device 5 (IPUs 2-3): IPU 2 held by process " +
                               std::to_string(b.pid())));
  EXPECT_THAT(c.err, HasSubstr("`tessera monitor` lists the holders"));

  nlohmann::json m = monitorJson();
  EXPECT_EQ(ipuStates(m), "AAAA");
  ASSERT_EQ(m["processes"].size(), 2u);
  const nlohmann::json &first = m["processes"][0]["pid"] == a.pid()
                                    ? m["processes"][0]
                                    : m["processes"][1];
  const nlohmann::json &second = m["processes"][0]["pid"] == a.pid()
                                     ? m["processes"][1]
                                     : m["processes"][0];
  EXPECT_EQ(first["pid"], a.pid());
  EXPECT_EQ(first["deviceId"], 4);
  EXPECT_EQ(first["ipus"], nlohmann::json({0, 1}));
  EXPECT_EQ(second["pid"], b.pid());
  EXPECT_EQ(second["deviceId"], 5);
  EXPECT_EQ(second["ipus"], nlohmann::json({2, 3}));
  for (const auto *p : {&first, &second}) {
    EXPECT_THAT((*p)["command"].get<std::string>(),
                StartsWith(kHelper + " hold 2"));
    EXPECT_FALSE((*p)["user"].get<std::string>().empty());
    EXPECT_GE((*p)["attachedSeconds"].get<long>(), 0);
    EXPECT_LT((*p)["attachedSeconds"].get<long>(), 600);
  }

  // The text table names both holders and their devices.
  ProcessResult text = runProcess({kTesseraCli, "monitor"}, env_);
  EXPECT_EQ(text.exitCode, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("4 ipu2 IPUs, 4 attached"));
  EXPECT_THAT(text.out, HasSubstr("Attached processes (2):"));
  EXPECT_THAT(text.out, HasSubstr(std::to_string(a.pid())));
  EXPECT_THAT(text.out, HasSubstr(std::to_string(b.pid())));
  EXPECT_THAT(text.out, HasSubstr("0-1"));
  EXPECT_THAT(text.out, HasSubstr("2-3"));

  // Killed, the first holder's IPUs are free again, though its records
  // are still on disk.
  a.kill(SIGKILL);
  EXPECT_EQ(a.wait().exitCode, 128 + SIGKILL);
  m = monitorJson();
  EXPECT_EQ(ipuStates(m), "FFAA");
  ASSERT_EQ(m["processes"].size(), 1u);
  EXPECT_EQ(m["processes"][0]["pid"], b.pid());

  ChildProcess d({kHelper, "hold", "2"}, env_);
  EXPECT_EQ(d.readLine(), "attached device 4");
  d.closeStdin();
  b.closeStdin();
  EXPECT_EQ(d.wait().exitCode, 0);
  EXPECT_EQ(b.wait().exitCode, 0);
  m = monitorJson();
  EXPECT_EQ(ipuStates(m), "FFFF");
  EXPECT_TRUE(m["processes"].empty());
  text = runProcess({kTesseraCli, "monitor"}, env_);
  EXPECT_THAT(text.out, HasSubstr("No process has IPUs attached."));
}

TEST_F(MonitorTest, HoldersCommandLinesCannotDriveTheTerminal) {
  // A holder started through a link whose name clears the screen, sets the
  // window title, rings the bell and holds a byte that is not UTF-8.
  const std::string link =
      dir_.path() + "/hold\x1b[2J\x1b]0;pwned\x07-\x1b[31mred\xff";
  std::filesystem::create_symlink(kHelper, link);
  ChildProcess holder({link, "hold", "1"}, env_);
  ASSERT_EQ(holder.readLine(), "attached device 0");

  const ProcessResult text = runProcess({kTesseraCli, "monitor"}, env_);
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find('\x07'), std::string::npos) << text.out;
  EXPECT_THAT(text.out, HasSubstr("hold\\x1b[2J\\x1b]0;pwned\\x07-\\x1b[31mred"
                                  "\xef\xbf\xbd hold 1"));

  const nlohmann::json m = monitorJson();
  ASSERT_EQ(m["processes"].size(), 1u);
  EXPECT_THAT(m["processes"][0]["command"].get<std::string>(),
              HasSubstr("/hold\x1b[2J"));
  holder.closeStdin();
  EXPECT_EQ(holder.wait().exitCode, 0);
}
