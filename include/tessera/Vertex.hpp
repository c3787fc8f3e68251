/// \file
/// The codelet header: what a vertex class sees. A vertex derives from Vertex
/// (compute() on one worker) or MultiVertex (compute(workerId) on all six)
/// and declares fields: Input / Output / InOut of a scalar, of Vector<T>, of
/// VectorList<T>; Vector<Input<Vector<T>>>; and plain state (scalars and
/// Vector<T>). compute() returns bool (false aborts the run) or void.
///
/// Fields are plain pointers and sizes that the engine fills in at load time,
/// pointing into the vertex's tile memory; their layouts are described by
/// FieldTraits so the engine and this header agree without sharing code.
/// This header is compiled into user codelets: it depends only on the
/// standard library and tessera/support/Type.hpp.
#pragma once

#include "tessera/support/Type.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace tessera {

using half = Half;

/// Base of single-worker vertices: `bool compute()`.
class Vertex {};
/// Base of vertices run by all six workers: `bool compute(unsigned worker)`.
class MultiVertex {
public:
  static constexpr unsigned numWorkers() { return 6; }
};

/// Poplar's layout hints; accepted and ignored by the IPU Model.
enum class VectorLayout {
  ONE_PTR,
  SPAN,
  SCALED_PTR32,
  SCALED_PTR64,
  COMPACT_PTR
};
enum class VectorListLayout { COMPACT_DELTAN, DELTANELEMENTS };
TESSERA_INLINE_VAR constexpr VectorLayout ONE_PTR = VectorLayout::ONE_PTR;
TESSERA_INLINE_VAR constexpr VectorLayout SPAN = VectorLayout::SPAN;
TESSERA_INLINE_VAR constexpr VectorLayout COMPACT_PTR =
    VectorLayout::COMPACT_PTR;
TESSERA_INLINE_VAR constexpr VectorListLayout COMPACT_DELTAN =
    VectorListLayout::COMPACT_DELTAN;
TESSERA_INLINE_VAR constexpr VectorListLayout DELTANELEMENTS =
    VectorListLayout::DELTANELEMENTS;

namespace codelet {
/// How a field is used: read, written, both, or plain state set at build.
enum class Direction : std::uint8_t { Input, Output, InOut, State };
/// What a field holds: one element, a vector, a list of vectors, or a list
/// of single elements.
enum class Shape : std::uint8_t { Scalar, Vector, VectorList, ScalarList };

/// The in-memory form of a vector: a pointer and an element count.
struct Span {
  void *data;
  std::uint32_t size;
};
/// The in-memory form of a list of single elements.
struct PointerList {
  void **data;
  std::uint32_t size;
};
} // namespace codelet

/// A run of elements in the vertex's tile memory (plain-state vectors, and
/// the T of Input<Vector<T>>).
template <typename T, VectorLayout L = VectorLayout::SPAN,
          unsigned Align = alignof(T), bool Interleaved = false>
class Vector {
public:
  T &operator[](std::size_t i) { return data_[i]; }
  const T &operator[](std::size_t i) const { return data_[i]; }
  std::size_t size() const { return size_; }
  T *data() { return data_; }
  const T *data() const { return data_; }
  T *begin() { return data_; }
  T *end() { return data_ + size_; }
  const T *begin() const { return data_; }
  const T *end() const { return data_ + size_; }

private:
  T *data_ = nullptr;
  std::uint32_t size_ = 0;
};

/// A list of vectors (the Poplar VectorList), same form as
/// Vector<Input<Vector<T>>>.
template <typename T, VectorListLayout L = VectorListLayout::DELTANELEMENTS>
class VectorList;

namespace detail {
template <typename T> class SpanView {
public:
  T &operator[](std::size_t i) const { return data_[i]; }
  std::size_t size() const { return size_; }
  T *data() const { return data_; }
  T *begin() const { return data_; }
  T *end() const { return data_ + size_; }
  /// `x->size()`, as Poplar codelets write it for vector fields.
  const SpanView *operator->() const { return this; }

private:
  T *data_ = nullptr;
  std::uint32_t size_ = 0;
};
template <typename T> class ScalarRef {
public:
  operator T() const { return *p_; } // NOLINT: behaves as the value
  T &operator*() const { return *p_; }
  T *operator->() const { return p_; }
  T *data() const { return p_; }
  ScalarRef &operator=(const typename std::remove_const<T>::type &v) {
    *p_ = v;
    return *this;
  }

private:
  T *p_ = nullptr;
};
} // namespace detail

