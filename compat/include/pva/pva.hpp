/// \file
/// A reading library for Tessera's profiles, shaped like PopVision's
/// analysis library (libpva), so analysis scripts written against it have
/// something to run against. It reads what an engine writes with
/// autoReport.all into autoReport.directory: profile.json (the schema is in
/// tessera/engine/Profile.hpp) and, optionally, debug.cbor.
///
/// \code
///   pva::Report report = pva::openReport("reports/profile.pop");
///   std::cout << report.compilation().target().numTiles() << " tiles\n";
///   for (const pva::Tile &t : report.compilation().tiles())
///     use(t.number(), t.memory().total().includingGaps());
///   for (const pva::ExecutionStep &s : report.execution().steps())
///     use(s.program().name(), s.cyclesFrom(), s.cyclesTo());
/// \endcode
///
/// Differences from PopVision's library, all following from what the IPU
/// Model records:
/// - openReport takes the report folder, its profile.json, or a
///   "profile.pop" path in it (Tessera writes no profile.pop; the name is
///   accepted so scripts run unchanged).
/// - The profile counts alignment padding inside each allocation and
///   records no gaps between allocations, so a tile's total includingGaps
///   equals excludingGaps.
/// - execution().steps() are the steps the profile traced, in order (all
///   of them when execution().complete()); cycles are the cost model's
///   estimates. cyclesByTile() is filled for the costliest compute steps
///   only (the ones the profile breaks down per tile), empty otherwise.
///
/// The header compiles under C++11 and later.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pva {

/// A report that cannot be read: missing, not a Tessera profile, or
/// inconsistent. The message names the file and the key.
class ReportError : public std::runtime_error {
public:
  explicit ReportError(const std::string &what) : std::runtime_error(what) {}
};

/// The software that wrote the report.
class Version {
public:
  Version() = default;
  explicit Version(std::string text) : string_(std::move(text)) {}
  /// "Tessera 0.1.0 (IPU Model)".
  const std::string &string() const { return string_; }

private:
  std::string string_;
};

/// The device the program was compiled for.
class Target {
public:
  unsigned numIPUs() const { return numIPUs_; }
  unsigned tilesPerIpu() const { return tilesPerIpu_; }
  unsigned numTiles() const { return numIPUs_ * tilesPerIpu_; }
  std::uint64_t bytesPerTile() const { return bytesPerTile_; }
  std::uint64_t bytesPerIPU() const { return bytesPerTile_ * tilesPerIpu_; }
  /// Tile clock in Hz.
  double clockFrequency() const { return clockFrequency_; }
  unsigned numReplicas() const { return numReplicas_; }
  /// The IPU architecture ("ipu2").
  const std::string &type() const { return type_; }

private:
  friend struct Reader;
  unsigned numIPUs_ = 0, tilesPerIpu_ = 0, numReplicas_ = 1;
  std::uint64_t bytesPerTile_ = 0;
  double clockFrequency_ = 0;
  std::string type_;
};

/// Sizes of the compiled graph.
class Graph {
public:
  std::uint64_t numComputeSets() const { return numComputeSets_; }
  std::uint64_t numVertices() const { return numVertices_; }
  std::uint64_t numVars() const { return numVars_; }

private:
  friend struct Reader;
  std::uint64_t numComputeSets_ = 0, numVertices_ = 0, numVars_ = 0;
};

/// Bytes of memory, with and without the gaps between allocations.
class MemorySize {
public:
  MemorySize() = default;
  MemorySize(std::uint64_t including, std::uint64_t excluding)
      : including_(including), excluding_(excluding) {}
  std::uint64_t includingGaps() const { return including_; }
  std::uint64_t excludingGaps() const { return excluding_; }

private:
  std::uint64_t including_ = 0, excluding_ = 0;
};

/// One tile's memory: its total and Tessera's categories.
class TileMemory {
public:
  MemorySize total() const { return MemorySize(total_, total_); }
  std::uint64_t alwaysLiveBytes() const { return alwaysLive_; }
  std::uint64_t notAlwaysLiveBytes() const { return notAlwaysLive_; }
  std::uint64_t constantBytes() const { return constants_; }
  std::uint64_t temporaryBytes() const { return temporaries_; }
  std::uint64_t vertexStateBytes() const { return vertexState_; }
  std::uint64_t codeBytes() const { return code_; }

private:
  friend struct Reader;
  std::uint64_t total_ = 0, alwaysLive_ = 0, notAlwaysLive_ = 0, constants_ = 0,
                temporaries_ = 0, vertexState_ = 0, code_ = 0;
};

class Tile {
public:
  /// The tile's index over all IPUs (IPU i's tiles follow IPU i-1's).
  unsigned number() const { return number_; }
  unsigned ipu() const { return ipu_; }
  const TileMemory &memory() const { return memory_; }
  std::uint64_t numVertices() const { return numVertices_; }

private:
  friend struct Reader;
  unsigned number_ = 0, ipu_ = 0;
  std::uint64_t numVertices_ = 0;
  TileMemory memory_;
};

class ComputeSet {
public:
  const std::string &name() const { return name_; }
  std::uint64_t numVertices() const { return numVertices_; }

private:
  friend struct Reader;
  std::string name_;
  std::uint64_t numVertices_ = 0;
};

