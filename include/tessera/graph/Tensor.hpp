/// \file
/// Tensor: a view of variables. A tensor is a shape, an element type and an
/// ordered list of strided runs of variable elements; its elements in
/// row-major order are the runs' elements one after another. View operations
/// (slice, transpose, broadcast, ...) build new run lists and never copy
/// data, and a run can stand for a whole strided row, so a transpose of an
/// n x n tensor costs n runs, not n*n. Run lists are immutable and shared:
/// reshape, flatten, expand, squeeze and reinterpret reuse the same list.
#pragma once

#include "tessera/support/Type.hpp"

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

/// A half-open interval [begin, end) of indices.
struct Interval {
  std::size_t first = 0, last = 0; // last is one past the end
  Interval() = default;
  Interval(std::size_t begin, std::size_t end) : first(begin), last(end) {}
  std::size_t begin() const { return first; }
  std::size_t end() const { return last; }
  std::size_t size() const { return last - first; }
  bool operator==(const Interval &o) const {
    return first == o.first && last == o.last;
  }
  bool operator!=(const Interval &o) const { return !(*this == o); }
};

/// Elements start, start+stride, ..., start+(count-1)*stride of variable
/// `var`. A run of one element has stride 1. Stride 0 repeats one element
/// (broadcast); a negative stride walks backwards (reverse).
struct Run {
  std::uint32_t var = 0;
  std::int64_t start = 0;
  std::int64_t stride = 1;
  std::int64_t count = 0;
  bool operator==(const Run &o) const {
    return var == o.var && start == o.start && stride == o.stride &&
           count == o.count;
  }
  bool operator!=(const Run &o) const { return !(*this == o); }
};

namespace detail {
struct TensorRunList; // the runs and their prefix sums, shared between views
} // namespace detail

/// A view of elements of a graph's variables with a shape and element type.
class Tensor {
public:
  Tensor() = default;
  /// A tensor over \p runs; their total count must equal the shape's product.
  /// Runs of zero elements are dropped and adjacent runs that continue each
  /// other are merged.
  Tensor(Type type, std::vector<std::size_t> shape,
         const std::vector<Run> &runs);

  Type elementType() const { return type_; }
  const std::vector<std::size_t> &shape() const { return shape_; }
  unsigned rank() const { return static_cast<unsigned>(shape_.size()); }
  std::size_t dim(unsigned i) const;
  /// The product of the shape; 0 for a default-constructed tensor.
  std::size_t numElements() const;
  /// False for a default-constructed tensor, which views nothing; views of
  /// it throw GraphError.
  bool valid() const { return runs_ != nullptr; }
  /// True when the elements are consecutive elements of one variable, in
  /// increasing order; false for a tensor without elements.
  bool isContiguous() const;
  /// The runs, merged where one continues another (so a contiguous tensor
  /// has exactly one run, of stride 1).
  const std::vector<Run> &runs() const;
  /// Variable ids this tensor touches, sorted and unique.
  std::vector<std::uint32_t> variables() const;

  /// Index on the outermost dimension, dropping it.
  Tensor operator[](std::size_t i) const;
  /// Index the outermost dimensions, dropping them (one index per dimension,
  /// outermost first).
  Tensor index(const std::vector<std::size_t> &indices) const;
  /// Elements [begin, end) along \p dim, keeping the rank.
  Tensor slice(std::size_t begin, std::size_t end, unsigned dim = 0) const;
  Tensor slice(const Interval &region, unsigned dim = 0) const;
  /// Multi-dimensional slice: [begin[i], end[i]) on each dimension i.
  Tensor slice(const std::vector<std::size_t> &begin,
               const std::vector<std::size_t> &end) const;
  /// One slice per interval along \p dim.
  std::vector<Tensor> slices(const std::vector<Interval> &intervals,
                             unsigned dim = 0) const;
  /// A 1-D view of all elements.
  Tensor flatten() const;
  /// Merges dimensions [dimBegin, dimEnd) into one.
  Tensor flatten(unsigned dimBegin, unsigned dimEnd) const;
  Tensor reshape(const std::vector<std::size_t> &shape) const;
  /// Dimension i of the result is dimension permutation[i] of this tensor.
  Tensor dimShuffle(const std::vector<unsigned> &permutation) const;
  /// Moves dimension \p dimIdx to position \p newIdx.
  Tensor dimRoll(unsigned dimIdx, unsigned newIdx = 0) const;
  /// Swaps the two dimensions of a 2-D tensor.
  Tensor transpose() const;
  /// Repeats the tensor \p n times along \p dim (Poplar's broadcast).
  Tensor broadcast(std::size_t n, unsigned dim) const;
  /// Inserts dimensions of size 1 before the given positions of this tensor's
  /// dimensions (a position equal to the rank appends); repeat a position to
  /// insert several dimensions there.
  Tensor expand(const std::vector<std::size_t> &indices) const;
  /// Removes the given dimensions (positions in this tensor), each of size 1.
  Tensor squeeze(const std::vector<std::size_t> &dims) const;
  Tensor reverse(unsigned dim) const;
  /// Every \p stride-th element along \p dim, starting at the first.
  Tensor subSample(std::size_t stride, unsigned dim) const;
  /// The same bytes seen as another type of the same size.
  Tensor reinterpret(Type type) const;

  /// The shape as text, "[2, 3]".
  std::string shapeToString() const;

private:
  Type type_ = Type::FLOAT;
  std::vector<std::size_t> shape_;
  std::shared_ptr<const detail::TensorRunList> runs_;

  /// A view over an existing run list, shared rather than copied.
  Tensor(Type type, std::vector<std::size_t> shape,
         std::shared_ptr<const detail::TensorRunList> runs);
  friend Tensor concat(const std::vector<Tensor> &tensors, unsigned dim);
};

/// Joins tensors along \p dim; all other dimensions must agree.
Tensor concat(const std::vector<Tensor> &tensors, unsigned dim = 0);
Tensor concat(const Tensor &a, const Tensor &b, unsigned dim = 0);
/// Appends \p b along \p dim, where b has one dimension fewer than a.
Tensor append(const Tensor &a, const Tensor &b, unsigned dim);

/// Prints "{var 0, start 4, stride 1, count 3}", for test failures and logs.
std::ostream &operator<<(std::ostream &os, const Run &run);
/// Prints the type, the shape and the runs: "float[2, 3]{...}".
std::ostream &operator<<(std::ostream &os, const Tensor &tensor);

} // namespace tessera
