// A poplin matrix product and its profile, in the shape of the workshop's
// fourth Poplar tutorial: the product of a 40x50 matrix and a 50-vector on
// a 16-tile IPU Model, the result checked on the host, then the summary of
// memory and estimated cycles (printed to stderr).
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplin/MatMul.hpp>
#include <poplin/codelets.hpp>
#include <popops/codelets.hpp>

#include <cmath>

using namespace poplar;
using namespace poplar::program;

int main() {
  const unsigned rows = 40, cols = 50;
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 16;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  popops::addCodelets(graph);
  poplin::addCodelets(graph);

  Tensor matrix = poplin::createMatMulInputLHS(graph, FLOAT, {rows, cols},
                                               {cols, 1}, "matrix");
  Tensor vec = poplin::createMatMulInputRHS(graph, FLOAT, {rows, cols},
                                            {cols, 1}, "vector");
  graph.createHostWrite("matrix", matrix);
  graph.createHostWrite("vector", vec);
  Sequence prog;
  Tensor out = poplin::matMul(graph, matrix, vec, prog, "matVec");
  graph.createHostRead("out", out);

  Engine engine(graph, prog);
  engine.load(device);
  std::vector<float> m(rows * cols), v(cols), result(rows);
  for (unsigned i = 0; i < rows * cols; ++i)
    m[i] = static_cast<float>(i % 7) - 3.0f;
  for (unsigned j = 0; j < cols; ++j)
    v[j] = static_cast<float>(j % 5) * 0.5f;
  engine.writeTensor("matrix", m.data(), m.data() + m.size());
  engine.writeTensor("vector", v.data(), v.data() + v.size());
  engine.run(0);
  engine.readTensor("out", result.data(), result.data() + rows);

  double maxDiff = 0;
  for (unsigned i = 0; i < rows; ++i) {
    double want = 0;
    for (unsigned j = 0; j < cols; ++j)
      want += double(m[i * cols + j]) * v[j];
    maxDiff = std::max(maxDiff, std::fabs(want - result[i]));
  }
  std::printf("out[0..3] = %.1f %.1f %.1f %.1f\n", result[0], result[1],
              result[2], result[3]);
  std::printf("max difference from the host: %g\n", maxDiff);
  engine.printProfileSummary(std::cerr, {{"showVarStorage", "true"}});
  return maxDiff < 1e-3 ? 0 : 1;
}
