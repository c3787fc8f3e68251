// Reading and checking profile.json. The model and the page index arrays by
// tile, IPU and step without further checks, so every size they rely on is
// verified here once, with an error that names the key.
#include "tessera/report/Report.hpp"

#include "tessera/support/File.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <string_view>
#include <system_error>

namespace tessera::report {
namespace {

using nlohmann::json;

constexpr std::string_view kRegenerate =
    "; write a fresh one by running the program with the engine option "
    "autoReport.all (or TESSERA_ENGINE_OPTIONS='{\"autoReport.all\":"
    "\"true\"}')";

constexpr std::array<std::string_view, 7> kTileColumns = {
    "alwaysLive",  "notAlwaysLive", "constants", "temporaries",
    "vertexState", "code",          "total"};
constexpr std::array<std::string_view, 5> kGroups = {"compute", "exchange",
                                                     "sync", "host", "control"};

// A whole number of at least 0. Parsed JSON holds these as unsigned, but a
// profile edited or made in memory may hold them as signed.
bool isCount(const json &value) {
  return value.is_number_unsigned() ||
         (value.is_number_integer() && value.get<std::int64_t>() >= 0);
}

std::string describe(const json &value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40)
    text.replace(37, std::string::npos, "...");
  return fmt::format("{} {}", value.type_name(), text);
}

class Checker {
public:
  explicit Checker(std::string_view where) : where_(where) {}

  [[noreturn]] void fail(const std::string &path,
                         const std::string &what) const {
    throw ReportError(
        fmt::format("{}: {} {}{}", where_, path, what, kRegenerate));
  }

  const json &member(const json &parent, std::string_view key,
                     const std::string &parentPath) const {
    const std::string path = parentPath.empty()
                                 ? std::string(key)
                                 : parentPath + "." + std::string(key);
    auto it = parent.find(key);
    if (it == parent.end())
      fail(path, "is missing");
    return *it;
  }

  const json &object(const json &parent, std::string_view key,
                     const std::string &parentPath) const {
    const json &v = member(parent, key, parentPath);
    if (!v.is_object())
      fail(join(parentPath, key), "must be an object, not " + describe(v));
    return v;
  }

  // An array, of \p size entries unless size is npos.
  const json &array(const json &parent, std::string_view key,
                    const std::string &parentPath,
                    std::size_t size = std::string::npos) const {
    const json &v = member(parent, key, parentPath);
    if (!v.is_array())
      fail(join(parentPath, key), "must be an array, not " + describe(v));
    if (size != std::string::npos && v.size() != size)
      fail(join(parentPath, key),
           fmt::format("has {} entries but the target needs {}", v.size(),
                       size));
    return v;
  }

  std::uint64_t count(const json &parent, std::string_view key,
                      const std::string &parentPath) const {
    const json &v = member(parent, key, parentPath);
    if (!isCount(v))
      fail(join(parentPath, key),
           "must be a whole number of at least 0, not " + describe(v));
    return v.get<std::uint64_t>();
  }

  void string(const json &parent, std::string_view key,
              const std::string &parentPath) const {
    const json &v = member(parent, key, parentPath);
    if (!v.is_string())
      fail(join(parentPath, key), "must be a string, not " + describe(v));
  }

  void boolean(const json &parent, std::string_view key,
               const std::string &parentPath) const {
    const json &v = member(parent, key, parentPath);
    if (!v.is_boolean())
      fail(join(parentPath, key), "must be true or false, not " + describe(v));
  }

  // An array of \p size whole numbers.
  void counts(const json &parent, std::string_view key,
              const std::string &parentPath, std::size_t size) const {
    const json &a = array(parent, key, parentPath, size);
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!isCount(a[i]))
        fail(fmt::format("{}[{}]", join(parentPath, key), i),
             "must be a whole number of at least 0, not " + describe(a[i]));
  }

  static std::string join(const std::string &parentPath, std::string_view key) {
    return parentPath.empty() ? std::string(key)
                              : parentPath + "." + std::string(key);
  }

private:
  std::string where_;
};

