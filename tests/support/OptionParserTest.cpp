#include "tessera/support/OptionParser.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"
#include "tessera/support/Logging.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace tessera;
using ::testing::HasSubstr;

namespace {

enum class Mode { Fast, Exact };

struct EngineOptions {
  bool all = false;
  std::string directory = "default";
  unsigned count = 1;
  std::size_t bytes = 0;
  int offset = 0;
  double ratio = 0.5;
  float proportion = 0.6f;
  Mode mode = Mode::Fast;
};

struct Bound {
  EngineOptions o;
  OptionParser p{"engine"};
  Bound() {
    p.add("autoReport.all", o.all);
    p.add("autoReport.directory", o.directory);
    p.add("count", o.count);
    p.add("bytes", o.bytes);
    p.add("offset", o.offset);
    p.add("ratio", o.ratio);
    p.add("proportion", o.proportion);
    p.addEnum("mode", o.mode, {{"fast", Mode::Fast}, {"exact", Mode::Exact}});
  }
};

std::string errorOf(Bound &b, const OptionFlags &flags) {
  try {
    b.p.parse(flags);
  } catch (const OptionError &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an OptionError";
  return {};
}

} // namespace

TEST(OptionParser, ParsesEveryTypeIntoItsField) {
  Bound b;
  b.p.parse({{"autoReport.all", "true"},
             {"autoReport.directory", "/tmp/r"},
             {"count", "4294967295"},
             {"bytes", "18446744073709551615"},
             {"offset", "-12"},
             {"ratio", "1e9"},
             {"proportion", "0.25"},
             {"mode", "exact"}});
  EXPECT_TRUE(b.o.all);
  EXPECT_EQ(b.o.directory, "/tmp/r");
  EXPECT_EQ(b.o.count, 4294967295u);
  EXPECT_EQ(b.o.bytes, 18446744073709551615ull);
  EXPECT_EQ(b.o.offset, -12);
  EXPECT_EQ(b.o.ratio, 1e9);
  EXPECT_EQ(b.o.proportion, 0.25f);
  EXPECT_EQ(b.o.mode, Mode::Exact);
}

TEST(OptionParser, UnknownKeySuggestsTheClosestAndListsKnownOptions) {
  Bound b;
  auto msg = errorOf(b, {{"autoReport.al", "true"}});
  EXPECT_THAT(msg, HasSubstr("unknown engine option \"autoReport.al\"; did "
                             "you mean \"autoReport.all\"?"));
  EXPECT_THAT(msg, HasSubstr("Known options: autoReport.all, "
                             "autoReport.directory, bytes, count, mode"));
}

TEST(OptionParser, UnknownKeyFarFromAllGivesNoSuggestion) {
  Bound b;
  auto msg = errorOf(b, {{"completelyDifferent", "1"}});
  EXPECT_THAT(msg, HasSubstr("unknown engine option \"completelyDifferent\""));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("did you mean")));
}

TEST(OptionParser, BadValuesNameKeyValueAndExpectation) {
  Bound b;
  EXPECT_THAT(errorOf(b, {{"autoReport.all", "yes"}}),
              HasSubstr("invalid value \"yes\" for engine option "
                        "\"autoReport.all\": expected \"true\" or \"false\""));
  EXPECT_THAT(errorOf(b, {{"count", "-1"}}),
              HasSubstr("expected an unsigned integer from 0 to 4294967295"));
  EXPECT_THAT(errorOf(b, {{"count", "4294967296"}}),
              HasSubstr("\"4294967296\""));
  EXPECT_THAT(errorOf(b, {{"count", "12abc"}}), HasSubstr("\"count\""));
  EXPECT_THAT(errorOf(b, {{"offset", "1.5"}}), HasSubstr("an integer from"));
  EXPECT_THAT(errorOf(b, {{"ratio", "fast"}}), HasSubstr("a finite number"));
  EXPECT_THAT(errorOf(b, {{"ratio", "inf"}}), HasSubstr("a finite number"));
  EXPECT_THAT(errorOf(b, {{"mode", "slow"}}),
              HasSubstr("expected one of \"fast\" or \"exact\""));
}

TEST(OptionParser, LeavesEveryFieldUnchangedWhenAnyOptionIsBad) {
  Bound b;
  // "count" sorts before "mode", so it would be stored first if parse did
  // not check everything before storing anything.
  errorOf(b, {{"count", "7"}, {"mode", "slow"}});
  EXPECT_EQ(b.o.count, 1u);
  errorOf(b, {{"autoReport.all", "true"}, {"zzz", "1"}});
  EXPECT_FALSE(b.o.all);
}

