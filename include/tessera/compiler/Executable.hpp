/// \file
/// Executable: a compiled graph and its programs as the engine runs them. A
/// flat array of steps whose operands are byte addresses in one replica's
/// memory (every tile's arena laid end to end), vertex instances with their
/// fields resolved, host stream and buffer descriptions, initial values, and
/// the cost model's estimates. Plain data: it can be serialised, cached and
/// loaded in another process.
#pragma once

#include "tessera/support/Language.hpp"
#include "tessera/support/Type.hpp"

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

class VertexRegistry;

/// What a step does. Field use per kind is documented on Step.
enum class StepKind : std::uint8_t {
  /// a = first vertex, b = vertex count, c = compute set; count > 0: the
  /// host runs vertices [addr, addr + count) in their place (a host kernel)
  Compute,
  Exchange,   ///< a = first copy op, b = op count
  StreamIn,   ///< a = stream, b = first op, c = op count (src = host offset)
  StreamOut,  ///< a = stream, b = first op, c = op count (dst = host offset)
  RemoteIn,   ///< a = buffer, b = first op, c = count (src = slot offset)
  RemoteOut,  ///< a = buffer, b = first op, c = count (dst = slot offset)
  Jump,       ///< a = target
  JumpIfZero, ///< a = target; predicate at addr of `type`
  JumpIfNonZero,
  RepeatStart, ///< a = counter slot, b = pc after the loop, count
  RepeatEnd,   ///< a = counter slot, b = first pc of the body
  Switch,      ///< a = first table entry, b = entries, c = default target
  Call,        ///< a = target
  Return,
  Print,   ///< a = print index
  Abort,   ///< a = message string
  AbortIf, ///< a = message string; predicate at addr of `type`
  Sync,
  CrossReplica, ///< a = first op, b = op count, c = first pair, count
  End,
};

/// One step of the flat program.
struct Step {
  StepKind kind = StepKind::End;
  Type type = Type::INT;
  bool hasAddr = false; ///< addr holds a scalar operand (predicate, offset)
  std::uint32_t a = 0, b = 0, c = 0;
  std::uint64_t addr = 0;
  std::uint64_t count = 0;
  std::uint32_t name = 0; ///< index into Executable::strings
};

/// Copies `count` elements of `elemBytes` from src to dst, stepping by the
/// strides (bytes). A contiguous copy has count 1 and elemBytes = its size.
struct CopyOp {
  std::uint64_t src = 0, dst = 0;
  std::int64_t srcStride = 0, dstStride = 0;
  std::uint32_t count = 1, elemBytes = 0;
};

/// A vertex field as the engine sets it: an address and element count (edge
/// fields), an index into Executable::spans (list fields) or an offset into
/// Executable::stateBytes (plain state).
struct FieldValue {
  std::uint64_t addr = 0;
  std::uint32_t size = 0;
};

struct VertexInstance {
  std::uint32_t vertexClass = 0; ///< index into Executable::vertexClasses
  std::uint32_t tile = 0;
  std::uint32_t firstField = 0; ///< index into Executable::fields
  std::uint64_t cycles = 0;     ///< estimated worker cycles
};

struct VertexClassRef {
  std::string name;
  std::int32_t codelet = -1; ///< index into codelets, or -1: built in
};

struct CodeletSourceRef {
  std::string name, source, flags;
};

struct StreamInfo {
  std::string handle;
  Type type = Type::FLOAT;
  std::uint64_t numElements = 0;
  bool hostToDevice = true;
  /// ReplicatedStreamMode::BROADCAST: each transfer is taken once, from the
  /// first local replica's connection, and given to every replica.
  bool broadcast = false;
};

/// A named host read or write: element pieces of a tensor.
struct HostAccessInfo {
  std::string handle;
  Type type = Type::FLOAT;
  std::uint64_t numElements = 0;
  bool write = true;
  std::uint32_t firstOp = 0, numOps = 0; ///< host offset <-> device address
};

struct RemoteBufferInfo {
  std::string handle;
  Type type = Type::FLOAT;
  std::uint64_t numElements = 0, repeats = 1;
};

struct PrintInfo {
  std::string title;
  Type type = Type::FLOAT;
  std::vector<std::uint64_t> shape;
  std::uint32_t firstOp = 0, numOps = 0; ///< device -> host offset
};

/// Bytes laid out at `addr` from Executable::initData at `dataOffset`.
struct InitRegion {
  std::uint64_t addr = 0, dataOffset = 0, size = 0;
};

/// Memory facts of one tile, by category (bytes).
struct TileMemory {
  std::uint64_t alwaysLive = 0;    ///< variables live for the whole run
  std::uint64_t notAlwaysLive = 0; ///< peak of variables with lifetimes
  std::uint64_t constants = 0;
  std::uint64_t temporaries = 0; ///< compiler-made rearrangement buffers
  std::uint64_t vertexState = 0; ///< vertex objects and their field tables
  /// Vertex code (estimated) and the tables its vertices share
  /// (FieldInfo::shared), each distinct value once.
  std::uint64_t code = 0;
  std::uint64_t total() const {
    return alwaysLive + notAlwaysLive + constants + temporaries + vertexState +
           code;
  }
};

