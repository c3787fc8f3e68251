// `tessera bench dataset` as users run it: its help documents SPEC, each
// kind of SPEC is measured with the counts and bytes the options imply, and
// each user error is one line naming the fix, with exit status 1.
#include "tools/Subprocess.hpp"
#include "tools/ToolsTestPaths.hpp"

#include "tessera/data/Idx.hpp"
#include "tessera/support/File.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>

using namespace tessera;
using namespace tessera::testing;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

ProcessResult runBench(const std::vector<std::string> &args,
                       const EnvOverrides &env = {}) {
  std::vector<std::string> argv{kTesseraCli, "bench", "dataset"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv, env);
}

// An IDX file of unsigned bytes (magic 0x08) of \p shape.
void writeIdx(const std::string &path, const std::vector<std::uint32_t> &shape,
              const std::vector<unsigned char> &bytes) {
  std::string data{'\0', '\0', '\x08', char(shape.size())};
  for (std::uint32_t d : shape)
    for (int shift = 24; shift >= 0; shift -= 8)
      data += char((d >> shift) & 0xff);
  data.append(bytes.begin(), bytes.end());
  writeFileAtomically(path, data);
}

// A CSV file with a header and \p rows rows of three numbers.
std::string writeCsv(const TempDir &dir, std::size_t rows) {
  std::string text = "a,b,c\n";
  for (std::size_t i = 0; i < rows; ++i)
    text += std::to_string(i) + "," + std::to_string(2 * i) + ",0.5\n";
  const std::string path = dir.path() + "/rows.csv";
  writeFileAtomically(path, text);
  return path;
}

// Every epoch of \p r's JSON has \p elements elements of \p bytes in all.
void expectEpochs(const ProcessResult &r, std::size_t epochs,
                  std::size_t elements, std::size_t bytes) {
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json stats = json::parse(r.out);
  EXPECT_EQ(stats["elements_per_epoch"], elements);
  ASSERT_EQ(stats["epochs"].size(), epochs);
  for (const json &epoch : stats["epochs"]) {
    EXPECT_EQ(epoch["elements_processed"], elements);
    EXPECT_EQ(epoch["total_bytes_processed"], bytes);
    EXPECT_GT(double(epoch["time_elapsed"]), 0.0);
    EXPECT_GT(double(epoch["elements_per_second"]), 0.0);
  }
}

// The one line an error prints, checked to be exactly one line.
std::string errorLine(const ProcessResult &r) {
  EXPECT_EQ(r.exitCode, 1) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("tessera bench: error: "));
  return r.err;
}

} // namespace

TEST(BenchDataset, HelpDocumentsTheSpecAndOptions) {
  ProcessResult r = runProcess({kTesseraCli, "bench", "dataset", "--help"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (const char *s : {"fashion-mnist[:train|:test]", "dataset-fashion-mnist",
                        "IMAGES,LABELS", "FILE.csv", "--batch-size", "--epochs",
                        "--elements-per-epoch", "--shuffle", "--prefetch"})
    EXPECT_THAT(r.out, HasSubstr(s));
  r = runProcess({kTesseraCli, "--help"});
  EXPECT_THAT(r.out, HasSubstr("bench"));
}

TEST(BenchDataset, AnEpochOfACsvFileIsOnePassOfFullBatches) {
  TempDir dir("bench-csv");
  const std::string csv = writeCsv(dir, 10);
  // 10 rows in batches of 4: 2 full batches of 4 x 3 floats.
  ProcessResult r = runBench({csv, "--batch-size", "4", "--epochs", "2"});
  expectEpochs(r, 2, 2, 2 * 4 * 3 * sizeof(float));
  EXPECT_THAT(json::parse(r.out)["element_spec"].get<std::string>(),
              HasSubstr("[4,3]"));
  // Unbatched, an epoch is every row.
  expectEpochs(runBench({csv, "--epochs", "1"}), 1, 10, 10 * 3 * 4);
}

TEST(BenchDataset, IdxFilesWithShuffleAndPrefetch) {
  TempDir dir("bench-idx");
  const std::string images = dir.path() + "/images.idx",
                    labels = dir.path() + "/labels.idx";
  std::vector<unsigned char> pixels(6 * 2 * 2);
  for (std::size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<unsigned char>(i * 10);
  writeIdx(images, {6, 2, 2}, pixels);
  writeIdx(labels, {6}, {0, 1, 2, 3, 4, 5});
  // (float [2,2], int) pairs, read across the end of the 6 elements.
  expectEpochs(runBench({images + "," + labels, "-n", "5", "--epochs", "3",
                         "--shuffle", "7", "--prefetch", "2"}),
               3, 5, 5 * (4 * 4 + 4));
  // One IDX file alone: its bytes sliced along dimension 0.
  expectEpochs(runBench({images, "--batch-size", "3"}), 3, 2, 2 * 3 * 4);
}

TEST(BenchDataset, FashionMnistTestSplit) {
  if (!std::filesystem::exists(data::fashionMnistDirectory() +
                               "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  // 10000 images in batches of 1000, each image 784 floats and an int.
  expectEpochs(
      runBench({"fashion-mnist:test", "--batch-size", "1000", "--epochs", "2"}),
      2, 10, 10 * 1000 * (784 * 4 + 4));
}

TEST(BenchDataset, ErrorsAreOneLineThatSaysHowToFixThem) {
  TempDir dir("bench-errors");
  EXPECT_THAT(errorLine(runBench({"imagenet"})),
              HasSubstr("unknown dataset \"imagenet\""));
  EXPECT_THAT(errorLine(runBench({"fashion-mnist:valid"})),
              HasSubstr("Fashion-MNIST has no split \"valid\"; use "
                        "fashion-mnist:train"));
  EXPECT_THAT(errorLine(runBench({"fashion-mnist"},
                                 {{"TESSERA_FASHION_MNIST_DIR", dir.path()}})),
              HasSubstr("apt-get install dataset-fashion-mnist"));
  EXPECT_THAT(errorLine(runBench({dir.path() + "/missing.csv"})),
              HasSubstr("there is no file \"" + dir.path() + "/missing.csv"));
  EXPECT_THAT(errorLine(runBench({dir.path() + "/a.idx,b.idx"})),
              HasSubstr("there is no file"));

  const std::string csv = writeCsv(dir, 10);
  EXPECT_THAT(errorLine(runBench({csv, "--batch-size", "20"})),
              HasSubstr("has 10 elements, fewer than one batch of 20; give a "
                        "--batch-size of at most 10"));
  EXPECT_THAT(errorLine(runBench({csv, "--epochs", "0"})),
              HasSubstr("--epochs must be 1 to 10000, got 0"));
  EXPECT_THAT(errorLine(runBench({csv, "--elements-per-epoch", "0"})),
              HasSubstr("--elements-per-epoch must be at least 1"));
  EXPECT_THAT(errorLine(runBench({csv, "--prefetch", "1025"})),
              HasSubstr("--prefetch must be 1 to 1024 elements, got 1025"));
  writeFileAtomically(csv, "a,b\n1,x\n");
  EXPECT_THAT(errorLine(runBench({csv})), HasSubstr("line 2"));

  // A bad command line gets CLI11's usage error instead.
  ProcessResult r = runBench({});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("SPEC is required"));
  r = runBench({csv, "--batch-size", "0"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("--batch-size"));
}
