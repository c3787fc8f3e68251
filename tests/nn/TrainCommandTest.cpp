// `tessera train` as users run it: a short run on a subset of Fashion-MNIST
// on a small IPU Model prints the summary, Keras' epoch lines, the test
// accuracy and the timings; an identical second run hits the executable
// cache and reproduces the numbers; bad options are one-line errors.
#include "tools/Subprocess.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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
  EXPECT_TRUE(std::regex_search(
      first.out,
      std::regex("Estimated time per step with the host side: [0-9.]+ "
                 "(s|ms|us) \\(per run of 25 steps: round trip [0-9.]+ "
                 "(s|ms|us), stream set-ups [0-9.]+ (s|ms|us), callbacks "
                 "[0-9.]+ (s|ms|us)\\); throughput [0-9,]+ examples/s\n")))
      << first.out;
  EXPECT_TRUE(std::regex_search(
      first.out,
      std::regex("Estimated cycles by kind: compute [0-9.]+%, exchange "
                 "[0-9.]+%, sync [0-9.]+%, host streams [0-9.]+%, control "
                 "[0-9.]+%\nTile memory: [0-9,]+ bytes of [0-9,]+ "
                 "\\([0-9.]+%\\) on [0-9]+ tiles; busiest tile [0-9]+ uses "
                 "[0-9,]+ of 638,976 bytes\n")))
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
  EXPECT_THAT(r.err, HasSubstr("tessera train: error: --epochs must be 1 to "
                               "10000, got 0"));
  r = train({"--learning-rate", "0", "--no-cache"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("tessera train: error: --learning-rate must be "
                               "a positive finite number, got 0"));
  r = train({"--model", "rnn"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("--model"));
  r = train({"--no-cache", "--tiles", "16"},
            {{"TESSERA_FASHION_MNIST_DIR", "/nonexistent"}});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("dataset-fashion-mnist"));
}

namespace {

// The one line of a refused command: exit status 1, "tessera train:
// error: ..." and nothing more on standard error.
void expectOneLineError(const ProcessResult &r, const std::string &message) {
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("tessera train: error: " + message));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("Training on")));
}

} // namespace

TEST(TrainCommand, HostileSizesAreRefusedWithTheirRangeBeforeAnythingIsBuilt) {
  // --tiles 4294967295 died of std::bad_alloc; --ipus 65536 computed tile
  // mappings for minutes.
  expectOneLineError(train({"--tiles", "4294967295"}),
                     "--tiles must be 1 to 16384, got 4294967295 tiles per "
                     "IPU");
  expectOneLineError(train({"--ipus", "65536"}),
                     "--ipus must be 1 to 1024, got 65536");
  expectOneLineError(train({"--ipus", "1024", "--tiles", "16384"}),
                     "--ipus 1024 of --tiles 16384 is 16777216 tiles, more "
                     "than the 2097152 a model may use");
  expectOneLineError(train({"--batch-size", "18446744073709551615"}),
                     "--batch-size must be 1 to 65536, got "
                     "18446744073709551615");
  expectOneLineError(train({"--steps-per-execution", "4294967295"}),
                     "--steps-per-execution must be 1 to 1000000");
  expectOneLineError(train({"--epochs", "4294967295"}),
                     "--epochs must be 1 to 10000, got 4294967295");
  // The largest batch and run: their product is checked without wrapping.
  expectOneLineError(
      train({"--batch-size", "65536", "--steps-per-execution", "1000000"}),
      "--train-examples 60000 is less than one device run of "
      "1000000 steps of 65536 examples (65536000000)");
}

TEST(TrainCommand, LearningRatesMustBeFinite) {
  // Infinity passed "!(lr > 0)" and trained to a NaN loss, exit 0.
  for (const char *lr : {"inf", "nan", "-inf", "-0.1"})
    expectOneLineError(train({std::string("--learning-rate=") + lr}),
                       "--learning-rate must be a positive finite number");
}

