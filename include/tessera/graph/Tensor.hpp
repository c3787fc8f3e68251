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

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <stdexcept>
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

/// A read-only view of consecutive elements owned by something else (a
/// tensor's shape or runs). It iterates, indexes and compares like the
/// std::vector it converts to; the owner must outlive it, and a view of a
/// tensor's shape is valid only while that tensor is neither modified nor
/// destroyed (copy it into a std::vector to keep it).
template <typename T> class ArrayView {
public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using const_reference = const T &;
  using reference = const T &;
  using const_iterator = const T *;
  using iterator = const T *;

  ArrayView() = default;
  ArrayView(const T *data, std::size_t size) : data_(data), size_(size) {}
  ArrayView(const std::vector<T> &v) : data_(v.data()), size_(v.size()) {}

  const T *begin() const { return data_; }
  const T *end() const { return data_ + size_; }
  const T *data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T &operator[](std::size_t i) const { return data_[i]; }
  /// Element \p i; throws std::out_of_range past the end.
  const T &at(std::size_t i) const {
    if (i >= size_)
      throw std::out_of_range("ArrayView::at: index " + std::to_string(i) +
                              " is past the end of " + std::to_string(size_) +
                              " elements");
    return data_[i];
  }
  const T &front() const { return data_[0]; }
  const T &back() const { return data_[size_ - 1]; }
  /// A copy of the elements.
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  operator std::vector<T>() const { return vec(); }

  // Written out for C++11 user code (no four-iterator std::equal, and no
  // != derived from ==).
  friend bool operator==(ArrayView a, ArrayView b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(ArrayView a, ArrayView b) { return !(a == b); }

private:
  const T *data_ = nullptr;
  std::size_t size_ = 0;
};

namespace detail {
/// The reference count at the head of every shared block a tensor points
/// to; `count` is the number of elements that follow (runs or dimensions).
struct SharedHeader {
  mutable std::atomic<std::uint32_t> refs{1};
  std::uint32_t count = 0;
};
struct TensorRunList; // the runs and their prefix sums, shared between views
/// Frees a block whose last reference went away.
void destroyRunList(const SharedHeader *list);
void destroyShapeBlock(const SharedHeader *block);
} // namespace detail

/// A view of elements of a graph's variables with a shape and element type.
/// A tensor is small (48 bytes): shapes of up to four dimensions are kept in
/// it, longer ones and the run list are blocks shared between copies and
/// views, each one heap allocation holding its elements.
class Tensor {
public:
  Tensor() = default;
  /// A tensor over \p runs; their total count must equal the shape's product.
  /// Runs of zero elements are dropped and adjacent runs that continue each
  /// other are merged.
  Tensor(Type type, const std::vector<std::size_t> &shape,
         const std::vector<Run> &runs);
  /// A 1-D tensor over \p runs (merged as above), without a shape vector:
  /// for planners that make many small pieces.
  Tensor(Type type, ArrayView<Run> runs);
  Tensor(const Tensor &o) : type_(o.type_), rank_(o.rank_), runs_(o.runs_) {
    copyShape(o);
    retain(runs_);
  }
  Tensor(Tensor &&o) noexcept
      : type_(o.type_), rank_(o.rank_), runs_(o.runs_), shape_(o.shape_) {
    o.rank_ = 0; // the shape block's reference moves too
    o.runs_ = nullptr;
  }
  Tensor &operator=(const Tensor &o) {
    if (this != &o) {
      Tensor copy(o);
      swap(copy);
    }
    return *this;
  }
  Tensor &operator=(Tensor &&o) noexcept {
    if (this != &o) {
      Tensor moved(std::move(o));
      swap(moved);
    }
    return *this;
  }
  ~Tensor() {
    releaseShape();
    release(runs_);
  }

  Type elementType() const { return type_; }
  /// The dimensions, outermost first (a view of this tensor's own copy).
  ArrayView<std::size_t> shape() const { return {shapeData(), rank_}; }
  unsigned rank() const { return rank_; }
  std::size_t dim(unsigned i) const;
  /// The product of the shape; 0 for a default-constructed tensor.
  std::size_t numElements() const {
    if (!runs_)
      return 0;
    std::size_t n = 1;
    for (std::size_t d : shape())
      n *= d;
    return n;
  }
  /// False for a default-constructed tensor, which views nothing; views of
  /// it throw GraphError.
  bool valid() const { return runs_ != nullptr; }
  /// True when the elements are consecutive elements of one variable, in
  /// increasing order; false for a tensor without elements.
  bool isContiguous() const {
    // Merging guarantees consecutive elements form one run of stride 1.
    return runs_ && runs_->count == 1 && runs().front().stride == 1;
  }
  /// The runs, merged where one continues another (so a contiguous tensor
  /// has exactly one run, of stride 1). Views that share a run list return
  /// the same elements (same data()).
  ArrayView<Run> runs() const {
    // A run list's runs follow its header.
    return runs_ ? ArrayView<Run>(reinterpret_cast<const Run *>(runs_ + 1),
                                  runs_->count)
                 : ArrayView<Run>();
  }
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
  /// The runs that flatten().slice(begin, end) would have, into \p out
  /// (replacing what it held), without building a tensor: for planners
  /// that read many pieces of one tensor.
  void flatRuns(std::size_t begin, std::size_t end,
                std::vector<Run> &out) const;
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
  static constexpr unsigned kInlineRank = 4;
  Type type_ = Type::FLOAT;
  std::uint8_t rank_ = 0;
  const detail::SharedHeader *runs_ = nullptr;
  union {
    std::size_t inline_[kInlineRank];
    const detail::SharedHeader *block_; // rank_ > kInlineRank
  } shape_{};

  const std::size_t *shapeData() const {
    return rank_ <= kInlineRank
               ? shape_.inline_
               : reinterpret_cast<const std::size_t *>(shape_.block_ + 1);
  }
  void copyShape(const Tensor &o) {
    shape_ = o.shape_;
    if (rank_ > kInlineRank)
      shape_.block_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void releaseShape() {
    if (rank_ > kInlineRank &&
        shape_.block_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      detail::destroyShapeBlock(shape_.block_);
  }
  // The shared empty list (count 0) is never freed and not counted.
  static void retain(const detail::SharedHeader *list) {
    if (list && list->count)
      list->refs.fetch_add(1, std::memory_order_relaxed);
  }
  static void release(const detail::SharedHeader *list) {
    if (list && list->count &&
        list->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      detail::destroyRunList(list);
  }
  void swap(Tensor &o) noexcept {
    std::swap(type_, o.type_);
    std::swap(rank_, o.rank_);
    std::swap(runs_, o.runs_);
    std::swap(shape_, o.shape_);
  }
  void setShape(const std::size_t *dims, std::size_t rank);

  /// A view over a run list whose reference this tensor takes over.
  Tensor(Type type, const std::size_t *shape, std::size_t rank,
         const detail::TensorRunList *runs);
  /// A view over the run list of \p like, shared (reshape and friends).
  Tensor(Type type, const std::size_t *shape, std::size_t rank,
         const Tensor &like);
  const detail::TensorRunList &list() const;
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
