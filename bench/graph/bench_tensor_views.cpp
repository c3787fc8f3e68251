// bench_tensor_views: the host cost of the tensor views that graph building
// makes by the million (every element of a list field is one), as heap
// allocations and bytes per view, counted by this binary's operator new,
// and nanoseconds per view next to one malloc + free of the bytes a view
// holds (the cheapest a view with its own heap block can be):
// - a one-element slice of a one-run tensor (a list element): target at
//   most one allocation;
// - a row slice of a [256, 256] tensor (one run) and a slice of two of its
//   columns (256 runs): at most one allocation each;
// - flatten and reshape, which share the run list: no allocation;
// - connecting a list field of 1024 one-element tensors: host bytes per
//   element held by the graph (the Tensor and its share of the run block).
#include "BenchCommon.hpp"

#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/graph/GraphData.hpp"
#include "tessera/graph/Tensor.hpp"

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

namespace {

std::atomic<std::size_t> gAllocs{0}, gBytes{0};

void *counted(std::size_t n) {
  gAllocs.fetch_add(1, std::memory_order_relaxed);
  gBytes.fetch_add(n, std::memory_order_relaxed);
  if (void *p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}

} // namespace

void *operator new(std::size_t n) { return counted(n); }
void *operator new[](std::size_t n) { return counted(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace tessera;
using tessera::bench::addResult;
using tessera::bench::fixed;
using tessera::bench::verdict;

struct Counts {
  double allocs = 0, bytes = 0;
};

// Allocations and bytes per call of fn, over n calls whose results are kept
// (so that frees do not hide what a result holds).
template <typename Fn> Counts perCall(std::size_t n, Fn &&fn) {
  std::vector<Tensor> kept;
  kept.reserve(n);
  const std::size_t a0 = gAllocs.load(), b0 = gBytes.load();
  for (std::size_t i = 0; i < n; ++i)
    kept.push_back(fn(i));
  return {double(gAllocs.load() - a0) / double(n),
          double(gBytes.load() - b0) / double(n)};
}

Tensor contiguous(std::vector<std::size_t> shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  return Tensor(FLOAT, shape, {{0, 0, 1, static_cast<std::int64_t>(n)}});
}

void allocResult(const std::string &name, const Counts &c, double target) {
  addResult(name, fixed(c.allocs) + " target<=" + fixed(target, 0) + " " +
                      verdict(c.allocs <= target) + " (" + fixed(c.bytes, 0) +
                      " bytes per view)");
}

void BM_SliceElement(benchmark::State &state) {
  const Tensor flat = contiguous({1 << 16});
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(flat.slice(i, i + 1));
    i = (i + 1) & 0xffff;
  }
  allocResult(
      "slice_element_allocs",
      perCall(4096, [&](std::size_t k) { return flat.slice(k, k + 1); }), 1);
}
BENCHMARK(BM_SliceElement);

void BM_SliceRow(benchmark::State &state) {
  const Tensor t = contiguous({256, 256});
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.slice(i, i + 1, 0));
    i = (i + 1) & 0xff;
  }
  allocResult("slice_row_allocs",
              perCall(256, [&](std::size_t k) { return t.slice(k, k + 1, 0); }),
              1);
}
BENCHMARK(BM_SliceRow);

// Two columns: 256 runs of two elements.
void BM_SliceColumns(benchmark::State &state) {
  const Tensor t = contiguous({256, 256});
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.slice(i, i + 2, 1));
    i = (i + 2) & 0xff;
  }
  allocResult(
      "slice_columns_allocs",
      perCall(128, [&](std::size_t k) { return t.slice(2 * k, 2 * k + 2, 1); }),
      1);
}
BENCHMARK(BM_SliceColumns);

void BM_FlattenReshape(benchmark::State &state) {
  const Tensor t = contiguous({64, 32, 8});
  const std::vector<std::size_t> shape{2048, 8};
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.flatten());
    benchmark::DoNotOptimize(t.reshape(shape));
  }
  allocResult("flatten_allocs",
              perCall(256, [&](std::size_t) { return t.flatten(); }), 0);
  allocResult("reshape_allocs",
              perCall(256, [&](std::size_t) { return t.reshape(shape); }), 0);
}
BENCHMARK(BM_FlattenReshape);

// The peer of the per-view times: one malloc + free of a one-run view's
// heap block, the least a view that owns new runs can cost.
void BM_MallocFree(benchmark::State &state) {
  const std::size_t bytes = 40;
  for (auto _ : state) {
    void *p = std::malloc(bytes);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}
BENCHMARK(BM_MallocFree);

const char *kListVertex = R"(
#include <poplar/Vertex.hpp>
using namespace poplar;
class SumRows : public Vertex {
public:
  Vector<Input<Vector<float>>> rows;
  Output<float> out;
  bool compute() {
    float s = 0;
    for (unsigned r = 0; r < rows.size(); ++r)
      for (float v : rows[r])
        s += v;
    *out = s;
    return true;
  }
};
)";

void BM_ConnectList(benchmark::State &state) {
  constexpr std::size_t kElements = 1024;
  IPUModel model("ipu2");
  Device device = model.createDevice();
  Graph g(device.getTarget());
  g.addCodeletSource(kListVertex, "bench_tensor_views_list");
  Tensor in = g.addVariable(FLOAT, {kElements}, "in");
  Tensor out = g.addVariable(FLOAT, {}, "out");
  std::vector<Tensor> elems;
  for (std::size_t i = 0; i < kElements; ++i)
    elems.push_back(in.slice(i, i + 1));
  ComputeSet cs = g.addComputeSet("cs");
  for (auto _ : state) {
    VertexRef v = g.addVertex(cs, "SumRows");
    g.connect(v["rows"], elems);
    g.connect(v["out"], out);
  }
  state.SetItemsProcessed(state.iterations() * kElements);
  // What the graph holds per element: the Tensor in the field's vector and
  // the element's run block (made by its slice).
  std::vector<Tensor> fresh;
  fresh.reserve(kElements);
  const std::size_t a0 = gBytes.load();
  for (std::size_t i = 0; i < kElements; ++i)
    fresh.push_back(in.slice(i, i + 1));
  VertexRef v = g.addVertex(cs, "SumRows");
  g.connect(v["rows"], fresh);
  fresh.clear();
  const double perElement = double(gBytes.load() - a0) / double(kElements);
  addResult("list_element_bytes",
            fixed(perElement, 0) +
                " (allocated per element by the slice and "
                "the connect; sizeof(Tensor) " +
                std::to_string(sizeof(Tensor)) + ")");
}
BENCHMARK(BM_ConnectList);

} // namespace

int main(int argc, char **argv) { return tessera::bench::runMain(argc, argv); }
