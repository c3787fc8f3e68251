// Private to ops/: the host kernels of the convolution vertices. Everything
// is computed in float: half operands are widened with F16C while they are
// copied into the vertex's scratch buffers.
//
// The multiply-accumulate core is one register-blocked AVX2/FMA panel: MR
// (up to 6) broadcast operands times a 16-float row, 12 accumulators. Three
// address patterns use it:
// - forward, along output columns: MR output channels x 16 output columns,
//   stepping over the kernel elements (input rows come from a pointer
//   table, so the padded input is never expanded into im2col form);
// - forward, along output channels: MR output columns x 16 channels, for
//   strided or narrow outputs;
// - weight gradient: MR kernel elements x 16 output channels, stepping over
//   output positions.
#pragma once

#include "../matmul/MatMulKernel.hpp"
#include "tessera/support/Half.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tessera::ops::conv::kernels {

constexpr int kMaxMR = 6;
constexpr std::size_t kNR = 16;

/// Lane masks for a row of \p n (1..16) valid floats.
struct Mask {
  __m256i lo, hi;
  explicit Mask(std::size_t n) {
    alignas(32) static const std::int32_t table[24] = {
        -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0,
        0,  0,  0,  0,  0,  0,  0,  0,  0, 0, 0, 0};
    const std::size_t a = std::min<std::size_t>(n, 8);
    const std::size_t b = n > 8 ? std::min<std::size_t>(n - 8, 8) : 0;
    lo = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(table + 8 - a));
    hi = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(table + 8 - b));
  }
};

/// Which lanes of a 16-float row a panel computes: all, those a mask
/// selects, or (at most 8 valid) the first 8 only, which halves the work.
enum class Lanes { All, Masked, Low };

/// acc[i][0..1] += a(i, j) * b(j)[0..15] for j in [0, steps): the inner
/// loop of every convolution kernel. Each lane's sum is the same whichever
/// Lanes computes it.
template <int MR, Lanes L, typename A, typename B>
inline void panel(std::size_t steps, A a, B b, const Mask &m,
                  __m256 (&acc)[MR][2]) {
  for (std::size_t j = 0; j < steps; ++j) {
    const float *bp = b(j);
    __m256 b0, b1;
    if constexpr (L == Lanes::All) {
      b0 = _mm256_loadu_ps(bp);
      b1 = _mm256_loadu_ps(bp + 8);
    } else {
      b0 = _mm256_maskload_ps(bp, m.lo);
      if constexpr (L == Lanes::Masked)
        b1 = _mm256_maskload_ps(bp + 8, m.hi);
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 av = _mm256_broadcast_ss(a(i, j));
      acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
      if constexpr (L != Lanes::Low)
        acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
    }
  }
}

/// panel over rows of \p n (1..16) valid floats, m = Mask(n).
template <int MR, typename A, typename B>
inline void panelOf(std::size_t n, std::size_t steps, A a, B b, const Mask &m,
                    __m256 (&acc)[MR][2]) {
  if (n == kNR)
    panel<MR, Lanes::All>(steps, a, b, m, acc);
  else if (n > 8)
    panel<MR, Lanes::Masked>(steps, a, b, m, acc);
  else
    panel<MR, Lanes::Low>(steps, a, b, m, acc);
}

template <int MR> inline void clear(__m256 (&acc)[MR][2]) {
  for (int i = 0; i < MR; ++i)
    acc[i][0] = acc[i][1] = _mm256_setzero_ps();
}

/// Widens \p n elements to float; floats are copied as the matmul kernels
/// copy their short operand pieces (rows here are a few dozen floats).
inline void toFloat(const float *src, float *dst, std::size_t n) {
  matmul::copyFloats(src, dst, n);
}
inline void toFloat(const Half *src, float *dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(src + i))));
  for (; i < n; ++i)
    dst[i] = halfBitsToFloat(src[i].bits);
}

/// Sets \p n floats to zero.
inline void zero(float *dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_setzero_ps());
  for (; i < n; ++i)
    dst[i] = 0.0f;
}

/// acc[0..n) += src[0..n) (widened).
inline void addTo(const float *src, float *acc, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i),
                                            _mm256_loadu_ps(src + i)));
  for (; i < n; ++i)
    acc[i] += src[i];
}
inline void addTo(const Half *src, float *acc, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(
        acc + i,
        _mm256_add_ps(_mm256_loadu_ps(acc + i),
                      _mm256_cvtph_ps(_mm_loadu_si128(
                          reinterpret_cast<const __m128i *>(src + i)))));
  for (; i < n; ++i)
    acc[i] += halfBitsToFloat(src[i].bits);
}