/// A field the vertex reads.
template <typename T> class Input : public detail::ScalarRef<const T> {};
/// A field the vertex writes.
template <typename T> class Output : public detail::ScalarRef<T> {
public:
  using detail::ScalarRef<T>::operator=;
};
/// A field the vertex reads and writes.
template <typename T> class InOut : public detail::ScalarRef<T> {
public:
  using detail::ScalarRef<T>::operator=;
};

template <typename T, VectorLayout L, unsigned A, bool I>
class Input<Vector<T, L, A, I>> : public detail::SpanView<const T> {};
template <typename T, VectorLayout L, unsigned A, bool I>
class Output<Vector<T, L, A, I>> : public detail::SpanView<T> {};
template <typename T, VectorLayout L, unsigned A, bool I>
class InOut<Vector<T, L, A, I>> : public detail::SpanView<T> {};

template <typename T, VectorListLayout L>
class Input<VectorList<T, L>>
    : public detail::SpanView<const detail::SpanView<const T>> {};
template <typename T, VectorListLayout L>
class Output<VectorList<T, L>>
    : public detail::SpanView<const detail::SpanView<T>> {};
template <typename T, VectorListLayout L>
class InOut<VectorList<T, L>>
    : public detail::SpanView<const detail::SpanView<T>> {};

