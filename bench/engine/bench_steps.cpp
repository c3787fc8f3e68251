// bench_steps: the engine's cost per step of the flat program, where the
// interpreter itself is the work. A Repeat of a tiny body (an empty vertex
// on the first IPU, one on the last IPU, a Sync) runs 100,000 times, on one
// host thread, on a 1-IPU and a 2-IPU target. The 2-IPU engine also keeps
// the per-IPU clocks (Timeline, Engine::getElapsedCycles); the peer of its
// figure is the 1-IPU engine's.
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

// ns per step of each target, in the order run: the 2-IPU figure's peer is
// the 1-IPU one. Each engine runs on its own (not alternating with the
// other), as one program's engine does.
double &nsPerStep(unsigned ipus) {
  static double ns[3] = {0, 0, 0};
  return ns[ipus];
}

void BM_StepDispatch(benchmark::State &state) {
  const auto ipus = static_cast<unsigned>(state.range(0));
  Loaded l = buildEngine(ipus);
  l.engine->run();
  std::vector<double> ns;
  const double steps = double(kRepeats) * kStepsPerRepeat;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    l.engine->run();
    const double t = tessera::bench::secondsSince(t0);
    state.SetIterationTime(t);
    ns.push_back(t * 1e9 / steps);
  }
  const double x = tessera::bench::median(ns);
  nsPerStep(ipus) = x;
  state.counters["ns_per_step"] = x;
  using tessera::bench::fixed;
  std::string text = fixed(x, 2) + " steps_per_run=" +
                     std::to_string(kRepeats * kStepsPerRepeat);
  if (ipus == 2 && nsPerStep(1) > 0)
    text += " ratio_vs_1ipu=" + fixed(x / nsPerStep(1), 2);
  tessera::bench::addResult("step_ns_" + std::to_string(ipus) + "ipu",
                            text + " (informative)");
}

BENCHMARK(BM_StepDispatch)
    ->ArgName("ipus")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

} // namespace

int main(int argc, char **argv) { return tessera::bench::runMain(argc, argv); }