/// dst[0, n) = ((0 + p0) + p1) + ... of the float rows parts[i].data() +
/// at, as zero() then addTo() for each part computes them (the 0 turns a
/// -0 sum to +0), written once (matmul::sumRows).
template <typename Parts>
inline void sumFrom0(const Parts &parts, std::size_t at, std::size_t n,
                     float *dst) {
  matmul::sumRows<true>(parts, at, n, dst);
}

/// The next block of output channels for a kernel of up to kMaxMR rows,
/// out of \p left: blocks of 6, except that a remainder of 7 to 11 is
/// split in two, so no block is narrower than 4 when there are at least 8
/// (narrow blocks leave the FMA units waiting on their few accumulators).
inline int nextBlock(std::size_t left) {
  if (left >= 12 || left == 6)
    return kMaxMR;
  if (left > 6)
    return static_cast<int>((left + 1) / 2);
  return static_cast<int>(left);
}

/// Narrows (or copies) \p n floats to the output type.
inline void fromFloat(const float *src, float *dst, std::size_t n) {
  toFloat(src, dst, n);
}
inline void fromFloat(const float *src, Half *dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(dst + i),
        _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i)
    dst[i].bits = floatToHalfBits(src[i]);
}

/// Stores one accumulator row (16 lanes, \p n valid) to \p dst.
template <typename OutT>
inline void storeRow(const __m256 (&row)[2], OutT *dst, std::size_t n,
                     const Mask &m) {
  if constexpr (std::is_same_v<OutT, float>) {
    if (n == kNR) {
      _mm256_storeu_ps(dst, row[0]);
      _mm256_storeu_ps(dst + 8, row[1]);
    } else {
      _mm256_maskstore_ps(dst, m.lo, row[0]);
      _mm256_maskstore_ps(dst + 8, m.hi, row[1]);
    }
  } else {
    alignas(32) float tmp[kNR];
    _mm256_store_ps(tmp, row[0]);
    _mm256_store_ps(tmp + 8, row[1]);
    fromFloat(tmp, dst, n);
  }
}

/// Forward along output columns: dst[i][0..n) = sum over j < steps of
/// w[i][j] * tab[j][col0 + 0..n), for MR output channels.
template <int MR, typename OutT>
inline void fwdColumns(const float *const *w, const float *const *tab,
                       std::size_t steps, std::size_t outW, OutT *const *dst) {
  const float *wr[MR];
  for (int i = 0; i < MR; ++i)
    wr[i] = w[i];
  for (std::size_t c0 = 0; c0 < outW; c0 += kNR) {
    const std::size_t n = std::min(kNR, outW - c0);
    const Mask m(n);
    __m256 acc[MR][2];
    clear(acc);
    auto a = [&](int i, std::size_t j) { return wr[i] + j; };
    auto b = [&](std::size_t j) { return tab[j] + c0; };
    panelOf<MR>(n, steps, a, b, m, acc);
    for (int i = 0; i < MR; ++i)
      storeRow(acc[i], dst[i] + c0, n, m);
  }
}

/// Forward along output channels, for MR output columns starting at col0:
/// dst[co0 + c][col0 + i] = sum over j of tab[j][(col0 + i) * sW] *
/// wt[j * ldw + co0 + c], for all channels [0, nco).
template <int MR, typename OutT>
inline void fwdChannels(const float *const *tab, std::size_t steps,
                        std::size_t col0, std::size_t sW, const float *wt,
                        std::size_t ldw, std::size_t nco, OutT *const *dst) {
  std::size_t off[MR];
  for (int i = 0; i < MR; ++i)
    off[i] = (col0 + i) * sW;
  for (std::size_t co0 = 0; co0 < nco; co0 += kNR) {
    const std::size_t n = std::min(kNR, nco - co0);
    const Mask m(n);
    __m256 acc[MR][2];
    clear(acc);
    auto a = [&](int i, std::size_t j) { return tab[j] + off[i]; };
    auto b = [&](std::size_t j) { return wt + j * ldw + co0; };
    panelOf<MR>(n, steps, a, b, m, acc);
    alignas(32) float tmp[MR][kNR];
    for (int i = 0; i < MR; ++i) {
      _mm256_store_ps(tmp[i], acc[i][0]);
      _mm256_store_ps(tmp[i] + 8, acc[i][1]);
    }
    for (std::size_t c = 0; c < n; ++c)
      for (int i = 0; i < MR; ++i) {
        if constexpr (std::is_same_v<OutT, float>)
          dst[co0 + c][col0 + i] = tmp[i][c];
        else
          dst[co0 + c][col0 + i].bits = floatToHalfBits(tmp[i][c]);
      }
  }
}

