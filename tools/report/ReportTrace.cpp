// The execution trace and the operations summary of the report model.
// Cycles come straight from the profile (the compiler's estimates times run
// counts); nothing is re-estimated, so the page agrees with the engine's
// own cycle counts and printProfileSummary.
#include "ReportInternal.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace tessera::report::detail {
namespace {

using nlohmann::json;

// Gives each distinct label one index, so trace blocks carry a number
// rather than repeating their names.
class LabelTable {
public:
  std::size_t index(const std::string &label) {
    auto [it, added] = indexOf_.try_emplace(label, labels_.size());
    if (added)
      labels_.push_back(label);
    return it->second;
  }
  json labels() const { return labels_; }

private:
  std::map<std::string, std::size_t> indexOf_;
  std::vector<std::string> labels_;
};

struct Lane {
  json blocks = json::array();
  /// Runs of consecutive steps of one scope (a named program, as a
  /// pipeline's stage passes): [scope label, start, end, steps].
  json scopes = json::array();
  std::array<std::uint64_t, kGroups.size()> byGroup{};
  std::uint64_t cycles = 0, drawnCycles = 0, end = 0;
  std::size_t entries = 0, hidden = 0;
};

json laneJson(std::size_t ipu, const Lane &lane) {
  json byGroup = json::object();
  for (std::size_t g = 0; g < kGroups.size(); ++g)
    byGroup[std::string(kGroups[g])] = lane.byGroup[g];
  return {{"ipu", ipu},
          {"blocks", lane.blocks},
          {"scopes", lane.scopes},
          {"byGroup", std::move(byGroup)},
          {"cycles", lane.cycles},
          {"drawnCycles", lane.drawnCycles},
          {"end", lane.end},
          {"entries", lane.entries},
          {"hiddenBlocks", lane.hidden}};
}

// Steps of no scope (a pipeline's transfers) do not end a run: a lane
// lists each pass once, with the work it finishes after them.
void addToScope(json &scopes, std::size_t scope, std::uint64_t start,
                std::uint64_t end) {
  if (!scopes.empty() && scopes.back()[0] == scope) {
    json &run = scopes.back();
    run[2] = std::max(run[2].get<std::uint64_t>(), end);
    run[3] = run[3].get<std::size_t>() + 1;
    return;
  }
  scopes.push_back({scope, start, end, 1});
}

} // namespace

json traceModel(const json &profile, const ReportOptions &options) {
  if (!profile.contains("execution"))
    return {{"available", false}};
  const json &execution = profile["execution"];
  const json &trace = execution["trace"];
  const std::size_t numIPUs = profile["target"]["numIPUs"];
  std::vector<Lane> lanes(numIPUs);
  LabelTable labels;
  for (const json &entry : trace) {
    const std::size_t step = entry["step"];
    const std::size_t group = groupIndex(profile["graph"]["steps"][step]);
    const std::size_t label = labels.index(stepLabel(profile, step));
    const json &info = profile["graph"]["steps"][step];
    std::optional<std::size_t> scope;
    if (info.contains("scope"))
      scope = labels.index(info["scope"].get<std::string>());
    for (std::size_t ipu = 0; ipu < numIPUs; ++ipu) {
      const std::uint64_t cycles = entry["cycles"][ipu];
      if (cycles == 0)
        continue; // the IPU takes no part in this step
      const std::uint64_t start = entry["start"][ipu];
      Lane &lane = lanes[ipu];
      ++lane.entries;
      lane.cycles += cycles;
      lane.byGroup[group] += cycles;
      lane.end = std::max(lane.end, start + cycles);
      if (scope)
        addToScope(lane.scopes, *scope, start, start + cycles);
      if (lane.blocks.size() >= options.maxTraceBlocks) {
        ++lane.hidden;
        continue;
      }
      lane.drawnCycles += cycles;
      lane.blocks.push_back({start, cycles, group, label, step});
    }
  }
  json lanesJson = json::array();
  for (std::size_t ipu = 0; ipu < numIPUs; ++ipu)
    lanesJson.push_back(laneJson(ipu, lanes[ipu]));
  return {{"available", true},
          {"complete", execution["traceComplete"]},
          {"traceEntries", trace.size()},
          {"stepsExecuted", execution["stepsExecuted"]},
          {"runs", execution["runs"]},
          {"totalCycles", execution["totalCycles"]},
          {"cyclesByKind", execution["cyclesByKind"]},
          {"groups", kGroups},
          {"labels", labels.labels()},
          {"lanes", std::move(lanesJson)}};
}

