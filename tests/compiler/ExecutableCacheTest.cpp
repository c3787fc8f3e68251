// The executable cache: a second request is a hit that skips compilation; a
// corrupt entry is recompiled and replaced; keys follow their text.
#include "../engine/TestGraphs.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/compiler/ExecutableCache.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include <gtest/gtest.h>

#include <filesystem>

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
  ExecutableCache::Outcome outcome;
  cache.getOrCompile(
      key, [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::Corrupt);
  EXPECT_EQ(compiles, 2);
  cache.getOrCompile(
      key, [&] { return compileCopy(compiles); }, &outcome);
  EXPECT_EQ(outcome, ExecutableCache::Outcome::Hit);
}

TEST(ExecutableCache, KeysAreStableAndDistinct) {
  EXPECT_EQ(ExecutableCache::keyOf("a"), ExecutableCache::keyOf("a"));
  EXPECT_NE(ExecutableCache::keyOf("a"), ExecutableCache::keyOf("b"));
  EXPECT_EQ(ExecutableCache::keyOf("a").size(), 16u);
}

TEST(ExecutableCache, UnwritableFolderSaysWhatToSet) {
  ExecutableCache cache("/proc/tessera-no-such-folder");
  int compiles = 0;
  try {
    cache.getOrCompile("k", [&] { return compileCopy(compiles); });
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("executableCachePath"),
              std::string::npos)
        << e.what();
  }
}
