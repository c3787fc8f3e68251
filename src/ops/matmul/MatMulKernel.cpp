// The block product of the MatMulBlock vertex: a register-blocked AVX2/FMA
// kernel in the GotoBLAS style. A 6 x 16 tile of C lives in twelve ymm
// registers while the kernel runs down K, broadcasting one element of each
// of six A rows and loading 16 values of one B row per step.
//
// Operands are read through row pointers: a tile's A and B blocks arrive as
// several panels (one read in place, the others gathered by the exchange),
// and assembling them would only add a copy. A tile's B block is small
// enough to stay in L1/L2, so it is read in place too; only large blocks
// (single-tile plans) pack B into contiguous 16-column panels, in chunks of
// 256 x 256 that fit L2. Edge columns use 8-wide and masked variants of the
// kernel rather than padding, so narrow blocks waste no multiplies.
#include "MatMulKernel.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace tessera::ops::matmul {
namespace {

constexpr std::size_t kMr = 6;  // rows of the register tile
constexpr std::size_t kNr = 16; // columns of the register tile (two ymm)
constexpr std::size_t kKc = kMaxSummedSlice; // K slice (a multiple of
                                             // kRoundEvery)
constexpr std::size_t kNc = 256; // N chunk packed at once (a multiple of kNr)
constexpr std::size_t kRoundEvery = 16;

static_assert(kKc % kRoundEvery == 0, "K slices must keep rounding aligned");
static_assert(kNc % kNr == 0, "N chunks are whole panels");

// What one call of the micro-kernel works on: R rows of A (a[r] already
// offset to the K slice), kc rows of B (b[q] + col is row q's first column),
// and the C tile's R rows (c[r] is row r's first column).
struct Tile {
  std::size_t kc = 0;
  const float *const *a = nullptr;
  const float *const *b = nullptr;
  std::size_t col = 0;
  float *c[kMr] = {};
  bool accumulate = false;
  __m256i mask{}; // lanes of the last vector that are inside C
};

// How a micro-kernel call treats C. Plain: C = the product (or C += it,
// the sums running on from C, when the tile accumulates). RoundHalf: the
// same with each running sum rounded to half precision every kRoundEvery
// products. AddAfter: the product is summed from zero, then stored, or,
// when the tile accumulates, added to C: C + (A B), one rounding per
// element, as adding a K-slice's partial to the sum of the ones before.
enum class Mode { Plain, RoundHalf, AddAfter };

inline __m256 roundedToHalf(__m256 v) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

// Loads or stores vector v (0 or 1) of a row: the last one (v == V - 1) is
// masked when the tile's right edge cuts it.
template <std::size_t V, bool Masked>
inline __m256 load(const float *p, std::size_t v, __m256i mask) {
  if (Masked && v == V - 1)
    return _mm256_maskload_ps(p + 8 * v, mask);
  return _mm256_loadu_ps(p + 8 * v);
}
template <std::size_t V, bool Masked>
inline void store(float *p, std::size_t v, __m256 x, __m256i mask) {
  if (Masked && v == V - 1)
    _mm256_maskstore_ps(p + 8 * v, mask, x);
  else
    _mm256_storeu_ps(p + 8 * v, x);
}

// C[R x 8V] (+)= A[R x kc] * B[kc x 8V]. Everything that shapes the loop is
// a template parameter, and the accumulators are named variables, not an
// array: GCC keeps an array of vectors in memory across the K loop.
#define TESSERA_MM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
template <std::size_t R, std::size_t V, bool Masked, Mode M>
void microKernel(const Tile &t) {
  constexpr bool Round = M == Mode::RoundHalf;
  constexpr bool LoadFirst = M != Mode::AddAfter;
  const __m256i mask = t.mask;
#define TESSERA_MM_INIT(r)                                                     \
  const float *a##r = t.a[R > r ? r : 0];                                      \
  __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps();         \
  if (R > r && LoadFirst && t.accumulate) {                                    \
    c##r##0 = load<V, Masked>(t.c[r], 0, mask);                                \
    if (V > 1)                                                                 \
      c##r##1 = load<V, Masked>(t.c[r], 1, mask);                              \
  }
  TESSERA_MM_ROWS(TESSERA_MM_INIT)
#undef TESSERA_MM_INIT
  const float *const *b = t.b;
  const std::size_t col = t.col, kc = t.kc;
  std::size_t q = 0;
  while (q < kc) {
    const std::size_t end = Round ? std::min(kc, q + kRoundEvery) : kc;
    for (; q < end; ++q) {
      const float *row = b[q] + col;
      const __m256 b0 = load<V, Masked>(row, 0, mask);
      const __m256 b1 = V > 1 ? load<V, Masked>(row, 1, mask) : b0;
#define TESSERA_MM_FMA(r)                                                      \
  if constexpr (R > r) {                                                       \
    const __m256 x = _mm256_broadcast_ss(a##r + q);                            \
    c##r##0 = _mm256_fmadd_ps(x, b0, c##r##0);                                 \
    if constexpr (V > 1)                                                       \
      c##r##1 = _mm256_fmadd_ps(x, b1, c##r##1);                               \
  }
      TESSERA_MM_ROWS(TESSERA_MM_FMA)
#undef TESSERA_MM_FMA
    }
    if constexpr (Round) {
#define TESSERA_MM_ROUND(r)                                                    \
  if constexpr (R > r) {                                                       \
    c##r##0 = roundedToHalf(c##r##0);                                          \
    c##r##1 = roundedToHalf(c##r##1);                                          \
  }
      TESSERA_MM_ROWS(TESSERA_MM_ROUND)
#undef TESSERA_MM_ROUND
    }
  }
  if constexpr (M == Mode::AddAfter) {
    if (t.accumulate) {
#define TESSERA_MM_ADD(r)                                                      \
  if constexpr (R > r) {                                                       \
    c##r##0 = _mm256_add_ps(load<V, Masked>(t.c[r], 0, mask), c##r##0);        \
    if constexpr (V > 1)                                                       \
      c##r##1 = _mm256_add_ps(load<V, Masked>(t.c[r], 1, mask), c##r##1);      \
  }
      TESSERA_MM_ROWS(TESSERA_MM_ADD)
#undef TESSERA_MM_ADD
    }
  }
#define TESSERA_MM_STORE(r)                                                    \
  if constexpr (R > r) {                                                       \
    store<V, Masked>(t.c[r], 0, c##r##0, mask);                                \
    if constexpr (V > 1)                                                       \
      store<V, Masked>(t.c[r], 1, c##r##1, mask);                              \
  }
  TESSERA_MM_ROWS(TESSERA_MM_STORE)
#undef TESSERA_MM_STORE
}
#undef TESSERA_MM_ROWS

using MicroKernel = void (*)(const Tile &);

template <std::size_t R, Mode M>
MicroKernel kernelOfWidth(std::size_t vectors, bool masked) {
  if (vectors == 1)
    return masked ? &microKernel<R, 1, true, M> : &microKernel<R, 1, false, M>;
  return masked ? &microKernel<R, 2, true, M> : &microKernel<R, 2, false, M>;
}

template <Mode M>
MicroKernel kernelOfMode(std::size_t rows, std::size_t vectors, bool masked) {
  switch (rows) {
  case 1:
    return kernelOfWidth<1, M>(vectors, masked);
  case 2:
    return kernelOfWidth<2, M>(vectors, masked);
  case 3:
    return kernelOfWidth<3, M>(vectors, masked);
  case 4:
    return kernelOfWidth<4, M>(vectors, masked);
  case 5:
    return kernelOfWidth<5, M>(vectors, masked);
  default:
    return kernelOfWidth<6, M>(vectors, masked);
  }
}

MicroKernel kernelFor(Mode mode, std::size_t rows, std::size_t vectors,
                      bool masked) {
  switch (mode) {
  case Mode::RoundHalf:
    return kernelOfMode<Mode::RoundHalf>(rows, vectors, masked);
  case Mode::AddAfter:
    return kernelOfMode<Mode::AddAfter>(rows, vectors, masked);
  default:
    return kernelOfMode<Mode::Plain>(rows, vectors, masked);
  }
}

Mode modeOf(bool roundToHalf) {
  return roundToHalf ? Mode::RoundHalf : Mode::Plain;
}

// Rows [k0, k0 + kc) and columns [n0, n0 + nc) of B into panels of kNr
// columns, each row of a panel contiguous; columns past the edge are zero.
// rows[p * kc + q] points at row q of panel p.
void packB(const float *const *bRows, std::size_t k0, std::size_t kc,
           std::size_t n0, std::size_t nc, float *packed, const float **rows) {
  const std::size_t panels = (nc + kNr - 1) / kNr;
  for (std::size_t p = 0; p < panels; ++p) {
    const std::size_t col = n0 + p * kNr;
    const std::size_t w = std::min(kNr, nc - p * kNr);
    float *dst = packed + p * kc * kNr;
    for (std::size_t q = 0; q < kc; ++q) {
      const float *src = bRows[k0 + q] + col;
      float *d = dst + q * kNr;
      if (w == kNr) {
        _mm256_storeu_ps(d, _mm256_loadu_ps(src));
        _mm256_storeu_ps(d + 8, _mm256_loadu_ps(src + 8));
      } else {
        std::memcpy(d, src, w * sizeof(float));
        std::fill(d + w, d + kNr, 0.0f);
      }
      rows[p * kc + q] = d;
    }
  }
}

struct Scratch {
  std::vector<float> packed;
  std::vector<const float *> rows;
};
Scratch &scratch() {
  thread_local Scratch s;
  return s;
}

// How many of the `left` remaining rows the next register tile takes: 6,
// except that a remainder of 1 or 2 rows is merged with the previous six and
// split in two (7 -> 4 + 3, 8 -> 4 + 4), since a one- or two-row tile has too
// few independent accumulators to keep the FMA units busy.
std::size_t rowGroup(std::size_t left) {
  if (left <= kMr)
    return left;
  if (left < 2 * kMr && left - kMr < 3)
    return (left + 1) / 2;
  return kMr;
}

// Where a sweep finds B and C. B: with `panelRows`, panel p's rows of the
// K slice at panelRows + p * panelStride (packed, or a caller's panels);
// otherwise rows from bRows + k0, columns from n0. C: with `cPanels`,
// panel p's row r at cPanels[p * m + r]; otherwise row-major at c, ldc.
struct Operands {
  const float *const *aRows = nullptr;
  const float *const *bRows = nullptr;
  const float *const *panelRows = nullptr;
  std::size_t panelStride = 0;
  float *c = nullptr;
  std::size_t ldc = 0;
  float *const *cPanels = nullptr;
};

// The C columns [n0, n0 + nc) for K slice [k0, k0 + kc): every row group
// times every 16-column panel.
void sweep(std::size_t m, std::size_t k0, std::size_t kc, std::size_t n0,
           std::size_t nc, const Operands &o, bool accumulate, Mode mode) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (std::size_t i0 = 0, rows = 0; i0 < m; i0 += rows) {
    rows = rowGroup(m - i0);
    const float *a[kMr];
    for (std::size_t r = 0; r < rows; ++r)
      a[r] = o.aRows[i0 + r] + k0;
    Tile t;
    t.kc = kc;
    t.a = a;
    t.accumulate = accumulate;
    for (std::size_t p = 0; p * kNr < nc; ++p) {
      const std::size_t width = std::min(kNr, nc - p * kNr);
      const std::size_t vectors = (width + 7) / 8;
      const std::size_t tail = width - 8 * (vectors - 1);
      t.mask =
          _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(tail)), lanes);
      t.b = o.panelRows ? o.panelRows + p * o.panelStride : o.bRows + k0;
      t.col = o.panelRows ? 0 : n0 + p * kNr;
      for (std::size_t r = 0; r < rows; ++r)
        t.c[r] = o.cPanels ? o.cPanels[(n0 / kNr + p) * m + i0 + r]
                           : o.c + (i0 + r) * o.ldc + n0 + p * kNr;
      kernelFor(mode, rows, vectors, tail != 8)(t);
    }
  }
}

} // namespace

