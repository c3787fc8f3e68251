// Checkpoints: a round trip keeps every value; corrupt, truncated, other
// versions and other models' checkpoints are errors that say so.
#include "../support/SpecialFiles.hpp"

#include "tessera/session/Checkpoint.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"
#include "tessera/support/Hash.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

using namespace tessera;
using namespace tessera::session;
using data::HostTensor;
using ::testing::HasSubstr;

namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("tessera-ckpt-" + name + "-" + std::to_string(::getpid())))
      .string();
}

Checkpoint mlp() {
  Checkpoint c;
  c.model = "mlp";
  c.step = 1234;
  c.variables.emplace_back(
      "dense/w", HostTensor::fromValues<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  c.variables.emplace_back("dense/b",
                           HostTensor::fromValues<float>({3}, {-1, 0, 1}));
  c.variables.emplace_back("steps", HostTensor::scalar<int>(7));
  return c;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const SerializationError &e) {
    return e.what();
  }
  return "";
}

// The bytes of a checkpoint of model "m" at step 1 holding one variable "v"
// as saveCheckpoint lays it out (type, rank, dims, byte count, then `data`),
// its checksum recomputed, as a crafted file would have it.
std::string crafted(Type type, std::uint64_t rank,
                    const std::vector<std::uint64_t> &dims, std::uint64_t bytes,
                    const std::string &data = "") {
  std::string s = "TSCKPT01";
  auto pod = [&](auto v) {
    s.append(reinterpret_cast<const char *>(&v), sizeof v);
  };
  pod(kCheckpointVersion);
  pod(std::uint64_t{1});
  s += "m";
  pod(std::uint64_t{1}); // step
  pod(std::uint64_t{1}); // variables
  pod(std::uint64_t{1});
  s += "v";
  pod(static_cast<std::uint8_t>(type));
  pod(rank);
  for (std::uint64_t d : dims)
    pod(d);
  pod(bytes);
  s += data;
  pod(hash64(s));
  return s;
}

std::string loadError(const std::string &bytes) {
  const std::string path = tempPath("crafted");
  writeFileAtomically(path, bytes);
  std::string msg = errorOf([&] { loadCheckpoint(path); });
  std::filesystem::remove(path);
  return msg;
}

} // namespace

TEST(Checkpoint, CraftedSizesAreErrorsBeforeAllocating) {
  // Rank 2^62 in a 71-byte file: no std::length_error from the shape.
  const std::string rank = crafted(FLOAT, std::uint64_t{1} << 62, {}, 0);
  EXPECT_THAT(loadError(rank), HasSubstr("has rank 4611686018427387904 (at "
                                         "most 64 is allowed"));
  // A 1 TiB variable in a short file: checked against the bytes left, not
  // allocated first.
  const std::uint64_t tib = std::uint64_t{1} << 40;
  EXPECT_THAT(loadError(crafted(UNSIGNED_CHAR, 2, {tib, 1}, tib, "abc")),
              HasSubstr("needs 1099511627776 bytes but only 3 are left"));
  // [2^62, 4] floats: the byte count wraps to 0, which must not pass.
  EXPECT_THAT(loadError(crafted(FLOAT, 2, {std::uint64_t{1} << 62, 4}, 0)),
              HasSubstr("would take more than 2^64 bytes"));
  // A byte count that disagrees with the shape.
  EXPECT_THAT(loadError(crafted(FLOAT, 1, {2}, 4, "abcd")),
              HasSubstr("needs 8 bytes but the file says 4"));
  // And the same layout with honest sizes loads.
  const std::string path = tempPath("crafted-ok");
  writeFileAtomically(path, crafted(FLOAT, 1, {1}, 4, std::string(4, '\0')));
  EXPECT_EQ(loadCheckpoint(path).variables.at(0).second.shape(),
            (data::Shape{1}));
  std::filesystem::remove(path);
}

TEST(Checkpoint, MagicComparesAllEightBytes) {
  std::string bytes = crafted(FLOAT, 1, {1}, 4, std::string(4, '\0'));
  bytes[7] = '2'; // "TSCKPT02"
  bytes.resize(bytes.size() - 8);
  const std::uint64_t sum = hash64(bytes);
  bytes.append(reinterpret_cast<const char *>(&sum), sizeof sum);
  EXPECT_THAT(loadError(bytes), HasSubstr("not a Tessera checkpoint"));
}

TEST(Checkpoint, FifoOrFolderIsAnErrorInsteadOfAWait) {
  test::Fifo fifo("model.ckpt");
  const std::string msg =
      test::errorOrBlocked(fifo.path(), [&] { loadCheckpoint(fifo.path()); });
  EXPECT_THAT(msg, HasSubstr("is a FIFO (named pipe), not a regular file"));
  EXPECT_THAT(errorOf([] {
                loadCheckpoint(std::filesystem::temp_directory_path().string());
              }),
              HasSubstr("is a folder, not a regular file"));
}