namespace codelet {

/// What the engine needs to know of a field type: direction, shape and
/// element type. Specialised below for every supported field form.
template <typename F, typename = void> struct FieldTraits {
  static constexpr bool supported = false;
};

template <typename T>
struct FieldTraits<
    T, typename std::enable_if<std::is_arithmetic<T>::value ||
                               std::is_same<T, Half>::value>::type> {
  static constexpr bool supported = true;
  static constexpr Direction direction = Direction::State;
  static constexpr Shape shape = Shape::Scalar;
  static constexpr Type elementType = typeOf<T>();
};
template <typename T, VectorLayout L, unsigned A, bool I>
struct FieldTraits<
    Vector<T, L, A, I>,
    typename std::enable_if<std::is_arithmetic<T>::value ||
                            std::is_same<T, Half>::value>::type> {
  static constexpr bool supported = true;
  static constexpr Direction direction = Direction::State;
  static constexpr Shape shape = Shape::Vector;
  static constexpr Type elementType = typeOf<T>();
};

template <template <typename> class D> constexpr Direction directionOf();
template <> constexpr Direction directionOf<Input>() {
  return Direction::Input;
}
template <> constexpr Direction directionOf<Output>() {
  return Direction::Output;
}
template <> constexpr Direction directionOf<InOut>() {
  return Direction::InOut;
}

template <template <typename> class D, typename T> struct DirectedTraits {
  static constexpr bool supported = true;
  static constexpr Direction direction = directionOf<D>();
  static constexpr Shape shape = Shape::Scalar;
  static constexpr Type elementType = typeOf<T>();
};
template <template <typename> class D, typename T, VectorLayout L, unsigned A,
          bool I>
struct DirectedTraits<D, Vector<T, L, A, I>> : DirectedTraits<D, T> {
  static constexpr Shape shape = Shape::Vector;
};
template <template <typename> class D, typename T, VectorListLayout L>
struct DirectedTraits<D, VectorList<T, L>> : DirectedTraits<D, T> {
  static constexpr Shape shape = Shape::VectorList;
};

template <typename T>
struct FieldTraits<Input<T>> : DirectedTraits<Input, T> {};
template <typename T>
struct FieldTraits<Output<T>> : DirectedTraits<Output, T> {};
template <typename T>
struct FieldTraits<InOut<T>> : DirectedTraits<InOut, T> {};

/// Vector<Input<Vector<T>>> is a list of vectors; Vector<Input<T>> a list of
/// single elements.
template <template <typename> class D, typename T, VectorLayout L, unsigned A,
          bool I>
struct FieldTraits<Vector<D<T>, L, A, I>,
                   typename std::enable_if<FieldTraits<D<T>>::supported &&
                                           FieldTraits<D<T>>::direction !=
                                               Direction::State>::type> {
  static constexpr bool supported =
      FieldTraits<D<T>>::shape != Shape::VectorList;
  static constexpr Direction direction = FieldTraits<D<T>>::direction;
  static constexpr Shape shape = FieldTraits<D<T>>::shape == Shape::Vector
                                     ? Shape::VectorList
                                     : Shape::ScalarList;
  static constexpr Type elementType = FieldTraits<D<T>>::elementType;
};

/// One field of a vertex class: its name, where it sits in the object, and
/// its traits.
struct FieldInfo {
  std::string name;
  std::size_t offset = 0;
  Direction direction = Direction::Input;
  Shape shape = Shape::Scalar;
  Type elementType = Type::FLOAT;
  /// A state vector the vertices of a tile read and never write, as a
  /// table shared by all the vertices with the same value (a map's
  /// program): a tile holds each distinct value once, with its code, and a
  /// vertex holds only where it lies. Set by VertexDescriber::sharedField.
  bool shared = false;
};

/// A vertex class as the engine runs it: how to build an object and call
/// compute(), and where its fields are.
struct VertexClassInfo {
  std::string name;
  std::size_t size = 0, align = 1;
  bool multiVertex = false;
  void (*construct)(void *) = nullptr;
  void (*destroy)(void *) = nullptr;
  /// Runs compute() (MultiVertex: compute(worker)); false means failure.
  bool (*compute)(void *, unsigned worker) = nullptr;
  std::vector<FieldInfo> fields;
};

// Describing a vertex class (registration) is compiled as C++17 or later:
// built-in vertices and codelets are; Poplar programs including this header
// under C++11 or C++14 only need the vertex types above.
#if TESSERA_CXX17
template <typename V> void constructVertex(void *p) { new (p) V(); }
template <typename V> void destroyVertex(void *p) { static_cast<V *>(p)->~V(); }
template <typename V> bool computeVertex(void *p, unsigned worker) {
  V &v = *static_cast<V *>(p);
  if constexpr (std::is_base_of_v<MultiVertex, V>) {
    if constexpr (std::is_void_v<decltype(v.compute(worker))>) {
      v.compute(worker);
      return true;
    } else {
      return v.compute(worker);
    }
  } else {
    (void)worker;
    if constexpr (std::is_void_v<decltype(v.compute())>) {
      v.compute();
      return true;
    } else {
      return v.compute();
    }
  }
}

/// Builds the VertexClassInfo of V; field() adds each field by member
/// pointer. Used by built-in vertex registration and by the code Tessera
/// generates around user codelets.
template <typename V> class VertexDescriber {
public:
  explicit VertexDescriber(std::string name) {
    static_assert(std::is_base_of_v<Vertex, V> ||
                      std::is_base_of_v<MultiVertex, V>,
                  "a vertex class must derive from Vertex or MultiVertex");
    info_.name = std::move(name);
    info_.size = sizeof(V);
    info_.align = alignof(V);
    info_.multiVertex = std::is_base_of_v<MultiVertex, V>;
    info_.construct = &constructVertex<V>;
    info_.destroy = &destroyVertex<V>;
    info_.compute = &computeVertex<V>;
  }
  template <typename F> VertexDescriber &field(std::string name, F V::*member) {
    using Traits = FieldTraits<F>;
    static_assert(Traits::supported, "unsupported vertex field type");
    alignas(V) static unsigned char storage[sizeof(V)];
    V *proto = reinterpret_cast<V *>(storage);
    FieldInfo f;
    f.name = std::move(name);
    f.offset = static_cast<std::size_t>(
        reinterpret_cast<const unsigned char *>(&(proto->*member)) - storage);
    f.direction = Traits::direction;
    f.shape = Traits::shape;
    f.elementType = Traits::elementType;
    info_.fields.push_back(std::move(f));
    return *this;
  }
  /// A plain-state vector field (Vector<T>) that is a read-only table,
  /// stored once per tile for the vertices holding the same value
  /// (FieldInfo::shared).
  template <typename F>
  VertexDescriber &sharedField(std::string name, F V::*member) {
    static_assert(FieldTraits<F>::direction == Direction::State &&
                      FieldTraits<F>::shape == Shape::Vector,
                  "a shared field is a plain-state Vector<T>");
    field(std::move(name), member);
    info_.fields.back().shared = true;
    return *this;
  }
  VertexClassInfo take() { return std::move(info_); }

private:
  VertexClassInfo info_;
};
#endif

/// What the generated registration function of a codelet library fills.
struct CodeletSink {
  std::vector<VertexClassInfo> classes;
};

} // namespace codelet
} // namespace tessera