TEST(TrainCommand, AProfileFolderThatCannotBeWrittenIsRefusedBeforeTraining) {
  const std::string blocker = tempDir("profile-blocker");
  std::ofstream(blocker) << "a file, not a folder";
  ProcessResult r = train({"--no-cache", "--profile", blocker});
  expectOneLineError(r, "--profile " + blocker +
                            ": cannot make the profile folder");
  EXPECT_THAT(r.out, Not(HasSubstr("Profile written")));
  r = train({"--no-cache", "--profile", "/dev/full"});
  expectOneLineError(r, "--profile /dev/full: cannot make the profile folder");
  std::filesystem::remove_all(blocker);
}

TEST(TrainCommand, AProfileLostAfterTrainingFailsTheRun) {
  // A file size limit stands in for a full disk: the folder takes the
  // graph profile written at load (54 KB), not the whole one written after
  // the last step (1.4 MB). The limit is in blocks of 512 bytes (dash) or
  // 1024 (bash).
  const std::string profile = tempDir("profile-full");
  std::string command =
      "trap '' XFSZ; ulimit -f 400; exec '" + kCli + "' train";
  for (const std::string &a : kShortRun)
    command += " " + a;
  command += " --no-cache --profile '" + profile + "'";
  const ProcessResult r = runProcess({"/bin/sh", "-c", command}, {}, 300);
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Epoch 1/1"));
  EXPECT_THAT(r.err, HasSubstr("tessera train: error: cannot write file \"" +
                               profile + "/profile.json\": File too large"));
  EXPECT_THAT(r.out, Not(HasSubstr("Profile written")));
  std::filesystem::remove_all(profile);
}

namespace {

// A plain IDX1 file of unsigned bytes (the reader takes it under a .gz
// name too, as zlib reads files that are not compressed).
void writeLabels(const std::string &path, std::vector<unsigned char> labels) {
  const auto n = static_cast<std::uint32_t>(labels.size());
  std::string bytes = {
      0, 0, 8, 1, char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
  bytes.append(labels.begin(), labels.end());
  std::ofstream(path, std::ios::binary) << bytes;
}

} // namespace

TEST(TrainCommand, LabelsOutsideTheClassesAreAnErrorNotLossZero) {
  const std::string real = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(real + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  for (unsigned char bad : {10, 200}) {
    // Fashion-MNIST's images with labels of our own, one of them no class.
    const std::string dir = tempDir("labels");
    std::filesystem::create_directories(dir);
    for (const char *images :
         {"train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"})
      std::filesystem::create_symlink(real + "/" + images, dir + "/" + images);
    std::vector<unsigned char> trainLabels(60000), testLabels(10000);
    for (std::size_t i = 0; i < trainLabels.size(); ++i)
      trainLabels[i] = static_cast<unsigned char>(i % 10);
    for (std::size_t i = 0; i < testLabels.size(); ++i)
      testLabels[i] = static_cast<unsigned char>(i % 10);
    trainLabels[700] = bad;
    writeLabels(dir + "/train-labels-idx1-ubyte.gz", trainLabels);
    writeLabels(dir + "/t10k-labels-idx1-ubyte.gz", testLabels);
    std::vector<std::string> args = kShortRun;
    args.push_back("--no-cache");
    const ProcessResult r = train(args, {{"TESSERA_FASHION_MNIST_DIR", dir}});
    EXPECT_EQ(r.exitCode, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("tessera train: error: fit: label " +
                                 std::to_string(bad) + " at row "));
    EXPECT_THAT(r.err, HasSubstr("the model has 10 classes, so sparse labels "
                                 "must be 0 to 9"));
    EXPECT_THAT(r.out, Not(HasSubstr("Test (")));
    std::filesystem::remove_all(dir);
  }
}

TEST(TrainCommand, APipelinedRunPrintsItsStagesKerasLinesAndAnAccuracy) {
  const ProcessResult r = train({"--epochs",
                                 "1",
                                 "--train-examples",
                                 "640",
                                 "--test-examples",
                                 "200",
                                 "--batch-size",
                                 "16",
                                 "--tiles",
                                 "64",
                                 "--steps-per-execution",
                                 "20",
                                 "--no-cache",
                                 "--pipeline-stages",
                                 "2",
                                 "--gradient-accumulation",
                                 "4",
                                 "--schedule",
                                 "interleaved",
                                 "--recompute"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // mlp's 3 layers over 2 stages: floor(i * 2 / 3) = 0, 0, 1.
  EXPECT_THAT(r.out, HasSubstr("Param #   Stage"));
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("dense_1 \\(Dense\\) +\\(None, 128\\) +32896 +0 *\n")))
      << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("dense_2 \\(Dense\\) +\\(None, 10\\) +1290 +1 *\n")))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr("2 IPU(s) of 64 tiles"));
  EXPECT_THAT(r.out, HasSubstr("Pipelined over 2 stages (interleaved "
                               "schedule), 4 micro-batches per weight update, "
                               "activations recomputed"));
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("Epoch 1/1\n40/40 \\[={30}\\] - [0-9]+s [0-9]+(s|ms|"
                        "us)/step - loss: [0-9.]+ - accuracy: [0-9.]+\n")))
      << r.out;
  std::smatch acc;
  ASSERT_TRUE(std::regex_search(
      r.out, acc,
      std::regex("Test \\(200 examples\\): loss [0-9.]+ - accuracy "
                 "(0\\.[0-9]{4})\n")))
      << r.out;
  EXPECT_GT(std::stod(acc[1].str()), 0.3); // chance is 0.1
}

