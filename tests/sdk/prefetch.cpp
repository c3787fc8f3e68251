// A stream callback with prefetch, as Poplar programs write one (C++11,
// codelet in the same file through addCodelets(__FILE__)): each run copies
// three values in, increments them and copies them out. The engine must
// fetch the first transfer of a run, prefetch each later one, complete
// every transfer it used, and hand back (invalidatePrefetched) the one it
// prefetched past the end of the run, so the next run starts there. Then
// a replicated graph: a REPLICATE stream's callback feeds each replica, a
// BROADCAST stream's feeds them all at once.
#ifdef __POPC__
#include <poplar/Vertex.hpp>

using namespace poplar;

class Increment : public Vertex {
public:
  Input<Vector<float>> x;
  Output<Vector<float>> y;

  bool compute() {
    if (x->size() != y->size())
      return false;
    for (unsigned i = 0; i < x->size(); ++i)
      y[i] = x[i] + 1;
    return true;
  }
};
#else
#include <poplar/Engine.hpp>
#include <poplar/IPUModel.hpp>
#include <poplar/StreamCallback.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

using namespace poplar;
using namespace poplar::program;

namespace {

// Hands out 0, 1, 2, ... and logs each call: F<n> fetch, P<n> prefetch,
// C complete, I invalidatePrefetched (which rewinds to the first value
// not completed).
class Counter : public StreamCallback {
public:
  Counter(std::string &log, bool canPrefetch)
      : log_(log), canPrefetch_(canPrefetch) {}
  Result prefetch(void *p) noexcept override {
    if (!canPrefetch_)
      return Result::NotAvailable;
    log_ += "P" + std::to_string(issued_) + " ";
    *static_cast<float *>(p) = static_cast<float>(issued_++);
    return Result::Success;
  }
  void fetch(void *p) noexcept override {
    log_ += "F" + std::to_string(issued_) + " ";
    *static_cast<float *>(p) = static_cast<float>(issued_++);
  }
  void complete() noexcept override {
    log_ += "C ";
    ++completed_;
  }
  void invalidatePrefetched() noexcept override {
    log_ += "I ";
    issued_ = completed_;
  }

private:
  std::string &log_;
  bool canPrefetch_;
  unsigned issued_ = 0, completed_ = 0;
};

int failures = 0;

// Runs the program twice with the given option and callback; checks the
// values that came out and the calls the callback saw.
void runTwice(const Graph &graph, const Program &prog, Device &device,
              const OptionFlags &options, bool canPrefetch,
              const std::string &expectLog) {
  Engine engine(graph, prog, options);
  engine.load(device);
  std::string log;
  std::unique_ptr<Counter> callback(new Counter(log, canPrefetch));
  engine.connectStreamToCallback("in", std::move(callback));
  std::vector<float> out(6);
  engine.connectStream("out", out.data(), out.data() + out.size());
  engine.run(0);
  log += "| ";
  engine.run(0);
  for (unsigned i = 0; i < out.size(); ++i)
    if (out[i] != static_cast<float>(i + 1)) {
      std::cout << "FAILED: output " << i << " is " << out[i] << ", expected "
                << i + 1 << "\n";
      ++failures;
    }
  if (log != expectLog) {
    std::cout << "FAILED: callback calls\n  " << log << "\nexpected\n  "
              << expectLog << "\n";
    ++failures;
  }
}

// Two replicas read one REPLICATE and one BROADCAST stream through a
// callback each, and send what they read back to the host.
void replicatedStreams() {
  IPUModel ipuModel;
  ipuModel.numIPUs = 2;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget(), replication_factor(2));
  Tensor t = graph.addVariable(FLOAT, {2}, "t");
  graph.setTileMapping(t, 0);
  DataStream own = graph.addHostToDeviceFIFO("own", FLOAT, 1,
                                             ReplicatedStreamMode::REPLICATE);
  DataStream all = graph.addHostToDeviceFIFO("all", FLOAT, 1,
                                             ReplicatedStreamMode::BROADCAST);
  DataStream out = graph.addDeviceToHostFIFO("out", FLOAT, 2);
  Sequence prog({Copy(own, t[0].reshape({1})), Copy(all, t[1].reshape({1})),
                 Copy(t, out)});
  Engine engine(graph, prog);
  engine.load(device);
  std::string ownLog, allLog;
  std::unique_ptr<StreamCallback> ownCallback(new Counter(ownLog, false));
  std::unique_ptr<StreamCallback> allCallback(new Counter(allLog, false));
  engine.connectStreamToCallback(own, std::move(ownCallback));
  engine.connectStreamToCallback(all, std::move(allCallback));
  float out0[2] = {-1, -1}, out1[2] = {-1, -1};
  engine.connectStream(out, 0, out0, out0 + 2);
  engine.connectStream(out, 1, out1, out1 + 2);
  engine.run(0);
  // Each replica takes its own value of "own"; "all" is fetched once.
  if (ownLog != "F0 C F1 C " || allLog != "F0 C " || out0[0] != 0 ||
      out1[0] != 1 || out0[1] != 0 || out1[1] != 0) {
    std::cout << "FAILED: replicated streams: own " << ownLog << "/ all "
              << allLog << "/ replica 0 read " << out0[0] << ", " << out0[1]
              << ", replica 1 read " << out1[0] << ", " << out1[1] << "\n";
    ++failures;
  }
  try {
    float v = 0;
    engine.connectStream(all, 1, &v, &v + 1);
    std::cout << "FAILED: a BROADCAST stream connected for one replica\n";
    ++failures;
  } catch (const poplar::stream_connection_error &) {
  }
}

} // namespace

int main() {
  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  graph.addCodelets(__FILE__);
  Tensor t = graph.addVariable(FLOAT, {1}, "t");
  graph.setTileMapping(t, 0);
  ComputeSet cs = graph.addComputeSet("increment");
  VertexRef v = graph.addVertex(cs, "Increment");
  graph.connect(v["x"], t);
  graph.connect(v["y"], t);
  graph.setTileMapping(v, 0);
  DataStream in = graph.addHostToDeviceFIFO("in", FLOAT, 1);
  DataStream out = graph.addDeviceToHostFIFO("out", FLOAT, 1);
  Repeat prog(3, Sequence({Copy(in, t), Execute(cs), Copy(t, out)}));

  runTwice(graph, prog, device, OptionFlags(), true,
           "F0 C P1 C P2 C P3 I | F3 C P4 C P5 C P6 I ");
  runTwice(graph, prog, device, OptionFlags(), false,
           "F0 C F1 C F2 C | F3 C F4 C F5 C ");
  runTwice(graph, prog, device,
           OptionFlags{{"exchange.enablePrefetch", "false"}}, true,
           "F0 C F1 C F2 C | F3 C F4 C F5 C ");
  replicatedStreams();
  std::cout << (failures ? "FAILED" : "PASSED") << ": prefetch\n";
  return failures ? 1 : 0;
}
#endif
