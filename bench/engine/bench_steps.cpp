// bench_steps: the engine's cost per step of the flat program, where the
// interpreter itself is the work. A Repeat of a tiny body (an empty vertex
// on the first IPU, one on the last IPU, a Sync) runs 100,000 times, on one
// host thread, on a 1-IPU and a 2-IPU target. The 2-IPU engine also keeps
// the per-IPU timeline (Engine::getElapsedCycles); the peer of its figure is
// the 1-IPU engine measured in the same iterations.
#include "BenchCommon.hpp"

#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"

#include <memory>
#include <vector>

namespace {

using namespace tessera;
using tessera::bench::Clock;

constexpr unsigned kRepeats = 100000;
constexpr unsigned kStepsPerRepeat = 4; // compute, compute, sync, repeatEnd

constexpr const char *kCodelet = R"(
#include <tessera/Vertex.hpp>
using namespace tessera;
class EmptyStepVertex : public Vertex {
public:
  bool compute() { return true; }
};
)";

struct Loaded {
  Device device;
  std::unique_ptr<Engine> engine;
};

Loaded buildEngine(unsigned ipus) {
  Loaded l;
  IPUModel model("ipu2");
  model.numIPUs = ipus;
  l.device = model.createDevice();
  Graph graph(l.device.getTarget());
  graph.addCodeletSource(kCodelet, "bench_steps_empty");
  ComputeSet first = graph.addComputeSet("first");
  graph.setTileMapping(graph.addVertex(first, "EmptyStepVertex"), 0);
  ComputeSet last = graph.addComputeSet("last");
  graph.setTileMapping(graph.addVertex(last, "EmptyStepVertex"),
                       l.device.getTarget().getNumTiles() - 1);
  program::Sequence body{program::Execute(first), program::Execute(last),
                         program::Sync(program::SyncType::INTERNAL)};
  l.engine = std::make_unique<Engine>(graph, program::Repeat(kRepeats, body),
                                      OptionFlags{{"engine.hostThreads", "1"}});
  l.engine->load(l.device);
  return l;
}

void BM_StepDispatch(benchmark::State &state) {
  Loaded one = buildEngine(1), two = buildEngine(2);
  one.engine->run();
  two.engine->run();
  std::vector<double> oneNs, twoNs;
  const double steps = double(kRepeats) * kStepsPerRepeat;
  for (auto _ : state) {
    auto t0 = Clock::now();
    one.engine->run();
    const double a = tessera::bench::secondsSince(t0);
    t0 = Clock::now();
    two.engine->run();
    const double b = tessera::bench::secondsSince(t0);
    state.SetIterationTime(a);
    oneNs.push_back(a * 1e9 / steps);
    twoNs.push_back(b * 1e9 / steps);
  }
  const double x = tessera::bench::median(oneNs);
  const double y = tessera::bench::median(twoNs);
  state.counters["ns_per_step_1ipu"] = x;
  state.counters["ns_per_step_2ipu"] = y;
  state.counters["ratio_2ipu_vs_1ipu"] = y / x;
  using tessera::bench::fixed;
  tessera::bench::addResult("step_ns_1ipu",
                            fixed(x, 2) + " steps_per_run=" +
                                std::to_string(kRepeats * kStepsPerRepeat) +
                                " (informative)");
  tessera::bench::addResult("step_ns_2ipu",
                            fixed(y, 2) + " ratio_vs_1ipu=" + fixed(y / x, 2) +
                                " (informative)");
}

BENCHMARK(BM_StepDispatch)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

} // namespace

int main(int argc, char **argv) { return tessera::bench::runMain(argc, argv); }
