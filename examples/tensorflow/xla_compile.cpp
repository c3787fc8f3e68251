// The tutorial's graph compiled ahead of running it (tutorial_xla_compile.py:
// ipu_compiler.compile(basic_graph, [pa, pb, pc])): the whole graph becomes
// one executable with static shapes, compiled once and then run for as many
// feed dictionaries as wanted. Compiled executables go to an executable
// cache, so a second session of the same graph loads instead of compiling.
//
// Prints whether each session compiled or loaded, then the result of three
// runs of the loaded executable, the first with the tutorial's values:
// [array([3., 8.], dtype=float32)]
#include "FeedDict.hpp"
#include "NumpyFormat.hpp"

#include "tessera/ir/Builder.hpp"

#include <filesystem>
#include <iostream>

#include <unistd.h>

using namespace tessera;
using data::HostTensor;

namespace {

ir::Module basicGraphModule() {
  ir::Module module("basic_graph");
  ir::Builder b(module);
  ir::Value pa = b.input("a", FLOAT, {2});
  ir::Value pb = b.input("b", FLOAT, {2});
  ir::Value pc = b.input("c", FLOAT, {2});
  ir::Value o1 = pa + pb;
  ir::Value o2 = pa + pc;
  b.output("result", o1 + o2);
  return module;
}

const session::RunSpec kSpec{.feeds = {"a", "b", "c"}, .outfeeds = {"result"}};

HostTensor vec(float x, float y) {
  return HostTensor::fromValues<float>({2}, {x, y});
}

} // namespace

int main() {
  // A private cache, so the first compile is always a miss and the output
  // is the same on every run of the example.
  const std::filesystem::path cacheDir =
      std::filesystem::temp_directory_path() /
      ("tessera-xla-compile-" + std::to_string(::getpid()));
  std::filesystem::remove_all(cacheDir);
  session::Config cfg;
  cfg.executableCachePath = cacheDir.string();

  {
    session::Session first(basicGraphModule(), cfg, kSpec);
    const bool hit = first.compile();
    std::cout << "first session: " << (hit ? "loaded" : "compiled")
              << " basic_graph (executable cache " << (hit ? "hit" : "miss")
              << ")\n";
  }
  session::Session sess(basicGraphModule(), cfg, kSpec);
  const bool hit = sess.compile();
  std::cout << "second session: " << (hit ? "loaded" : "compiled")
            << " basic_graph (executable cache " << (hit ? "hit" : "miss")
            << ")\n";

  // The same executable, three feed dictionaries.
  const std::vector<std::vector<HostTensor>> feedDicts = {
      {vec(1, 1), vec(0, 1), vec(1, 5)},
      {vec(2, 3), vec(4, 5), vec(6, 7)},
      {vec(0.5f, -1), vec(0.25f, 2), vec(1, 0.5f)}};
  for (const auto &feeds : feedDicts) {
    const std::vector<HostTensor> result =
        examples::runWithFeeds(sess, feeds, kSpec.outfeeds);
    std::cout << '['
              << examples::numpyRepr(result[0].values<float>(),
                                     result[0].shape())
              << "]\n";
  }
  std::filesystem::remove_all(cacheDir);
  return 0;
}