/// Weight gradient, one output row: acc[i] += sum over j < outW of
/// x[i][j * sW] * dyT[j * ldd + 0..n), for MR kernel elements, m = Mask(n).
template <int MR>
inline void wgradRow(const float *const *x, std::size_t outW, std::size_t sW,
                     const float *dyT, std::size_t ldd, std::size_t n,
                     const Mask &m, __m256 (&acc)[MR][2]) {
  const float *xr[MR];
  for (int i = 0; i < MR; ++i)
    xr[i] = x[i];
  if (sW == 1)
    panelOf<MR>(
        n, outW, [&](int i, std::size_t j) { return xr[i] + j; },
        [&](std::size_t j) { return dyT + j * ldd; }, m, acc);
  else
    panelOf<MR>(
        n, outW, [&](int i, std::size_t j) { return xr[i] + j * sW; },
        [&](std::size_t j) { return dyT + j * ldd; }, m, acc);
}

/// dst[i][0..n) += acc[i] for MR rows.
template <int MR>
inline void addTo(const __m256 (&acc)[MR][2], float *const *dst, std::size_t n,
                  const Mask &m) {
  for (int i = 0; i < MR; ++i) {
    if (n == kNR) {
      _mm256_storeu_ps(dst[i],
                       _mm256_add_ps(_mm256_loadu_ps(dst[i]), acc[i][0]));
      _mm256_storeu_ps(dst[i] + 8,
                       _mm256_add_ps(_mm256_loadu_ps(dst[i] + 8), acc[i][1]));
    } else {
      _mm256_maskstore_ps(
          dst[i], m.lo,
          _mm256_add_ps(_mm256_maskload_ps(dst[i], m.lo), acc[i][0]));
      _mm256_maskstore_ps(
          dst[i] + 8, m.hi,
          _mm256_add_ps(_mm256_maskload_ps(dst[i] + 8, m.hi), acc[i][1]));
    }
  }
}

/// Transposes eight rows of eight floats in registers.
inline void transpose8(__m256 (&r)[8]) {
  __m256 t[8], u[8];
  for (int a = 0; a < 8; a += 2) {
    t[a] = _mm256_unpacklo_ps(r[a], r[a + 1]);
    t[a + 1] = _mm256_unpackhi_ps(r[a], r[a + 1]);
  }
  for (int a = 0; a < 8; a += 4) {
    u[a] = _mm256_shuffle_ps(t[a], t[a + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[a + 1] = _mm256_shuffle_ps(t[a], t[a + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[a + 2] = _mm256_shuffle_ps(t[a + 1], t[a + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[a + 3] = _mm256_shuffle_ps(t[a + 1], t[a + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int a = 0; a < 4; ++a) {
    r[a] = _mm256_permute2f128_ps(u[a], u[a + 4], 0x20);
    r[a + 4] = _mm256_permute2f128_ps(u[a], u[a + 4], 0x31);
  }
}

/// dst[j * ldd + i] = src[i][j] for i < rows, j < cols, in 8x8 blocks.
inline void transpose(const float *const *src, std::size_t rows,
                      std::size_t cols, float *dst, std::size_t ldd) {
  std::size_t i = 0;
  for (; i + 8 <= rows; i += 8) {
    std::size_t j = 0;
    for (; j + 8 <= cols; j += 8) {
      __m256 r[8];
      for (int a = 0; a < 8; ++a)
        r[a] = _mm256_loadu_ps(src[i + a] + j);
      transpose8(r);
      for (int a = 0; a < 8; ++a)
        _mm256_storeu_ps(dst + (j + a) * ldd + i, r[a]);
    }
    for (; j < cols; ++j)
      for (std::size_t a = 0; a < 8; ++a)
        dst[j * ldd + i + a] = src[i + a][j];
  }
  for (; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      dst[j * ldd + i] = src[i][j];
}

/// Calls f.template operator()<MR>() with MR = \p mr (1..6) as a constant.
template <typename F> inline void withMR(int mr, F &&f) {
  switch (mr) {
  case 1:
    f.template operator()<1>();
    break;
  case 2:
    f.template operator()<2>();
    break;
  case 3:
    f.template operator()<3>();
    break;
  case 4:
    f.template operator()<4>();
    break;
  case 5:
    f.template operator()<5>();
    break;
  default:
    f.template operator()<6>();
    break;
  }
}

} // namespace tessera::ops::conv::kernels
