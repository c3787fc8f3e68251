// Profiles are built from the compiler's per-step estimates and the engine's
// step counts: nothing here re-derives costs, so the JSON, the text summary
// and Engine::getCycleCounts always agree. Time (elapsed cycles, the trace's
// starts) goes through Timeline, the one home of the multi-IPU clock rule.
#include "tessera/engine/Profile.hpp"
#include "tessera/engine/Timeline.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"
#include "tessera/support/OptionParser.hpp"
#include "tessera/support/Text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <numeric>
#include <ostream>
#include <string_view>
#include <system_error>
#include <unordered_map>

namespace tessera {
namespace {

using nlohmann::json;

// The five groups that cycles are reported by; every StepKind is in one.
enum class Group : std::uint8_t { Compute, Exchange, Sync, Host, Control };
constexpr std::size_t kNumGroups = 5;
constexpr std::array<std::string_view, kNumGroups> kGroupNames = {
    "compute", "exchange", "sync", "host", "control"};

Group groupOf(StepKind kind) {
  switch (kind) {
  case StepKind::Compute:
    return Group::Compute;
  case StepKind::Exchange:
  case StepKind::CrossReplica:
    return Group::Exchange;
  case StepKind::Sync:
    return Group::Sync;
  // Print moves data to the host, so it costs what a stream does.
  case StepKind::StreamIn:
  case StepKind::StreamOut:
  case StepKind::RemoteIn:
  case StepKind::RemoteOut:
  case StepKind::Print:
    return Group::Host;
  default:
    return Group::Control;
  }
}

std::string_view kindName(StepKind kind) {
  switch (kind) {
  case StepKind::Compute:
    return "compute";
  case StepKind::Exchange:
    return "exchange";
  case StepKind::CrossReplica:
    return "crossReplica";
  case StepKind::StreamIn:
    return "streamIn";
  case StepKind::StreamOut:
    return "streamOut";
  case StepKind::RemoteIn:
    return "remoteIn";
  case StepKind::RemoteOut:
    return "remoteOut";
  case StepKind::Jump:
    return "jump";
  case StepKind::JumpIfZero:
    return "jumpIfZero";
  case StepKind::JumpIfNonZero:
    return "jumpIfNonZero";
  case StepKind::RepeatStart:
    return "repeatStart";
  case StepKind::RepeatEnd:
    return "repeatEnd";
  case StepKind::Switch:
    return "switch";
  case StepKind::Call:
    return "call";
  case StepKind::Return:
    return "return";
  case StepKind::Print:
    return "print";
  case StepKind::Abort:
    return "abort";
  case StepKind::AbortIf:
    return "abortIf";
  case StepKind::Sync:
    return "sync";
  case StepKind::End:
    return "end";
  }
  return "unknown";
}

struct Category {
  std::string_view key, label;
  std::uint64_t TileMemory::*field;
};
constexpr std::array<Category, 6> kCategories = {{
    {"alwaysLive", "Always-live variables", &TileMemory::alwaysLive},
    {"notAlwaysLive", "Not-always-live variables", &TileMemory::notAlwaysLive},
    {"constants", "Constants", &TileMemory::constants},
    {"temporaries", "Temporaries", &TileMemory::temporaries},
    {"vertexState", "Vertex state", &TileMemory::vertexState},
    {"code", "Code", &TileMemory::code},
}};

std::string stepName(const Executable &exe, std::size_t step) {
  const std::uint32_t n = exe.steps[step].name;
  return n < exe.strings.size() ? exe.strings[n] : std::string();
}

// The step's scope (Executable::stepScopes); empty when it has none.
std::string stepScope(const Executable &exe, std::size_t step) {
  if (step >= exe.stepScopes.size())
    return {};
  const std::uint32_t n = exe.stepScopes[step];
  return n < exe.strings.size() ? exe.strings[n] : std::string();
}

// One execution of \p step on each IPU; a step without an estimate (or with
// fewer IPUs than the target) costs nothing on the missing IPUs.
std::vector<std::uint64_t> stepCycles(const Executable &exe, std::size_t step) {
  std::vector<std::uint64_t> out(exe.numIPUs, 0);
  if (step < exe.estimates.size()) {
    const auto &c = exe.estimates[step].ipuCycles;
    std::copy_n(c.begin(), std::min(c.size(), out.size()), out.begin());
  }
  return out;
}

std::uint64_t countOf(const ExecutionCounts &counts, std::size_t step) {
  return step < counts.stepCounts.size() ? counts.stepCounts[step] : 0;
}

// A step's rank is what it can add to the elapsed time at most: its slowest
// IPU's cycles, each time it runs.
std::uint64_t stepTotal(const Executable &exe, const ExecutionCounts &counts,
                        std::size_t step) {
  const auto c = stepCycles(exe, step);
  return countOf(counts, step) *
         (c.empty() ? 0 : *std::max_element(c.begin(), c.end()));
}

void checkCounts(const Executable &exe, const ExecutionCounts &counts) {
  TESSERA_INTERNAL_ASSERT(counts.stepCounts.size() <= exe.steps.size(),
                          "execution counts are for another executable");
  for (std::uint32_t s : counts.trace)
    TESSERA_INTERNAL_ASSERT(s < exe.steps.size(),
                            "traced step " + std::to_string(s) +
                                " is not in the executable");
  TESSERA_INTERNAL_ASSERT(
      exe.numIPUs <= 1 ? counts.ipuClocks.empty()
                       : counts.ipuClocks.size() == exe.numIPUs ||
                             (counts.ipuClocks.empty() && counts.runs == 0),
      "execution counts of " + std::to_string(exe.numIPUs) + " IPUs carry " +
          std::to_string(counts.ipuClocks.size()) + " IPU clocks");
}

struct ExecutionTotals {
  std::vector<std::uint64_t> total;                           ///< per IPU
  std::array<std::vector<std::uint64_t>, kNumGroups> byGroup; ///< per IPU
  std::uint64_t stepsExecuted = 0;
  std::size_t distinctSteps = 0;
};

ExecutionTotals executionTotals(const Executable &exe,
                                const ExecutionCounts &counts) {
  ExecutionTotals t;
  t.total.assign(exe.numIPUs, 0);
  for (auto &g : t.byGroup)
    g.assign(exe.numIPUs, 0);
  for (std::size_t s = 0; s < counts.stepCounts.size(); ++s) {
    const std::uint64_t n = counts.stepCounts[s];
    if (!n)
      continue;
    t.stepsExecuted += n;
    ++t.distinctSteps;
    const auto c = stepCycles(exe, s);
    auto &group =
        t.byGroup[static_cast<std::size_t>(groupOf(exe.steps[s].kind))];
    for (std::size_t ipu = 0; ipu < c.size(); ++ipu) {
      t.total[ipu] += n * c[ipu];
      group[ipu] += n * c[ipu];
    }
  }
  return t;
}

// The executed steps by decreasing total (ties by step index), at most
// \p limit of them, only compute steps when \p computeOnly.
std::vector<std::uint32_t> costliestSteps(const Executable &exe,
                                          const ExecutionCounts &counts,
                                          std::size_t limit, bool computeOnly) {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> ranked;
  for (std::uint32_t s = 0; s < counts.stepCounts.size(); ++s) {
    if (!counts.stepCounts[s] ||
        (computeOnly && exe.steps[s].kind != StepKind::Compute))
      continue;
    ranked.emplace_back(stepTotal(exe, counts, s), s);
  }
  const std::size_t n = std::min(limit, ranked.size());
  // n <= ranked.size(), so begin() + n is in range even when ranked is empty.
  // cppcheck-suppress containerOutOfBounds
  std::partial_sort(ranked.begin(), ranked.begin() + n, ranked.end(),
                    [](const auto &x, const auto &y) {
                      return x.first != y.first ? x.first > y.first
                                                : x.second < y.second;
                    });
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < n; ++i)
    out.push_back(ranked[i].second);
  return out;
}

// Extremes over the tiles that use any memory.
struct TileExtremes {
  TileMemory sum;
  std::size_t used = 0;
  std::size_t maxTile = 0, minTile = 0;
  std::uint64_t maxBytes = 0, minBytes = 0;
};

TileExtremes tileExtremes(const Executable &exe) {
  TileExtremes e;
  for (std::size_t t = 0; t < exe.tileMemory.size(); ++t) {
    const TileMemory &m = exe.tileMemory[t];
    for (const Category &c : kCategories)
      e.sum.*c.field += m.*c.field;
    const std::uint64_t bytes = m.total();
    if (!bytes)
      continue;
    if (!e.used || bytes > e.maxBytes) {
      e.maxBytes = bytes;
      e.maxTile = t;
    }
    if (!e.used || bytes < e.minBytes) {
      e.minBytes = bytes;
      e.minTile = t;
    }
    ++e.used;
  }
  return e;
}

} // namespace