void checkHeader(const Checker &c, const json &p, std::string_view where) {
  if (!p.is_object())
    throw ReportError(fmt::format("{}: a profile is a JSON object, not {}{}",
                                  where, describe(p), kRegenerate));
  const json &format = c.member(p, "format", "");
  if (format != "tessera-profile")
    throw ReportError(fmt::format(
        "{}: not a Tessera profile (its \"format\" is {}, not "
        "\"tessera-profile\"); give the folder a Tessera engine wrote its "
        "profile.json into",
        where, describe(format)));
  const json &version = c.member(p, "version", "");
  if (!version.is_number_integer() || version.get<long>() != kProfileVersion)
    throw ReportError(fmt::format(
        "{}: profile format version {} is not one this tessera reads (it "
        "reads version {}); render it with the tessera that wrote it, or "
        "rerun the program with this one to write a version {} profile",
        where, version.dump(), kProfileVersion, kProfileVersion));
}

void checkMemory(const Checker &c, const json &graph, std::size_t numTiles) {
  const json &memory = c.object(graph, "memory", "graph");
  c.count(memory, "total", "graph.memory");
  const json &byCategory = c.object(memory, "byCategory", "graph.memory");
  const json &perTile = c.object(memory, "perTile", "graph.memory");
  for (std::string_view key : kTileColumns) {
    if (key != "total")
      c.count(byCategory, key, "graph.memory.byCategory");
    c.counts(perTile, key, "graph.memory.perTile", numTiles);
  }
}

void checkVariables(const Checker &c, const json &graph) {
  const json &vars = c.array(graph, "variables", "graph");
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const std::string path = fmt::format("graph.variables[{}]", i);
    if (!vars[i].is_object())
      c.fail(path, "must be an object, not " + describe(vars[i]));
    c.string(vars[i], "name", path);
    c.string(vars[i], "type", path);
    c.array(vars[i], "shape", path);
    c.count(vars[i], "bytes", path);
    c.count(vars[i], "tiles", path);
    c.boolean(vars[i], "alwaysLive", path);
    c.count(vars[i], "liveBegin", path);
    c.count(vars[i], "liveEnd", path);
  }
}

void checkSteps(const Checker &c, const json &graph, std::size_t numIPUs) {
  const json &sets = c.array(graph, "computeSets", "graph");
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const std::string path = fmt::format("graph.computeSets[{}]", i);
    c.string(sets[i], "name", path);
    c.count(sets[i], "vertices", path);
  }
  const json &steps = c.array(graph, "steps", "graph");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::string path = fmt::format("graph.steps[{}]", i);
    if (!steps[i].is_object())
      c.fail(path, "must be an object, not " + describe(steps[i]));
    c.string(steps[i], "kind", path);
    c.string(steps[i], "name", path);
    const json &group = c.member(steps[i], "group", path);
    if (std::find(kGroups.begin(), kGroups.end(),
                  group.is_string() ? group.get<std::string>() : "") ==
        kGroups.end())
      c.fail(path + ".group", "must be one of compute, exchange, sync, host, "
                              "control, not " +
                                  describe(group));
    c.counts(steps[i], "ipuCycles", path, numIPUs);
    c.count(steps[i], "bytes", path);
    if (steps[i].contains("scope"))
      c.string(steps[i], "scope", path);
    if (steps[i].contains("computeSet") &&
        c.count(steps[i], "computeSet", path) >= sets.size())
      c.fail(path + ".computeSet",
             fmt::format("is {} but there are {} compute sets",
                         steps[i]["computeSet"].dump(), sets.size()));
  }
}

void checkStepRefs(const Checker &c, const json &list, const std::string &name,
                   std::size_t numSteps, std::size_t numIPUs, bool traced) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("{}[{}]", name, i);
    if (!list[i].is_object())
      c.fail(path, "must be an object, not " + describe(list[i]));
    if (c.count(list[i], "step", path) >= numSteps)
      c.fail(path + ".step", fmt::format("is {} but graph.steps has {} steps",
                                         list[i]["step"].dump(), numSteps));
    c.counts(list[i], "cycles", path, numIPUs);
    if (traced)
      c.counts(list[i], "start", path, numIPUs);
    else
      c.count(list[i], "count", path);
  }
}

