/// \file
/// The two-IPU program the tools tests profile, precompile and report on:
/// IPU 0 scales its input, the result crosses to IPU 1 over the IPU-Links,
/// IPU 1 adds one and sums a slice per tile; the middle part repeats.
#pragma once

#include "tessera/device/Target.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"

#include <numeric>
#include <string>
#include <vector>

#ifndef TESSERA_TEST_SOURCE_DIR
#error "TESSERA_TEST_SOURCE_DIR must name the tests folder"
#endif

namespace tessera::testing {

/// Elements each tile of the program holds.
inline constexpr unsigned kElementsPerTile = 8;
/// How often the middle of the program repeats.
inline constexpr unsigned kRepeats = 2;

/// Builds the program on \p graph, whose target has 2 IPUs. Streams: "in"
/// (tilesPerIPU x kElementsPerTile floats) and "sums" (tilesPerIPU floats).
inline program::Program buildTwoIpuProgram(Graph &graph) {
  using namespace program;
  const unsigned tiles = graph.getTarget().getTilesPerIPU();
  const unsigned n = tiles * kElementsPerTile;
  graph.addCodelets(std::string(TESSERA_TEST_SOURCE_DIR) +
                    "/engine/codelets/TestVertices.cpp");
  Tensor x = graph.addVariable(FLOAT, {n}, "layer1/input");
  Tensor scaled = graph.addVariable(FLOAT, {n}, "layer1/scaled");
  Tensor y = graph.addVariable(FLOAT, {n}, "layer2/input");
  Tensor sums = graph.addVariable(FLOAT, {tiles}, "layer2/sums");
  ComputeSet scale = graph.addComputeSet("layer1/scale");
  ComputeSet addOne = graph.addComputeSet("layer2/addOne");
  ComputeSet sum = graph.addComputeSet("layer2/sum");
  for (unsigned t = 0; t < tiles; ++t) {
    const unsigned lo = t * kElementsPerTile, hi = lo + kElementsPerTile;
    graph.setTileMapping(x.slice(lo, hi), t);
    graph.setTileMapping(scaled.slice(lo, hi), t);
    graph.setTileMapping(y.slice(lo, hi), tiles + t);
    graph.setTileMapping(sums[t], tiles + t);
    VertexRef s = graph.addVertex(
        scale, "ScaleVertex",
        {{"in", x.slice(lo, hi)}, {"out", scaled.slice(lo, hi)}});
    graph.setInitialValue(s["scale"], 2.0f);
    graph.setTileMapping(s, t);
    VertexRef a =
        graph.addVertex(addOne, "AddOneVertex", {{"x", y.slice(lo, hi)}});
    graph.setTileMapping(a, tiles + t);
    VertexRef u = graph.addVertex(sum, "SumVertex",
                                  {{"in", y.slice(lo, hi)}, {"out", sums[t]}});
    graph.setTileMapping(u, tiles + t);
  }
  DataStream in = graph.addHostToDeviceFIFO("in", FLOAT, n);
  DataStream out = graph.addDeviceToHostFIFO("sums", FLOAT, tiles);
  Sequence body{Execute(scale), Copy(scaled, y, false, "layer1/toIpu1"),
                Execute(addOne), Sync(SyncType::GLOBAL, "layer2/sync"),
                Execute(sum)};
  return Sequence{Copy(in, x, false, "load input"), Repeat(kRepeats, body),
                  Copy(sums, out, false, "store sums")};
}

/// The input the tests feed: 0, 1, 2, ...
inline std::vector<float> twoIpuInput(unsigned tilesPerIPU) {
  std::vector<float> input(tilesPerIPU * kElementsPerTile);
  std::iota(input.begin(), input.end(), 0.0f);
  return input;
}

/// What "sums" must hold: per tile, the sum of 2 x + 1 over its slice.
inline std::vector<float> twoIpuExpectedSums(unsigned tilesPerIPU) {
  const std::vector<float> input = twoIpuInput(tilesPerIPU);
  std::vector<float> sums(tilesPerIPU, 0.0f);
  for (unsigned i = 0; i < input.size(); ++i)
    sums[i / kElementsPerTile] += 2.0f * input[i] + 1.0f;
  return sums;
}

/// Connects the streams, runs program 0 once and returns "sums".
inline std::vector<float> runTwoIpuProgram(Engine &engine,
                                           unsigned tilesPerIPU) {
  std::vector<float> input = twoIpuInput(tilesPerIPU);
  std::vector<float> sums(tilesPerIPU, -1.0f);
  engine.connectStream("in", input.data());
  engine.connectStream("sums", sums.data());
  engine.run(0);
  return sums;
}

} // namespace tessera::testing