void gemm(std::size_t m, std::size_t n, std::size_t k,
          const float *const *aRows, const float *const *bRows, float *c,
          std::size_t ldc, bool accumulate, bool roundToHalf) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    if (!accumulate)
      for (std::size_t r = 0; r < m; ++r)
        std::fill(c + r * ldc, c + r * ldc + n, 0.0f);
    return;
  }
  const bool direct = k * n <= kDirectMaxB;
  Scratch &s = scratch();
  if (!direct) {
    s.packed.resize(std::max(s.packed.size(), kKc * kNc));
    s.rows.resize(std::max(s.rows.size(), kKc * (kNc / kNr)));
  }
  Operands o;
  o.aRows = aRows;
  o.bRows = bRows;
  o.c = c;
  o.ldc = ldc;
  for (std::size_t k0 = 0; k0 < k; k0 += kKc) {
    const std::size_t kc = std::min(kKc, k - k0);
    const bool acc = accumulate || k0 > 0;
    if (direct) {
      sweep(m, k0, kc, 0, n, o, acc, modeOf(roundToHalf));
      continue;
    }
    for (std::size_t n0 = 0; n0 < n; n0 += kNc) {
      const std::size_t nc = std::min(kNc, n - n0);
      packB(bRows, k0, kc, n0, nc, s.packed.data(), s.rows.data());
      o.panelRows = s.rows.data();
      o.panelStride = kc;
      sweep(m, k0, kc, n0, nc, o, acc, modeOf(roundToHalf));
    }
    o.panelRows = nullptr;
  }
}

