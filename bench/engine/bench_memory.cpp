// bench_memory: host memory of a loaded engine against the simulated tile
// memory it models. The graph uses about 200 MB of ipu2 tile memory: seven
// always-live variables of 4096 floats a tile over all 1472 tiles, and four
// temporaries of the same size whose lifetimes do not overlap (so the
// compiler lays them over the same bytes), plus a compute set of four small
// vertices a tile (vertex objects and field tables). The target: the process's
// resident memory grows by <= 1.2 x the simulated bytes + 50 MiB from before
// load to after every variable has been written and the program has run
// (calloc'd pages are only resident once touched, so growth across load alone
// is reported too but is not the honest figure). Engine::getHostMemoryBytes()
// is reported beside it, and so is the stricter growth from before the
// Engine is constructed (compile, executable, load, run).
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
using tessera::bench::fixed;

constexpr std::size_t kFloatsPerTile = 4096;
constexpr unsigned kAlwaysLive = 7;
constexpr unsigned kTemporaries = 4;
constexpr unsigned kVerticesPerTile = 4;
constexpr double kTargetFactor = 1.2;
constexpr double kTargetSlackBytes = 50.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024.0;

constexpr const char *kCodelet = R"(
#include <tessera/Vertex.hpp>
using namespace tessera;
class Scale : public Vertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float>> out;
  bool compute() {
    for (unsigned i = 0; i < out.size(); ++i)
      out[i] = 0.5f * in[i];
    return true;
  }
};
)";

// Adds a compute set whose vertices each scale a quarter of \p in's
// elements on one tile into \p out (mapped the same way).
program::Execute addScaleSet(Graph &graph, const Tensor &in,
                             const Tensor &out) {
  graph.addCodeletSource(kCodelet, "bench_memory_scale");
  ComputeSet cs = graph.addComputeSet("scale");
  const TileMapping map = graph.getTileMapping(in);
  for (unsigned t = 0; t < map.size(); ++t)
    for (const Interval &iv : map[t])
      for (unsigned k = 0; k < kVerticesPerTile; ++k) {
        const std::size_t b = iv.begin() + iv.size() * k / kVerticesPerTile;
        const std::size_t e =
            iv.begin() + iv.size() * (k + 1) / kVerticesPerTile;
        VertexRef v = graph.addVertex(
            cs, "Scale", {{"in", in.slice(b, e)}, {"out", out.slice(b, e)}});
        graph.setTileMapping(v, t);
      }
  return program::Execute(cs);
}

struct Sample {
  std::size_t beforeEngine = 0, beforeLoad = 0, afterLoad = 0, afterRun = 0;
  std::size_t engineReported = 0;
  std::uint64_t simulatedTotal = 0, replicaBytes = 0;
  std::uint64_t alwaysLive = 0, notAlwaysLive = 0;
};

Sample measure() {
  Sample s;
  std::vector<float> host; // filled before the load baseline
  IPUModel model("ipu2");
  Device device = model.createDevice();
  Graph graph(device.getTarget());
  const std::size_t n = kFloatsPerTile * device.getTarget().getNumTiles();
  host.assign(n, 1.5f);
  std::vector<Tensor> xs, ts;
  for (unsigned k = 0; k < kAlwaysLive; ++k) {
    xs.push_back(graph.addVariable(FLOAT, {n}, "x" + std::to_string(k)));
    mapTensorLinearly(graph, xs.back());
    graph.createHostWrite("x" + std::to_string(k), xs.back());
  }
  program::Sequence prog;
  for (unsigned k = 0; k < kTemporaries; ++k) {
    // t_k is written whole, then read once: live between two steps only.
    ts.push_back(graph.clone(xs[k], "t" + std::to_string(k)));
    prog.add(program::Copy(xs[k], ts.back()));
    prog.add(program::Copy(ts.back(), xs[k + 1]));
  }
  prog.add(addScaleSet(graph, xs[kAlwaysLive - 2], xs[kAlwaysLive - 1]));
  s.beforeEngine = tessera::bench::residentBytes();
  Engine engine(graph, prog, OptionFlags{{"engine.hostThreads", "1"}});
  const Executable &exe = engine.getExecutable();
  for (const TileMemory &m : exe.tileMemory) {
    s.simulatedTotal += m.total();
    s.alwaysLive += m.alwaysLive;
    s.notAlwaysLive += m.notAlwaysLive;
  }
  s.replicaBytes = exe.replicaBytes();
  s.beforeLoad = tessera::bench::residentBytes();
  engine.load(device);
  s.afterLoad = tessera::bench::residentBytes();
  for (unsigned k = 0; k < kAlwaysLive; ++k)
    engine.writeTensor("x" + std::to_string(k), host.data(),
                       host.data() + host.size());
  engine.run();
  s.afterRun = tessera::bench::residentBytes();
  s.engineReported = engine.getHostMemoryBytes();
  return s;
}

void BM_LoadedEngineMemory(benchmark::State &state) {
  Sample s;
  for (auto _ : state) {
    const auto t0 = tessera::bench::Clock::now();
    s = measure();
    state.SetIterationTime(tessera::bench::secondsSince(t0));
  }
  const double sim = double(s.simulatedTotal);
  const double growthLoad = double(s.afterLoad) - double(s.beforeLoad);
  const double growth = double(s.afterRun) - double(s.beforeLoad);
  const double limit = kTargetFactor * sim + kTargetSlackBytes;
  const double reported = double(s.engineReported);
  const double growthEngine = double(s.afterRun) - double(s.beforeEngine);
  state.counters["simulated_MiB"] = sim / kMiB;
  state.counters["replica_MiB"] = double(s.replicaBytes) / kMiB;
  state.counters["rss_growth_load_MiB"] = growthLoad / kMiB;
  state.counters["rss_growth_load_run_MiB"] = growth / kMiB;
  state.counters["engine_reported_MiB"] = reported / kMiB;
  state.counters["ratio_rss_vs_sim"] = growth / sim;
  state.counters["ratio_reported_vs_sim"] = reported / sim;
  state.counters["rss_growth_ctor_load_run_MiB"] = growthEngine / kMiB;
  tessera::bench::addResult(
      "host_memory_ratio",
      fixed(growth / sim, 3) + " simulated_MiB=" + fixed(sim / kMiB, 1) +
          " (always_live_MiB=" + fixed(double(s.alwaysLive) / kMiB, 1) +
          " not_always_live_MiB=" + fixed(double(s.notAlwaysLive) / kMiB, 1) +
          ") replica_bytes_MiB=" + fixed(double(s.replicaBytes) / kMiB, 1) +
          " rss_growth_load_MiB=" + fixed(growthLoad / kMiB, 1) +
          " rss_growth_load_write_run_MiB=" + fixed(growth / kMiB, 1) +
          " engine_getHostMemoryBytes_MiB=" + fixed(reported / kMiB, 1) +
          " ratio_reported_vs_sim=" + fixed(reported / sim, 3) +
          " rss_growth_compile_load_write_run_MiB=" +
          fixed(growthEngine / kMiB, 1) + " (ratio " +
          fixed(growthEngine / sim, 3) + ")" +
          " target: growth<=1.2*sim+50MiB=" + fixed(limit / kMiB, 1) + "MiB " +
          tessera::bench::verdict(growth <= limit));
}

BENCHMARK(BM_LoadedEngineMemory)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

} // namespace

int main(int argc, char **argv) { return tessera::bench::runMain(argc, argv); }
