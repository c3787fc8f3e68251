/// \file
/// Graph: the Poplar graph a program runs on. Variables and constants with a
/// tile mapping, compute sets of vertices connected to tensors, host streams,
/// remote buffers and functions. A graph with a replication factor R
/// describes one replica; the engine runs R copies. A virtual graph
/// (createVirtualGraph) is a view of a range of its parent's tiles: what is
/// added through it belongs to the parent, with tile numbers offset.
#pragma once

#include "tessera/graph/DebugContext.hpp"
// GraphData holds C++17 types; programs built as C++11 or C++14 (through
// the Poplar headers) see it declared only.
#if TESSERA_CXX17
#include "tessera/graph/GraphData.hpp"
#endif
#include "tessera/graph/GraphTypes.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/graph/Tensor.hpp"
#include "tessera/support/Convert.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

struct GraphData;
struct VertexData;
class VertexRegistry;

class Target;
class Device;

/// What a codelet file holds (Poplar's CodeletFileType). The IPU Model
/// compiles C++ source; Auto means "from the file name".
enum class CodeletFileType {
  PreprocessedAsmSource,
  AsmSource,
  CSource,
  CppSource,
  IPUObject,
  Object,
  Auto
};

/// Per tile, the element intervals of a tensor mapped there.
using TileMapping = std::vector<std::vector<Interval>>;

/// How addVariable maps a new variable: not at all, or linearly over tiles.
enum class VariableMappingMethod { NONE, LINEAR };

class Graph {
public:
  explicit Graph(const Target &target,
                 replication_factor r = replication_factor(1));
  explicit Graph(const Device &device,
                 replication_factor r = replication_factor(1));
  ~Graph();
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  /// Moving a graph invalidates the VertexRefs made through it.
  Graph(Graph &&) noexcept;
  Graph &operator=(Graph &&) noexcept;

  /// A graph over this graph's tiles [lowerTile, upperTile) (Poplar's
  /// createVirtualGraph): variables, vertices and compute sets added
  /// through it belong to this graph's data, and its tile t is this graph's
  /// tile lowerTile + t. Its target has upperTile - lowerTile tiles: whole
  /// IPUs when the range covers whole IPUs, else one IPU of that many
  /// tiles. Throws GraphError for an empty range, one beyond the tiles, or
  /// one that covers part of more than one IPU.
  Graph createVirtualGraph(unsigned lowerTile, unsigned upperTile);
  /// The top-level tile this graph's tile 0 is (0 unless virtual).
  unsigned getTileOffset() const { return tileOffset_; }

  /// The target of one replica (of a virtual graph: its tile range).
  const Target &getTarget() const;
  unsigned getReplicationFactor() const;

  Tensor addVariable(Type type, const std::vector<std::size_t> &shape,
                     const DebugContext &dc = {});
  Tensor addVariable(Type type, const std::vector<std::size_t> &shape,
                     VariableMappingMethod method, const DebugContext &dc = {});

  /// A constant from \p values (numElements of them, converted to \p type).
  template <typename T>
  Tensor addConstant(Type type, const std::vector<std::size_t> &shape,
                     const T *values, const DebugContext &dc = {}) {
    return addConstantBytes(type, shape, typeOf<T>(), values, false, dc);
  }
  template <typename T>
  Tensor addConstant(Type type, const std::vector<std::size_t> &shape,
                     const std::vector<T> &values,
                     const DebugContext &dc = {}) {
    checkCount("addConstant", shape, values.size());
    return addConstant(type, shape, values.data(), dc);
  }
  template <typename T>
  Tensor addConstant(Type type, const std::vector<std::size_t> &shape,
                     std::initializer_list<T> values,
                     const DebugContext &dc = {}) {
    return addConstant(type, shape, std::vector<T>(values), dc);
  }
  /// A constant whose every element is \p value.
  template <typename T, typename = typename std::enable_if<
                            std::is_arithmetic<T>::value ||
                            std::is_same<T, Half>::value>::type>
  Tensor addConstant(Type type, const std::vector<std::size_t> &shape, T value,
                     const DebugContext &dc = {}) {
    return addConstantBytes(type, shape, typeOf<T>(), &value, true, dc);
  }

  /// A new variable with the shape, type and tile mapping of \p t. When \p
  /// t views every element of one variable once (a reshape, transpose or
  /// reordering of pieces), the clone is that variable's clone viewed the
  /// same way, so its elements also lie in memory in t's order (Poplar's
  /// clone preserves the order too).
  Tensor clone(const Tensor &t, const DebugContext &dc = {});
  Tensor clone(Type type, const Tensor &t, const DebugContext &dc = {});

  void setTileMapping(const Tensor &t, unsigned tile);
  void setTileMapping(const Tensor &t, const TileMapping &mapping);
  void setTileMapping(VertexRef v, unsigned tile);
  /// Where each element of \p t lives; throws GraphError if some element is
  /// unmapped and \p requireComplete.
  TileMapping getTileMapping(const Tensor &t,
                             bool requireComplete = true) const;

