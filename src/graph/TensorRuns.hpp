/// \file
/// Private machinery behind tessera::Tensor views: the shared run list with
/// its prefix sums, a builder that merges runs as they arrive, and the one
/// routine that turns an affine view of a run list into a new run list.
#pragma once

#include "tessera/graph/Tensor.hpp"

#include <cstdint>
#include <type_traits>
#include <vector>

namespace tessera::detail {

/// A vector of trivially copyable values that keeps its first N in place
/// and moves to the heap only beyond them: the dimension lists of a view
/// and the runs of a builder, which nearly always fit.
template <typename T, std::size_t N> class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>);

public:
  SmallVec() = default;
  SmallVec(std::size_t n, const T &value) { assign(n, value); }
  SmallVec(const T *first, const T *last) { assign(first, last); }
  SmallVec(const SmallVec &o) { assign(o.begin(), o.end()); }
  SmallVec &operator=(const SmallVec &o) {
    if (this != &o)
      assign(o.begin(), o.end());
    return *this;
  }

  T *data() { return heap_.empty() ? local_.items : heap_.data(); }
  const T *data() const { return heap_.empty() ? local_.items : heap_.data(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T *begin() { return data(); }
  T *end() { return data() + size_; }
  const T *begin() const { return data(); }
  const T *end() const { return data() + size_; }
  T &operator[](std::size_t i) { return data()[i]; }
  const T &operator[](std::size_t i) const { return data()[i]; }
  T &back() { return data()[size_ - 1]; }
  const T &back() const { return data()[size_ - 1]; }
  void clear() { size_ = 0; }
  void reserve(std::size_t n) {
    if (n > N && n > heap_.size())
      grow(n);
  }
  void push_back(const T &v) {
    if (size_ == capacity())
      grow(2 * size_);
    data()[size_++] = v;
  }
  void pop_back() { --size_; }
  void assign(std::size_t n, const T &value) {
    size_ = 0;
    reserve(n);
    std::fill(data(), data() + n, value);
    size_ = n;
  }
  void assign(const T *first, const T *last) {
    size_ = 0;
    const auto n = static_cast<std::size_t>(last - first);
    reserve(n);
    std::copy(first, last, data());
    size_ = n;
  }
  void erase(T *first, T *last) {
    std::copy(last, end(), first);
    size_ -= static_cast<std::size_t>(last - first);
  }
  void insert(T *pos, const T &v) {
    const auto at = static_cast<std::size_t>(pos - begin());
    push_back(v);
    std::rotate(begin() + at, end() - 1, end());
  }

private:
  std::size_t capacity() const { return heap_.empty() ? N : heap_.size(); }
  // The heap buffer, once used, is sized to the capacity.
  void grow(std::size_t n) {
    n = std::max(n, N + 1);
    std::vector<T> bigger(n);
    std::copy(data(), data() + size_, bigger.data());
    heap_ = std::move(bigger);
  }

  // Left uninitialised (T may zero itself by default): only the first
  // size_ elements are ever read.
  union Local {
    Local() {}
    T items[N];
  } local_;
  std::vector<T> heap_;
  std::size_t size_ = 0;
};

/// One dimension of an affine map: \p size indices, each \p step elements
/// (of the source, or of a variable) from the previous one.
struct AffineDim {
  std::int64_t size = 0;
  std::int64_t step = 0;
};

using AffineDims = SmallVec<AffineDim, 6>;
using ShapeDims = SmallVec<std::size_t, 6>;

/// A run list that is one affine map of one variable: the element at
/// row-major multi-index (i_0, ..., i_k) over dims is element
/// base + sum(i_j * dims[j].step) of variable var. Dims have sizes above 1
/// and no dimension continues the next one.
struct AffineForm {
  std::uint32_t var = 0;
  std::int64_t base = 0;
  AffineDims dims;
};

/// The runs of a tensor, merged and free of empty runs, in one heap block:
/// the header, the runs, and for more than one run ends[i], the number of
/// elements in runs[0..i] (so that the run holding a flat index is found by
/// binary search), then the affine form if known. Lists made by views of one
/// variable keep their affine form, so that a view of a view costs its
/// output runs and not a walk over its elements; a single run is its own
/// affine form and stores none.
struct TensorRunList : SharedHeader {
  /// A new list (one reference) holding \p runs, already merged, and
  /// \p affine when given.
  static const TensorRunList *create(const Run *runs, std::size_t numRuns,
                                     const AffineForm *affine);

  ArrayView<Run> runs() const {
    return {reinterpret_cast<const Run *>(this + 1), count};
  }
  const Run &run(std::size_t i) const { return runs().data()[i]; }
  /// ends[i] as above; only for lists of more than one run.
  const std::int64_t *ends() const {
    return reinterpret_cast<const std::int64_t *>(runs().end());
  }
  std::int64_t numElements() const {
    return count == 0 ? 0 : count == 1 ? run(0).count : ends()[count - 1];
  }
  /// The affine form of this list, if it has one.
  bool affine(AffineForm &form) const;
  /// The index of the run that holds flat element \p flat.
  std::size_t findRun(std::int64_t flat) const;
  /// Where flat element \p flat lives: runs[run].start + offset * stride.
  std::int64_t elementAt(std::size_t run, std::int64_t flat) const;
};
// Tensor::runs() finds the runs right after the header.
static_assert(sizeof(TensorRunList) == sizeof(SharedHeader) &&
              sizeof(SharedHeader) == 8 && alignof(Run) <= 8);

/// Holds one reference to a run list.
class RunListRef {
public:
  RunListRef() = default;
  /// Takes over a reference the caller owns.
  explicit RunListRef(const TensorRunList *list) : list_(list) {}
  RunListRef(const RunListRef &) = delete;
  RunListRef &operator=(const RunListRef &) = delete;
  RunListRef(RunListRef &&o) noexcept : list_(o.list_) { o.list_ = nullptr; }
  ~RunListRef();
  /// Gives the reference to the caller.
  const TensorRunList *release() {
    const TensorRunList *l = list_;
    list_ = nullptr;
    return l;
  }
  const TensorRunList *get() const { return list_; }
  const TensorRunList *operator->() const { return list_; }

private:
  const TensorRunList *list_ = nullptr;
};

/// Collects runs in order, merging each with the previous one when it
/// continues it, and drops empty runs. The runs gather in a buffer that the
/// thread's builders reuse one after another (a builder made while another
/// is alive has its own), so that a finished list costs one allocation.
class RunBuilder {
public:
  RunBuilder();
  /// A builder that collects into \p into (for callers that keep the runs
  /// and not a list; finish is then not called).
  explicit RunBuilder(std::vector<Run> &into) : runs_(&into) {}
  ~RunBuilder();
  RunBuilder(const RunBuilder &) = delete;
  RunBuilder &operator=(const RunBuilder &) = delete;
  void reserve(std::size_t n) { runs_->reserve(n); }
  void push(const Run &run);
  /// Appends the elements flat, flat+step, ..., flat+(count-1)*step of
  /// \p source.
  void pushProgression(const TensorRunList &source, std::int64_t flat,
                       std::int64_t step, std::int64_t count);
  /// The finished list; the builder is left empty. \p affine describes the
  /// pushed elements when known; a single run describes itself.
  RunListRef finish(const AffineForm *affine = nullptr);

private:
  std::vector<Run> *runs_;
  std::vector<Run> own_;
  bool borrowed_ = false;
};

/// The run list of the view whose element at multi-index (i_0, ..., i_k),
/// in row-major order over \p dims, is source flat element
/// base + sum(i_j * dims[j].step). Returns \p source itself (a new
/// reference) when the view is the identity.
RunListRef mapAffine(const TensorRunList &source, std::int64_t base,
                     const AffineDim *dims, std::size_t numDims);

/// A run list made of \p runs (merged and cleaned on the way).
RunListRef makeRunList(const Run *runs, std::size_t numRuns);

/// The shared empty run list (never freed, not counted).
const TensorRunList *emptyRunList();

} // namespace tessera::detail
