// Compiling once and running elsewhere: "save FILE" builds a graph with two
// programs (row sums and column sums of a 4x5 matrix, using the SumVertex
// codelet), compiles it with compileGraph, writes the executable to FILE and
// runs it; "load FILE", in a new process, reads the executable back, builds
// an Engine from it without any graph and runs it. Both print the same.

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>

#include <fstream>
#include <numeric>

#ifndef EXAMPLE_CODELET_DIR
#define EXAMPLE_CODELET_DIR "."
#endif

using namespace poplar;
using namespace poplar::program;

namespace {

constexpr unsigned numRows = 4;
constexpr unsigned numCols = 5;

/// The same small IPU in both modes: a loaded executable needs a device of
/// the size it was compiled for.
Device createDevice() {
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 8;
  return ipuModel.createDevice();
}

Executable buildAndCompile(const Target &target) {
  Graph graph(target);
  graph.addCodelets(EXAMPLE_CODELET_DIR "/sum_codelet.cpp");

  Tensor m = graph.addVariable(FLOAT, {numRows, numCols}, "m");
  Tensor rowSums = graph.addVariable(FLOAT, {numRows}, "rowSums");
  Tensor colSums = graph.addVariable(FLOAT, {numCols}, "colSums");
  for (unsigned i = 0; i < numRows; ++i) {
    graph.setTileMapping(m[i], i);
    graph.setTileMapping(rowSums[i], i);
  }
  for (unsigned j = 0; j < numCols; ++j)
    graph.setTileMapping(colSums[j], j);

  ComputeSet rowCs = graph.addComputeSet("rowSums");
  for (unsigned i = 0; i < numRows; ++i) {
    VertexRef v = graph.addVertex(rowCs, "SumVertex",
                                  {{"in", m[i]}, {"out", rowSums[i]}});
    graph.setTileMapping(v, i);
    graph.setPerfEstimate(v, 20);
  }
  // Column j gathers one element from each row's tile.
  ComputeSet colCs = graph.addComputeSet("colSums");
  for (unsigned j = 0; j < numCols; ++j) {
    VertexRef v = graph.addVertex(
        colCs, "SumVertex", {{"in", m.transpose()[j]}, {"out", colSums[j]}});
    graph.setTileMapping(v, j);
    graph.setPerfEstimate(v, 20);
  }

  DataStream in = graph.addHostToDeviceFIFO("m-in", FLOAT, numRows * numCols);
  DataStream out = graph.addDeviceToHostFIFO("rowSums-out", FLOAT, numRows);
  Sequence rowProg({Copy(in, m), Execute(rowCs),
                    PrintTensor("rowSums", rowSums), Copy(rowSums, out)});
  Sequence colProg({Execute(colCs), PrintTensor("colSums", colSums)});
  return compileGraph(graph, {rowProg, colProg});
}

void run(Engine &engine, Device &device) {
  engine.load(device);
  std::vector<float> input(numRows * numCols);
  std::iota(input.begin(), input.end(), 0.0f);
  std::vector<float> output(numRows);
  engine.connectStream("m-in", input.data());
  engine.connectStream("rowSums-out", output.data());
  engine.run(0);
  std::cout << "row sums received by the host:";
  for (float v : output)
    std::cout << " " << v;
  std::cout << "\n";
  engine.run(1);
}

int usage(const char *argv0) {
  std::cerr << "usage: " << argv0 << " save FILE | load FILE\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3)
    return usage(argv[0]);
  const std::string mode = argv[1], path = argv[2];
  Device device = createDevice();
  if (mode == "save") {
    Executable exe = buildAndCompile(device.getTarget());
    std::ofstream file(path, std::ios::binary);
    exe.serialize(file);
    file.close();
    if (!file) {
      std::cerr << "cannot write " << path << "\n";
      return 1;
    }
    std::cerr << "saved the executable to " << path << "\n";
    Engine engine(std::move(exe));
    run(engine, device);
  } else if (mode == "load") {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      std::cerr << "cannot read " << path << "\n";
      return 1;
    }
    Engine engine(Executable::deserialize(file));
    std::cerr << "loaded the executable from " << path << "\n";
    run(engine, device);
  } else {
    return usage(argv[0]);
  }
  return 0;
}
