#include "SpecialFiles.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

TEST(File, ReadOfAFifoIsAnErrorInsteadOfAWait) {
  test::Fifo fifo("pipe");
  const std::string msg =
      test::errorOrBlocked(fifo.path(), [&] { readFile(fifo.path()); });
  EXPECT_THAT(msg, HasSubstr("\"" + fifo.path() +
                             "\" is a FIFO (named pipe), not a regular file"));
}

TEST_F(FileTest, ReadOfADeviceOrAFolderSaysWhatItIs) {
  // /dev/null reads as empty: without the check it would pass as a file.
  EXPECT_THAT([] { readFile("/dev/null"); },
              ::testing::ThrowsMessage<SerializationError>(
                  HasSubstr("\"/dev/null\" is a character device")));
  EXPECT_THAT([&] { readFile(dir_.string()); },
              ::testing::ThrowsMessage<SerializationError>(
                  HasSubstr("is a folder, not a regular file")));
  EXPECT_THAT([&] { checkRegularFile("/dev/null", "data file"); },
              ::testing::ThrowsMessage<SerializationError>(
                  HasSubstr("data file \"/dev/null\" is a character")));
}

TEST_F(FileTest, WriteRemovesTemporariesOfWritersThatNoLongerRun) {
  // A PID that no process has: a child that has exited and been reaped.
  const pid_t dead = ::fork();
  if (dead == 0)
    ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string base = (dir_ / "entry.tsx").string();
  const std::string stale = base + ".tmp." + std::to_string(dead) + ".0";
  const std::string live = base + ".tmp." + std::to_string(::getpid()) + ".7";
  const std::string other = (dir_ / "notes.tmp.txt").string();
  const std::string fresh = base + ".tmp." + std::to_string(dead) + ".1";
  for (const std::string &p : {stale, live, other, fresh}) {
    std::ofstream(p) << "partial";
    if (p != fresh)
      fs::last_write_time(p, fs::file_time_type::clock::now() -
                                 std::chrono::hours(1));
  }
  const std::string neighbour =
      (dir_ / "other.json.tmp.").string() + std::to_string(dead) + ".2";
  std::ofstream(neighbour) << "{";
  fs::last_write_time(neighbour,
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  writeFileAtomically(base, "whole");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(fresh)); // maybe still being written elsewhere
  // Only the written file's temporaries: other programs may name theirs
  // the same way. Asked for the whole folder, the neighbour's goes too.
  EXPECT_TRUE(fs::exists(neighbour));
  EXPECT_EQ(removeStaleTemporaries(dir_.string()), 1u);
  EXPECT_FALSE(fs::exists(neighbour));
}

// The rule of caches whose entries this process runs as code: a folder
// others can write is refused unless it is sticky and this user's.
TEST_F(FileTest, FolderOthersCanWriteIsRefusedUnlessStickyAndOwn) {
  const std::string folder = dir_.string();
  const auto check = [&] {
    checkFolderIsPrivate(folder, "the test cache folder", "set TEST_DIR");
  };
  ::chmod(folder.c_str(), 0700);
  EXPECT_NO_THROW(check());
  ::chmod(folder.c_str(), 0775);
  EXPECT_THAT(check, ::testing::ThrowsMessage<OptionError>(::testing::AllOf(
                         HasSubstr("the test cache folder \"" + folder +
                                   "\" (mode 0775) is writable by other "
                                   "users"),
                         HasSubstr("chmod go-w " + folder),
                         HasSubstr("set TEST_DIR"))));
  ::chmod(folder.c_str(), 01777);
  EXPECT_NO_THROW(check());
  // A missing folder passes: the cache creates it privately.
  EXPECT_NO_THROW(checkFolderIsPrivate((dir_ / "missing").string(), "x", "y"));
}

TEST_F(FileTest, FolderOfAnotherUserIsRefused) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "giving a folder to another user needs root";
  const fs::path folder = dir_ / "theirs";
  fs::create_directories(folder);
  ::chmod(folder.c_str(), 0755);
  ASSERT_EQ(::chown(folder.c_str(), 4242, 4242), 0);
  EXPECT_THAT(
      [&] { checkFolderIsPrivate(folder.string(), "the cache folder", "s"); },
      ::testing::ThrowsMessage<OptionError>(
          HasSubstr("belongs to user 4242 with mode 0755")));
}

TEST_F(FileTest, CreatedFoldersArePrivateAndExistingOnesUntouched) {
  ::chmod(dir_.c_str(), 0755);
  const fs::path leaf = dir_ / "a" / "b" / "c";
  createPrivateFolders(leaf.string());
  for (const fs::path &p : {dir_ / "a", dir_ / "a" / "b", leaf}) {
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0) << p;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << p;
  }
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  EXPECT_NO_THROW(createPrivateFolders(leaf.string()));
  const std::string file = (dir_ / "file").string();
  std::ofstream(file) << "x";
  EXPECT_THAT([&] { createPrivateFolders(file + "/sub"); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("cannot create the folder \"" + file + "/sub\"")));
}

TEST_F(FileTest, FilesOthersCanWriteOrOwnAreUntrusted) {
  const std::string file = (dir_ / "entry").string();
  EXPECT_EQ(untrustedFileReason(file), "does not exist");
  std::ofstream(file) << "x";
  ::chmod(file.c_str(), 0644);
  EXPECT_EQ(untrustedFileReason(file), "");
  ::chmod(file.c_str(), 0666);
  EXPECT_THAT(untrustedFileReason(file), HasSubstr("with mode 0666"));
  ::chmod(file.c_str(), 0644);
  if (::geteuid() != 0)
    GTEST_SKIP() << "giving a file to another user needs root";
  const std::string link = (dir_ / "link").string();
  fs::create_symlink(file, link);
  ASSERT_EQ(::lchown(link.c_str(), 4242, 4242), 0);
  EXPECT_THAT(untrustedFileReason(link),
              HasSubstr("is a symbolic link that belongs to user 4242"));
  ASSERT_EQ(::chown(file.c_str(), 4242, 4242), 0);
  EXPECT_EQ(untrustedFileReason(file), "belongs to user 4242 with mode 0644");
}
