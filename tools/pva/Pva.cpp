// pva::openReport: fills the libpva-shaped classes from a checked
// profile.json (report::loadProfile verifies every size the report tool
// relies on) and an optional debug.cbor. Facts the check does not cover are
// read with json::at and typed getters, whose exceptions become ReportError
// naming the file, so a damaged report never reads out of bounds.
#include <pva/pva.hpp>

#include "tessera/report/Report.hpp"
#include "tessera/support/File.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace pva {

using nlohmann::json;

std::size_t ExecutionStep::slowest() const {
  return static_cast<std::size_t>(
      std::max_element(ipuCycles_.begin(), ipuCycles_.end()) -
      ipuCycles_.begin());
}

std::uint64_t ExecutionStep::cycles() const {
  return ipuCycles_.empty() ? 0 : ipuCycles_[slowest()];
}

std::uint64_t ExecutionStep::cyclesFrom() const {
  return ipuFrom_.empty() ? 0 : ipuFrom_[slowest()];
}

// A CBOR file nesting arrays thousands deep would overflow the stack of
// the recursive walks over the parsed value; no debug file nests more than
// a few levels, so the parser refuses deeper ones as it goes.
class DepthLimitedParser : public nlohmann::detail::json_sax_dom_parser<json> {
public:
  using Base = nlohmann::detail::json_sax_dom_parser<json>;
  DepthLimitedParser(json &result, const std::string &path)
      : Base(result), path_(path) {}
  bool start_object(std::size_t n) { return deeper() && Base::start_object(n); }
  bool start_array(std::size_t n) { return deeper() && Base::start_array(n); }
  bool end_object() { return --depth_, Base::end_object(); }
  bool end_array() { return --depth_, Base::end_array(); }

private:
  static constexpr int kMaxDepth = 16;
  bool deeper() {
    if (++depth_ > kMaxDepth)
      throw ReportError(fmt::format(
          "{} nests arrays and objects more than {} deep, which no debug-info "
          "file does; give the debug.cbor the engine wrote",
          path_, kMaxDepth));
    return true;
  }
  const std::string &path_;
  int depth_ = 0;
};

// Fills the classes (their friend).
struct Reader {
  static std::vector<std::uint64_t> counts(const json &array) {
    return array.get<std::vector<std::uint64_t>>();
  }

  static void target(Target &t, const json &j) {
    t.numIPUs_ = j.at("numIPUs").get<unsigned>();
    t.tilesPerIpu_ = j.at("tilesPerIPU").get<unsigned>();
    t.bytesPerTile_ = j.at("bytesPerTile").get<std::uint64_t>();
    t.clockFrequency_ = j.at("clockHz").get<double>();
    t.numReplicas_ = j.value("replicationFactor", 1u);
    t.type_ = j.at("arch").get<std::string>();
  }

