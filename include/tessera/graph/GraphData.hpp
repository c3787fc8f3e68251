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

/// The tensors connected to a vertex field, indexed like a std::vector. A
/// scalar or vector field (and a list of one) keeps its tensor in place;
/// longer lists keep one heap array. Elements past size() are invalid
/// tensors.
class FieldTensors {
public:
  FieldTensors() noexcept : one_() {}
  FieldTensors(const FieldTensors &o);
  FieldTensors(FieldTensors &&o) noexcept;
  FieldTensors &operator=(const FieldTensors &o);
  FieldTensors &operator=(FieldTensors &&o) noexcept;
  ~FieldTensors() { destroy(); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Elements held without growing: 1 in place.
  std::size_t capacity() const { return cap_ ? cap_ : 1; }
  const Tensor *data() const { return cap_ ? many_ : &one_; }
  Tensor *data() { return cap_ ? many_ : &one_; }
  const Tensor &operator[](std::size_t i) const { return data()[i]; }
  Tensor &operator[](std::size_t i) { return data()[i]; }
  const Tensor *begin() const { return data(); }
  const Tensor *end() const { return data() + size_; }

  /// Makes room for \p n elements, exactly \p n if it grows.
  void reserve(std::size_t n);
  /// Grows with invalid tensors or drops the tail.
  void resize(std::size_t n);
  void push_back(const Tensor &t);
  /// Drops every element, keeping the capacity.
  void clear() { resize(0); }
  /// Exactly one element, \p t.
  void assignOne(const Tensor &t);

private:
  union {
    Tensor one_;   // cap_ == 0
    Tensor *many_; // cap_ > 0: new Tensor[cap_]
  };
  std::uint32_t size_ = 0, cap_ = 0;

  void destroy() noexcept;
  void grow(std::size_t n);
};

/// A plain-state field's value: its element count and bytes in one heap
/// block (none when unset).
class FieldState {
public:
  FieldState() = default;
  FieldState(const FieldState &o);
  FieldState(FieldState &&o) noexcept : block_(o.block_) { o.block_ = nullptr; }
  FieldState &operator=(FieldState o) noexcept {
    std::swap(block_, o.block_);
    return *this;
  }
  ~FieldState();

  /// The value's bytes.
  std::size_t size() const { return block_ ? header().bytes : 0; }
  /// The value's elements.
  std::size_t count() const { return block_ ? header().count : 0; }
  const std::byte *data() const { return block_ ? block_ + kHeader : nullptr; }
  const std::byte *begin() const { return data(); }
  const std::byte *end() const { return data() + size(); }
  /// Replaces the value with \p count elements in \p bytes bytes, zeroed;
  /// returns them to fill.
  std::byte *assign(std::size_t bytes, std::size_t count);

private:
  struct Header {
    std::size_t bytes, count;
  };
  // Keeps the bytes aligned for any element type.
  static constexpr std::size_t kHeader = 16;
  static_assert(sizeof(Header) <= kHeader);
  std::byte *block_ = nullptr;
  const Header &header() const {
    return *reinterpret_cast<const Header *>(block_);
  }
};

/// The declared size of a list or state vector (setFieldSize), read like a
/// std::optional<std::size_t>.
class FieldSize {
public:
  /// Sizes from 2^32 - 1 up cannot be held (Graph::setFieldSize rejects
  /// them).
  static constexpr std::size_t kMax = 0xfffffffeu;
  explicit operator bool() const { return n_ != kNone; }
  bool has_value() const { return n_ != kNone; }
  std::size_t operator*() const { return n_; }
  FieldSize &operator=(std::size_t n);

private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  std::uint32_t n_ = kNone;
};

/// What a vertex field is connected to. Graphs hold one per field of every
/// vertex, so it is kept small: no heap block for one tensor.
struct FieldBinding {
  /// Scalar and vector fields: one tensor; list fields: one per element.
  FieldTensors tensors;
  /// Plain-state fields: the value bytes (a vector's elements) and count.
  FieldState state;
  /// Declared size of a list or state vector (setFieldSize), if any.
  FieldSize size;
  bool connected = false;
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
  /// The compute set whose host kernel runs exactly when this one's does
  /// (pairHostKernels).
  std::optional<unsigned> hostKernelPair;
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