// With gradient accumulation, Adam's moments live in remote buffers by
// default and are streamed onto the tiles for each weight update and back:
// the estimate's host-stream share grows by those transfers.
TEST(TrainCommand, OffloadedOptimizerStateIsStreamedForEachUpdate) {
  const auto streamShare = [](bool offload) {
    const ProcessResult r = train(
        {"--epochs", "1", "--train-examples", "640", "--test-examples", "100",
         "--batch-size", "16", "--tiles", "64", "--steps-per-execution", "20",
         "--no-cache", "--gradient-accumulation", "4",
         offload ? "--offload-optimizer-state"
                 : "--no-offload-optimizer-state"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    std::smatch m;
    EXPECT_TRUE(
        std::regex_search(r.out, m, std::regex("host streams ([0-9.]+)%")))
        << r.out;
    return m.size() > 1 ? std::stod(m[1].str()) : 0.0;
  };
  EXPECT_GT(streamShare(true), streamShare(false) + 10);
}

TEST(TrainCommand, PipelineOptionsThatDoNotFitAreOneLineErrors) {
  const std::vector<std::string> base{"--epochs", "1", "--steps-per-execution",
                                      "20", "--no-cache"};
  const auto error = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    const ProcessResult r = train(extra);
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    return r.err;
  };
  EXPECT_THAT(error({"--pipeline-stages", "4"}),
              HasSubstr("tessera train: error: --pipeline-stages 4 is more "
                        "than the 3 layers of model mlp"));
  EXPECT_THAT(error({"--pipeline-stages", "3", "--gradient-accumulation", "2"}),
              HasSubstr("--gradient-accumulation 2 is less than the 3 "
                        "pipeline stages, but the grouped schedule needs"));
  EXPECT_THAT(error({"--pipeline-stages", "2", "--gradient-accumulation", "1",
                     "--schedule", "interleaved"}),
              HasSubstr("the interleaved schedule needs"));
  EXPECT_THAT(error({"--pipeline-stages", "3", "--ipus", "2",
                     "--gradient-accumulation", "4"}),
              HasSubstr("--ipus 2 is fewer than the 3 pipeline stages"));
  EXPECT_THAT(error({"--pipeline-stages", "3"}),
              HasSubstr("--steps-per-execution 20 is not a multiple of "
                        "--gradient-accumulation 3"));
  EXPECT_THAT(error({"--recompute"}), HasSubstr("give --pipeline-stages too"));
}