  static void tiles(Compilation &c, const json &graph) {
    const json &perTile = graph.at("memory").at("perTile");
    const auto total = counts(perTile.at("total"));
    const auto alwaysLive = counts(perTile.at("alwaysLive"));
    const auto notAlwaysLive = counts(perTile.at("notAlwaysLive"));
    const auto constants = counts(perTile.at("constants"));
    const auto temporaries = counts(perTile.at("temporaries"));
    const auto vertexState = counts(perTile.at("vertexState"));
    const auto code = counts(perTile.at("code"));
    const auto vertices = counts(graph.at("verticesPerTile"));
    const std::size_t n = c.target_.numTiles();
    for (const auto *column : {&total, &alwaysLive, &notAlwaysLive, &constants,
                               &temporaries, &vertexState, &code, &vertices})
      if (column->size() != n)
        throw ReportError(fmt::format(
            "a per-tile array has {} entries for {} tiles", column->size(), n));
    c.tiles_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      Tile &t = c.tiles_[i];
      t.number_ = static_cast<unsigned>(i);
      t.ipu_ = static_cast<unsigned>(i / c.target_.tilesPerIpu());
      t.numVertices_ = vertices[i];
      c.graph_.numVertices_ += vertices[i];
      TileMemory &m = t.memory_;
      m.total_ = total[i];
      m.alwaysLive_ = alwaysLive[i];
      m.notAlwaysLive_ = notAlwaysLive[i];
      m.constants_ = constants[i];
      m.temporaries_ = temporaries[i];
      m.vertexState_ = vertexState[i];
      m.code_ = code[i];
    }
  }

  static void compilation(Compilation &c, const json &profile) {
    target(c.target_, profile.at("target"));
    const json &graph = profile.at("graph");
    tiles(c, graph);
    c.total_ = graph.at("memory").at("total").get<std::uint64_t>();
    for (const json &j : graph.at("computeSets")) {
      ComputeSet cs;
      cs.name_ = j.at("name").get<std::string>();
      cs.numVertices_ = j.at("vertices").get<std::uint64_t>();
      c.computeSets_.push_back(std::move(cs));
    }
    for (const json &j : graph.at("variables")) {
      Variable v;
      v.name_ = j.at("name").get<std::string>();
      v.type_ = j.at("type").get<std::string>();
      v.shape_ = counts(j.at("shape"));
      v.bytes_ = j.at("bytes").get<std::uint64_t>();
      v.alwaysLive_ = j.at("alwaysLive").get<bool>();
      c.variables_.push_back(std::move(v));
    }
    c.graph_.numComputeSets_ = c.computeSets_.size();
    c.graph_.numVars_ = c.variables_.size();
  }

  // The per-tile cycles of the compute steps the profile breaks down,
  // spread over all tiles of the target.
  static std::vector<std::uint64_t> tileCycles(const json &entry,
                                               std::size_t numTiles) {
    const auto tiles = counts(entry.at("tiles"));
    const auto cycles = counts(entry.at("cycles"));
    if (tiles.size() != cycles.size())
      throw ReportError(
          fmt::format("computeTileCycles lists {} tiles but {} cycle counts",
                      tiles.size(), cycles.size()));
    std::vector<std::uint64_t> out(numTiles, 0);
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      if (tiles[i] >= numTiles)
        throw ReportError(
            fmt::format("computeTileCycles names tile {} of a {}-tile target",
                        tiles[i], numTiles));
      out[tiles[i]] = cycles[i];
    }
    return out;
  }

  static void execution(Execution &e, const json &profile,
                        std::size_t numTiles) {
    if (!profile.contains("execution"))
      return;
    const json &x = profile.at("execution");
    const json &graphSteps = profile.at("graph").at("steps");
    e.available_ = true;
    e.runs_ = x.at("runs").get<std::uint64_t>();
    e.stepsExecuted_ = x.at("stepsExecuted").get<std::uint64_t>();
    e.complete_ = x.at("traceComplete").get<bool>();
    e.totalCycles_ = counts(x.at("totalCycles"));
    std::vector<std::vector<std::uint64_t>> byTile(graphSteps.size());
    for (const json &entry : x.at("computeTileCycles")) {
      const std::size_t step = entry.at("step").get<std::size_t>();
      if (step >= byTile.size())
        throw ReportError(fmt::format("computeTileCycles names step {} of {}",
                                      step, byTile.size()));
      byTile[step] = tileCycles(entry, numTiles);
    }
    for (const json &t : x.at("trace")) {
      ExecutionStep s;
      const std::size_t step = t.at("step").get<std::size_t>();
      if (step >= graphSteps.size())
        throw ReportError(fmt::format("the trace names step {} of {}", step,
                                      graphSteps.size()));
      s.program_.index_ = step;
      s.program_.name_ = t.at("name").get<std::string>();
      s.program_.type_ = t.at("kind").get<std::string>();
      s.ipuCycles_ = counts(t.at("cycles"));
      s.ipuFrom_ = counts(t.at("start"));
      if (s.ipuFrom_.size() != s.ipuCycles_.size())
        throw ReportError(
            fmt::format("a trace entry has {} start cycles but {} cycle counts",
                        s.ipuFrom_.size(), s.ipuCycles_.size()));
      s.cyclesByTile_ = byTile[step];
      e.steps_.push_back(std::move(s));
    }
  }

  static void debug(Report &r, const std::string &path) {
    const std::string bytes = tessera::readFile(path);
    json info;
    try {
      DepthLimitedParser parser(info, path);
      json::sax_parse(bytes, &parser, json::input_format_t::cbor);
    } catch (const json::exception &e) {
      throw ReportError(fmt::format(
          "{} is not a CBOR debug-info file ({}); give the debug.cbor the "
          "engine wrote beside profile.json",
          path, e.what()));
    }
    if (!info.is_object() || info.value("format", "") != "tessera-debug-info")
      throw ReportError(fmt::format(
          "{} is not a Tessera debug-info file (no \"format\": "
          "\"tessera-debug-info\"); give the debug.cbor the engine wrote",
          path));
    if (info.at("version").get<int>() != 1)
      throw ReportError(fmt::format(
          "{} has debug-info version {}; this library reads version 1", path,
          info.at("version").dump()));
    const json &contexts = info.at("contexts");
    for (const json &j : contexts) {
      DebugContext c;
      c.path_ = j.at("path").get<std::string>();
      const json &parent = j.at("parent");
      if (!parent.is_null()) {
        const auto p = parent.get<std::uint64_t>();
        if (p >= r.debug_.size())
          throw ReportError(fmt::format(
              "{}: context \"{}\" names parent {}, which does not come "
              "before it",
              path, c.path_, p));
        c.parent_ = static_cast<long>(p);
      }
      c.computeSets_ = j.at("computeSets").get<std::uint64_t>();
      c.variables_ = j.at("variables").get<std::uint64_t>();
      c.steps_ = j.at("steps").get<std::uint64_t>();
      r.debug_.push_back(std::move(c));
    }
  }

  static void report(Report &r, const json &profile) {
    r.version_ =
        Version(fmt::format("Tessera {} (IPU Model)", TESSERA_VERSION));
    compilation(r.compilation_, profile);
    execution(r.execution_, profile, r.compilation_.target_.numTiles());
  }
};

namespace {

// The report folder of what a user passes: the folder, its profile.json or
// a profile.pop path in it.
std::string reportFolder(const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return path;
  const fs::path p(path);
  if (p.filename() == "profile.json" || p.filename() == "profile.pop")
    return p.has_parent_path() ? p.parent_path().string() : ".";
  throw ReportError(fmt::format(
      "\"{}\" is neither a report folder nor a profile.json or profile.pop in "
      "one; give the folder set as autoReport.directory",
      path));
}

} // namespace

Report openReport(const std::string &profile, const std::string &debugInfo) {
  Report r;
  try {
    const json j = tessera::report::loadProfile(reportFolder(profile));
    Reader::report(r, j);
    if (!debugInfo.empty())
      Reader::debug(r, debugInfo);
  } catch (const tessera::Error &e) {
    throw ReportError(e.what());
  } catch (const json::exception &e) {
    throw ReportError(fmt::format("{}: {} (the report is damaged; write a "
                                  "fresh one with autoReport.all)",
                                  debugInfo.empty() ? profile : debugInfo,
                                  e.what()));
  }
  return r;
}

} // namespace pva
