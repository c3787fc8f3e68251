#include "tessera/compiler/Compiler.hpp"

#include "CompilerState.hpp"
#include "CostModel.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/Logging.hpp"
#include "tessera/support/Memory.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <tuple>

namespace tessera {
namespace compiler {

State::State(const Graph &g, const EngineOptions &o)
    : graph(g), data(g.data()), target(g.getTarget()), options(o),
      numGraphVars(g.data().variables.size()),
      vertexSlots(g.data().vertices.size(), -1) {}

std::uint32_t State::substitute(unsigned vertex, unsigned field, unsigned index,
                                const Substitution &sub) {
  const std::vector<FieldBinding> &fields = data.vertices[vertex].fields;
  if (vertexSlots[vertex] < 0) {
    vertexSlots[vertex] = static_cast<std::int64_t>(fieldSlots.size());
    fieldSlots.resize(fieldSlots.size() + fields.size());
  }
  FieldSlot &fs =
      fieldSlots[static_cast<std::size_t>(vertexSlots[vertex]) + field];
  if (fs.first == kNoSlot) {
    TESSERA_INTERNAL_ASSERT(elementSlots.size() + fields[field].tensors.size() <
                                kNoSlot,
                            "more than 2^32 substituted field elements");
    fs.var = sub.var;
    fs.first = static_cast<std::uint32_t>(elementSlots.size());
    elementSlots.resize(elementSlots.size() + fields[field].tensors.size());
  }
  // A temporary lives on one tile, far below 2^31 elements.
  TESSERA_INTERNAL_ASSERT(fs.var == sub.var && sub.count > 0 &&
                              sub.count < kInPlace && sub.offset <= 0xffffffffu,
                          "substitution out of range");
  const std::uint32_t k = fs.first + index;
  elementSlots[k].offset = static_cast<std::uint32_t>(sub.offset);
  elementSlots[k].count =
      static_cast<std::uint32_t>(sub.count) | (sub.inPlace ? kInPlace : 0);
  return k;
}

std::uint32_t State::intern(const std::string &s) {
  // Names repeat (every step of one program node); reuse the last equal one.
  if (!exe.strings.empty() && exe.strings.back() == s)
    return static_cast<std::uint32_t>(exe.strings.size() - 1);
  exe.strings.push_back(s);
  return static_cast<std::uint32_t>(exe.strings.size() - 1);
}

std::pair<unsigned, std::size_t> locate(std::span<const TileInterval> m,
                                        std::size_t e) {
  auto it = std::upper_bound(
      m.begin(), m.end(), e,
      [](std::size_t x, const TileInterval &iv) { return x < iv.end; });
  TESSERA_INTERNAL_ASSERT(it != m.end() && it->begin <= e,
                          "element of an unmapped variable");
  return {it->tile, static_cast<std::size_t>(it - m.begin())};
}

namespace {

void checkMapped(const GraphData &d) {
  for (const VariableData &v : d.variables) {
    std::size_t mapped = 0, firstGap = 0;
    bool gap = false;
    for (const TileInterval &iv : v.mapping) {
      if (!gap && iv.begin != mapped) {
        gap = true;
        firstGap = mapped;
      }
      mapped = iv.end;
    }
    std::size_t count = 0;
    for (const TileInterval &iv : v.mapping)
      count += iv.end - iv.begin;
    if (!gap && count != v.numElements) {
      gap = true;
      firstGap = mapped;
    }
    if (gap)
      throw GraphError(std::string(v.isConstant ? "constant" : "variable") +
                       " \"" + v.name + "\" has " +
                       std::to_string(v.numElements - count) + " of its " +
                       std::to_string(v.numElements) +
                       " elements not mapped to any tile (the first is "
                       "element " +
                       std::to_string(firstGap) +
                       "); map it with graph.setTileMapping(tensor, tile) "
                       "or mapTensorLinearly(graph, tensor)");
  }
}

// Remote buffers live in the streaming memory of the graph's IPUs
// (TargetFigures::remoteMemoryBytesPerIPU each); a graph whose buffers do
// not fit could not be loaded on the machine it was built for.
void checkRemoteMemory(const Graph &graph) {
  const Target &t = graph.getTarget();
  std::uint64_t bytes = 0;
  for (const RemoteBufferData &rb : graph.data().remoteBuffers)
    bytes += std::uint64_t(rb.numElements) * rb.repeats * typeSize(rb.type);
  const std::uint64_t capacity =
      t.getRemoteMemoryBytesPerIPU() * t.getNumIPUs();
  if (bytes > capacity)
    throw MemoryError(
        "the graph's " + std::to_string(graph.data().remoteBuffers.size()) +
        " remote buffers need " + std::to_string(bytes) +
        " bytes of streaming memory but the " + t.getTargetArchString() +
        " target has " + std::to_string(capacity) + " (" +
        std::to_string(t.getNumIPUs()) + " IPUs of " +
        std::to_string(t.getRemoteMemoryBytesPerIPU()) +
        " bytes, target figure remoteMemoryBytesPerIPU); use smaller remote "
        "buffers or a target with streaming memory (ipu2, ipu21)");
}

// The resident set size now and the peak so far, from Linux's
// /proc/self/status (VmRSS, VmHWM); elsewhere the peak from getrusage.
std::pair<std::uint64_t, std::uint64_t> processMemory() {
  std::uint64_t rss = 0, peak = 0;
  if (std::FILE *f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    unsigned long long kib = 0;
    while (std::fgets(line, sizeof line, f)) {
      if (std::sscanf(line, "VmRSS: %llu kB", &kib) == 1)
        rss = kib * 1024;
      else if (std::sscanf(line, "VmHWM: %llu kB", &kib) == 1)
        peak = kib * 1024;
    }
    std::fclose(f);
  }
  if (peak == 0) {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    peak = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  }
  return {rss, std::max(peak, rss)};
}

} // namespace
} // namespace compiler

CompilePhaseTimer::CompilePhaseTimer(std::string name)
    : name_(std::move(name)), start_(std::chrono::steady_clock::now()) {}

CompilePhase CompilePhaseTimer::finish() const {
  CompilePhase p;
  p.name = name_;
  p.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  std::tie(p.rssBytes, p.peakRssBytes) = compiler::processMemory();
  logging::info("compile phase {}: {:.3f} s, RSS {:.2f} GB, peak {:.2f} GB",
                p.name, p.seconds, p.rssBytes / 1e9, p.peakRssBytes / 1e9);
  return p;
}

namespace {

// The touches of every compute set and its gathers and scatters are read
// only by the liveness analysis of layoutMemory; freed once it is done,
// their memory (0.3 GB for ResNet-50 at 224x224) is not held through the
// resolution of steps, the compile's peak.
void releaseTouches(compiler::State &s) {
  for (compiler::ComputeSetPlan &plan : s.csPlans) {
    std::vector<compiler::Touch>().swap(plan.touches);
    std::vector<compiler::Touch>().swap(plan.gatherTouches);
    std::vector<compiler::Touch>().swap(plan.scatterTouches);
  }
  for (compiler::Draft &d : s.drafts)
    d.touches = nullptr;
}

} // namespace

Executable compileGraph(const Graph &graph,
                        const std::vector<program::Program> &programs,
                        const OptionFlags &flags,
                        const CompileProgress &progress) {
  using namespace compiler;
  const EngineOptions options = EngineOptions::parse(flags);
  std::vector<CompilePhase> phases;
  std::optional<CompilePhaseTimer> timer;
  // Ends the phase running, if any, and starts \p phase.
  auto report = [&](const char *phase, double done) {
    if (timer)
      phases.push_back(timer->finish());
    timer.emplace(phase);
    if (progress)
      progress(phase, done);
  };
  const HeapPrefaulter prefaulter;
  report("checking graph", 0.0);
  checkMapped(graph.data());
  // On the heap so that its release, a phase of its own, can be timed.
  auto state = std::make_unique<State>(graph, options);
  State &s = *state;
  const Target &t = s.target;
  s.exe.arch = t.getTargetArchString();
  s.exe.numIPUs = t.getNumIPUs();
  s.exe.tilesPerIPU = t.getTilesPerIPU();
  s.exe.bytesPerTile = t.getBytesPerTile();
  s.exe.clockHz = t.getTileClockFrequency();
  s.exe.replicationFactor = graph.getReplicationFactor();
  report("flattening programs", 0.1);
  compiler::checkRemoteMemory(graph);
  flattenPrograms(s, programs);
  report("laying out memory", 0.3);
  layoutMemory(s);
  releaseTouches(s);
  returnFreedMemory();
  report("resolving steps", 0.6);
  resolveSteps(s);
  report("estimating cycles", 0.8);
  estimateSteps(s);
  for (const auto &cs : graph.data().computeSets)
    s.exe.computeSetNames.push_back(cs.name);
  for (const auto &st : graph.data().streams)
    s.exe.streams.push_back(
        {st.handle, st.type, st.numElements, st.hostToDevice, st.broadcast});
  for (const auto &rb : graph.data().remoteBuffers)
    s.exe.remoteBuffers.push_back(
        {rb.handle, rb.type, rb.numElements, rb.repeats});
  s.exe.registry = graph.data().registry;
  logging::info("compiled {} steps, {} vertices, {} copy ops, {} bytes per "
                "replica",
                s.exe.steps.size(), s.exe.vertices.size(), s.exe.copyOps.size(),
                s.exe.replicaBytes());
  Executable exe = std::move(s.exe);
  report("releasing compiler state", 0.95);
  state.reset();
  returnFreedMemory();
  phases.push_back(timer->finish());
  exe.compilePhases = std::move(phases);
  if (progress)
    progress("done", 1.0);
  return exe;
}

} // namespace tessera
