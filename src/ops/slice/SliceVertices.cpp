// The slicing vertices and their estimators. One MultiVertex per column run
// of the sliced tensor on a tile (see Slice.cpp): the tensor is seen as
// [rows, columns], a row being one combination of the sliced dimensions, and
// each of the six workers takes a share of the run's columns. The offsets
// (numIndices x numSlicedDims, row-major) pick rows; every worker walks the
// same row list, so results never depend on the worker split.
#include "OpsInternal.hpp"
#include "SliceInternal.hpp"

#include "tessera/Vertex.hpp"
#include "tessera/device/Target.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace tessera::ops {
namespace {

constexpr std::uint64_t kNoRow = ~std::uint64_t(0);
constexpr unsigned kRowChunk = 256;
constexpr unsigned kMaxSlicedDims = 8;

// Walks the result rows in order, giving for each the row of the sliced
// tensor it comes from, or kNoRow for an out-of-range index. Result row r
// is index m = r / S, position q = r % S of the slice (S = product of the
// slice sizes, q row-major over the sliced dimensions). With `clamp` an
// offset is moved into [0, N - size]; without, an index whose slice does
// not fit gives no rows.
class RowWalker {
public:
  RowWalker(const unsigned *offsets, std::size_t numIndices,
            const unsigned *baseShape, const unsigned *sliceShape,
            unsigned numDims, bool clamp)
      : offsets_(offsets), numIndices_(numIndices), base_(baseShape),
        slice_(sliceShape), d_(numDims), clamp_(clamp) {
    std::uint64_t stride = 1;
    for (unsigned k = d_; k-- > 0;) {
      stride_[k] = stride;
      stride *= base_[k];
    }
    startIndex();
  }

  std::uint64_t next() {
    const std::uint64_t row = valid_ ? current_ : kNoRow;
    // Advance the odometer over the slice positions, then to the next index.
    unsigned k = d_;
    while (k-- > 0) {
      if (++digit_[k] < slice_[k]) {
        current_ += stride_[k];
        return row;
      }
      current_ -= stride_[k] * (slice_[k] - 1);
      digit_[k] = 0;
    }
    ++m_;
    startIndex();
    return row;
  }

private:
  void startIndex() {
    valid_ = true;
    current_ = 0;
    if (m_ == numIndices_)
      return; // past the last row
    for (unsigned k = 0; k < d_; ++k) {
      digit_[k] = 0;
      std::uint64_t o = offsets_[m_ * d_ + k];
      const std::uint64_t last = base_[k] - slice_[k];
      if (o > last) {
        if (clamp_)
          o = last;
        else
          valid_ = false;
      }
      current_ += o * stride_[k];
    }
  }

