// Precompilation: a program compiled in one process for a target it never
// attaches (a system device someone else holds, or a bare Target) is saved,
// then loaded and run in another process on an attached device.
#include "tools/Subprocess.hpp"
#include "tools/ToolsTestPaths.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

using namespace tessera::testing;
using ::testing::HasSubstr;

namespace {

class PrecompileTest : public ::testing::Test {
protected:
  PrecompileTest()
      : dir_("precompile"), env_{{"TESSERA_SYSTEM", "4xipu2"},
                                 {"TESSERA_SYSTEM_CONFIG", ""},
                                 {"TESSERA_SYSTEM_DIR",
                                  dir_.path() + "/system"}},
        exe_(dir_.path() + "/two_ipu.tessera") {}

  ProcessResult helper(const std::vector<std::string> &args) {
    std::vector<std::string> argv{kHelper};
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(argv, env_, 300);
  }

  TempDir dir_;
  EnvOverrides env_;
  std::string exe_;
};

} // namespace

TEST_F(PrecompileTest, CompiledForAHeldDeviceRunsElsewhereOnceItIsFree) {
  ChildProcess holder({kHelper, "hold", "2"}, env_);
  ASSERT_EQ(holder.readLine(), "attached device 4");

  // Compiling for device 4 needs only its description, not its IPUs.
  ProcessResult compiled = helper({"compile", exe_, "device", "4"});
  ASSERT_EQ(compiled.exitCode, 0) << compiled.err;
  EXPECT_EQ(compiled.out, "compiled for 2 ipu2 IPUs\n");
  ASSERT_TRUE(std::filesystem::exists(exe_));

  // Running needs them: while they are held the loader is told by whom.
  ProcessResult blocked = helper({"run", exe_, "4"});
  EXPECT_EQ(blocked.exitCode, 3);
  EXPECT_THAT(blocked.err, HasSubstr("IPU 0 is attached by process " +
                                     std::to_string(holder.pid())));

  holder.kill(SIGKILL);
  holder.wait();
  ProcessResult ran = helper({"run", exe_, "4"});
  EXPECT_EQ(ran.exitCode, 0) << ran.err;
  EXPECT_EQ(ran.out, "sums ok on device 4\n");
}

TEST_F(PrecompileTest, CompiledFromABareTargetLoadsOnAMatchingDevice) {
  ProcessResult compiled = helper({"compile", exe_, "target", "2xipu2"});
  ASSERT_EQ(compiled.exitCode, 0) << compiled.err;
  ProcessResult ran = helper({"run", exe_, "5"});
  EXPECT_EQ(ran.exitCode, 0) << ran.err;
  EXPECT_EQ(ran.out, "sums ok on device 5\n");

  // A device of another size is refused with both sizes named.
  ProcessResult wrong = helper({"run", exe_, "0"});
  EXPECT_EQ(wrong.exitCode, 3);
  EXPECT_THAT(wrong.err, HasSubstr("the executable needs 2 IPUs"));
  EXPECT_THAT(wrong.err, HasSubstr("the device has 1 IPUs"));
}