CycleBreakdown cyclesPerRun(const Executable &exe,
                            const ExecutionCounts &counts) {
  checkCounts(exe, counts);
  CycleBreakdown b;
  if (counts.runs == 0 || exe.numIPUs == 0)
    return b;
  const ExecutionTotals t = executionTotals(exe, counts);
  const std::size_t ipu = static_cast<std::size_t>(
      std::max_element(t.total.begin(), t.total.end()) - t.total.begin());
  auto perRun = [&](Group g) {
    return t.byGroup[static_cast<std::size_t>(g)][ipu] / counts.runs;
  };
  b.compute = perRun(Group::Compute);
  b.exchange = perRun(Group::Exchange);
  b.sync = perRun(Group::Sync);
  b.host = perRun(Group::Host);
  b.control = perRun(Group::Control);
  return b;
}

std::uint64_t elapsedCycles(const Executable &exe,
                            const ExecutionCounts &counts) {
  checkCounts(exe, counts);
  if (!counts.ipuClocks.empty())
    return *std::max_element(counts.ipuClocks.begin(), counts.ipuClocks.end()) +
           counts.gatewayCycles;
  if (counts.runs == 0)
    return 0;
  // One IPU: the Timeline adds every step's cycles, whatever the order.
  std::uint64_t total = counts.gatewayCycles;
  for (std::size_t s = 0; s < counts.stepCounts.size(); ++s)
    if (counts.stepCounts[s] && s < exe.estimates.size() &&
        !exe.estimates[s].ipuCycles.empty())
      total += counts.stepCounts[s] * exe.estimates[s].ipuCycles[0];
  return total;
}

