// Checkpoints: a round trip keeps every value; corrupt, truncated, other
// versions and other models' checkpoints are errors that say so.
#include "tessera/session/Checkpoint.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

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

} // namespace

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