TEST(Checkpoint, RoundTripKeepsNamesTypesShapesAndValues) {
  const std::string path = tempPath("roundtrip");
  saveCheckpoint(path, mlp());
  const Checkpoint c = loadCheckpoint(path);
  EXPECT_EQ(c.model, "mlp");
  EXPECT_EQ(c.step, 1234u);
  ASSERT_EQ(c.variables.size(), 3u);
  EXPECT_EQ(c.variables[0].first, "dense/w");
  EXPECT_EQ(c.variables[0].second.shape(), (data::Shape{2, 3}));
  EXPECT_EQ(c.variables[0].second.values<float>()[5], 6.0f);
  EXPECT_EQ(c.variables[2].second.values<int>()[0], 7);
  std::filesystem::remove(path);
}

TEST(Checkpoint, AnEmptyVariableRoundTrips) {
  // Its tensor's data() is null: loading copied zero bytes into it through
  // memcpy, which UBSan reports (found by the checkpoint fuzz harness).
  const std::string path = tempPath("empty");
  Checkpoint c = mlp();
  c.variables.emplace_back("empty", HostTensor::fromValues<float>({0, 4}, {}));
  saveCheckpoint(path, c);
  const Checkpoint loaded = loadCheckpoint(path);
  ASSERT_EQ(loaded.variables.size(), 4u);
  EXPECT_EQ(loaded.variables[3].second.shape(), (data::Shape{0, 4}));
  EXPECT_EQ(loaded.variables[3].second.numBytes(), 0u);
  std::filesystem::remove(path);
}

TEST(Checkpoint, CorruptTruncatedAndMissingFilesAreErrors) {
  const std::string path = tempPath("corrupt");
  saveCheckpoint(path, mlp());
  std::string bytes = readFile(path);
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x11;
  writeFileAtomically(path, flipped);
  EXPECT_THAT(errorOf([&] { loadCheckpoint(path); }), HasSubstr("corrupt"));
  writeFileAtomically(path, bytes.substr(0, bytes.size() / 2));
  EXPECT_THAT(errorOf([&] { loadCheckpoint(path); }),
              ::testing::AnyOf(HasSubstr("corrupt"), HasSubstr("truncated")));
  writeFileAtomically(path, "hello, not a checkpoint at all");
  EXPECT_THAT(errorOf([&] { loadCheckpoint(path); }),
              HasSubstr("not a Tessera checkpoint"));
  std::filesystem::remove(path);
  EXPECT_THAT(errorOf([&] { loadCheckpoint(path); }),
              HasSubstr("does not exist"));
}

TEST(Checkpoint, AnotherFormatVersionIsNamed) {
  const std::string path = tempPath("version");
  saveCheckpoint(path, mlp());
  std::string bytes = readFile(path);
  bytes[8] = 9; // the version field follows the 8-byte magic
  writeFileAtomically(path, bytes);
  EXPECT_THAT(errorOf([&] { loadCheckpoint(path); }),
              HasSubstr("format version 9"));
  std::filesystem::remove(path);
}

TEST(Checkpoint, CheckpointOfAnotherModelIsRejectedNamingTheDifference) {
  const Checkpoint c = mlp();
  const std::vector<VariableSpec> same{
      {"dense/b", FLOAT, {3}}, {"dense/w", FLOAT, {2, 3}}, {"steps", INT, {}}};
  EXPECT_EQ(errorOf([&] { checkCheckpointMatches(c, "p", "mlp", same); }), "");
  const std::vector<VariableSpec> wider{
      {"dense/w", FLOAT, {2, 4}}, {"dense/b", FLOAT, {3}}, {"steps", INT, {}}};
  const std::string msg =
      errorOf([&] { checkCheckpointMatches(c, "p", "cnn", wider); });
  EXPECT_THAT(msg, HasSubstr("\"dense/w\""));
  EXPECT_THAT(msg, HasSubstr("[2,3]"));
  EXPECT_THAT(msg, HasSubstr("[2,4]"));
  EXPECT_THAT(msg, HasSubstr("model \"cnn\""));
  const std::vector<VariableSpec> fewer{{"dense/w", FLOAT, {2, 3}},
                                        {"steps", INT, {}}};
  EXPECT_THAT(errorOf([&] { checkCheckpointMatches(c, "p", "mlp", fewer); }),
              HasSubstr("\"dense/b\", which the model does not"));
  const std::vector<VariableSpec> more{{"dense/w", FLOAT, {2, 3}},
                                       {"dense/b", FLOAT, {3}},
                                       {"steps", INT, {}},
                                       {"conv/k", FLOAT, {3, 3}}};
  EXPECT_THAT(errorOf([&] { checkCheckpointMatches(c, "p", "mlp", more); }),
              HasSubstr("no variable \"conv/k\""));
}
