// Private to ops/: the reduction and top-k vertices and their host kernels.
//
// One reduction vertex reduces a list of partial vectors into a range of N
// outputs. Partial s is described by three words of `meta`: the first output
// it covers (offset), how many outputs it covers (cover) and how many
// consecutive elements belong to each output (q); its size is k * cover * q
// and element i * cover * q + j * q + r belongs to output offset + j. That
// one form covers inner reductions (k = 1, q = the reduced length), outer
// reductions (q = 1, k = the rows a tile holds) and the exchanged partials
// of the second stage (k = q = 1).
#pragma once

#include "tessera/Vertex.hpp"
#include "tessera/ops/Reduce.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tessera::ops::reducekernel {

/// The type a vertex accumulates in: float for float and half data.
template <typename T>
using AccOf = std::conditional_t<std::is_same_v<T, Half>, float, T>;

template <typename T> inline AccOf<T> load(T x) {
  if constexpr (std::is_same_v<T, Half>)
    return static_cast<float>(x);
  else
    return x;
}

template <typename T, typename A> inline T store(A x) {
  if constexpr (std::is_same_v<T, Half>)
    return Half(static_cast<float>(x));
  else
    return static_cast<T>(x);
}

/// log(exp(a) + exp(b)) without overflow.
inline float logAddExp(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return a + b;
  if (a < b)
    std::swap(a, b);
  if (b == -std::numeric_limits<float>::infinity() ||
      a == std::numeric_limits<float>::infinity())
    return a;
  return a + std::log1p(std::exp(b - a));
}

/// Scales an int result in double precision, converting as a cast does.
template <typename A> inline A scaleInt(A r, double scale) {
  double v = std::trunc(static_cast<double>(r) * scale);
  v = std::clamp(v, -9.2e18, 9.2e18);
  return static_cast<A>(static_cast<long long>(v));
}

/// The scalar algebra of an operation on accumulator type A.
template <Operation Op, typename A> struct OpAlgebra {
  static constexpr bool isInt =
      std::is_integral_v<A> && !std::is_same_v<A, bool>;
  using U = std::make_unsigned_t<std::conditional_t<isInt, A, int>>;

  static A identity() {
    switch (Op) {
    case Operation::MUL:
      return A(1);
    case Operation::MIN:
      if constexpr (std::is_floating_point_v<A>)
        return std::numeric_limits<A>::infinity();
      else
        return std::numeric_limits<A>::max();
    case Operation::MAX:
    case Operation::LOG_ADD:
      if constexpr (std::is_floating_point_v<A>)
        return -std::numeric_limits<A>::infinity();
      else
        return std::numeric_limits<A>::lowest();
    case Operation::LOGICAL_AND:
      return A(1);
    default:
      return A(0);
    }
  }
  /// Combines two accumulated values (the old output in an update, too).
  static A combine(A a, A b) {
    switch (Op) {
    case Operation::ADD:
    case Operation::SQUARE_ADD:
      if constexpr (isInt)
        return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
      else if constexpr (std::is_same_v<A, bool>)
        return a || b;
      else
        return a + b;
    case Operation::MUL:
      if constexpr (isInt)
        return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
      else if constexpr (std::is_same_v<A, bool>)
        return a && b;
      else
        return a * b;
    case Operation::MIN:
      return b < a ? b : a;
    case Operation::MAX:
      return b > a ? b : a;
    case Operation::LOG_ADD:
      if constexpr (std::is_floating_point_v<A>)
        return logAddExp(a, b);
      else
        return a;
    case Operation::LOGICAL_AND:
      return a && b;
    case Operation::LOGICAL_OR:
      return a || b;
    }
    return a;
  }
  /// What an input element contributes (its square for SQUARE_ADD).
  static A element(A x) {
    if constexpr (Op == Operation::SQUARE_ADD) {
      if constexpr (isInt)
        return static_cast<A>(static_cast<U>(x) * static_cast<U>(x));
      else
        return x * x;
    } else {
      return x;
    }
  }
  /// The last stage's scaling of a result.
  static A scaled(A r, float scale) {
    if (scale == 1.0f)
      return r;
    if constexpr (Op == Operation::LOGICAL_AND || Op == Operation::LOGICAL_OR)
      return r;
    else if constexpr (Op == Operation::LOG_ADD)
      return r + std::log(scale);
    else if constexpr (isInt)
      return scaleInt(r, scale);
    else
      return r * scale;
  }
};

