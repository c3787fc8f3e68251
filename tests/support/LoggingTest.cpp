#include "tessera/support/Logging.hpp"
#include "tessera/support/File.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace tessera;
using logging::Level;
using ::testing::HasSubstr;

namespace {

// Logging reads the environment once per process, so each scenario runs in
// a forked child with its own environment. Returns the child's exit status.
int inChild(const std::function<void()> &body) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    body();
    std::fflush(nullptr);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string tempPath(const char *name) {
  return (std::filesystem::temp_directory_path() /
          (std::string(name) + "." + std::to_string(::getpid())))
      .string();
}

} // namespace

TEST(Logging, ParsesPoplarLevelNamesCaseInsensitively) {
  EXPECT_EQ(logging::parseLevel("OFF"), Level::OFF);
  EXPECT_EQ(logging::parseLevel("err"), Level::ERR);
  EXPECT_EQ(logging::parseLevel("Error"), Level::ERR);
  EXPECT_EQ(logging::parseLevel("WARN"), Level::WARN);
  EXPECT_EQ(logging::parseLevel("warning"), Level::WARN);
  EXPECT_EQ(logging::parseLevel("info"), Level::INFO);
  EXPECT_EQ(logging::parseLevel("DEBUG"), Level::DEBUG);
  EXPECT_EQ(logging::parseLevel("trace"), Level::TRACE);
  EXPECT_EQ(logging::parseLevel("LOUD"), std::nullopt);
  EXPECT_EQ(logging::parseLevel(""), std::nullopt);
  EXPECT_EQ(logging::levelName(Level::WARN), "WARN");
}

TEST(Logging, ConfigDefaultsToOffOnStderr) {
  auto config = logging::parseConfig(nullptr, nullptr);
  EXPECT_EQ(config.level, Level::OFF);
  EXPECT_EQ(config.destination, "stderr");
  EXPECT_TRUE(config.warning.empty());
  config = logging::parseConfig("debug", "stdout");
  EXPECT_EQ(config.level, Level::DEBUG);
  EXPECT_EQ(config.destination, "stdout");
}

TEST(Logging, InvalidLevelWarnsWithValidNamesAndStaysOff) {
  auto config = logging::parseConfig("LOUD", nullptr);
  EXPECT_EQ(config.level, Level::OFF);
  EXPECT_THAT(config.warning, HasSubstr("TESSERA_LOG_LEVEL=\"LOUD\""));
  EXPECT_THAT(config.warning, HasSubstr("OFF, ERR, WARN, INFO, DEBUG, TRACE"));
  EXPECT_EQ(config.warning.find('\n'), std::string::npos);
}

TEST(Logging, WritesEnabledLevelsToTheFileNamedByTesseraLogDest) {
  const std::string logFile = tempPath("tessera-log-test");
  std::filesystem::remove(logFile);
  int status = inChild([&] {
    ::setenv("TESSERA_LOG_LEVEL", "INFO", 1);
    ::setenv("TESSERA_LOG_DEST", logFile.c_str(), 1);
    if (!logging::enabled(Level::INFO) || logging::enabled(Level::DEBUG))
      ::_exit(2);
    logging::info("compiled {} compute sets", 42);
    logging::debug("this {} must not appear", "line");
    logging::error("an error line");
  });
  EXPECT_EQ(status, 0);
  const std::string text = readFile(logFile);
  EXPECT_THAT(text, HasSubstr("compiled 42 compute sets"));
  EXPECT_THAT(text, HasSubstr("an error line"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("must not appear")));
  std::filesystem::remove(logFile);
}

TEST(Logging, InvalidLevelInEnvironmentPrintsOneWarningLine) {
  const std::string errFile = tempPath("tessera-log-stderr");
  int status = inChild([&] {
    int fd = ::open(errFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::close(fd);
    ::setenv("TESSERA_LOG_LEVEL", "LOUD", 1);
    ::unsetenv("TESSERA_LOG_DEST");
    bool any = logging::enabled(Level::ERR);
    logging::error("must not be logged");
    logging::enabled(Level::INFO); // must not warn a second time
    ::_exit(any ? 2 : 0);
  });
  EXPECT_EQ(status, 0);
  const std::string text = readFile(errFile);
  EXPECT_THAT(text, HasSubstr("TESSERA_LOG_LEVEL=\"LOUD\""));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  std::filesystem::remove(errFile);
}

TEST(Logging, SetLevelOverridesTheEnvironment) {
  int status = inChild([] {
    ::unsetenv("TESSERA_LOG_LEVEL");
    if (logging::enabled(Level::ERR))
      ::_exit(2);
    logging::setLevel(Level::WARN);
    if (!logging::enabled(Level::WARN) || logging::enabled(Level::INFO))
      ::_exit(3);
    logging::setLevel(Level::OFF);
    if (logging::enabled(Level::ERR))
      ::_exit(4);
  });
  EXPECT_EQ(status, 0);
}

TEST(Logging, PoplarAndPoplibsVariableNamesAreHonoured) {
  const std::string logFile = tempPath("tessera-poplar-log-test");
  std::filesystem::remove(logFile);
  int status = inChild([&] {
    ::unsetenv("TESSERA_LOG_LEVEL");
    ::unsetenv("TESSERA_LOG_DEST");
    ::unsetenv("POPLAR_LOG_LEVEL");
    ::setenv("POPLIBS_LOG_LEVEL", "DEBUG", 1);
    ::setenv("POPLAR_LOG_DEST", logFile.c_str(), 1);
    if (!logging::enabled(Level::DEBUG))
      ::_exit(2);
    logging::debug("planned {} tiles", 7);
  });
  EXPECT_EQ(status, 0);
  EXPECT_THAT(readFile(logFile), HasSubstr("planned 7 tiles"));
  std::filesystem::remove(logFile);
  // Tessera's own name wins over Poplar's.
  status = inChild([&] {
    ::setenv("TESSERA_LOG_LEVEL", "OFF", 1);
    ::setenv("POPLAR_LOG_LEVEL", "TRACE", 1);
    ::_exit(logging::enabled(Level::ERR) ? 2 : 0);
  });
  EXPECT_EQ(status, 0);
}
