#include "tessera/support/File.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

using namespace tessera;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

class FileTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern =
        (fs::temp_directory_path() / "tessera-file-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

} // namespace

TEST_F(FileTest, WriteThenReadRoundTripsBinaryContent) {
  std::string bytes("a\0b\xff\n", 5);
  bytes += std::string(300000, 'z');
  const std::string path = (dir_ / "data.bin").string();
  writeFileAtomically(path, bytes);
  EXPECT_EQ(readFile(path), bytes);
}

TEST_F(FileTest, WriteCreatesParentFoldersAndLeavesNoTemporaryFiles) {
  const std::string path = (dir_ / "a" / "b" / "c.txt").string();
  writeFileAtomically(path, "first");
  writeFileAtomically(path, "second");
  EXPECT_EQ(readFile(path), "second");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto &e :
       fs::directory_iterator(dir_ / "a" / "b"))
    ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST_F(FileTest, WriteEmptyFile) {
  const std::string path = (dir_ / "empty").string();
  writeFileAtomically(path, "");
  EXPECT_EQ(readFile(path), "");
}

TEST_F(FileTest, ReadOfMissingFileNamesThePathAndReason) {
  const std::string path = (dir_ / "missing.json").string();
  try {
    readFile(path);
    FAIL() << "expected an Error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
    EXPECT_THAT(e.what(), HasSubstr("No such file or directory"));
  }
}

TEST_F(FileTest, ReadOfAFolderIsAnError) {
  EXPECT_THROW(readFile(dir_.string()), Error);
}

TEST_F(FileTest, WriteUnderAFileNamesThePath) {
  const std::string blocker = (dir_ / "blocker").string();
  writeFileAtomically(blocker, "x");
  const std::string path = blocker + "/inside.txt";
  try {
    writeFileAtomically(path, "data");
    FAIL() << "expected an Error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
  }
}
