/// \file
/// The data a Graph builds, as the compiler reads it. Users build graphs with
/// Graph's methods; only the compiler and tools read this directly.
#pragma once

#include "tessera/graph/Program.hpp"
#include "tessera/graph/Tensor.hpp"
#include "tessera/graph/VertexRegistry.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

class Target;

/// Elements [begin, end) of a variable live on `tile`.
struct TileInterval {
  std::size_t begin = 0, end = 0;
  unsigned tile = 0;
};

/// A variable (or constant) of a graph.
struct VariableData {
  std::string name;
  Type type = Type::FLOAT;
  std::vector<std::size_t> shape;
  std::size_t numElements = 0;
  /// Sorted, non-overlapping; complete once every element is mapped.
  std::vector<TileInterval> mapping;
  bool isConstant = false;
  /// Initial contents (numElements * typeSize bytes), or empty.
  std::vector<std::byte> initialValue;
};

/// What a vertex field is connected to.
struct FieldBinding {
  bool connected = false;
  /// Scalar and vector fields: one tensor; list fields: one per element.
  std::vector<Tensor> tensors;
  /// Plain-state fields: the value bytes (a vector's elements).
  std::vector<std::byte> state;
  std::size_t stateCount = 0;
  /// Declared size of a list or state vector (setFieldSize), if any.
  std::optional<std::size_t> size;
};

/// A vertex: its class, compute set, tile and fields.
struct VertexData {
  const RegisteredVertex *vertexClass = nullptr;
  unsigned computeSet = 0;
  std::optional<unsigned> tile;
  std::vector<FieldBinding> fields; // indexed as vertexClass->info.fields
  std::optional<std::uint64_t> perfEstimate;
};

struct ComputeSetData {
  std::string name;
  std::vector<unsigned> vertices;
  /// The compute set the host runs in this one's place (setHostKernel).
  std::optional<unsigned> hostKernel;
  /// Whether this is another's host kernel: never executed by a program,
  /// never costed, laid out or profiled.
  bool isHostKernel = false;
};

struct StreamData {
  std::string handle;
  Type type = Type::FLOAT;
  std::size_t numElements = 0;
  bool hostToDevice = true;
  bool broadcast = false; ///< ReplicatedStreamMode::BROADCAST
};

/// A tensor the host may write or read by name (createHostWrite/Read).
struct HostAccessData {
  std::string handle;
  Tensor tensor;
  bool write = true;
};

struct RemoteBufferData {
  std::string handle;
  Type type = Type::FLOAT;
  std::size_t numElements = 0, repeats = 1;
};

/// Everything a graph holds.
struct GraphData {
  std::shared_ptr<const Target> target;
  unsigned replicationFactor = 1;
  std::vector<VariableData> variables;
  std::vector<VertexData> vertices;
  std::vector<ComputeSetData> computeSets;
  std::vector<StreamData> streams;
  std::vector<HostAccessData> hostAccesses;
  std::vector<RemoteBufferData> remoteBuffers;
  std::vector<program::Program> functions;
  std::shared_ptr<VertexRegistry> registry;
};

} // namespace tessera