// ---- AVX2 kernels for float and half data ---------------------------------

inline __m256 load8(const float *p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const Half *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}

/// acc op element(x), lane by lane.
template <Operation Op> inline __m256 vstep(__m256 acc, __m256 x) {
  if constexpr (Op == Operation::ADD)
    return _mm256_add_ps(acc, x);
  else if constexpr (Op == Operation::SQUARE_ADD)
    return _mm256_fmadd_ps(x, x, acc);
  else if constexpr (Op == Operation::MUL)
    return _mm256_mul_ps(acc, x);
  else if constexpr (Op == Operation::MIN)
    return _mm256_min_ps(acc, x);
  else
    return _mm256_max_ps(acc, x);
}

/// acc op acc2 (accumulated values: SQUARE_ADD adds).
template <Operation Op> inline __m256 vcombine(__m256 a, __m256 b) {
  if constexpr (Op == Operation::SQUARE_ADD)
    return _mm256_add_ps(a, b);
  else
    return vstep<Op>(a, b);
}

template <Operation Op>
constexpr bool kVectorised =
    Op == Operation::ADD || Op == Operation::SQUARE_ADD ||
    Op == Operation::MUL || Op == Operation::MIN || Op == Operation::MAX;

/// The reduction of n consecutive elements; a fixed association order.
template <Operation Op, typename T>
inline AccOf<T> reduceRange(const T *p, std::size_t n) {
  using A = AccOf<T>;
  using Alg = OpAlgebra<Op, A>;
  std::size_t i = 0;
  A r = Alg::identity();
  if constexpr (std::is_floating_point_v<A> && kVectorised<Op>) {
    if (n >= 16) {
      const __m256 id = _mm256_set1_ps(r);
      __m256 a0 = id, a1 = id;
      for (; i + 16 <= n; i += 16) {
        a0 = vstep<Op>(a0, load8(p + i));
        a1 = vstep<Op>(a1, load8(p + i + 8));
      }
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, vcombine<Op>(a0, a1));
      for (float l : lanes)
        r = Alg::combine(r, l);
    }
  }
  for (; i < n; ++i)
    r = Alg::combine(r, Alg::element(load(p[i])));
  return r;
}

/// acc[j] = acc[j] op element(p[j]) for j < n.
template <Operation Op, typename T>
inline void accumulate(AccOf<T> *__restrict acc, const T *__restrict p,
                       std::size_t n) {
  using Alg = OpAlgebra<Op, AccOf<T>>;
  std::size_t j = 0;
  if constexpr (std::is_floating_point_v<AccOf<T>> && kVectorised<Op>) {
    for (; j + 8 <= n; j += 8)
      _mm256_storeu_ps(acc + j,
                       vstep<Op>(_mm256_loadu_ps(acc + j), load8(p + j)));
  }
  for (; j < n; ++j)
    acc[j] = Alg::combine(acc[j], Alg::element(load(p[j])));
}

/// One partial as meta describes it.
struct PartialShape {
  std::size_t offset, cover, q, rows;
};

/// Reads and checks partial s's meta words; false if they are inconsistent.
inline bool partialShape(const unsigned *meta, std::size_t size, std::size_t n,
                         PartialShape &ps) {
  ps.offset = meta[0];
  ps.cover = meta[1];
  ps.q = meta[2];
  if (ps.cover == 0 || ps.q == 0 || ps.offset + ps.cover > n ||
      size % (ps.cover * ps.q) != 0)
    return false;
  ps.rows = size / (ps.cover * ps.q);
  return true;
}

/// Walks the pieces of every partial that fall in outputs [c0, c1): calls
/// f(firstOutput - c0, elements, outputs, q) for each row piece.
template <typename List, typename F>
inline void forEachPiece(const List &partials, const unsigned *meta,
                         std::size_t c0, std::size_t c1, F &&f) {
  for (std::size_t s = 0; s < partials.size(); ++s) {
    const std::size_t offset = meta[3 * s], cover = meta[3 * s + 1],
                      q = meta[3 * s + 2];
    const std::size_t lo = std::max(offset, c0),
                      hi = std::min(offset + cover, c1);
    if (lo >= hi)
      continue;
    const std::size_t rows = partials[s].size() / (cover * q);
    const auto *base = partials[s].data() + (lo - offset) * q;
    for (std::size_t i = 0; i < rows; ++i)
      f(lo - c0, base + i * cover * q, hi - lo, q);
  }
}

