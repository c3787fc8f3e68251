// The report model: every figure the page shows is computed here, in C++
// where it is tested, so the page's script only lays out and draws. The
// profile has been checked (checkProfile) before any function here runs, so
// indexes by tile, IPU and step are in range.
#include "ReportInternal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <string_view>

namespace tessera::report {

namespace detail {

std::size_t groupIndex(const nlohmann::json &step) {
  const std::string g = step["group"].get<std::string>();
  return static_cast<std::size_t>(std::find(kGroups.begin(), kGroups.end(), g) -
                                  kGroups.begin());
}

std::string stepLabel(const nlohmann::json &profile, std::size_t step) {
  const nlohmann::json &s = profile["graph"]["steps"][step];
  std::string name = s["name"].get<std::string>();
  if (!name.empty())
    return name;
  if (s.contains("computeSet")) {
    const std::size_t cs = s["computeSet"];
    name = profile["graph"]["computeSets"][cs]["name"].get<std::string>();
    if (!name.empty())
      return name;
  }
  return "(" + s["kind"].get<std::string>() + ")";
}

std::string operationOf(const std::string &name) {
  return name.substr(0, name.find('/'));
}

} // namespace detail

namespace {

using detail::operationsModel;
using detail::traceModel;
using nlohmann::json;

std::uint64_t maxOf(const json &values) {
  std::uint64_t m = 0;
  for (const json &v : values)
    m = std::max(m, v.get<std::uint64_t>());
  return m;
}

struct CategoryName {
  std::string_view key, label;
};
constexpr std::array<CategoryName, 6> kCategories = {{
    {"alwaysLive", "Always-live variables"},
    {"notAlwaysLive", "Not-always-live variables"},
    {"constants", "Constants"},
    {"temporaries", "Temporaries"},
    {"vertexState", "Vertex state"},
    {"code", "Code"},
}};
json targetModel(const json &profile) {
  json t = profile["target"];
  t["numTiles"] =
      t["numIPUs"].get<std::uint64_t>() * t["tilesPerIPU"].get<std::uint64_t>();
  return t;
}

json worstTiles(const json &profile, std::size_t limit) {
  const json &perTile = profile["graph"]["memory"]["perTile"];
  const json &totals = perTile["total"];
  const std::uint64_t tilesPerIPU = profile["target"]["tilesPerIPU"];
  const std::uint64_t capacity = profile["target"]["bytesPerTile"];
  std::vector<std::size_t> order;
  for (std::size_t t = 0; t < totals.size(); ++t)
    if (totals[t].get<std::uint64_t>() > 0)
      order.push_back(t);
  const std::size_t n = std::min(limit, order.size());
  std::partial_sort(order.begin(), order.begin() + n, order.end(),
                    [&](std::size_t a, std::size_t b) {
                      const auto x = totals[a].get<std::uint64_t>();
                      const auto y = totals[b].get<std::uint64_t>();
                      return x != y ? x > y : a < b;
                    });
  json out = json::array();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t t = order[i];
    const std::uint64_t bytes = totals[t];
    json categories = json::object();
    for (const CategoryName &c : kCategories)
      categories[std::string(c.key)] = perTile[std::string(c.key)][t];
    out.push_back({{"tile", t},
                   {"ipu", t / tilesPerIPU},
                   {"tileOnIpu", t % tilesPerIPU},
                   {"bytes", bytes},
                   {"percentOfTile",
                    capacity ? 100.0 * double(bytes) / double(capacity) : 0.0},
                   {"categories", std::move(categories)}});
  }
  return out;
}

json memoryModel(const json &profile, const ReportOptions &options) {
  const json &memory = profile["graph"]["memory"];
  const std::uint64_t numIPUs = profile["target"]["numIPUs"];
  const std::uint64_t tilesPerIPU = profile["target"]["tilesPerIPU"];
  json categories = json::array();
  for (const CategoryName &c : kCategories)
    categories.push_back({{"key", c.key},
                          {"label", c.label},
                          {"bytes", memory["byCategory"][std::string(c.key)]}});
  json perIpu = json::array();
  const json &totals = memory["perTile"]["total"];
  for (std::uint64_t ipu = 0; ipu < numIPUs; ++ipu) {
    std::uint64_t sum = 0, maxBytes = 0, maxTile = ipu * tilesPerIPU, used = 0;
    for (std::uint64_t t = ipu * tilesPerIPU; t < (ipu + 1) * tilesPerIPU;
         ++t) {
      const std::uint64_t b = totals[t];
      sum += b;
      used += b > 0;
      if (b > maxBytes) {
        maxBytes = b;
        maxTile = t;
      }
    }
    perIpu.push_back({{"ipu", ipu},
                      {"bytes", sum},
                      {"tilesUsed", used},
                      {"maxTile", maxTile},
                      {"maxTileBytes", maxBytes}});
  }
  return {{"total", memory["total"]},
          {"categories", std::move(categories)},
          {"perTile", memory["perTile"]},
          {"perIpu", std::move(perIpu)},
          {"worstTiles", worstTiles(profile, options.worstTiles)}};
}

json variablesModel(const json &profile, const ReportOptions &options) {
  const json &vars = profile["graph"]["variables"];
  std::vector<std::size_t> order(vars.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) {
                     return vars[a]["bytes"].get<std::uint64_t>() >
                            vars[b]["bytes"].get<std::uint64_t>();
                   });
  json rows = json::array();
  std::uint64_t total = 0, otherBytes = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const json &v = vars[order[i]];
    total += v["bytes"].get<std::uint64_t>();
    if (i >= options.maxVariables) {
      otherBytes += v["bytes"].get<std::uint64_t>();
      continue;
    }
    rows.push_back({{"name", v["name"]},
                    {"type", v["type"]},
                    {"shape", v["shape"]},
                    {"bytes", v["bytes"]},
                    {"tiles", v["tiles"]},
                    {"alwaysLive", v["alwaysLive"]},
                    {"liveBegin", v["liveBegin"]},
                    {"liveEnd", v["liveEnd"]}});
  }
  return {{"count", vars.size()},
          {"totalBytes", total},
          {"rows", std::move(rows)},
          {"otherCount",
           order.size() - std::min(order.size(), options.maxVariables)},
          {"otherBytes", otherBytes}};
}