class Variable {
public:
  const std::string &name() const { return name_; }
  /// The element type ("float", "half", ...).
  const std::string &type() const { return type_; }
  const std::vector<std::uint64_t> &shape() const { return shape_; }
  std::uint64_t bytes() const { return bytes_; }
  bool alwaysLive() const { return alwaysLive_; }

private:
  friend struct Reader;
  std::string name_, type_;
  std::vector<std::uint64_t> shape_;
  std::uint64_t bytes_ = 0;
  bool alwaysLive_ = false;
};

/// The program step a trace entry ran.
class Program {
public:
  /// Its debug name.
  const std::string &name() const { return name_; }
  /// Its kind ("compute", "exchange", "streamIn", "sync", ...).
  const std::string &type() const { return type_; }
  /// Its index among the executable's steps.
  std::uint64_t index() const { return index_; }

private:
  friend struct Reader;
  std::string name_, type_;
  std::uint64_t index_ = 0;
};

/// One executed step: when it ran and for how long, per IPU.
class ExecutionStep {
public:
  const Program &program() const { return program_; }
  /// The cycle it started and ended at on its slowest IPU (the one with
  /// the most cycles).
  std::uint64_t cyclesFrom() const;
  std::uint64_t cyclesTo() const { return cyclesFrom() + cycles(); }
  /// Its cycles on its slowest IPU.
  std::uint64_t cycles() const;
  /// The cycle it started at and its cycles, on each IPU.
  const std::vector<std::uint64_t> &ipuCyclesFrom() const { return ipuFrom_; }
  const std::vector<std::uint64_t> &ipuCycles() const { return ipuCycles_; }
  /// One run's cycles on each tile of the target (empty when the profile
  /// does not break this step down).
  const std::vector<std::uint64_t> &cyclesByTile() const {
    return cyclesByTile_;
  }

private:
  friend struct Reader;
  std::size_t slowest() const;
  Program program_;
  std::vector<std::uint64_t> ipuFrom_, ipuCycles_, cyclesByTile_;
};

class Compilation {
public:
  const Target &target() const { return target_; }
  const Graph &graph() const { return graph_; }
  const std::vector<Tile> &tiles() const { return tiles_; }
  const std::vector<ComputeSet> &computeSets() const { return computeSets_; }
  const std::vector<Variable> &variables() const { return variables_; }
  /// The memory of all tiles together.
  MemorySize totalMemory() const { return MemorySize(total_, total_); }

private:
  friend struct Reader;
  Target target_;
  Graph graph_;
  std::vector<Tile> tiles_;
  std::vector<ComputeSet> computeSets_;
  std::vector<Variable> variables_;
  std::uint64_t total_ = 0;
};

class Execution {
public:
  /// Whether the profile has execution facts (it was written after runs).
  bool available() const { return available_; }
  std::uint64_t runs() const { return runs_; }
  std::uint64_t stepsExecuted() const { return stepsExecuted_; }
  /// Whether steps() holds every step executed.
  bool complete() const { return complete_; }
  const std::vector<ExecutionStep> &steps() const { return steps_; }
  /// All runs' cycles on each IPU.
  const std::vector<std::uint64_t> &totalCycles() const { return totalCycles_; }

private:
  friend struct Reader;
  bool available_ = false, complete_ = false;
  std::uint64_t runs_ = 0, stepsExecuted_ = 0;
  std::vector<ExecutionStep> steps_;
  std::vector<std::uint64_t> totalCycles_;
};

/// A debug context of debug.cbor: one level of the "/"-separated debug
/// names the program gave (a layer, an op in it, ...), with what was made
/// under it.
class DebugContext {
public:
  /// The whole name ("layer1/matmul").
  const std::string &path() const { return path_; }
  /// The last part of it ("matmul").
  std::string name() const {
    return path_.substr(
        path_.rfind('/') == std::string::npos ? 0 : path_.rfind('/') + 1);
  }
  /// The index of the enclosing context in Report::debugContexts(), or -1.
  long parent() const { return parent_; }
  /// Compute sets, variables and program steps named at or under it.
  std::uint64_t computeSets() const { return computeSets_; }
  std::uint64_t variables() const { return variables_; }
  std::uint64_t steps() const { return steps_; }

private:
  friend struct Reader;
  std::string path_;
  long parent_ = -1;
  std::uint64_t computeSets_ = 0, variables_ = 0, steps_ = 0;
};

class Report {
public:
  const Version &poplarVersion() const { return version_; }
  const Compilation &compilation() const { return compilation_; }
  const Execution &execution() const { return execution_; }
  /// The debug contexts (empty unless a debug file was read).
  const std::vector<DebugContext> &debugContexts() const { return debug_; }

private:
  friend struct Reader;
  Version version_;
  Compilation compilation_;
  Execution execution_;
  std::vector<DebugContext> debug_;
};

/// Reads a report: \p profile is the report folder, its profile.json or a
/// profile.pop path in it; \p debugInfo, when not empty, a debug.cbor.
/// Throws ReportError saying what is wrong and how to get a good report.
Report openReport(const std::string &profile,
                  const std::string &debugInfo = std::string());

} // namespace pva