/// A variable's footprint, for profiles and out-of-memory reports. Its name
/// and shape are in the executable's tables (Executable::variableName and
/// variableShape): a large graph's million variables are nearly all the
/// compiler's operand temporaries, which share a few dozen names.
struct VariableInfo {
  std::uint32_t name = 0; ///< index into Executable::variableNames
  std::uint32_t rank = 0; ///< shape: variableShapes[shapeBegin, +rank)
  std::uint64_t shapeBegin = 0;
  std::uint64_t bytes = 0;
  std::uint32_t tiles = 0;
  std::uint32_t liveBegin = 0, liveEnd = 0; ///< step range when not always
  Type type = Type::FLOAT;
  bool alwaysLive = true;
};

/// One phase of the compilation that made an executable: how long it took
/// and the host memory of the compiling process when it ended.
struct CompilePhase {
  std::string name;
  double seconds = 0;             ///< wall time
  std::uint64_t rssBytes = 0;     ///< resident set size at its end
  std::uint64_t peakRssBytes = 0; ///< the process's peak until its end
};

/// The estimated cost of one step, per IPU, and for compute steps per tile.
struct StepEstimate {
  std::vector<std::uint64_t> ipuCycles;
  std::uint32_t firstTileCycle = 0, numTileCycles = 0; ///< into tileCycles
  std::uint64_t bytesExchanged = 0;
};

/// A compiled graph with its programs.
struct Executable {
  // Target.
  std::string arch;
  std::uint32_t numIPUs = 1, tilesPerIPU = 0, replicationFactor = 1;
  std::uint64_t bytesPerTile = 0;
  double clockHz = 0;

  // Memory of one replica.
  std::vector<std::uint64_t> tileBase; ///< numTiles + 1 offsets
  std::vector<InitRegion> initRegions;
  std::vector<Byte> initData;

  // Code.
  std::vector<Step> steps;
  std::vector<std::uint32_t> programEntry; ///< first step of each program
  std::uint32_t numCounters = 0;
  std::vector<std::pair<std::int32_t, std::uint32_t>> switchTable;
  /// CrossReplica steps: (source replica, destination replica).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> replicaPairs;
  std::vector<CopyOp> copyOps;
  std::vector<VertexClassRef> vertexClasses;
  std::vector<CodeletSourceRef> codelets;
  std::vector<VertexInstance> vertices;
  std::vector<FieldValue> fields;
  std::vector<FieldValue> spans;
  std::vector<Byte> stateBytes;
  std::vector<std::string> strings;
  std::vector<PrintInfo> prints;
  /// Per step: its scope, the debug name (into strings) of the outermost
  /// named Sequence enclosing it in its program (a pipeline's stage pass,
  /// say), or kNoScope (also for the steps of functions). Empty in
  /// executables made without the compiler.
  std::vector<std::uint32_t> stepScopes;
  static constexpr std::uint32_t kNoScope = 0xffffffffu;

  // Host interface.
  std::vector<StreamInfo> streams;
  std::vector<HostAccessInfo> hostAccesses;
  std::vector<RemoteBufferInfo> remoteBuffers;

  // Estimates and profile facts.
  std::vector<StepEstimate> estimates; ///< one per step
  std::vector<std::uint32_t> tileCycleTiles;
  std::vector<std::uint64_t> tileCycles;
  std::vector<TileMemory> tileMemory;
  std::vector<VariableInfo> variables;
  std::vector<std::string> variableNames;    ///< each name once
  std::vector<std::uint64_t> variableShapes; ///< the shapes end to end
  std::vector<std::string> computeSetNames;
  /// The compiler's phases in order (compileGraph); empty in executables
  /// made without the compiler.
  std::vector<CompilePhase> compilePhases;

  /// The registry the vertex classes came from when compiled in this
  /// process; not serialised (a loaded executable recompiles its codelets).
  std::shared_ptr<VertexRegistry> registry;

  std::uint32_t numTiles() const { return numIPUs * tilesPerIPU; }
  std::uint64_t replicaBytes() const {
    return tileBase.empty() ? 0 : tileBase.back();
  }
  const std::string &variableName(const VariableInfo &v) const {
    return variableNames[v.name];
  }
  std::vector<std::uint64_t> variableShape(const VariableInfo &v) const {
    const auto first =
        variableShapes.begin() + static_cast<std::ptrdiff_t>(v.shapeBegin);
    return std::vector<std::uint64_t>(first, first + v.rank);
  }
  /// The estimated cycles of every step taken once, summed over the steps
  /// and the IPUs: a straight-line program's estimate.
  std::uint64_t stepCyclesOnce() const {
    std::uint64_t total = 0;
    for (const StepEstimate &e : estimates)
      for (std::uint64_t c : e.ipuCycles)
        total += c;
    return total;
  }

  /// Writes the executable: versioned, checksummed, compressed.
  void serialize(std::ostream &out) const;
  /// Reads an executable; a truncated, corrupt or foreign file is a
  /// SerializationError saying which.
  static Executable deserialize(std::istream &in);
  void save(const std::string &path) const;
  static Executable load(const std::string &path);
};

} // namespace tessera