std::uint64_t hostInclusiveCycles(const Executable &exe,
                                  const ExecutionCounts &counts) {
  return elapsedCycles(exe, counts) + counts.hostCycles.total();
}

MemorySummary memorySummary(const Executable &exe) {
  const TileExtremes e = tileExtremes(exe);
  MemorySummary m;
  m.total = e.sum;
  m.tiles = exe.tileMemory.size();
  m.tilesUsed = e.used;
  m.bytesPerTile = exe.bytesPerTile;
  if (e.used) {
    m.maxTile = e.maxTile;
    m.maxTileBytes = e.maxBytes;
  }
  return m;
}

namespace {

// ---------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------

json targetJson(const Executable &exe) {
  return {{"arch", exe.arch},
          {"numIPUs", exe.numIPUs},
          {"tilesPerIPU", exe.tilesPerIPU},
          {"bytesPerTile", exe.bytesPerTile},
          {"clockHz", exe.clockHz},
          {"replicationFactor", exe.replicationFactor}};
}

json memoryJson(const Executable &exe) {
  const TileExtremes e = tileExtremes(exe);
  json byCategory = json::object(), perTile = json::object();
  for (const Category &c : kCategories) {
    byCategory[std::string(c.key)] = e.sum.*c.field;
    json column = json::array();
    for (const TileMemory &m : exe.tileMemory)
      column.push_back(m.*c.field);
    perTile[std::string(c.key)] = std::move(column);
  }
  json totals = json::array();
  for (const TileMemory &m : exe.tileMemory)
    totals.push_back(m.total());
  perTile["total"] = std::move(totals);
  return {{"total", e.sum.total()},
          {"byCategory", std::move(byCategory)},
          {"perTile", std::move(perTile)},
          {"maxTile", e.used ? json(e.maxTile) : json(nullptr)},
          {"maxTileBytes", e.maxBytes}};
}

// Variables of one name, type and live range (the compiler's per-vertex
// operand temporaries, hundreds of thousands in a large graph) are one
// entry: "count" of them, their bytes and tiles summed, shape the total
// elements. Memory and liveness add up as before; the file stays small.
json variablesJson(const Executable &exe) {
  json out = json::array();
  std::unordered_map<std::string, std::size_t> index;
  for (const VariableInfo &v : exe.variables) {
    const std::string &name = exe.variableName(v);
    const std::vector<std::uint64_t> shape = exe.variableShape(v);
    const std::string key = name + '\0' + std::string(typeName(v.type)) + '\0' +
                            std::to_string(v.alwaysLive) + '\0' +
                            std::to_string(v.liveBegin) + '\0' +
                            std::to_string(v.liveEnd);
    const auto [it, added] = index.try_emplace(key, out.size());
    if (added) {
      out.push_back({{"name", name},
                     {"type", std::string(typeName(v.type))},
                     {"shape", shape},
                     {"bytes", v.bytes},
                     {"tiles", v.tiles},
                     {"count", 1},
                     {"alwaysLive", v.alwaysLive},
                     {"liveBegin", v.liveBegin},
                     {"liveEnd", v.liveEnd}});
      continue;
    }
    json &e = out[it->second];
    std::uint64_t elements = 1;
    for (const json &d : e["shape"])
      elements *= d.get<std::uint64_t>();
    std::uint64_t more = 1;
    for (const std::uint64_t d : shape)
      more *= d;
    e["shape"] = json::array({elements + more});
    e["bytes"] = e["bytes"].get<std::uint64_t>() + v.bytes;
    e["tiles"] = e["tiles"].get<std::uint64_t>() + v.tiles;
    e["count"] = e["count"].get<std::uint64_t>() + 1;
  }
  return out;
}

// Whether each vertex belongs to a host kernel: those run on the host in
// place of a compute set's vertices and are not on the IPU.
std::vector<bool> hostKernelVertices(const Executable &exe) {
  std::vector<bool> out(exe.vertices.size(), false);
  for (const Step &s : exe.steps)
    if (s.kind == StepKind::Compute && s.count)
      for (std::uint64_t v = s.addr; v < s.addr + s.count; ++v)
        out[v] = true;
  return out;
}

std::vector<std::uint64_t> verticesPerTile(const Executable &exe) {
  std::vector<std::uint64_t> out(exe.numTiles(), 0);
  const std::vector<bool> host = hostKernelVertices(exe);
  for (std::size_t i = 0; i < exe.vertices.size(); ++i) {
    const VertexInstance &v = exe.vertices[i];
    if (host[i])
      continue;
    if (v.tile >= out.size())
      out.resize(v.tile + 1, 0);
    ++out[v.tile];
  }
  return out;
}

// A compute set's vertices are laid out once and shared by every step that
// runs it, so any of its steps gives the count.
json computeSetsJson(const Executable &exe) {
  std::vector<std::uint64_t> vertices(exe.computeSetNames.size(), 0);
  for (const Step &s : exe.steps)
    if (s.kind == StepKind::Compute && s.c < vertices.size())
      vertices[s.c] = s.b;
  json out = json::array();
  for (std::size_t i = 0; i < vertices.size(); ++i)
    out.push_back(
        {{"name", exe.computeSetNames[i]}, {"vertices", vertices[i]}});
  return out;
}

json stepsJson(const Executable &exe) {
  json out = json::array();
  for (std::size_t i = 0; i < exe.steps.size(); ++i) {
    const Step &s = exe.steps[i];
    json step = {
        {"kind", std::string(kindName(s.kind))},
        {"group",
         std::string(kGroupNames[static_cast<std::size_t>(groupOf(s.kind))])},
        {"name", stepName(exe, i)},
        {"ipuCycles", stepCycles(exe, i)},
        {"bytes",
         i < exe.estimates.size() ? exe.estimates[i].bytesExchanged : 0}};
    if (s.kind == StepKind::Compute) {
      step["computeSet"] = s.c;
      step["vertices"] = s.b;
    }
    if (std::string scope = stepScope(exe, i); !scope.empty())
      step["scope"] = std::move(scope);
    out.push_back(std::move(step));
  }
  return out;
}

// The starts follow the engine's clocks (Timeline): a step that syncs starts
// on every IPU once the last is ready, and a complete trace ends where
// Engine::getElapsedCycles does (less gateway cycles).
json traceJson(const Executable &exe, const ExecutionCounts &counts) {
  json out = json::array();
  const Timeline timeline(exe);
  std::vector<std::uint64_t> clock(timeline.numIPUs(), 0);
  for (std::uint32_t s : counts.trace) {
    timeline.begin(s, clock.data());
    out.push_back({{"step", s},
                   {"kind", std::string(kindName(exe.steps[s].kind))},
                   {"name", stepName(exe, s)},
                   {"start", std::vector<std::uint64_t>(
                                 clock.begin(), clock.begin() + exe.numIPUs)},
                   {"cycles", stepCycles(exe, s)}});
    timeline.advance(s, clock.data());
  }
  return out;
}

constexpr std::size_t kTileProfileSteps = 20;

json computeTileCyclesJson(const Executable &exe,
                           const ExecutionCounts &counts) {
  json out = json::array();
  for (std::uint32_t s :
       costliestSteps(exe, counts, kTileProfileSteps, /*computeOnly=*/true)) {
    std::vector<std::uint32_t> tiles;
    std::vector<std::uint64_t> cycles;
    if (s < exe.estimates.size()) {
      const StepEstimate &e = exe.estimates[s];
      const std::size_t end = std::min<std::size_t>(
          std::size_t(e.firstTileCycle) + e.numTileCycles,
          std::min(exe.tileCycles.size(), exe.tileCycleTiles.size()));
      for (std::size_t i = e.firstTileCycle; i < end; ++i) {
        tiles.push_back(exe.tileCycleTiles[i]);
        cycles.push_back(exe.tileCycles[i]);
      }
    }
    out.push_back({{"step", s},
                   {"name", stepName(exe, s)},
                   {"count", countOf(counts, s)},
                   {"tiles", std::move(tiles)},
                   {"cycles", std::move(cycles)}});
  }
  return out;
}

json executionJson(const Executable &exe, const ExecutionCounts &counts) {
  checkCounts(exe, counts);
  const ExecutionTotals t = executionTotals(exe, counts);
  json byKind = json::object();
  for (std::size_t g = 0; g < kNumGroups; ++g)
    byKind[std::string(kGroupNames[g])] = t.byGroup[g];
  json steps = json::array();
  for (std::size_t s = 0; s < counts.stepCounts.size(); ++s) {
    const std::uint64_t n = counts.stepCounts[s];
    if (!n)
      continue;
    auto c = stepCycles(exe, s);
    for (auto &x : c)
      x *= n;
    steps.push_back({{"step", s}, {"count", n}, {"cycles", std::move(c)}});
  }
  return {{"runs", counts.runs},
          {"stepsExecuted", t.stepsExecuted},
          {"elapsedCycles", elapsedCycles(exe, counts)},
          {"hostCycles",
           {{"runs", counts.hostCycles.runs},
            {"streamSetups", counts.hostCycles.streamSetups},
            {"callbacks", counts.hostCycles.callbacks},
            {"total", counts.hostCycles.total()}}},
          {"hostInclusiveCycles", hostInclusiveCycles(exe, counts)},
          {"totalCycles", t.total},
          {"cyclesByKind", std::move(byKind)},
          {"steps", std::move(steps)},
          {"traceComplete", counts.trace.size() == t.stepsExecuted},
          {"trace", traceJson(exe, counts)},
          {"computeTileCycles", computeTileCyclesJson(exe, counts)}};
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

std::string clockText(double clockHz) {
  return clockHz >= 1e9 ? fmt::format("{:.3g} GHz", clockHz / 1e9)
                        : fmt::format("{:.3g} MHz", clockHz / 1e6);
}

// "9.28 us at 1.33 GHz"; empty when the clock is unknown.
std::string durationText(std::uint64_t cycles, double clockHz) {
  if (!(clockHz > 0))
    return {};
  double t = static_cast<double>(cycles) / clockHz;
  std::string_view unit = "s";
  if (t < 1e-6) {
    t *= 1e9;
    unit = "ns";
  } else if (t < 1e-3) {
    t *= 1e6;
    unit = "us";
  } else if (t < 1) {
    t *= 1e3;
    unit = "ms";
  }
  return fmt::format("{:.2f} {} at {}", t, unit, clockText(clockHz));
}

double percent(std::uint64_t part, std::uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole)
               : 0.0;
}

std::string shapeText(const std::vector<std::uint64_t> &shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i)
      out += ',';
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

struct SummaryOptions {
  bool showVarStorage = false;
  bool showExecutionSteps = false;
  bool showPerIpuMemoryUsage = false;
  unsigned maxSteps = 10;
  unsigned maxVariables = 20;
};

void printTarget(std::ostream &os, const Executable &exe) {
  const std::vector<bool> host = hostKernelVertices(exe);
  os << "Target:\n"
     << fmt::format("  {:<30}{}\n", "Architecture:", exe.arch)
     << fmt::format("  {:<30}{}\n", "Number of IPUs:", exe.numIPUs)
     << fmt::format("  {:<30}{}\n",
                    "Tiles per IPU:", groupedNumber(exe.tilesPerIPU))
     << fmt::format("  {:<30}{}\n",
                    "Total tiles:", groupedNumber(exe.numTiles()))
     << fmt::format("  {:<30}{}\n",
                    "Memory per tile:", bytesText(exe.bytesPerTile))
     << fmt::format("  {:<30}{}\n", "Total memory:",
                    bytesText(exe.bytesPerTile * exe.numTiles()))
     << fmt::format("  {:<30}{}\n", "Clock:",
                    exe.clockHz > 0 ? clockText(exe.clockHz) : "unknown")
     << fmt::format("  {:<30}{}\n",
                    "Number of replicas:", exe.replicationFactor)
     << fmt::format("  {:<30}{}\n", "IPUs per replica:", exe.numIPUs)
     << fmt::format("  {:<30}{}\n",
                    "Tiles per replica:", groupedNumber(exe.numTiles()))
     << fmt::format("  {:<30}{}\n\n", "Memory per replica:",
                    bytesText(exe.bytesPerTile * exe.numTiles()));
  os << "Graph:\n"
     << fmt::format("  {:<30}{}\n",
                    "Number of variables:", groupedNumber(exe.variables.size()))
     << fmt::format("  {:<30}{}\n", "Number of vertices:",
                    groupedNumber(std::size_t(
                        std::count(host.begin(), host.end(), false))))
     << fmt::format("  {:<30}{}\n", "Number of compute sets:",
                    groupedNumber(exe.computeSetNames.size()))
     << fmt::format("  {:<30}{}\n\n",
                    "Number of steps:", groupedNumber(exe.steps.size()));
}

// The compiler's phases: wall time and the compiling process's memory.
void printCompilation(std::ostream &os, const Executable &exe) {
  if (exe.compilePhases.empty())
    return;
  double total = 0;
  std::uint64_t peak = 0;
  os << "Compilation:\n";
  for (const CompilePhase &p : exe.compilePhases) {
    os << fmt::format("  {:<30}{:.3f} s, host RSS {} after\n", p.name + ":",
                      p.seconds, bytesText(p.rssBytes));
    total += p.seconds;
    peak = std::max(peak, p.peakRssBytes);
  }
  os << fmt::format("  {:<30}{:.3f} s, host peak RSS {}\n\n", "Total:", total,
                    bytesText(peak));
}

json compilationJson(const Executable &exe) {
  json phases = json::array();
  for (const CompilePhase &p : exe.compilePhases)
    phases.push_back({{"name", p.name},
                      {"seconds", p.seconds},
                      {"rssBytes", p.rssBytes},
                      {"peakRssBytes", p.peakRssBytes}});
  return {{"phases", std::move(phases)}};
}

void printMemory(std::ostream &os, const Executable &exe) {
  const TileExtremes e = tileExtremes(exe);
  const std::uint64_t capacity = exe.bytesPerTile * exe.numTiles();
  os << "Memory Usage:\n"
     << fmt::format("  {:<30}{}, {:.1f}% of {}\n",
                    "Total:", bytesText(e.sum.total()),
                    percent(e.sum.total(), capacity), bytesText(capacity));
  for (const Category &c : kCategories)
    os << fmt::format("    {:<28}{}\n", std::string(c.label) + ":",
                      bytesText(e.sum.*c.field));
  if (!e.used) {
    os << "  No tile uses any memory.\n";
    return;
  }
  const std::uint64_t mean = e.sum.total() / e.used;
  os << fmt::format("  Per tile (over the {} of {} tiles used):\n", e.used,
                    exe.tileMemory.size())
     << fmt::format("    {:<28}{} (tile {}, {:.1f}% of the tile)\n",
                    "Maximum:", bytesText(e.maxBytes), e.maxTile,
                    percent(e.maxBytes, exe.bytesPerTile))
     << fmt::format("    {:<28}{}\n", "Mean:", bytesText(mean))
     << fmt::format("    {:<28}{} (tile {})\n",
                    "Minimum:", bytesText(e.minBytes), e.minTile);
}

// Poplar's showPerIpuMemoryUsage: the memory of each IPU's tiles, by
// category, as the last part of "Memory Usage".
void printPerIpuMemory(std::ostream &os, const Executable &exe) {
  const std::uint64_t capacity = exe.bytesPerTile * exe.tilesPerIPU;
  os << "  By IPU:\n";
  for (std::uint32_t ipu = 0; ipu < exe.numIPUs; ++ipu) {
    TileMemory sum;
    for (std::uint32_t t = ipu * exe.tilesPerIPU;
         t < (ipu + 1) * exe.tilesPerIPU && t < exe.tileMemory.size(); ++t)
      for (const Category &c : kCategories)
        sum.*c.field += exe.tileMemory[t].*c.field;
    os << fmt::format("    IPU {}: {}, {:.1f}% of {}\n", ipu,
                      bytesText(sum.total()), percent(sum.total(), capacity),
                      bytesText(capacity));
    for (const Category &c : kCategories)
      os << fmt::format("      {:<26}{}\n", std::string(c.label) + ":",
                        bytesText(sum.*c.field));
  }
  os << "\n";
}

// Poplar's showVarStorage: how the variables' bytes split by liveness.
void printVariableStorage(std::ostream &os, const Executable &exe) {
  std::uint64_t bytes[2] = {0, 0};
  std::size_t count[2] = {0, 0};
  for (const VariableInfo &v : exe.variables) {
    bytes[v.alwaysLive ? 0 : 1] += v.bytes;
    ++count[v.alwaysLive ? 0 : 1];
  }
  os << "Variable Storage:\n"
     << fmt::format("  {:<30}{} in {} variables\n",
                    "Always live:", bytesText(bytes[0]),
                    groupedNumber(count[0]))
     << fmt::format("  {:<30}{} in {} variables\n",
                    "Not always live:", bytesText(bytes[1]),
                    groupedNumber(count[1]));
}

void printVariables(std::ostream &os, const Executable &exe,
                    std::size_t limit) {
  std::vector<std::size_t> order(exe.variables.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  const std::size_t n = std::min(limit, order.size());
  std::partial_sort(order.begin(), order.begin() + n, order.end(),
                    [&](std::size_t a, std::size_t b) {
                      const auto &x = exe.variables[a], &y = exe.variables[b];
                      return x.bytes != y.bytes ? x.bytes > y.bytes : a < b;
                    });
  printVariableStorage(os, exe);
  os << fmt::format("  Largest variables ({} of {}):\n", n, order.size())
     << fmt::format("    {:>16} {:>6}  {:<14} {:<16} {:<18} {}\n", "bytes",
                    "tiles", "type", "shape", "live", "name");
  for (std::size_t i = 0; i < n; ++i) {
    const VariableInfo &v = exe.variables[order[i]];
    const std::string live =
        v.alwaysLive ? "always"
                     : fmt::format("steps {}-{}", v.liveBegin, v.liveEnd);
    os << fmt::format("    {:>16} {:>6}  {:<14} {:<16} {:<18} {}\n",
                      groupedNumber(v.bytes), v.tiles, typeName(v.type),
                      shapeText(exe.variableShape(v)), live,
                      exe.variableName(v));
  }
  os << "\n";
}

// Per-IPU values as "1,000 / 2,000" for the tables.
std::string perIpuText(const std::vector<std::uint64_t> &values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i)
      out += " / ";
    out += groupedNumber(values[i]);
  }
  return out;
}

