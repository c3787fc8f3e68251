/// \file
/// Small handle types of a graph: compute sets, vertices, fields, streams,
/// remote buffers and functions.
#pragma once

#include "tessera/support/Type.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace tessera {

class Graph;

/// A set of vertices that run in one compute superstep.
class ComputeSet {
public:
  ComputeSet() = default;
  explicit ComputeSet(unsigned id) : id_(id) {}
  unsigned getId() const { return id_; }

private:
  unsigned id_ = ~0u;
};

class FieldRef;

/// A vertex of a graph.
class VertexRef {
public:
  VertexRef() = default;
  VertexRef(Graph *graph, unsigned id) : graph_(graph), id_(id) {}
  unsigned getId() const { return id_; }
  Graph *graph() const { return graph_; }
  /// A field of this vertex, by name (v["in"]).
  FieldRef operator[](const std::string &field) const;

private:
  Graph *graph_ = nullptr;
  unsigned id_ = ~0u;
};

/// A field of a vertex, or one element of a list field (v["in"][2]).
class FieldRef {
public:
  FieldRef(VertexRef vertex, std::string field)
      : vertex_(vertex), field_(std::move(field)) {}
  FieldRef operator[](std::size_t index) const {
    FieldRef r = *this;
    r.index_ = index;
    return r;
  }
  VertexRef vertex() const { return vertex_; }
  const std::string &name() const { return field_; }
  bool isIndexed() const { return index_ != npos; }
  std::size_t index() const { return index_; }

private:
  static constexpr std::size_t npos = ~std::size_t(0);
  VertexRef vertex_;
  std::string field_;
  std::size_t index_ = npos;
};

inline FieldRef VertexRef::operator[](const std::string &field) const {
  return FieldRef(*this, field);
}

/// How a host-to-device FIFO of a replicated graph feeds its replicas
/// (Poplar's ReplicatedStreamMode): REPLICATE gives each replica its own
/// connection (connect them one by one, or all to one buffer, each replica
/// then reading it from its start); BROADCAST takes each transfer once,
/// from the one connection, and gives it to every replica.
enum class ReplicatedStreamMode : std::uint8_t { REPLICATE, BROADCAST };

/// A host-to-device or device-to-host FIFO.
class DataStream {
public:
  DataStream() = default;
  DataStream(unsigned id, std::string handle, Type type,
             std::size_t numElements)
      : id_(id), handle_(std::move(handle)), type_(type),
        numElements_(numElements) {}
  unsigned getId() const { return id_; }
  const std::string &handle() const { return handle_; }
  /// The handle, so a DataStream can be passed wherever the engine takes
  /// one (engine.connectStream(stream, ...)), as in Poplar.
  operator const std::string &() const { return handle_; } // NOLINT
  Type elementType() const { return type_; }
  std::size_t numElements() const { return numElements_; }

private:
  unsigned id_ = ~0u;
  std::string handle_;
  Type type_ = Type::FLOAT;
  std::size_t numElements_ = 0;
};

/// Host-side streaming memory: `repeats` slots of `numElements` each.
class RemoteBuffer {
public:
  RemoteBuffer() = default;
  RemoteBuffer(unsigned id, std::string handle, Type type,
               std::size_t numElements, std::size_t repeats)
      : id_(id), handle_(std::move(handle)), type_(type),
        numElements_(numElements), repeats_(repeats) {}
  unsigned getId() const { return id_; }
  const std::string &handle() const { return handle_; }
  Type elementType() const { return type_; }
  std::size_t numElements() const { return numElements_; }
  std::size_t getRepeats() const { return repeats_; }

private:
  unsigned id_ = ~0u;
  std::string handle_;
  Type type_ = Type::FLOAT;
  std::size_t numElements_ = 0, repeats_ = 0;
};

/// A program whose code exists once and runs at each Call.
class Function {
public:
  Function() = default;
  explicit Function(unsigned id) : id_(id) {}
  unsigned getId() const { return id_; }

private:
  unsigned id_ = ~0u;
};

/// Poplar's replication_factor tag for the Graph constructor.
struct replication_factor {
  explicit replication_factor(unsigned v) : value(v) {}
  unsigned value;
};

} // namespace tessera