void gemmPanels(std::size_t m, std::size_t n, std::size_t k,
                const float *const *aRows, const float *const *bPanels,
                float *const *cPanels, bool accumulate, bool roundToHalf) {
  if (m == 0 || n == 0)
    return;
  const std::size_t panels = (n + kNr - 1) / kNr;
  if (k == 0) {
    if (!accumulate)
      for (std::size_t p = 0; p < panels; ++p)
        for (std::size_t r = 0; r < m; ++r)
          std::fill_n(cPanels[p * m + r], std::min(kNr, n - p * kNr), 0.0f);
    return;
  }
  // gemm's K slices, in its order, so each sum is gemm's.
  Operands o;
  o.aRows = aRows;
  o.panelStride = k;
  o.cPanels = cPanels;
  for (std::size_t k0 = 0; k0 < k; k0 += kKc) {
    o.panelRows = bPanels + k0;
    sweep(m, k0, std::min(kKc, k - k0), 0, n, o, accumulate || k0 > 0,
          modeOf(roundToHalf));
  }
}

void gemmPanelsSummed(std::size_t m, std::size_t n, const unsigned *slices,
                      std::size_t numSlices, const float *const *aRows,
                      const float *const *bPanels, float *const *cPanels) {
  std::size_t k = 0;
  for (std::size_t s = 0; s < numSlices; ++s)
    k += slices[s];
  if (m == 0 || n == 0 || numSlices == 0)
    return;
  Operands o;
  o.aRows = aRows;
  o.panelStride = k;
  o.cPanels = cPanels;
  // Slice by slice over the whole band: a slice of B stays in cache while
  // every row group reads it, and the band of C (summed into) in L2.
  for (std::size_t s = 0, k0 = 0; s < numSlices; k0 += slices[s++]) {
    o.panelRows = bPanels + k0;
    sweep(m, k0, slices[s], 0, n, o, s > 0, Mode::AddAfter);
  }
}

void halfToFloat(const Half *src, float *dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(src + i))));
  for (; i < n; ++i)
    dst[i] = static_cast<float>(src[i]);
}

void floatToHalf(const float *src, Half *dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(dst + i),
        _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i)
    dst[i] = Half(src[i]);
}

} // namespace tessera::ops::matmul
