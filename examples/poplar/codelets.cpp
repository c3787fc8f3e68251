// Poplar tutorial 3, "writing vertex code": a SumVertex codelet compiled
// from sum_codelet.cpp with addCodelets, four instances on four tiles, each
// summing a slice of v1 into one element of v2.

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>

// The build defines the folder of the codelet sources; run from that folder
// otherwise.
#ifndef EXAMPLE_CODELET_DIR
#define EXAMPLE_CODELET_DIR "."
#endif

using namespace poplar;
using namespace poplar::program;

int main() {
  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Target target = device.getTarget();
  Graph graph(target);

  // The vertex classes of the codelet file become known to the graph.
  graph.addCodelets(EXAMPLE_CODELET_DIR "/sum_codelet.cpp");

  Tensor v1 = graph.addVariable(FLOAT, {4}, "v1");
  Tensor v2 = graph.addVariable(FLOAT, {4}, "v2");
  for (unsigned i = 0; i < 4; ++i) {
    graph.setTileMapping(v1[i], i);
    graph.setTileMapping(v2[i], i);
  }
  graph.createHostRead("v2-read", v2);

  Sequence prog;
  Tensor c1 = graph.addConstant<float>(FLOAT, {4}, {1.0, 1.5, 2.0, 2.5});
  graph.setTileMapping(c1, 0);
  prog.add(Copy(c1, v1));
  prog.add(PrintTensor("v1", v1));

  // Vertex i on tile i sums v1[i..3] into v2[i]: the elements of v1 it
  // needs from other tiles arrive by exchange before the compute step.
  ComputeSet computeSet = graph.addComputeSet("computeSet");
  for (unsigned i = 0; i < 4; ++i) {
    VertexRef vtx = graph.addVertex(computeSet, "SumVertex");
    graph.connect(vtx["in"], v1.slice(i, 4));
    graph.connect(vtx["out"], v2[i]);
    graph.setTileMapping(vtx, i);
    graph.setPerfEstimate(vtx, 20);
  }
  prog.add(Execute(computeSet));
  prog.add(PrintTensor("v2", v2));

  Engine engine(graph, prog);
  engine.load(device);
  engine.run(0);

  std::vector<float> result(4);
  engine.readTensor("v2-read", result.data(), result.data() + result.size());
  std::cout << "v2 read by the host:";
  for (float v : result)
    std::cout << " " << v;
  std::cout << "\n";
  return 0;
}