// Bytes of variables live at each step: the always-live ones throughout,
// the others over their live range [liveBegin, liveEnd], both ends included
// (the compiler's layout treats the range as closed).
json livenessModel(const json &profile) {
  const json &vars = profile["graph"]["variables"];
  const std::size_t numSteps = profile["graph"]["steps"].size();
  std::uint64_t always = 0;
  std::vector<std::int64_t> delta(numSteps + 1, 0);
  for (const json &v : vars) {
    const std::uint64_t bytes = v["bytes"];
    if (v["alwaysLive"].get<bool>()) {
      always += bytes;
      continue;
    }
    const std::size_t begin = v["liveBegin"];
    const std::size_t end =
        std::min(v["liveEnd"].get<std::size_t>(), numSteps - 1);
    if (numSteps == 0 || begin > end)
      continue;
    delta[begin] += static_cast<std::int64_t>(bytes);
    delta[end + 1] -= static_cast<std::int64_t>(bytes);
  }
  json perStep = json::array();
  std::int64_t live = 0;
  std::uint64_t peak = 0;
  std::size_t peakStep = 0;
  for (std::size_t s = 0; s < numSteps; ++s) {
    live += delta[s];
    const auto bytes = static_cast<std::uint64_t>(live);
    perStep.push_back(bytes);
    if (bytes > peak) {
      peak = bytes;
      peakStep = s;
    }
  }
  json atPeak = json::array();
  for (const json &v : vars)
    if (!v["alwaysLive"].get<bool>() && peak > 0 &&
        v["liveBegin"].get<std::size_t>() <= peakStep &&
        peakStep <= v["liveEnd"].get<std::size_t>())
      atPeak.push_back({{"name", v["name"]}, {"bytes", v["bytes"]}});
  std::stable_sort(atPeak.begin(), atPeak.end(),
                   [](const json &a, const json &b) {
                     return a["bytes"].get<std::uint64_t>() >
                            b["bytes"].get<std::uint64_t>();
                   });
  if (atPeak.size() > 10)
    atPeak.erase(atPeak.begin() + 10, atPeak.end());
  return {{"alwaysLiveBytes", always},
          {"notAlwaysLive", std::move(perStep)},
          {"peakStep", peakStep},
          {"peakBytes", peak + always},
          {"largestAtPeak", std::move(atPeak)}};
}

json summaryModel(const json &profile, const json &memory) {
  const json &target = profile["target"];
  const std::uint64_t numTiles = target["numIPUs"].get<std::uint64_t>() *
                                 target["tilesPerIPU"].get<std::uint64_t>();
  std::uint64_t used = 0, maxTile = 0, maxBytes = 0;
  const json &totals = memory["perTile"]["total"];
  for (std::size_t t = 0; t < totals.size(); ++t) {
    const std::uint64_t b = totals[t];
    used += b > 0;
    if (b > maxBytes) {
      maxBytes = b;
      maxTile = t;
    }
  }
  json s = {
      {"totalBytes", memory["total"]},
      {"capacityBytes", numTiles * target["bytesPerTile"].get<std::uint64_t>()},
      {"tilesUsed", used},
      {"maxTile", used ? json(maxTile) : json(nullptr)},
      {"maxTileBytes", maxBytes},
      {"variables", profile["graph"]["variables"].size()},
      {"computeSets", profile["graph"]["computeSets"].size()},
      {"steps", profile["graph"]["steps"].size()},
      {"hasExecution", profile.contains("execution")}};
  if (profile.contains("execution")) {
    const json &e = profile["execution"];
    s["runs"] = e["runs"];
    s["totalCycles"] = e["totalCycles"];
    s["maxCycles"] = maxOf(e["totalCycles"]);
    // Profiles written before the engine kept per-IPU clocks have no
    // elapsed figure; the busiest IPU's is what they reported as the time.
    s["elapsedCycles"] =
        e.contains("elapsedCycles") ? e["elapsedCycles"] : s["maxCycles"];
    // Older profiles have no host side: their time is the device's.
    s["hostInclusiveCycles"] = e.contains("hostInclusiveCycles")
                                   ? e["hostInclusiveCycles"]
                                   : s["elapsedCycles"];
  }
  return s;
}

} // namespace

json makeReportModel(const json &profile, const ReportOptions &options) {
  checkProfile(profile, options.source.empty() ? "profile" : options.source);
  const json &target = profile["target"];
  std::string title = options.title;
  if (title.empty())
    title = fmt::format("Tessera profile: {} x {}",
                        target["numIPUs"].get<std::uint64_t>(),
                        target["arch"].get<std::string>());
  json memory = memoryModel(profile, options);
  json summary = summaryModel(profile, memory);
  return {{"title", title},
          {"source", options.source},
          {"target", targetModel(profile)},
          {"summary", std::move(summary)},
          {"memory", std::move(memory)},
          {"variables", variablesModel(profile, options)},
          {"liveness", livenessModel(profile)},
          {"trace", traceModel(profile, options)},
          {"operations", operationsModel(profile, true)},
          {"debugNames", operationsModel(profile, false)}};
}

} // namespace tessera::report
