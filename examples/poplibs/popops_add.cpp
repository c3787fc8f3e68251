// PopLibs elementwise ops on views, in the shape of the workshop's second
// Poplar tutorial: popops::add of a tensor, of its transpose, and of a
// flattened slice, each printed.
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <popops/ElementWise.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>

using namespace poplar;
using namespace poplar::program;

int main() {
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 4;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  popops::addCodelets(graph);

  Tensor v1 = graph.addVariable(FLOAT, {2, 2}, "v1");
  Tensor v2 = graph.addVariable(FLOAT, {2, 2}, "v2");
  graph.setTileMapping(v1, 0);
  graph.setTileMapping(v2, 1);
  graph.setInitialValue(v1, std::vector<float>{1, 2, 3, 4});
  graph.setInitialValue(v2, std::vector<float>{10, 20, 30, 40});

  Sequence prog;
  Tensor v3 = popops::add(graph, v1, v2, prog, "Add");
  prog.add(PrintTensor("v3", v3));
  Tensor v4 = popops::add(graph, v3, v2.transpose(), prog, "AddTransposed");
  prog.add(PrintTensor("v4", v4));
  Tensor v5 = popops::add(graph, v1[0], v2.flatten().slice(0, 2), prog,
                          "AddFlattened");
  prog.add(PrintTensor("v5", v5));

  Engine engine(graph, prog);
  engine.load(device);
  engine.run(0);
  return 0;
}