void checkExecution(const Checker &c, const json &p, std::size_t numIPUs) {
  auto it = p.find("execution");
  if (it == p.end())
    return; // a graph-only profile
  const json &e = *it;
  if (!e.is_object())
    c.fail("execution", "must be an object, not " + describe(e));
  c.count(e, "runs", "execution");
  c.count(e, "stepsExecuted", "execution");
  if (e.contains("elapsedCycles")) // absent from older profiles
    c.count(e, "elapsedCycles", "execution");
  if (e.contains("hostInclusiveCycles")) // absent from older profiles
    c.count(e, "hostInclusiveCycles", "execution");
  c.counts(e, "totalCycles", "execution", numIPUs);
  const json &byKind = c.object(e, "cyclesByKind", "execution");
  for (std::string_view g : kGroups)
    c.counts(byKind, g, "execution.cyclesByKind", numIPUs);
  c.boolean(e, "traceComplete", "execution");
  const std::size_t numSteps = p["graph"]["steps"].size();
  checkStepRefs(c, c.array(e, "steps", "execution"), "execution.steps",
                numSteps, numIPUs, false);
  checkStepRefs(c, c.array(e, "trace", "execution"), "execution.trace",
                numSteps, numIPUs, true);
}

} // namespace

void checkProfile(const json &profile, std::string_view where) {
  Checker c(where);
  checkHeader(c, profile, where);
  const json &target = c.object(profile, "target", "");
  c.string(target, "arch", "target");
  const std::uint64_t numIPUs = c.count(target, "numIPUs", "target");
  const std::uint64_t tilesPerIPU = c.count(target, "tilesPerIPU", "target");
  c.count(target, "bytesPerTile", "target");
  if (numIPUs == 0 || tilesPerIPU == 0)
    c.fail("target", fmt::format("has {} IPUs of {} tiles; a target has at "
                                 "least one of each",
                                 numIPUs, tilesPerIPU));
  if (!c.member(target, "clockHz", "target").is_number())
    c.fail("target.clockHz",
           "must be a number, not " + describe(target["clockHz"]));
  const json &graph = c.object(profile, "graph", "");
  checkMemory(c, graph, numIPUs * tilesPerIPU);
  checkVariables(c, graph);
  checkSteps(c, graph, numIPUs);
  checkExecution(c, profile, numIPUs);
}

json loadProfile(const std::string &directory) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(directory, ec))
    throw ReportError(fmt::format(
        "profile folder \"{}\" does not exist; give the folder the engine "
        "wrote profile.json into (autoReport.directory, the current folder "
        "by default)",
        directory));
  if (!fs::is_directory(directory, ec))
    throw ReportError(fmt::format(
        "\"{}\" is not a folder; give the folder holding profile.json, not "
        "a file",
        directory));
  const std::string path = (fs::path(directory) / "profile.json").string();
  if (!fs::exists(path, ec))
    throw ReportError(fmt::format("folder \"{}\" has no profile.json{}",
                                  directory, kRegenerate));
  std::string text;
  try {
    text = readFile(path);
  } catch (const Error &e) {
    throw ReportError(fmt::format("cannot read {}: {}", path, e.what()));
  }
  // A profile nests a few levels; a hostile one nesting thousands would
  // overflow the stack of everything that walks it recursively (printing a
  // value, comparing), so the parser refuses it as it goes.
  constexpr int kMaxDepth = 64;
  const json::parser_callback_t depthLimit = [&](int depth, json::parse_event_t,
                                                 json &) {
    if (depth > kMaxDepth)
      throw ReportError(fmt::format(
          "{} nests arrays and objects more than {} deep, which no profile "
          "does; it is not a profile the engine wrote{}",
          path, kMaxDepth, kRegenerate));
    return true;
  };
  json profile;
  try {
    profile = json::parse(text, depthLimit);
  } catch (const json::parse_error &e) {
    throw ReportError(fmt::format(
        "{} is not valid JSON (byte {} of {}: {}); it may be truncated or "
        "damaged{}",
        path, e.byte, text.size(), e.what(), kRegenerate));
  } catch (const json::out_of_range &e) {
    // A number too large for a double (1e400) parses as JSON but has no
    // value; no engine writes one.
    throw ReportError(fmt::format(
        "{} holds a number out of range ({}); it is not a profile the engine "
        "wrote{}",
        path, e.what(), kRegenerate));
  }
  checkProfile(profile, path);
  return profile;
}

} // namespace tessera::report
