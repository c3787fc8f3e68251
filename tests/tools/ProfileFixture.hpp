/// \file
/// A profile written by a real run of the two-IPU program (TwoIpuProgram.hpp)
/// on a 2 x 8-tile IPU Model, made once per test binary.
#pragma once

#include "tools/ToolsTestPaths.hpp"
#include "tools/TwoIpuProgram.hpp"

#include "tessera/device/IPUModel.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>

namespace tessera::testing {

inline constexpr unsigned kFixtureTiles = 8;

struct TwoIpuProfile {
  TempDir dir{"profile"};
  /// Engine::getCycleCounts after the run, per IPU.
  std::vector<std::uint64_t> engineCycles;
  /// Engine::getElapsedCycles after the run.
  std::uint64_t engineElapsed = 0;
  std::vector<float> sums;
  nlohmann::json profile;
};

/// Runs the program with autoReport.all into a fresh folder (once).
inline const TwoIpuProfile &twoIpuProfile() {
  static std::unique_ptr<TwoIpuProfile> made = [] {
    auto p = std::make_unique<TwoIpuProfile>();
    IPUModel model;
    model.numIPUs = 2;
    model.tilesPerIPU = kFixtureTiles;
    Device device = model.createDevice();
    Graph graph(device.getTarget());
    program::Program prog = buildTwoIpuProgram(graph);
    {
      // The execution profile is written when the engine goes away.
      Engine engine(graph, prog,
                    {{"autoReport.all", "true"},
                     {"autoReport.directory", p->dir.path()}});
      engine.load(device);
      p->sums = runTwoIpuProgram(engine, kFixtureTiles);
      p->engineCycles = engine.getCycleCounts();
      p->engineElapsed = engine.getElapsedCycles();
    }
    std::ifstream in(p->dir.path() + "/profile.json");
    p->profile = nlohmann::json::parse(in);
    return p;
  }();
  return *made;
}

} // namespace tessera::testing