TEST(OptionParser, IgnoredPrefixesBelongToOtherComponents) {
  Bound b;
  b.p.ignorePrefix("target.");
  b.p.parse({{"target.tilesPerIPU", "4"}, {"count", "3"}});
  EXPECT_EQ(b.o.count, 3u);
}

TEST(OptionParser, CustomHandlersSayWhatTheyExpect) {
  unsigned grain = 0;
  OptionParser p("layout");
  p.addHandler("grain", "a power of two",
               [&](std::string_view text, bool commit) {
                 if (text != "1" && text != "2" && text != "4")
                   return false;
                 if (commit)
                   grain = unsigned(text[0] - '0');
                 return true;
               });
  p.parse({{"grain", "4"}});
  EXPECT_EQ(grain, 4u);
  try {
    p.parse({{"grain", "3"}});
    FAIL();
  } catch (const OptionError &e) {
    EXPECT_THAT(e.what(), HasSubstr("expected a power of two"));
  }
}

TEST(DidYouMean, FindsTyposTranspositionsAndCaseSlips) {
  std::vector<std::string> keys{"autoReport.all", "autoReport.directory",
                                "debug.allowOutOfMemory"};
  EXPECT_EQ(didYouMean("autoReport.al", keys), "autoReport.all");
  EXPECT_EQ(didYouMean("autoRpeort.all", keys), "autoReport.all");
  EXPECT_EQ(didYouMean("AUTOREPORT.ALL", keys), "autoReport.all");
  EXPECT_EQ(didYouMean("debug.allowOutOfMemroy", keys),
            "debug.allowOutOfMemory");
  EXPECT_EQ(didYouMean("directory", keys), "autoReport.directory");
  EXPECT_EQ(didYouMean("xyz", keys), "");
  EXPECT_EQ(didYouMean("anything", {}), "");
}

TEST(OptionParser, RangedUnsignedOptionsSayTheirRange) {
  unsigned threads = 0;
  OptionParser p("engine");
  p.add("engine.hostThreads", threads, 0, 1024);
  p.parse({{"engine.hostThreads", "1024"}});
  EXPECT_EQ(threads, 1024u);
  for (const char *bad : {"1025", "20000", "4294967296", "-1", "8x"}) {
    try {
      p.parse({{"engine.hostThreads", bad}});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const OptionError &e) {
      EXPECT_THAT(e.what(),
                  HasSubstr(std::string("invalid value \"") + bad +
                            "\" for engine option \"engine.hostThreads\": "
                            "expected an unsigned integer from 0 to 1024"));
    }
  }
  EXPECT_EQ(threads, 1024u);
}

TEST(OptionParser, IgnoredKeysAreAcceptedListedAndSuggested) {
  Bound b;
  b.p.addIgnored("enableFastReduce", "a test", {"true", "false"});
  b.p.addIgnored("planConstraints", "a test");
  b.p.parse({{"enableFastReduce", "true"},
             {"planConstraints", "{\"method\": \"AMP\"}"},
             {"count", "2"}});
  EXPECT_EQ(b.o.count, 2u);
  EXPECT_EQ(b.p.ignoredKeys(),
            (std::vector<std::string>{"enableFastReduce", "planConstraints"}));
  EXPECT_THAT(errorOf(b, {{"enableFastReduce", "yes"}}),
              HasSubstr("expected one of \"true\" or \"false\" (the option "
                        "is accepted and ignored)"));
  EXPECT_THAT(errorOf(b, {{"enableFastReduse", "true"}}),
              HasSubstr("did you mean \"enableFastReduce\"?"));
}

TEST(OptionParser, AnIgnoredKeyIsLoggedOncePerProcess) {
  const std::string logFile =
      (std::filesystem::temp_directory_path() /
       ("tessera-ignored-option." + std::to_string(::getpid())))
          .string();
  std::filesystem::remove(logFile);
  // The set of keys already logged is per process: run in a child.
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Earlier tests may have set logging up already (off, on stderr).
    const int fd = ::open(logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::close(fd);
    logging::setLevel(logging::Level::INFO);
    for (int i = 0; i < 3; ++i) {
      OptionParser p("matMul");
      p.addIgnored("remapOutputTensor", "it tunes PopLibs' vertices",
                   {"true", "false"});
      p.parse({{"remapOutputTensor", "false"}});
    }
    std::fflush(nullptr);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string text = readFile(logFile);
  const std::string line =
      "matMul option remapOutputTensor=false has no effect on the IPU "
      "Model: it tunes PopLibs' vertices";
  EXPECT_THAT(text, HasSubstr(line));
  EXPECT_EQ(text.find(line), text.rfind(line)) << text;
  std::filesystem::remove(logFile);
}
