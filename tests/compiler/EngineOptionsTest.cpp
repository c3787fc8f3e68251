// Engine options as Poplar programs spell them: POPLAR_ENGINE_OPTIONS
// honoured (TESSERA_ENGINE_OPTIONS over it), options with no meaning on the
// IPU Model accepted and logged once at INFO, unknown ones an error with a
// "did you mean" hint.
#include "tessera/compiler/Options.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/Logging.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace tessera;
using ::testing::HasSubstr;

namespace {

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "no error";
}

/// Restores an environment variable when the test ends.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    const char *old = std::getenv(name);
    had_ = old != nullptr;
    old_ = old ? old : "";
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }

private:
  const char *name_;
  std::string old_;
  bool had_ = false;
};

} // namespace

TEST(EngineOptions, PoplarEngineOptionsVariableIsHonoured) {
  ScopedEnv tessera("TESSERA_ENGINE_OPTIONS", nullptr);
  ScopedEnv poplar("POPLAR_ENGINE_OPTIONS",
                   "{\"debug.instrument\":\"true\",\"engine.hostThreads\":3}");
  EngineOptions o = EngineOptions::parse({});
  EXPECT_TRUE(o.instrument);
  EXPECT_EQ(o.hostThreads, 3u);
  // Tessera's own variable overrides Poplar's.
  ScopedEnv over("TESSERA_ENGINE_OPTIONS", "{\"engine.hostThreads\":5}");
  EXPECT_EQ(EngineOptions::parse({}).hostThreads, 5u);
}

TEST(EngineOptions, UnknownOptionIsAnErrorWithAHint) {
  ScopedEnv tessera("TESSERA_ENGINE_OPTIONS", nullptr);
  ScopedEnv poplar("POPLAR_ENGINE_OPTIONS", nullptr);
  std::string e = errorOf([] {
    EngineOptions::parse({{"debug.retainDebugInformations", "true"}});
  });
  EXPECT_THAT(e, HasSubstr("debug.retainDebugInformations"));
  EXPECT_THAT(e, HasSubstr("did you mean \"debug.retainDebugInformation\""));
}

TEST(EngineOptions, InertOptionsAreAcceptedListedAndLoggedOnceAtInfo) {
  std::vector<std::string> keys = EngineOptions::keys();
  for (const InertEngineOption &o : inertEngineOptions()) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), o.key), keys.end()) << o.key;
    EXPECT_GT(std::string(o.reason).size(), 10u) << o.key;
  }
  // The keys already logged are per process: check in a child, logging to
  // a file through stderr (earlier tests may have set logging up already,
  // off and on stderr, so the environment would not be read again).
  std::string logFile = (std::filesystem::temp_directory_path() /
                         ("tessera-inert-" + std::to_string(::getpid())))
                            .string();
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::close(fd);
    logging::setLevel(logging::Level::INFO);
    ::unsetenv("TESSERA_ENGINE_OPTIONS");
    ::unsetenv("POPLAR_ENGINE_OPTIONS");
    OptionFlags flags{{"debug.retainDebugInformation", "true"},
                      {"exchange.streamBufferOverlap", "none"}};
    EngineOptions::parse(flags);
    EngineOptions::parse(flags);
    std::fflush(nullptr);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::ifstream in(logFile);
  std::stringstream text;
  text << in.rdbuf();
  std::string log = text.str();
  std::filesystem::remove(logFile);
  EXPECT_THAT(log, HasSubstr("debug.retainDebugInformation=true has no "
                             "effect on the IPU Model"));
  EXPECT_THAT(log, HasSubstr("exchange.streamBufferOverlap=none"));
  std::size_t first = log.find("debug.retainDebugInformation");
  EXPECT_EQ(log.find("debug.retainDebugInformation", first + 1),
            std::string::npos)
      << "logged more than once:\n"
      << log;
}