  const unsigned *offsets_;
  std::size_t numIndices_;
  const unsigned *base_, *slice_;
  unsigned d_;
  bool clamp_;
  std::uint64_t stride_[kMaxSlicedDims] = {};
  unsigned digit_[kMaxSlicedDims] = {};
  std::size_t m_ = 0;
  std::uint64_t current_ = 0;
  bool valid_ = true;
};

// Element (row, column) of a block stored row-major ([rows, w]) or
// column-major ([w, rows]).
struct Layout {
  std::size_t rowStride, colStride;
  static Layout of(bool columnMajor, std::size_t rows, std::size_t w) {
    return columnMajor ? Layout{1, rows} : Layout{w, 1};
  }
};

// The first column worker `worker` of six takes of `w` (it takes up to the
// next worker's first).
std::size_t workerColumn(unsigned worker, std::size_t w) {
  return w * worker / 6;
}

template <typename T> float toFloat(T v) { return static_cast<float>(v); }
template <typename T> T fromFloat(float v) {
  if constexpr (std::is_same_v<T, Half>)
    return Half(v);
  else
    return static_cast<T>(v);
}

// Walks the result rows in chunks, in order: f(first row, count, their
// source rows).
template <typename F>
void forEachRowChunk(RowWalker walker, std::size_t numRows, F &&f) {
  std::uint64_t rows[kRowChunk];
  for (std::size_t r0 = 0; r0 < numRows; r0 += kRowChunk) {
    const auto n =
        static_cast<unsigned>(std::min<std::size_t>(kRowChunk, numRows - r0));
    for (unsigned i = 0; i < n; ++i)
      rows[i] = walker.next();
    f(r0, n, rows);
  }
}

template <typename T> class MultiSliceVertex : public MultiVertex {
public:
  Input<Vector<unsigned>> offsets;
  Input<Vector<T>> base;
  Output<Vector<T>> out;
  Vector<unsigned> baseShape;
  Vector<unsigned> sliceShape;
  unsigned baseColumnMajor, outColumnMajor, clamp;

  bool compute(unsigned worker) {
    const unsigned d = static_cast<unsigned>(baseShape.size());
    std::size_t rows = 1;
    for (unsigned k = 0; k < d; ++k)
      rows *= baseShape[k];
    if (d == 0 || rows == 0)
      return false; // the plan always slices a dimension of some size
    const std::size_t w = base.size() / rows;
    const std::size_t outRows = w ? out.size() / w : 0;
    const std::size_t j0 = workerColumn(worker, w),
                      j1 = workerColumn(worker + 1, w);
    if (j0 == j1)
      return true;
    const Layout bl = Layout::of(baseColumnMajor, rows, w);
    const Layout ol = Layout::of(outColumnMajor, outRows, w);
    const T *b = base.data();
    T *o = out.data();
    const T zero = fromFloat<T>(0.0f);
    RowWalker walker(offsets.data(), offsets.size() / d, baseShape.data(),
                     sliceShape.data(), d, clamp != 0);
    forEachRowChunk(walker, outRows,
                    [&](std::size_t r0, unsigned n, const std::uint64_t *src) {
                      if (bl.colStride == 1 && ol.colStride == 1) {
                        // Row-major on both sides: whole row pieces.
                        for (unsigned i = 0; i < n; ++i) {
                          T *dst = o + (r0 + i) * ol.rowStride + j0;
                          if (src[i] == kNoRow)
                            std::fill(dst, dst + (j1 - j0), zero);
                          else
                            std::memcpy(static_cast<void *>(dst),
                                        b + src[i] * bl.rowStride + j0,
                                        (j1 - j0) * sizeof(T));
                        }
                        return;
                      }
                      for (std::size_t j = j0; j < j1; ++j) {
                        const T *bc = b + j * bl.colStride;
                        T *oc = o + j * ol.colStride + r0 * ol.rowStride;
                        for (unsigned i = 0; i < n; ++i)
                          oc[i * ol.rowStride] =
                              src[i] == kNoRow ? zero
                                               : bc[src[i] * bl.rowStride];
                      }
                    });
    return true;
  }
};

// Writes (Add: adds scale times) the rows of `sub` into the rows of `base`
// the offsets pick, in result-row order, so a row picked twice ends with
// the last write, or with every addition.
template <typename T, bool Add> class MultiUpdateVertex;

template <typename T, bool Add>
bool runUpdate(MultiUpdateVertex<T, Add> &v, unsigned worker, float scale) {
  const unsigned d = static_cast<unsigned>(v.baseShape.size());
  std::size_t rows = 1;
  for (unsigned k = 0; k < d; ++k)
    rows *= v.baseShape[k];
  if (d == 0 || rows == 0)
    return false; // the plan always slices a dimension of some size
  const std::size_t w = v.base.size() / rows;
  const std::size_t subRows = w ? v.sub.size() / w : 0;
  const std::size_t j0 = workerColumn(worker, w),
                    j1 = workerColumn(worker + 1, w);
  if (j0 == j1)
    return true;
  const Layout bl = Layout::of(v.baseColumnMajor, rows, w);
  const Layout sl = Layout::of(v.subColumnMajor, subRows, w);
  T *b = v.base.data();
  const T *s = v.sub.data();
  RowWalker walker(v.offsets.data(), v.offsets.size() / d, v.baseShape.data(),
                   v.sliceShape.data(), d, v.clamp != 0);
  forEachRowChunk(walker, subRows,
                  [&](std::size_t r0, unsigned n, const std::uint64_t *dst) {
                    for (std::size_t j = j0; j < j1; ++j) {
                      T *bc = b + j * bl.colStride;
                      const T *sc = s + j * sl.colStride + r0 * sl.rowStride;
                      for (unsigned i = 0; i < n; ++i) {
                        if (dst[i] == kNoRow)
                          continue;
                        T &x = bc[dst[i] * bl.rowStride];
                        if constexpr (Add)
                          x = fromFloat<T>(toFloat(x) +
                                           scale *
                                               toFloat(sc[i * sl.rowStride]));
                        else
                          x = sc[i * sl.rowStride];
                      }
                    }
                  });
  return true;
}

template <typename T> class MultiUpdateVertex<T, false> : public MultiVertex {
public:
  Input<Vector<unsigned>> offsets;
  InOut<Vector<T>> base;
  Input<Vector<T>> sub;
  Vector<unsigned> baseShape;
  Vector<unsigned> sliceShape;
  unsigned baseColumnMajor, subColumnMajor, clamp;

  bool compute(unsigned worker) {
    return runUpdate<T, false>(*this, worker, 1.0f);
  }
};

template <typename T> class MultiUpdateVertex<T, true> : public MultiVertex {
public:
  Input<Vector<unsigned>> offsets;
  InOut<Vector<T>> base;
  Input<Vector<T>> sub;
  Input<float> scale;
  Vector<unsigned> baseShape;
  Vector<unsigned> sliceShape;
  unsigned baseColumnMajor, subColumnMajor, clamp;

  bool compute(unsigned worker) {
    return runUpdate<T, true>(*this, worker, scale);
  }
};

// Estimated cycles per worker: a fixed cost, a few cycles per offset
// element read (load, bound check, address arithmetic: estimate 4), and
// each worker's sixth of the moved elements at `perElement` cycles each
// (one load/store pair per element: rows picked at run time are not
// 64-bit aligned vectors in general; estimate).
CycleEstimator sliceEstimator(unsigned movedField, std::uint64_t perElement) {
  return [=](const VertexInstanceShape &s, const Target &t) {
    const std::uint64_t fixed = t.costs().copyWorkerCycles;
    const auto size = [&](unsigned f) -> std::uint64_t {
      return s.fieldSizes[f].empty() ? 0 : s.fieldSizes[f][0];
    };
    const std::uint64_t perIndex = 4;
    return fixed + perIndex * size(0) +
           perElement * ((size(movedField) + 5) / 6);
  };
}

template <typename T> void registerSliceOf(VertexRegistry &registry) {
  const Type t = typeOf<T>();
  {
    using V = MultiSliceVertex<T>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::MultiSlice", {t}));
    d.field("offsets", &V::offsets)
        .field("base", &V::base)
        .field("out", &V::out)
        .field("baseShape", &V::baseShape)
        .field("sliceShape", &V::sliceShape)
        .field("baseColumnMajor", &V::baseColumnMajor)
        .field("outColumnMajor", &V::outColumnMajor)
        .field("clamp", &V::clamp);
    registry.addBuiltin(d.take(), sliceEstimator(2, 1));
  }
  {
    using V = MultiUpdateVertex<T, false>;
    codelet::VertexDescriber<V> d(
        templateName("tessera::ops::MultiUpdate", {t}));
    d.field("offsets", &V::offsets)
        .field("base", &V::base)
        .field("sub", &V::sub)
        .field("baseShape", &V::baseShape)
        .field("sliceShape", &V::sliceShape)
        .field("baseColumnMajor", &V::baseColumnMajor)
        .field("subColumnMajor", &V::subColumnMajor)
        .field("clamp", &V::clamp);
    registry.addBuiltin(d.take(), sliceEstimator(2, 1));
  }
}

template <typename T> void registerUpdateAdd(VertexRegistry &registry) {
  using V = MultiUpdateVertex<T, true>;
  codelet::VertexDescriber<V> d(
      templateName("tessera::ops::MultiUpdateAdd", {typeOf<T>()}));
  d.field("offsets", &V::offsets)
      .field("base", &V::base)
      .field("sub", &V::sub)
      .field("scale", &V::scale)
      .field("baseShape", &V::baseShape)
      .field("sliceShape", &V::sliceShape)
      .field("baseColumnMajor", &V::baseColumnMajor)
      .field("subColumnMajor", &V::subColumnMajor)
      .field("clamp", &V::clamp);
  // Load both operands, multiply-add, store: two cycles an element.
  registry.addBuiltin(d.take(), sliceEstimator(2, 2));
}

} // namespace

unsigned maxSlicedDims() { return kMaxSlicedDims; }

void registerSliceVertices(VertexRegistry &registry) {
  registerSliceOf<float>(registry);
  registerSliceOf<Half>(registry);
  registerSliceOf<int>(registry);
  registerSliceOf<unsigned>(registry);
  registerSliceOf<bool>(registry);
  registerUpdateAdd<float>(registry);
  registerUpdateAdd<Half>(registry);
}

} // namespace tessera::ops
