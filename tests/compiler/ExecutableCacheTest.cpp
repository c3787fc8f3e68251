// The executable cache: a second request is a hit that skips compilation; a
// corrupt entry, or one of another key, is recompiled and replaced; a store
// that fails is a warning; shared folders are refused; keys follow their
// text.
#include "../engine/TestGraphs.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/compiler/ExecutableCache.hpp"
#include "tessera/compiler/ExecutableFormat.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace tessera;
using namespace tessera::program;
using tessera::test::modelDevice;

namespace {

std::string freshDir(const std::string &name) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("tessera-cache-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

// A graph that copies x into y, counting how often it is compiled.
Executable compileCopy(int &compiles) {
  ++compiles;
  Device device = modelDevice();
  Graph g(device.getTarget());
  Tensor x = g.addVariable(FLOAT, {8}, "x");
  Tensor y = g.addVariable(FLOAT, {8}, "y");
  g.setTileMapping(x, 0);
  g.setTileMapping(y, 1);
  g.createHostWrite("x", x);
  g.createHostRead("y", y);
  return compileGraph(g, {Copy(x, y)});
}

// The entry at \p key is refused as corrupt, compiled a second time and
// replaced, so that the next request is a hit.
void expectRecompiledOnceThenHit(ExecutableCache &cache, const std::string &key,
                                 int &compiles) {
  ExecutableCache::Outcome outcome;
  cache.getOrCompile(
      key, [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::Corrupt);
  EXPECT_EQ(compiles, 2);
  cache.getOrCompile(
      key, [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::Hit);
}

} // namespace

TEST(ExecutableCache, SecondRequestIsAHitWithoutCompiling) {
  ExecutableCache cache(freshDir("hit"));
  int compiles = 0;
  ExecutableCache::Outcome outcome;
  const std::string key = ExecutableCache::keyOf("copy x to y");
  cache.getOrCompile(
      key, [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::Miss);
  Executable exe = cache.getOrCompile(
      key, [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::Hit);
  EXPECT_EQ(compiles, 1);
  // The cached executable runs.
  Device device = modelDevice();
  Engine e(std::move(exe));
  e.load(device);
  std::vector<float> in{1, 2, 3, 4, 5, 6, 7, 8}, out(8);
  e.writeTensor("x", in.data(), in.data() + 8);
  e.run();
  e.readTensor("y", out.data(), out.data() + 8);
  EXPECT_EQ(out, in);
}

TEST(ExecutableCache, CorruptEntryIsRecompiledAndReplaced) {
  ExecutableCache cache(freshDir("corrupt"));
  int compiles = 0;
  const std::string key = ExecutableCache::keyOf("copy");
  cache.getOrCompile(key, [&] { return compileCopy(compiles); });
  std::string bytes = readFile(cache.pathFor(key));
  bytes[bytes.size() / 2] ^= 0x5a;
  writeFileAtomically(cache.pathFor(key), bytes);
  expectRecompiledOnceThenHit(cache, key, compiles);
}

// Entries are read from a mapping of the file, starting after their own
// header: one cut short, or with bytes after its executable, is corrupt.
TEST(ExecutableCache, TruncatedOrOverlongEntryIsRecompiledAndReplaced) {
  ExecutableCache cache(freshDir("length"));
  int compiles = 0;
  const std::string key = ExecutableCache::keyOf("copy");
  cache.getOrCompile(key, [&] { return compileCopy(compiles); });
  const std::string bytes = readFile(cache.pathFor(key));
  writeFileAtomically(cache.pathFor(key), bytes + "x");
  expectRecompiledOnceThenHit(cache, key, compiles);
  writeFileAtomically(cache.pathFor(key), bytes.substr(0, bytes.size() - 1));
  ExecutableCache::Outcome outcome;
  cache.getOrCompile(
      key, [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::Corrupt);
  EXPECT_EQ(compiles, 3);
}

// An entry an older Tessera wrote (another format version) is not an
// error: it is recompiled and replaced, and the next request is a hit.
TEST(ExecutableCache, EntryOfAnOlderFormatIsRecompiledAndReplaced) {
  ExecutableCache cache(freshDir("version"));
  int compiles = 0;
  const std::string key = ExecutableCache::keyOf("copy");
  cache.getOrCompile(key, [&] { return compileCopy(compiles); });
  // The entry: "TSXENTRY", the key's length (4 bytes), the key, the file.
  std::string bytes = readFile(cache.pathFor(key));
  const std::size_t at = 8 + 4 + key.size();
  const auto field = [&](std::size_t offset) {
    std::uint64_t v = 0;
    std::memcpy(&v, bytes.data() + at + offset, sizeof v);
    return v;
  };
  detail::ExecutableFileHeader old;
  old.version = kExecutableFormatVersion - 1;
  old.payloadBytes = field(16);
  old.compressedBytes = field(24);
  old.compressedHash = field(32);
  const auto h = detail::encodeExecutableHeader(old);
  std::memcpy(bytes.data() + at, h.data(), h.size());
  writeFileAtomically(cache.pathFor(key), bytes);
  expectRecompiledOnceThenHit(cache, key, compiles);
  EXPECT_EQ(compiles, 2);
}

TEST(ExecutableCache, KeysAreStableAndDistinct) {
  EXPECT_EQ(ExecutableCache::keyOf("a"), ExecutableCache::keyOf("a"));
  EXPECT_NE(ExecutableCache::keyOf("a"), ExecutableCache::keyOf("b"));
  EXPECT_EQ(ExecutableCache::keyOf("a").size(), 16u);
}

// A cache entry that cannot be stored costs the next run its shortcut, not
// this run its result.
TEST(ExecutableCache, EntryThatCannotBeStoredIsAWarningAndTheRunGoesOn) {
  int compiles = 0;
  ExecutableCache::Outcome outcome;
  ExecutableCache unwritable("/proc/tessera-no-such-folder");
  Executable exe = unwritable.getOrCompile(
      "k", [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::NotStored);
  EXPECT_EQ(compiles, 1);
  EXPECT_FALSE(exe.steps.empty());
  // An entry that is a folder: unusable, and cannot be replaced.
  ExecutableCache cache(freshDir("entry-folder"));
  const std::string key = ExecutableCache::keyOf("folder");
  std::filesystem::create_directories(cache.pathFor(key));
  compiles = 0;
  cache.getOrCompile(
      key, [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::NotStored);
  EXPECT_EQ(compiles, 1);
  std::filesystem::remove_all(
      std::filesystem::path(cache.pathFor(key)).parent_path());
}

// The first program's entry copied over the second's key must not run the
// first program under the second's name.
TEST(ExecutableCache, EntryOfAnotherKeyIsAMissAndIsRewritten) {
  const std::string dir = freshDir("swap");
  ExecutableCache cache(dir);
  int compiles = 0;
  const std::string a = ExecutableCache::keyOf("a"),
                    b = ExecutableCache::keyOf("b");
  cache.getOrCompile(a, [&] { return compileCopy(compiles); });
  cache.getOrCompile(b, [&] { return compileCopy(compiles); });
  std::filesystem::copy_file(cache.pathFor(a), cache.pathFor(b),
                             std::filesystem::copy_options::overwrite_existing);
  ExecutableCache::Outcome outcome;
  cache.getOrCompile(
      b, [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::Corrupt);
  EXPECT_EQ(compiles, 3);
  cache.getOrCompile(
      b, [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::Hit);
  EXPECT_EQ(compiles, 3);
  std::filesystem::remove_all(dir);
}

TEST(ExecutableCache, FolderOthersCanWriteIsRefusedUnlessStickyAndOwn) {
  const std::string dir = freshDir("shared");
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0777);
  ExecutableCache cache(dir);
  int compiles = 0;
  EXPECT_THAT(
      [&] { cache.getOrCompile("k", [&] { return compileCopy(compiles); }); },
      ::testing::ThrowsMessage<OptionError>(::testing::AllOf(
          ::testing::HasSubstr("(mode 0777) is writable by other users"),
          ::testing::HasSubstr("chmod go-w " + dir))));
  EXPECT_EQ(compiles, 0);
  // Sticky and this user's (as /tmp-style shared folders are): others can
  // only add entries, and those are not loaded.
  ::chmod(dir.c_str(), 01777);
  ExecutableCache::Outcome outcome;
  cache.getOrCompile(
      "k", [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::Miss);
  // Folders the cache creates are private.
  const std::string made = freshDir("made");
  ExecutableCache(made).getOrCompile("k",
                                     [&] { return compileCopy(compiles); });
  struct stat st {};
  ASSERT_EQ(::stat(made.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & (S_IWGRP | S_IWOTH), 0u);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(made);
}

TEST(ExecutableCache, StoringRemovesTemporariesOfKilledWriters) {
  const std::string dir = freshDir("stale");
  std::filesystem::create_directories(dir);
  const pid_t dead = ::fork();
  if (dead == 0)
    ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  ExecutableCache cache(dir);
  // Another key's: the cache cleans its whole folder.
  const std::string stale =
      cache.pathFor("other") + ".tmp." + std::to_string(dead) + ".3";
  writeFileAtomically(stale + "-not-a-temporary", "x");
  std::ofstream(stale) << "half an entry";
  std::filesystem::last_write_time(
      stale,
      std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  int compiles = 0;
  cache.getOrCompile("k", [&] { return compileCopy(compiles); });
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(stale + "-not-a-temporary"));
  std::filesystem::remove_all(dir);
}
