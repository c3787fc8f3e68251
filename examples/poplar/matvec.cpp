// Poplar tutorial 6, "matrix-vector multiplication": y = A x with one
// DotProductVertex per row of A, the rows spread over tiles explicitly and
// x spread with mapTensorLinearly (so every vertex receives x by exchange).
// The host computes the same product with the same float operations (one
// fused multiply-add per element, in index order); the two must agree
// exactly.

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poputil/TileMapping.hpp>

#include <cstdint>

#ifndef EXAMPLE_CODELET_DIR
#define EXAMPLE_CODELET_DIR "."
#endif

using namespace poplar;
using namespace poplar::program;

namespace {

constexpr unsigned numRows = 40;
constexpr unsigned numCols = 50;

/// Values in [-1, 1) on a 2^-23 grid from a linear congruential generator,
/// so the data is the same on every machine.
class Values {
public:
  float next() {
    state_ = state_ * 1664525u + 1013904223u;
    return static_cast<float>(state_ >> 8) / 16777216.0f * 2.0f - 1.0f;
  }

private:
  std::uint32_t state_ = 12345;
};

} // namespace

int main() {
  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Target target = device.getTarget();
  Graph graph(target);
  graph.addCodelets(EXAMPLE_CODELET_DIR "/matvec_codelets.cpp");

  Tensor matrix = graph.addVariable(FLOAT, {numRows, numCols}, "matrix");
  Tensor x = graph.addVariable(FLOAT, {numCols}, "x");
  Tensor y = graph.addVariable(FLOAT, {numRows}, "y");
  poputil::mapTensorLinearly(graph, x);

  // Row i of the matrix, element i of y and the vertex computing it share
  // tile i + 1 (tile 0 holds the start of x).
  ComputeSet cs = graph.addComputeSet("matvec");
  for (unsigned i = 0; i < numRows; ++i) {
    const unsigned tile = i + 1;
    graph.setTileMapping(matrix[i], tile);
    graph.setTileMapping(y[i], tile);
    VertexRef v = graph.addVertex(
        cs, "DotProductVertex", {{"row", matrix[i]}, {"x", x}, {"out", y[i]}});
    graph.setTileMapping(v, tile);
    graph.setPerfEstimate(v, 10 + 2 * numCols);
  }

  DataStream matrixIn =
      graph.addHostToDeviceFIFO("matrix-in", FLOAT, numRows * numCols);
  DataStream xIn = graph.addHostToDeviceFIFO("x-in", FLOAT, numCols);
  DataStream yOut = graph.addDeviceToHostFIFO("y-out", FLOAT, numRows);
  Sequence prog(
      {Copy(matrixIn, matrix), Copy(xIn, x), Execute(cs), Copy(y, yOut)});

  Values values;
  std::vector<float> hostMatrix(numRows * numCols), hostX(numCols);
  for (float &v : hostMatrix)
    v = values.next();
  for (float &v : hostX)
    v = values.next();
  std::vector<float> deviceY(numRows);

  Engine engine(graph, prog);
  engine.load(device);
  engine.connectStream("matrix-in", hostMatrix.data());
  engine.connectStream("x-in", hostX.data());
  engine.connectStream("y-out", deviceY.data());
  engine.run(0);

  std::vector<float> hostY(numRows);
  for (unsigned i = 0; i < numRows; ++i) {
    float sum = 0;
    for (unsigned j = 0; j < numCols; ++j)
      sum = std::fma(hostMatrix[i * numCols + j], hostX[j], sum);
    hostY[i] = sum;
  }

  std::printf("y = A x, A %u x %u, one vertex per row on tiles 1..%u:\n",
              numRows, numCols, numRows);
  for (unsigned i = 0; i < numRows; ++i)
    std::printf(" %.9g%s", deviceY[i], i % 5 == 4 ? "\n" : "");
  bool equal = true;
  float maxDiff = 0;
  for (unsigned i = 0; i < numRows; ++i) {
    equal = equal && deviceY[i] == hostY[i];
    maxDiff = std::fmax(maxDiff, std::fabs(deviceY[i] - hostY[i]));
  }
  std::printf("device and host results exactly equal: %s\n",
              equal ? "yes" : "no");
  std::printf("max abs diff: %g\n", maxDiff);
  return equal ? 0 : 1;
}
