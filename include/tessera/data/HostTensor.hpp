/// \file
/// HostTensor: an n-dimensional array in host memory with an element type, a
/// shape and its elements stored contiguously in row-major order. It is the
/// value a dataset element is made of, and what a training loop copies into
/// the device's input streams.
///
/// \code
///   auto images = HostTensor::fromValues<float>({2, 3}, {1, 2, 3, 4, 5, 6});
///   std::span<const float> row1 = images.slice(1).values<float>(); // 4 5 6
///   HostTensor asInt = images.cast(INT);
/// \endcode
///
/// A HostTensor has value semantics: copying it copies its elements. Storage
/// is 64-byte aligned, so views of any element type are aligned.
#pragma once

#include "tessera/support/Error.hpp"
#include "tessera/support/Type.hpp"

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tessera::data {

/// Dimensions of a tensor, outermost first. An empty shape is a scalar.
using Shape = std::vector<std::size_t>;

/// A dimension of an ElementSpec whose size varies between elements (the
/// leading dimension of batches when the last batch may be short).
inline constexpr std::size_t anyDim = std::numeric_limits<std::size_t>::max();

/// The number of elements of \p shape (1 for a scalar).
std::size_t numElements(const Shape &shape);

/// "[28,28,1]"; an unknown dimension (anyDim) prints as "?".
std::string shapeString(const Shape &shape);

/// "float [28,28,1]".
std::string typeAndShapeString(Type type, const Shape &shape);

class HostTensor {
public:
  /// An empty float tensor of shape [0]; it owns no storage.
  HostTensor();
  /// A tensor of \p type and \p shape with every element zero.
  HostTensor(Type type, Shape shape);

  /// A tensor holding \p values, which must number numElements(shape)
  /// (a ShapeError says by how many they differ otherwise).
  template <typename T>
  static HostTensor fromValues(Shape shape, std::span<const T> values) {
    HostTensor t(typeOf<T>(), std::move(shape));
    t.checkValueCount(values.size());
    if (!values.empty())
      std::memcpy(t.data(), values.data(), values.size_bytes());
    return t;
  }
  template <typename T>
  static HostTensor fromValues(Shape shape, const std::vector<T> &values) {
    return fromValues<T>(std::move(shape), std::span<const T>(values));
  }
  template <typename T>
  static HostTensor fromValues(Shape shape, std::initializer_list<T> values) {
    return fromValues<T>(std::move(shape),
                         std::span<const T>(values.begin(), values.size()));
  }
  /// A rank-0 tensor holding \p value.
  template <typename T> static HostTensor scalar(T value) {
    return fromValues<T>({}, std::span<const T>(&value, 1));
  }

  HostTensor(const HostTensor &other);
  HostTensor &operator=(const HostTensor &other);
  HostTensor(HostTensor &&other) noexcept;
  HostTensor &operator=(HostTensor &&other) noexcept;
  ~HostTensor();

  Type type() const { return type_; }
  const Shape &shape() const { return shape_; }
  std::size_t rank() const { return shape_.size(); }
  /// Size of dimension \p d; a ShapeError when \p d >= rank().
  std::size_t dim(std::size_t d) const;
  std::size_t numElements() const { return numElements_; }
  std::size_t numBytes() const { return numElements_ * typeSize(type_); }

  /// The elements as raw bytes.
  void *data() { return storage_.get(); }
  const void *data() const { return storage_.get(); }

  /// The elements as \p T; a TypeError names both types when \p T is not
  /// the tensor's element type.
  template <typename T> std::span<T> values() {
    checkType(typeOf<T>());
    return {static_cast<T *>(data()), numElements_};
  }
  template <typename T> std::span<const T> values() const {
    checkType(typeOf<T>());
    return {static_cast<const T *>(data()), numElements_};
  }
  /// The single element of a tensor with one element (a scalar, say).
  template <typename T> T item() const {
    checkSingleElement();
    return values<T>()[0];
  }

  /// Element \p i along dimension 0 as a tensor of rank() - 1 (a copy).
  HostTensor slice(std::size_t i) const;
  /// The same elements converted to \p type (C++ conversion rules; float to
  /// half rounds to nearest even).
  HostTensor cast(Type type) const;
  /// The same elements with another shape of the same element count (a
  /// ShapeError gives both counts otherwise).
  HostTensor reshaped(Shape shape) const;
  /// Gives this tensor another shape of the same element count, in place.
  void reshape(Shape shape);

  /// Makes this a tensor of \p type and \p shape whose elements are
  /// unspecified, reusing the storage when it is large enough. Pipelines
  /// call it to refill an element without allocating.
  void reset(Type type, const Shape &shape);
  /// Changes dimension 0 to \p size <= dim(0), keeping the leading elements
  /// (a short final batch).
  void shrinkLeadingDim(std::size_t size);

  /// Same type, shape and bytes.
  bool operator==(const HostTensor &other) const;

private:
  struct FreeStorage {
    void operator()(std::byte *p) const;
  };

  void checkType(Type requested) const;
  void checkValueCount(std::size_t count) const;
  void checkSingleElement() const;
  void allocate(std::size_t bytes);

  Type type_ = Type::FLOAT;
  Shape shape_{0};
  std::size_t numElements_ = 0;
  std::size_t capacity_ = 0;
  std::unique_ptr<std::byte[], FreeStorage> storage_;
};

} // namespace tessera::data
