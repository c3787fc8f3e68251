// Poplar tutorial 1, "programs and variables", written against the Poplar
// names: variables and constants with a tile mapping, copies between them,
// views (slices, 2-D slices, a transpose, a reverse), PrintTensor, host
// writes and reads of a tensor, and host streams in both directions.
//
// Program 0 shows the graph objects; program 1 consumes a host-to-device
// FIFO ten elements per Copy from a 30-element circular host buffer and is
// run twice, so its fourth transfer wraps around to the buffer's start.

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poputil/TileMapping.hpp>

#include <numeric>

using namespace poplar;
using namespace poplar::program;

namespace {

void printValues(const char *title, const std::vector<float> &values) {
  std::cout << title << ":";
  for (float v : values)
    std::cout << " " << v;
  std::cout << "\n";
}

} // namespace

int main() {
  // The simulated IPU and a graph for it.
  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Target target = device.getTarget();
  Graph graph(target);

  // v1 and v2: four floats each, element i on tile i.
  Tensor v1 = graph.addVariable(FLOAT, {4}, "v1");
  Tensor v2 = graph.addVariable(FLOAT, {4}, "v2");
  for (unsigned i = 0; i < 4; ++i) {
    graph.setTileMapping(v1[i], i);
    graph.setTileMapping(v2[i], i);
  }

  // v3: a 4x4 matrix, row i on tile i, that the host writes and reads.
  Tensor v3 = graph.addVariable(FLOAT, {4, 4}, "v3");
  for (unsigned i = 0; i < 4; ++i)
    graph.setTileMapping(v3[i], i);
  graph.createHostWrite("v3-write", v3);
  graph.createHostRead("v3-read", v3);

  // v5: 100 floats spread linearly over the tiles, with initial values.
  Tensor v5 = graph.addVariable(FLOAT, {100}, "v5");
  poputil::mapTensorLinearly(graph, v5);
  std::vector<float> v5Init(100);
  std::iota(v5Init.begin(), v5Init.end(), 0.0f);
  graph.setInitialValue(v5, v5Init);
  std::cout << "v5 tile mapping:\n";
  const TileMapping v5Mapping = graph.getTileMapping(v5);
  for (unsigned tile = 0; tile < v5Mapping.size(); ++tile)
    for (const Interval &interval : v5Mapping[tile])
      std::cout << " tile " << tile << ": [" << interval.begin() << ", "
                << interval.end() << ")\n";

  // A constant on tile 0.
  Tensor c1 = graph.addConstant<float>(FLOAT, {4}, {1.0, 1.5, 2.0, 2.5});
  graph.setTileMapping(c1, 0);

  Sequence prog;
  prog.add(Copy(c1, v1));
  prog.add(PrintTensor("v1-debug", v1));
  prog.add(Copy(v1, v2));
  prog.add(PrintTensor("v2-debug", v2));
  prog.add(PrintTensor("v3-from-host", v3));
  // The first three elements of v1 into row 1, columns 1..3 of v3.
  prog.add(Copy(v1.slice(0, 3), v3.slice({1, 1}, {2, 4})));
  // v2 reversed into column 0 of v3 (row 0 of its transpose).
  prog.add(Copy(v2.reverse(0), v3.transpose()[0]));
  prog.add(PrintTensor("v3", v3));
  prog.add(PrintTensor("v3-transposed", v3.transpose()));
  prog.add(PrintTensor("v3-corner", v3.slice({2, 2}, {4, 4})));
  // Elements 30..33 of v5 lie on two tiles.
  prog.add(PrintTensor("v5-slice", v5.slice(30, 34)));

  // Streams: ten floats at a time in, ten floats (reversed) out.
  Tensor v4 = graph.addVariable(FLOAT, {10}, "v4");
  graph.setTileMapping(v4, 0);
  DataStream inStream = graph.addHostToDeviceFIFO("v4-input-stream", FLOAT, 10);
  DataStream outStream =
      graph.addDeviceToHostFIFO("v4-output-stream", FLOAT, 10);
  Sequence streamProg;
  streamProg.add(Copy(inStream, v4));
  streamProg.add(PrintTensor("v4-0", v4));
  streamProg.add(Copy(inStream, v4));
  streamProg.add(PrintTensor("v4-1", v4));
  streamProg.add(Copy(v4.reverse(0), outStream));

  Engine engine(graph, {prog, streamProg});
  engine.load(device);

  // The host writes 0..15 into v3 before the run and reads it back after.
  std::vector<float> h3(16);
  std::iota(h3.begin(), h3.end(), 0.0f);
  engine.writeTensor("v3-write", h3.data(), h3.data() + h3.size());
  engine.run(0);
  engine.readTensor("v3-read", h3.data(), h3.data() + h3.size());
  std::cout << "v3 read by the host:\n";
  for (unsigned row = 0; row < 4; ++row) {
    for (unsigned col = 0; col < 4; ++col)
      std::cout << " " << h3[row * 4 + col];
    std::cout << "\n";
  }

  // 30 floats 0..29 feed the input stream circularly; each run takes 20.
  std::vector<float> inData(30);
  std::iota(inData.begin(), inData.end(), 0.0f);
  engine.connectStream("v4-input-stream", inData.data(),
                       inData.data() + inData.size());
  std::vector<float> outData(10);
  engine.connectStream("v4-output-stream", outData.data(),
                       outData.data() + outData.size());
  for (unsigned run = 1; run <= 2; ++run) {
    std::cout << "stream program, run " << run << ":\n";
    engine.run(1);
    printValues("host received", outData);
  }
  return 0;
}