constexpr std::size_t kChunk = 512;

/// acc[j - c0] = the reduction of every element of outputs [c0, c1).
template <Operation Op, typename InT, typename List>
void reduceChunk(const List &partials, const unsigned *meta, std::size_t c0,
                 std::size_t c1, AccOf<InT> *acc) {
  using Alg = OpAlgebra<Op, AccOf<InT>>;
  std::fill(acc, acc + (c1 - c0), Alg::identity());
  forEachPiece(partials, meta, c0, c1,
               [&](std::size_t o, const InT *p, std::size_t m, std::size_t q) {
                 if (q == 1)
                   accumulate<Op>(acc + o, p, m);
                 else
                   for (std::size_t j = 0; j < m; ++j)
                     acc[o + j] = Alg::combine(acc[o + j],
                                               reduceRange<Op>(p + j * q, q));
               });
}

/// As reduceChunk for LOG_ADD: the maximum first, then the sum of
/// exp(x - max), so that no exp overflows whatever the range.
template <typename InT, typename List>
void logAddChunk(const List &partials, const unsigned *meta, std::size_t c0,
                 std::size_t c1, float *acc) {
  float sum[kChunk];
  reduceChunk<Operation::MAX, InT>(partials, meta, c0, c1, acc);
  std::fill(sum, sum + (c1 - c0), 0.0f);
  forEachPiece(partials, meta, c0, c1,
               [&](std::size_t o, const InT *p, std::size_t m, std::size_t q) {
                 for (std::size_t j = 0; j < m; ++j) {
                   const float mx = acc[o + j];
                   if (!std::isfinite(mx))
                     continue;
                   float s = 0;
                   for (std::size_t r = 0; r < q; ++r)
                     s += std::exp(load(p[j * q + r]) - mx);
                   sum[o + j] += s;
                 }
               });
  for (std::size_t j = 0; j < c1 - c0; ++j)
    if (std::isfinite(acc[j]))
      acc[j] += std::log(sum[j]);
}

/// The reduction vertex body: out (N outputs) = the reduction of the
/// partials, scaled, combined into out when Update, converted to OutT.
template <Operation Op, typename InT, typename OutT, bool Update, typename List>
bool reduce(const List &partials, const unsigned *meta, std::size_t metaSize,
            OutT *out, std::size_t n, float scale) {
  using A = AccOf<InT>;
  using Alg = OpAlgebra<Op, A>;
  if (metaSize != 3 * partials.size())
    return false;
  for (std::size_t s = 0; s < partials.size(); ++s) {
    PartialShape ps;
    if (!partialShape(meta + 3 * s, partials[s].size(), n, ps))
      return false;
  }
  A acc[kChunk];
  for (std::size_t c0 = 0; c0 < n; c0 += kChunk) {
    const std::size_t c1 = std::min(n, c0 + kChunk);
    if constexpr (Op == Operation::LOG_ADD)
      logAddChunk<InT>(partials, meta, c0, c1, acc);
    else
      reduceChunk<Op, InT>(partials, meta, c0, c1, acc);
    for (std::size_t j = c0; j < c1; ++j) {
      A r = Alg::scaled(acc[j - c0], scale);
      if constexpr (Update)
        r = Alg::combine(load(out[j]), r);
      out[j] = store<OutT>(r);
    }
  }
  return true;
}

/// The reduction vertex: Reduce<op>[Update]<in,out> in the registry. A
/// MultiVertex: the op plans a tile's work in worker shares and gives the
/// vertex their outputs concatenated (each partial's offset indexes them)
/// and the busiest worker's estimate (Reduce.cpp); on the host worker 0
/// runs them all, every output's elements in the order of its partials.
template <Operation Op, typename InT, typename OutT, bool Update>
class ReduceVertex : public MultiVertex {
public:
  Vector<Input<Vector<InT>>> partials;
  std::conditional_t<Update, InOut<Vector<OutT>>, Output<Vector<OutT>>> out;
  Vector<unsigned> meta;
  float scale = 1.0f;

  bool compute(unsigned worker) {
    if (worker != 0)
      return true;
    return reduce<Op, InT, OutT, Update>(partials, meta.data(), meta.size(),
                                         out.data(), out.size(), scale);
  }
};

// ---- top-k ----------------------------------------------------------------