// One row of the step tables: step, kind, runs, cycles of all its runs.
void printStepRow(std::ostream &os, const Executable &exe,
                  const ExecutionCounts &counts, std::uint32_t s) {
  auto c = stepCycles(exe, s);
  for (auto &x : c)
    x *= countOf(counts, s);
  os << fmt::format(
      "    {:>7}  {:<13} {:>12} {:>24}  {}\n", s, kindName(exe.steps[s].kind),
      groupedNumber(countOf(counts, s)), perIpuText(c), stepName(exe, s));
}

void printExecution(std::ostream &os, const Executable &exe,
                    const ExecutionCounts &counts,
                    const SummaryOptions &options) {
  const ExecutionTotals t = executionTotals(exe, counts);
  os << "Execution:\n"
     << fmt::format("  {:<30}{}\n", "Runs:", groupedNumber(counts.runs))
     << fmt::format("  {:<30}{}\n",
                    "Steps executed:", groupedNumber(t.stepsExecuted));
  const std::uint64_t elapsed = elapsedCycles(exe, counts);
  const std::string elapsedTime = durationText(elapsed, exe.clockHz);
  os << fmt::format("  {:<30}{}{}\n", "Elapsed cycles:", groupedNumber(elapsed),
                    elapsedTime.empty() ? "" : " (" + elapsedTime + ")");
  const HostCycles &h = counts.hostCycles;
  const std::uint64_t inclusive = hostInclusiveCycles(exe, counts);
  const std::string inclusiveTime = durationText(inclusive, exe.clockHz);
  os << fmt::format("  {:<30}{} (runs {}, stream set-ups {}, callbacks {})\n",
                    "Host-side cycles:", groupedNumber(h.total()),
                    groupedNumber(h.runs), groupedNumber(h.streamSetups),
                    groupedNumber(h.callbacks))
     << fmt::format("  {:<30}{}{}\n",
                    "Host-inclusive cycles:", groupedNumber(inclusive),
                    inclusiveTime.empty() ? "" : " (" + inclusiveTime + ")")
     << "  Total cycles:\n";
  for (std::size_t ipu = 0; ipu < t.total.size(); ++ipu) {
    const std::string time = durationText(t.total[ipu], exe.clockHz);
    os << fmt::format("    IPU {}: {} cycles{}\n", ipu,
                      groupedNumber(t.total[ipu]),
                      time.empty() ? "" : " (" + time + ")");
  }
  os << "  Cycles by step kind:\n    " << fmt::format("{:<10}", "");
  for (std::size_t ipu = 0; ipu < t.total.size(); ++ipu)
    os << fmt::format("{:>26}", fmt::format("IPU {}", ipu));
  os << "\n";
  for (std::size_t g = 0; g < kNumGroups; ++g) {
    os << fmt::format("    {:<10}", kGroupNames[g]);
    for (std::size_t ipu = 0; ipu < t.total.size(); ++ipu)
      os << fmt::format("{:>17} ({:5.1f}%)", groupedNumber(t.byGroup[g][ipu]),
                        percent(t.byGroup[g][ipu], t.total[ipu]));
    os << "\n";
  }
  const auto top = costliestSteps(exe, counts, options.maxSteps, false);
  if (top.empty()) {
    os << "  No steps have run.\n";
    return;
  }
  os << fmt::format("  Costliest steps ({} of {} executed; cycles {}):\n",
                    top.size(), t.distinctSteps,
                    exe.numIPUs > 1 ? "per IPU" : "in all runs")
     << fmt::format("    {:>7}  {:<13} {:>12} {:>24}  {}\n", "step", "kind",
                    "runs", "cycles", "name");
  for (std::uint32_t s : top)
    printStepRow(os, exe, counts, s);
}

