// `tessera train` as users run it: a short run on a subset of Fashion-MNIST
// on a small IPU Model prints the summary, Keras' epoch lines, the test
// accuracy and the timings; an identical second run hits the executable
// cache and reproduces the numbers; bad options are one-line errors.
#include "tools/Subprocess.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

using namespace tessera::testing;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

const std::string kCli = TESSERA_CLI_PATH;

std::string tempDir(const std::string &name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("tessera-train-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

ProcessResult train(const std::vector<std::string> &args,
                    const EnvOverrides &env = {}) {
  std::vector<std::string> argv{kCli, "train"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv, env, 300);
}

const std::vector<std::string> kShortRun{
    "--epochs",        "1",   "--train-examples",      "1600",
    "--test-examples", "400", "--batch-size",          "16",
    "--tiles",         "64",  "--steps-per-execution", "25"};

std::string testLine(const std::string &out) {
  std::smatch m;
  std::regex_search(out, m, std::regex("Test \\(400 examples\\): [^\n]*"));
  return m.str();
}

} // namespace

TEST(TrainCommand, ShortRunPrintsKerasLinesAndASecondRunHitsTheCache) {
  const std::string cache = tempDir("cache");
  std::vector<std::string> args = kShortRun;
  args.insert(args.end(), {"--cache", cache});
  const ProcessResult first = train(args);
  ASSERT_EQ(first.exitCode, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("Model: \"mlp\""));
  EXPECT_THAT(first.out, HasSubstr("Total params: 235,146"));
  EXPECT_THAT(first.out, HasSubstr("Training on 1600 Fashion-MNIST examples: "
                                   "1 IPU(s) of 64 tiles"));
  EXPECT_TRUE(std::regex_search(
      first.out,
      std::regex("Epoch 1/1\n100/100 \\[={30}\\] - [0-9]+s [0-9]+(s|ms|us)/"
                 "step - loss: [0-9.]+ - accuracy: [0-9.]+\n")))
      << first.out;
  std::smatch acc;
  ASSERT_TRUE(std::regex_search(
      first.out, acc,
      std::regex("Test \\(400 examples\\): loss [0-9.]+ - accuracy "
                 "(0\\.[0-9]{4})\n")))
      << first.out;
  // 1600 examples, one epoch: far better than chance (0.1).
  EXPECT_GT(std::stod(acc[1].str()), 0.5);
  EXPECT_TRUE(std::regex_search(
      first.out, std::regex("Host time per step: [0-9.]+ (s|ms|us)\n")));
  EXPECT_TRUE(std::regex_search(
      first.out,
      std::regex("Estimated IPU time per step: [0-9.]+ (s|ms|us) \\([0-9,]+ "
                 "cycles per 25 steps at 1.33 GHz\\); throughput [0-9,]+ "
                 "examples/s\n")))
      << first.out;
  EXPECT_THAT(first.err, HasSubstr("Compilation Finished"));
  EXPECT_THAT(first.err, HasSubstr("Compiled the training step"));

  // Profiling is an engine option: the executable stays the same.
  const std::string profile = tempDir("profile");
  args.insert(args.end(), {"--profile", profile});
  const ProcessResult second = train(args);
  ASSERT_EQ(second.exitCode, 0) << second.err;
  EXPECT_TRUE(std::filesystem::exists(profile + "/profile.json"));
  EXPECT_THAT(second.out, HasSubstr("Profile written to " + profile));
  EXPECT_THAT(second.err, HasSubstr("Executable cache hit: loaded"));
  EXPECT_THAT(second.err, Not(HasSubstr("Compilation Finished")));
  // Same seed, same executable: the same numbers.
  EXPECT_EQ(testLine(second.out), testLine(first.out));
  EXPECT_FALSE(testLine(first.out).empty());
  std::filesystem::remove_all(cache);
  std::filesystem::remove_all(profile);
}

TEST(TrainCommand, BadOptionsAreOneLineErrors) {
  ProcessResult r = train({"--train-examples", "100", "--no-cache"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("tessera train: error: --train-examples 100 is "
                               "less than one device run of 125 steps of 32 "
                               "examples (4000)"));
  // Zero is not a stand-in for the default: it is refused.
  r = train({"--epochs", "0", "--no-cache"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err,
              HasSubstr("tessera train: error: --epochs must be at least 1"));
  r = train({"--learning-rate", "0", "--no-cache"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("tessera train: error: --learning-rate must be "
                               "positive, got 0"));
  r = train({"--model", "rnn"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("--model"));
  r = train({"--no-cache", "--tiles", "16"},
            {{"TESSERA_FASHION_MNIST_DIR", "/nonexistent"}});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("dataset-fashion-mnist"));
}
