// A program over four IPUs of an IPU Model: data on IPU 0 is copied over
// the IPU-Links to IPUs 1..3, each IPU adds its own bias with a codelet,
// and the results are gathered back on IPU 0. The profile summary (on
// stderr) shows the exchanges that cross IPUs.

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>

#include <numeric>

#ifndef EXAMPLE_CODELET_DIR
#define EXAMPLE_CODELET_DIR "."
#endif

using namespace poplar;
using namespace poplar::program;

namespace {
constexpr unsigned numIPUs = 4;
constexpr unsigned numElements = 8;
} // namespace

int main() {
  IPUModel ipuModel;
  ipuModel.numIPUs = numIPUs;
  ipuModel.tilesPerIPU = 4;
  Device device = ipuModel.createDevice();
  Target target = device.getTarget();
  Graph graph(target);
  graph.addCodelets(EXAMPLE_CODELET_DIR "/multi_ipu_codelets.cpp");
  const unsigned tilesPerIPU = target.getTilesPerIPU();
  std::cout << target.getNumIPUs() << " IPUs x " << tilesPerIPU
            << " tiles = " << target.getNumTiles() << " tiles\n";

  // The input on tile 0 (IPU 0); the gathered results on IPU 0's tiles.
  Tensor data = graph.addVariable(FLOAT, {numElements}, "data");
  graph.setTileMapping(data, 0);
  Tensor gathered =
      graph.addVariable(FLOAT, {numIPUs - 1, numElements}, "gathered");

  Sequence prog;
  DataStream in = graph.addHostToDeviceFIFO("data-in", FLOAT, numElements);
  prog.add(Copy(in, data));

  // On the first tile of IPU k: a copy of the data, a bias of 10 k and the
  // vertex adding them.
  ComputeSet add = graph.addComputeSet("add bias");
  std::vector<Tensor> results;
  for (unsigned ipu = 1; ipu < numIPUs; ++ipu) {
    const unsigned tile = ipu * tilesPerIPU;
    const std::string name = "ipu" + std::to_string(ipu);
    Tensor copy = graph.addVariable(FLOAT, {numElements}, name + "-copy");
    Tensor bias = graph.addConstant<float>(FLOAT, {numElements}, 10.0f * ipu,
                                           name + "-bias");
    Tensor result = graph.addVariable(FLOAT, {numElements}, name + "-result");
    graph.setTileMapping(copy, tile);
    graph.setTileMapping(bias, tile);
    graph.setTileMapping(result, tile);
    graph.setTileMapping(gathered[ipu - 1], ipu - 1);
    VertexRef v = graph.addVertex(
        add, "AddVertex", {{"in", copy}, {"bias", bias}, {"out", result}});
    graph.setTileMapping(v, tile);
    graph.setPerfEstimate(v, 10 + 3 * numElements);
    prog.add(Copy(data, copy, false, "data to " + name));
    results.push_back(result);
  }
  prog.add(Execute(add));
  for (unsigned ipu = 1; ipu < numIPUs; ++ipu)
    prog.add(Copy(results[ipu - 1], gathered[ipu - 1], false,
                  "ipu" + std::to_string(ipu) + " result to ipu0"));
  prog.add(PrintTensor("gathered", gathered));
  DataStream out = graph.addDeviceToHostFIFO("gathered-out", FLOAT,
                                             (numIPUs - 1) * numElements);
  prog.add(Copy(gathered, out));

  Engine engine(graph, prog);
  engine.load(device);
  std::vector<float> input(numElements);
  std::iota(input.begin(), input.end(), 1.0f);
  std::vector<float> output((numIPUs - 1) * numElements);
  engine.connectStream("data-in", input.data());
  engine.connectStream("gathered-out", output.data());
  engine.run(0);

  for (unsigned ipu = 1; ipu < numIPUs; ++ipu) {
    std::cout << "IPU " << ipu << " added " << 10 * ipu << ":";
    for (unsigned i = 0; i < numElements; ++i)
      std::cout << " " << output[(ipu - 1) * numElements + i];
    std::cout << "\n";
  }
  engine.printProfileSummary(std::cerr);
  return 0;
}