// Poplar's showExecutionSteps: every step that ran, in program order.
void printExecutionSteps(std::ostream &os, const Executable &exe,
                         const ExecutionCounts &counts) {
  std::vector<std::uint32_t> ran;
  for (std::uint32_t s = 0; s < exe.steps.size(); ++s)
    if (countOf(counts, s))
      ran.push_back(s);
  os << fmt::format("  Execution steps ({} of {} ran; cycles {}):\n",
                    ran.size(), exe.steps.size(),
                    exe.numIPUs > 1 ? "per IPU" : "in all runs")
     << fmt::format("    {:>7}  {:<13} {:>12} {:>24}  {}\n", "step", "kind",
                    "runs", "cycles", "name");
  for (std::uint32_t s : ran)
    printStepRow(os, exe, counts, s);
}

} // namespace

nlohmann::json makeProfile(const Executable &exe,
                           const ExecutionCounts *counts) {
  json graph = {{"memory", memoryJson(exe)},
                {"variables", variablesJson(exe)},
                {"verticesPerTile", verticesPerTile(exe)},
                {"computeSets", computeSetsJson(exe)},
                {"steps", stepsJson(exe)}};
  json profile = {{"format", "tessera-profile"},
                  {"version", 1},
                  {"target", targetJson(exe)},
                  {"graph", std::move(graph)},
                  {"compilation", compilationJson(exe)}};
  if (counts)
    profile["execution"] = executionJson(exe, *counts);
  return profile;
}

