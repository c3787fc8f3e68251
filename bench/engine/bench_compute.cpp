// bench_compute: the fixed cost of a compute step. One compute set of 8832
// empty vertices (1472 tiles x 6, ipu2) run as a program that is just
// Execute(cs); the acceptance target is <= 100 us per engine.run() on one
// host thread, with nothing subtracted. The peer is the floor of any
// function-pointer design: the same number of indirect calls through an array
// of {function, object} records, timed in the same iterations.
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

constexpr unsigned kVerticesPerTile = 6;
constexpr double kTargetUs = 100.0;

constexpr const char *kCodelet = R"(
#include <tessera/Vertex.hpp>
using namespace tessera;
class EmptyVertex : public Vertex {
public:
  bool compute() { return true; }
};
)";

struct Loaded {
  Device device;
  std::unique_ptr<Engine> engine;
  std::size_t numVertices = 0;
};

Loaded buildEngine(unsigned hostThreads) {
  Loaded l;
  IPUModel model("ipu2");
  l.device = model.createDevice();
  Graph graph(l.device.getTarget());
  graph.addCodeletSource(kCodelet, "bench_compute_empty");
  ComputeSet cs = graph.addComputeSet("empty");
  const unsigned tiles = l.device.getTarget().getNumTiles();
  for (unsigned t = 0; t < tiles; ++t)
    for (unsigned k = 0; k < kVerticesPerTile; ++k)
      graph.setTileMapping(graph.addVertex(cs, "EmptyVertex"), t);
  l.numVertices = graph.getNumVertices();
  l.engine = std::make_unique<Engine>(
      graph, program::Execute(cs),
      OptionFlags{{"engine.hostThreads", std::to_string(hostThreads)}});
  l.engine->load(l.device);
  return l;
}

// The peer: records laid out as the engine's (function, object, flag), each
// called once. noinline keeps the call indirect and opaque.
struct Record {
  bool (*compute)(void *, unsigned);
  void *object;
  bool multi;
};

[[gnu::noinline]] bool emptyCompute(void *object, unsigned) {
  benchmark::DoNotOptimize(object);
  return true;
}

[[gnu::noinline]] bool callAll(const std::vector<Record> &records) {
  bool ok = true;
  for (const Record &r : records)
    ok = r.compute(r.object, 0) && ok;
  return ok;
}

void BM_EmptyComputeSet(benchmark::State &state) {
  const auto threads = static_cast<unsigned>(state.range(0));
  Loaded l = buildEngine(threads);
  std::vector<std::byte> objects(l.numVertices * 8);
  std::vector<Record> records(l.numVertices);
  for (std::size_t i = 0; i < records.size(); ++i)
    records[i] = {&emptyCompute, objects.data() + 8 * i, false};
  l.engine->run(); // first touch of every vertex object and the pool
  std::vector<double> engineUs, peerUs;
  for (auto _ : state) {
    auto t0 = Clock::now();
    l.engine->run();
    const double e = tessera::bench::secondsSince(t0);
    t0 = Clock::now();
    benchmark::DoNotOptimize(callAll(records));
    const double p = tessera::bench::secondsSince(t0);
    state.SetIterationTime(e);
    engineUs.push_back(e * 1e6);
    peerUs.push_back(p * 1e6);
  }
  const double us = tessera::bench::median(engineUs);
  const double peer = tessera::bench::median(peerUs);
  const double perVertexNs = us * 1e3 / double(l.numVertices);
  state.counters["vertices"] = double(l.numVertices);
  state.counters["run_us_median"] = us;
  state.counters["run_us_min"] = tessera::bench::minimum(engineUs);
  const double p90 = tessera::bench::quantile(engineUs, 0.9);
  state.counters["run_us_p90"] = p90;
  state.counters["per_vertex_ns"] = perVertexNs;
  state.counters["peer_calls_us"] = peer;
  state.counters["ratio_vs_peer"] = us / peer;
  using tessera::bench::fixed;
  const std::string name =
      "empty_vertices_us" + std::string(threads == 1 ? "" : "_2threads");
  std::string text = fixed(us, 1) + " threads=" + std::to_string(threads) +
                     " vertices=" + std::to_string(l.numVertices) +
                     " p90_us=" + fixed(p90, 1) +
                     " per_vertex_ns=" + fixed(perVertexNs, 2) +
                     " peer_indirect_calls_us=" + fixed(peer, 1) +
                     " ratio_vs_peer=" + fixed(us / peer, 2);
  if (threads == 1)
    text += " target<=" + fixed(kTargetUs, 0) + " " +
            tessera::bench::verdict(us <= kTargetUs);
  else
    text += " (informative; the target is for 1 thread)";
  tessera::bench::addResult(name, text);
}

BENCHMARK(BM_EmptyComputeSet)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(2000);

} // namespace

int main(int argc, char **argv) { return tessera::bench::runMain(argc, argv); }