/// Binary-heap helpers over positions: higher(a, b) says a belongs nearer
/// the root than b; swap(a, b) exchanges two positions.
template <typename Higher, typename Swap>
inline void siftDown(std::size_t i, std::size_t n, Higher &higher, Swap &swap) {
  for (;;) {
    std::size_t c = 2 * i + 1;
    if (c >= n)
      return;
    if (c + 1 < n && higher(c + 1, c))
      ++c;
    if (!higher(c, i))
      return;
    swap(i, c);
    i = c;
  }
}

template <typename Higher, typename Swap>
inline void siftUp(std::size_t i, Higher &higher, Swap &swap) {
  while (i > 0) {
    const std::size_t p = (i - 1) / 2;
    if (!higher(i, p))
      return;
    swap(i, p);
    i = p;
  }
}

/// Sorts n positions so that the highest comes last.
template <typename Higher, typename Swap>
inline void heapSort(std::size_t n, Higher &higher, Swap &swap) {
  for (std::size_t i = n / 2; i-- > 0;)
    siftDown(i, n, higher, swap);
  for (std::size_t e = n; e-- > 1;) {
    swap(0, e);
    siftDown(0, e, higher, swap);
  }
}

/// Keeps the k best of n candidates (values v, indices idx(i)) in ov / oi:
/// best first when sorted, else by increasing index. Ties rank the lower
/// index first. No allocation: the heap lives in the outputs.
template <typename T, typename Idx>
inline void selectTopK(const T *v, std::size_t n, Idx idx, T *ov, unsigned *oi,
                       std::size_t k, bool largest, bool sorted) {
  using K = AccOf<T>;
  auto better = [largest](K a, unsigned ia, K b, unsigned ib) {
    if (a != b)
      return largest ? a > b : a < b;
    return ia < ib;
  };
  // The heap's root is the worst candidate kept.
  auto worse = [&](std::size_t a, std::size_t b) {
    return better(load(ov[b]), oi[b], load(ov[a]), oi[a]);
  };
  auto swap = [&](std::size_t a, std::size_t b) {
    std::swap(ov[a], ov[b]);
    std::swap(oi[a], oi[b]);
  };
  std::size_t m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned ix = idx(i);
    if (m < k) {
      ov[m] = v[i];
      oi[m] = ix;
      siftUp(m++, worse, swap);
    } else if (better(load(v[i]), ix, load(ov[0]), oi[0])) {
      ov[0] = v[i];
      oi[0] = ix;
      siftDown(0, m, worse, swap);
    }
  }
  if (sorted) {
    // Popping the worst to the back leaves the best at the front.
    heapSort(m, worse, swap);
  } else {
    auto laterIndex = [&](std::size_t a, std::size_t b) {
      return oi[a] > oi[b];
    };
    heapSort(m, laterIndex, swap);
  }
}

/// TopK<T>: for each item r, the outValues[r].size() best of values[r] with
/// their indices (indices[r][i], or base[r] + i when `indices` is empty).
template <typename T> class TopKVertex : public Vertex {
public:
  Vector<Input<Vector<T>>> values;
  Vector<Input<Vector<unsigned>>> indices;
  Vector<unsigned> base;
  Vector<Output<Vector<T>>> outValues;
  Vector<Output<Vector<unsigned>>> outIndices;
  bool largest = true;
  bool sorted = true;

  bool compute() {
    const std::size_t items = values.size();
    const bool explicitIndices = indices.size() != 0;
    if (outValues.size() != items || outIndices.size() != items ||
        (explicitIndices ? indices.size() != items : base.size() != items))
      return false;
    for (std::size_t r = 0; r < items; ++r) {
      const std::size_t n = values[r].size(), k = outValues[r].size();
      if (k > n || outIndices[r].size() != k ||
          (explicitIndices && indices[r].size() != n))
        return false;
      if (explicitIndices) {
        const unsigned *ix = indices[r].data();
        selectTopK(
            values[r].data(), n, [ix](std::size_t i) { return ix[i]; },
            outValues[r].data(), outIndices[r].data(), k, largest, sorted);
      } else {
        const unsigned b = base[r];
        selectTopK(
            values[r].data(), n,
            [b](std::size_t i) { return b + static_cast<unsigned>(i); },
            outValues[r].data(), outIndices[r].data(), k, largest, sorted);
      }
    }
    return true;
  }
};

} // namespace tessera::ops::reducekernel