void writeProfile(const std::string &directory, const Executable &exe,
                  const ExecutionCounts *counts) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec || !std::filesystem::is_directory(directory))
    throw Error("cannot write the profile to folder \"" + directory + "\": " +
                (ec ? ec.message() : std::string("it is not a folder")) +
                "; set autoReport.directory to a folder you can write to");
  const nlohmann::json profile = makeProfile(exe, counts);
  const std::filesystem::path dir(directory);
  writeFileAtomically((dir / "profile.json").string(), profile.dump());
  const std::vector<std::uint8_t> debug =
      nlohmann::json::to_cbor(makeDebugInfo(profile));
  writeFileAtomically((dir / "debug.cbor").string(),
                      std::string(debug.begin(), debug.end()));
}

void printProfileSummary(std::ostream &os, const Executable &exe,
                         const ExecutionCounts &counts,
                         const OptionFlags &options) {
  SummaryOptions o;
  OptionParser parser("profile summary");
  parser.add("showVarStorage", o.showVarStorage);
  parser.add("maxSteps", o.maxSteps);
  parser.add("maxVariables", o.maxVariables);
  parser.add("showExecutionSteps", o.showExecutionSteps);
  parser.add("showPerIpuMemoryUsage", o.showPerIpuMemoryUsage);
  parser.parse(options);
  checkCounts(exe, counts);

  // Poplar's order: target, graph, memory (per IPU last), variables,
  // execution (every step last).
  printTarget(os, exe);
  printCompilation(os, exe);
  printMemory(os, exe);
  if (o.showPerIpuMemoryUsage)
    printPerIpuMemory(os, exe);
  else
    os << "\n";
  if (o.showVarStorage)
    printVariables(os, exe, o.maxVariables);
  printExecution(os, exe, counts, o);
  if (o.showExecutionSteps)
    printExecutionSteps(os, exe, counts);
}

} // namespace tessera
