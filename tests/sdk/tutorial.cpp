// A Poplar program written as the SDK tutorials write them (C++11): a
// variable spread over four tiles, a custom vertex from a popc-compiled
// codelet, popops operations, an Engine run, the results checked.
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <popops/ElementWise.hpp>
#include <popops/Reduce.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace poplar;
using namespace poplar::program;

int main() {
  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Target target = device.getTarget();
  Graph graph(target);
  popops::addCodelets(graph);
  // Poplar's exception classes come with the headers that throw them.
  bool caught = false;
  try {
    graph.addCodelets("no-such-codelets.gp");
  } catch (const poplar::poplar_error &e) {
    caught = std::string(e.what()).find("no-such-codelets.gp") !=
             std::string::npos;
  }
  if (!caught) {
    std::cout << "FAILED: a missing codelet file is not a poplar_error\n";
    return 1;
  }
  graph.addCodelets("codelets.gp");

  const unsigned n = 16, tiles = 4;
  Tensor x = graph.addVariable(FLOAT, {n}, "x");
  Tensor y = graph.addVariable(FLOAT, {n}, "y");
  for (unsigned t = 0; t < tiles; ++t) {
    graph.setTileMapping(x.slice(t * n / tiles, (t + 1) * n / tiles), t);
    graph.setTileMapping(y.slice(t * n / tiles, (t + 1) * n / tiles), t);
  }
  graph.createHostWrite("x-write", x);
  graph.createHostWrite("y-write", y);
  graph.createHostRead("y-read", y);

  Sequence prog;
  ComputeSet cs = graph.addComputeSet("axpy");
  for (unsigned t = 0; t < tiles; ++t) {
    VertexRef v = graph.addVertex(cs, "AxpyVertex");
    graph.connect(v["x"], x.slice(t * n / tiles, (t + 1) * n / tiles));
    graph.connect(v["y"], y.slice(t * n / tiles, (t + 1) * n / tiles));
    graph.setInitialValue(v["a"], 2.0f);
    graph.setTileMapping(v, t);
  }
  prog.add(Execute(cs));
  // y = (2x + y) * x, then the sum of y.
  popops::mulInPlace(graph, y, x, prog, "mul");
  Tensor sum =
      popops::reduce(graph, y, FLOAT, {0}, popops::Operation::ADD, prog, "sum");
  graph.createHostRead("sum-read", sum);

  // Compiled once: run here, and saved for load.cpp, which runs it in a
  // process that never adds codelets.
  Executable exe = compileGraph(graph, {prog});
  {
    std::ofstream file("tutorial.exe", std::ios::binary);
    exe.serialize(file);
  }
  Engine engine(std::move(exe));
  engine.load(device);
  std::vector<float> hx(n), hy(n);
  for (unsigned i = 0; i < n; ++i) {
    hx[i] = static_cast<float>(i);
    hy[i] = 1.0f;
  }
  engine.writeTensor("x-write", hx.data(), hx.data() + n);
  engine.writeTensor("y-write", hy.data(), hy.data() + n);
  engine.run(0);
  std::vector<float> out(n);
  float total = 0;
  engine.readTensor("y-read", out.data(), out.data() + n);
  engine.readTensor("sum-read", &total, &total + 1);

  float expectTotal = 0;
  int failures = 0;
  for (unsigned i = 0; i < n; ++i) {
    float expect = (2 * hx[i] + hy[i]) * hx[i];
    expectTotal += expect;
    if (std::fabs(out[i] - expect) > 1e-4f) {
      std::cout << "y[" << i << "] = " << out[i] << ", expected " << expect
                << "\n";
      ++failures;
    }
  }
  if (std::fabs(total - expectTotal) > 1e-3f * expectTotal) {
    std::cout << "sum = " << total << ", expected " << expectTotal << "\n";
    ++failures;
  }
  std::cout << (failures ? "FAILED" : "PASSED") << ": sum = " << total << "\n";
  return failures ? 1 : 0;
}