namespace {

struct OpRow {
  std::set<std::size_t> steps, computeSets;
  std::uint64_t runs = 0, cycles = 0, exchangeBytes = 0, vertices = 0;
  std::vector<std::uint64_t> ipuCycles;
  std::array<std::uint64_t, kGroups.size()> byGroup{};
  std::uint64_t memoryBytes = 0;
  std::size_t variables = 0;
};

// Adds one step, run \p count times with \p cycles in all (per IPU), to
// its row. A step's cost is its slowest IPU's cycles: the most it can add
// to the elapsed time.
void addStep(OpRow &row, const json &step, std::size_t index,
             std::uint64_t count, const json &cycles) {
  if (row.ipuCycles.empty())
    row.ipuCycles.assign(cycles.size(), 0);
  std::uint64_t slowest = 0;
  for (std::size_t ipu = 0; ipu < cycles.size(); ++ipu) {
    row.ipuCycles[ipu] += cycles[ipu].get<std::uint64_t>();
    slowest = std::max(slowest, cycles[ipu].get<std::uint64_t>());
  }
  row.steps.insert(index);
  row.runs += count;
  row.cycles += slowest;
  row.byGroup[groupIndex(step)] += slowest;
  row.exchangeBytes += count * step["bytes"].get<std::uint64_t>();
  if (step.contains("computeSet") &&
      row.computeSets.insert(step["computeSet"].get<std::size_t>()).second)
    row.vertices += step.value("vertices", std::uint64_t(0));
}

// The rows a variable's bytes count towards: its operation's row, or, by
// debug name, the row of its own name and of each enclosing path
// ("a/b/c" counts towards "a/b/c", "a/b" and "a").
std::vector<std::string> ownerKeys(const std::string &var, bool byOperation) {
  if (byOperation)
    return {operationOf(var)};
  std::vector<std::string> keys{var};
  for (std::size_t slash = var.find('/'); slash != std::string::npos;
       slash = var.find('/', slash + 1))
    keys.push_back(var.substr(0, slash));
  return keys;
}

json rowJson(const std::string &name, const OpRow &row, std::uint64_t total,
             std::size_t numIPUs) {
  json byGroup = json::object();
  for (std::size_t g = 0; g < kGroups.size(); ++g)
    byGroup[std::string(kGroups[g])] = row.byGroup[g];
  return {{"name", name},
          {"steps", row.steps.size()},
          {"runs", row.runs},
          {"cycles", row.cycles},
          {"percent", total ? 100.0 * double(row.cycles) / double(total) : 0.0},
          {"ipuCycles", row.ipuCycles.empty()
                            ? std::vector<std::uint64_t>(numIPUs, 0)
                            : row.ipuCycles},
          {"byGroup", std::move(byGroup)},
          {"exchangeBytes", row.exchangeBytes},
          {"vertices", row.vertices},
          {"memoryBytes", row.memoryBytes},
          {"variables", row.variables}};
}

} // namespace

json operationsModel(const json &profile, bool byOperation) {
  const json &steps = profile["graph"]["steps"];
  const bool executed = profile.contains("execution");
  std::map<std::string, OpRow> rows;
  auto keyOf = [&](std::size_t step) {
    const std::string label = stepLabel(profile, step);
    return byOperation ? operationOf(label) : label;
  };
  if (executed) {
    for (const json &s : profile["execution"]["steps"]) {
      const std::size_t i = s["step"];
      addStep(rows[keyOf(i)], steps[i], i, s["count"], s["cycles"]);
    }
  } else {
    // Without execution facts, one run of every step.
    for (std::size_t i = 0; i < steps.size(); ++i)
      addStep(rows[keyOf(i)], steps[i], i, 1, steps[i]["ipuCycles"]);
  }
  for (const json &v : profile["graph"]["variables"]) {
    const std::string name = v["name"];
    if (byOperation)
      rows[operationOf(name)]; // an operation may have memory but no steps
    for (const std::string &key : ownerKeys(name, byOperation)) {
      auto it = rows.find(key);
      if (it == rows.end())
        continue;
      it->second.memoryBytes += v["bytes"].get<std::uint64_t>();
      ++it->second.variables;
    }
  }
  std::uint64_t total = 0;
  for (const auto &[key, row] : rows)
    total += row.cycles;
  std::vector<const std::pair<const std::string, OpRow> *> order;
  for (const auto &entry : rows)
    order.push_back(&entry);
  std::stable_sort(order.begin(), order.end(), [](auto *a, auto *b) {
    if (a->second.cycles != b->second.cycles)
      return a->second.cycles > b->second.cycles;
    return a->second.memoryBytes > b->second.memoryBytes;
  });
  json out = json::array();
  const std::size_t numIPUs = profile["target"]["numIPUs"];
  for (const auto *entry : order)
    out.push_back(rowJson(entry->first, entry->second, total, numIPUs));
  return {{"fromExecution", executed},
          {"totalCycles", total},
          {"rows", std::move(out)}};
}

} // namespace tessera::report::detail

namespace tessera::report {

std::string scopeListing(const nlohmann::json &model) {
  std::string out;
  const nlohmann::json &trace = model["trace"];
  if (!trace.value("available", false))
    return out;
  for (const nlohmann::json &lane : trace["lanes"]) {
    if (lane["scopes"].empty())
      continue;
    out += "IPU " + std::to_string(lane["ipu"].get<std::size_t>()) + ":\n";
    for (const nlohmann::json &run : lane["scopes"])
      out += "  " + std::to_string(run[1].get<std::uint64_t>()) + "  " +
             trace["labels"][run[0].get<std::size_t>()].get<std::string>() +
             "\n";
  }
  return out;
}

} // namespace tessera::report