  ComputeSet addComputeSet(const DebugContext &dc = {});
  /// Lets the IPU Model's host run \p kernel's vertices in place of \p cs's
  /// whenever a program executes \p cs: they must write exactly the bytes
  /// \p cs's vertices would, from the same inputs. \p cs is still what is
  /// costed, laid out and profiled, so estimates do not change; the host
  /// saves running many small per-tile vertices (DESIGN.md section 5: the
  /// simulator may skip work whose result cannot differ). The compiler
  /// runs \p cs itself when a field of \p kernel is not one contiguous
  /// piece of one tile's memory, when \p cs writes through temporaries, or
  /// with the option engine.hostKernels false. \p kernel's vertices need a
  /// tile mapping but take no tile memory; \p kernel cannot be executed.
  void setHostKernel(ComputeSet cs, ComputeSet kernel);
  /// Makes the host run the kernels of \p first and \p second (each given
  /// by setHostKernel) both or neither: for kernels that pass each other
  /// work through a variable that only the two compute sets write and
  /// read, in a form their vertices do not (a K-split matmul's block
  /// kernel leaves the whole sum in the first K-slice's partials, which its
  /// reduction kernel copies out). \p first must run before \p second.
  void pairHostKernels(ComputeSet first, ComputeSet second);
  VertexRef addVertex(ComputeSet cs, const std::string &vertexType);
  VertexRef
  addVertex(ComputeSet cs, const std::string &vertexType,
            std::initializer_list<std::pair<std::string, Tensor>> connections);
  void connect(const FieldRef &field, const Tensor &t);
  void connect(const FieldRef &field, const std::vector<Tensor> &tensors);
  /// Sets a plain-state field of a vertex.
  template <typename T> void setInitialValue(const FieldRef &field, T value) {
    setFieldState(field, typeOf<T>(), &value, 1);
  }
  template <typename T>
  void setInitialValue(const FieldRef &field, const std::vector<T> &values) {
    setFieldState(field, typeOf<T>(), values.data(), values.size());
  }
  /// Sets the initial contents of a variable's elements.
  template <typename T> void setInitialValue(const Tensor &t, T value) {
    setTensorInitialValue(t, typeOf<T>(), &value, t.numElements(), true);
  }
  template <typename T>
  void setInitialValue(const Tensor &t, const std::vector<T> &values) {
    setTensorInitialValue(t, typeOf<T>(), values.data(), values.size(), false);
  }
  void setInitialValue(const Tensor &t, const std::vector<bool> &values) {
    // std::vector<bool> has no data(): copy into a plain array.
    std::unique_ptr<bool[]> v(new bool[values.size()]);
    std::copy(values.begin(), values.end(), v.get());
    setTensorInitialValue(t, typeOf<bool>(), v.get(), values.size(), false);
  }
  /// The number of elements of a list or state-vector field.
  void setFieldSize(const FieldRef &field, std::size_t size);
  /// Overrides the estimated cycles of one vertex.
  void setPerfEstimate(VertexRef v, std::uint64_t cycles);

  DataStream addHostToDeviceFIFO(const std::string &handle, Type type,
                                 std::size_t numElements);
  /// A host-to-device FIFO feeding the replicas as \p mode says.
  DataStream addHostToDeviceFIFO(const std::string &handle, Type type,
                                 std::size_t numElements,
                                 ReplicatedStreamMode mode);
  DataStream addDeviceToHostFIFO(const std::string &handle, Type type,
                                 std::size_t numElements);
  void createHostWrite(const std::string &handle, const Tensor &t);
  void createHostRead(const std::string &handle, const Tensor &t);
  RemoteBuffer addRemoteBuffer(const std::string &handle, Type type,
                               std::size_t numElements,
                               std::size_t repeats = 1);
  Function addFunction(const program::Program &program);

  /// Compiles a codelet source file and adds its vertex classes.
  void addCodelets(const std::string &path,
                   const std::string &compileFlags = "");
  /// Poplar's form: the file type must be C++ source (or Auto).
  void addCodelets(const std::string &path, CodeletFileType type,
                   const std::string &compileFlags = "");
  /// Adds vertex classes from source text.
  void addCodeletSource(const std::string &source, const std::string &name,
                        const std::string &compileFlags = "");
  /// The registry of vertex classes (built-in and user).
  VertexRegistry &registry();

  std::size_t getNumVertices() const;
  std::size_t getNumVariables() const;
  /// The variable's name of the first element of \p t.
  std::string getDebugName(const Tensor &t) const;

  /// The graph's data, for the compiler and tools.
  const GraphData &data() const { return *data_; }

private:
  Tensor addConstantBytes(Type type, const std::vector<std::size_t> &shape,
                          Type srcType, const void *values, bool fill,
                          const DebugContext &dc);
  static void checkCount(const char *what,
                         const std::vector<std::size_t> &shape,
                         std::size_t count);
  void setFieldState(const FieldRef &field, Type srcType, const void *values,
                     std::size_t count);
  /// Sets \p t's elements to \p count values at \p values, or (\p fill) all
  /// to the one value there.
  void setTensorInitialValue(const Tensor &t, Type srcType, const void *values,
                             std::size_t count, bool fill);
  VertexData &vertexOf(VertexRef v);
  std::pair<VertexData *, unsigned> fieldOf(const FieldRef &f);
  /// clone's order-preserving case; an invalid tensor when it does not
  /// apply (t is not one whole variable of this graph's tiles).
  Tensor cloneInOrder(Type type, const Tensor &t, const DebugContext &dc);
  void checkTensor(const Tensor &t, const char *what) const;
  void checkHandle(const std::string &handle, const char *what) const;
  Graph(std::shared_ptr<GraphData> data, std::shared_ptr<const Target> target,
        unsigned tileOffset);

  std::shared_ptr<GraphData> data_;
  /// data_->target for a top-level graph, the tile range's for a virtual one.
  std::shared_ptr<const Target> target_;
  unsigned tileOffset_ = 0;
};

/// Maps \p t over the tiles linearly in grains of \p grainSize elements,
/// at least \p minElementsPerTile per used tile (poputil's
/// mapTensorLinearly).
void mapTensorLinearly(Graph &graph, const Tensor &t,
                       std::size_t minElementsPerTile = 0,
                       std::size_t grainSize = 1);

} // namespace tessera
