// Private to ops/: the host kernel behind the MatMulBlock vertex. A tile's
// block product C[m x n] (+)= A[m x k] B[k x n] in float, with A given as row
// pointers and B as row pointers, so that the blocks a vertex receives as
// several panels (its own piece in place, the others gathered by exchange)
// need no assembling copy. The benchmarks call it directly to compare it
// with OpenBLAS on the same block shape.
#pragma once

#include "../../support/Copy.hpp"
#include "tessera/support/Half.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tessera::ops::matmul {

/// B blocks of at most this many floats (256 KiB) are read in place; gemm
/// packs larger ones.
constexpr std::size_t kDirectMaxB = 64 * 1024;

/// C = A B (or C += A B when \p accumulate) for an m x n block over k.
/// Row r of A is aRows[r][0..k), row q of B is bRows[q][0..n), C is
/// row-major with leading dimension \p ldc. When \p roundToHalf, every
/// output's running sum is rounded to half precision after each 16
/// products (the first 16 of the call, the next 16, ...), so the result is
/// what accumulating in half-precision partials at that granularity gives.
void gemm(std::size_t m, std::size_t n, std::size_t k,
          const float *const *aRows, const float *const *bRows, float *c,
          std::size_t ldc, bool accumulate, bool roundToHalf = false);

/// gemm with B and C given per 16-column panel: panel p holds columns
/// [16p, min(n, 16p + 16)); row q of its B is bPanels[p * k + q] and row r
/// of its C is cPanels[p * m + r], each pointing at the panel's first
/// column. Every sum is gemm's, term for term, so the operands of a tile's
/// block, which arrive as pieces of 16 columns, are read and written where
/// they lie.
void gemmPanels(std::size_t m, std::size_t n, std::size_t k,
                const float *const *aRows, const float *const *bPanels,
                float *const *cPanels, bool accumulate,
                bool roundToHalf = false);

/// The longest K-slice gemmPanelsSummed takes: gemm sums over K in chunks
/// of this many products, so a slice no longer is one chunk.
constexpr std::size_t kMaxSummedSlice = 256;

/// The sum of the products of consecutive K-slices of sizes
/// slices[0, numSlices) (each at most kMaxSummedSlice), each computed as
/// gemmPanels computes it from zero and then added in slice order,
/// ((s0 + s1) + s2) + ..., in float: bit for bit what writing each slice's
/// product as a partial and summing the partials with sumRows<false> gives,
/// without storing the partials. Operands as gemmPanels', over the whole K.
void gemmPanelsSummed(std::size_t m, std::size_t n, const unsigned *slices,
                      std::size_t numSlices, const float *const *aRows,
                      const float *const *bPanels, float *const *cPanels);

/// dst[0, n) = the sums of the float rows parts[i].data() + at in part
/// order, ((z + p0) + p1) + ..., where z is 0 when \p FromZero (turning a
/// -0 sum to +0) and absent otherwise. Chunks of 256 floats take up to four
/// parts a pass, each vector's sum in a register through the pass: few
/// enough streams for the hardware prefetchers, and a quarter of the
/// buffer traffic of one pass per part.
template <bool FromZero, typename Parts>
void sumRows(const Parts &parts, std::size_t at, std::size_t n, float *dst) {
  constexpr std::size_t kChunk = 256, kPerPass = 4;
  const std::size_t np = parts.size();
  alignas(32) float acc[kChunk];
  for (std::size_t b = 0; b < n; b += kChunk) {
    const std::size_t len = std::min(kChunk, n - b);
    std::size_t p = 0;
    do {
      const std::size_t end = std::min(np, p + kPerPass);
      const bool first = p == 0;
      float *out = end == np ? dst + b : acc;
      std::size_t i = 0;
      for (; i + 8 <= len; i += 8) {
        std::size_t q = p;
        __m256 v;
        if (!first)
          v = _mm256_load_ps(acc + i);
        else if (FromZero || q == end)
          v = _mm256_setzero_ps();
        else
          v = _mm256_loadu_ps(parts[q++].data() + at + b + i);
        for (; q < end; ++q)
          v = _mm256_add_ps(v, _mm256_loadu_ps(parts[q].data() + at + b + i));
        _mm256_storeu_ps(out + i, v);
      }
      for (; i < len; ++i) {
        std::size_t q = p;
        float v;
        if (!first)
          v = acc[i];
        else if (FromZero || q == end)
          v = 0.0f;
        else
          v = parts[q++].data()[at + b + i];
        for (; q < end; ++q)
          v += parts[q].data()[at + b + i];
        out[i] = v;
      }
      p = end;
    } while (p < np);
  }
}

/// Copies \p n floats that do not overlap (host kernels move many pieces
/// of a few floats: a tile's row of a block).
[[gnu::always_inline]] inline void copyFloats(const float *src, float *dst,
                                              std::size_t n) {
  support::copyBytes(dst, src, n * sizeof(float));
}

/// Converts \p n halves to floats (F16C, 8 at a time).
void halfToFloat(const Half *src, float *dst, std::size_t n);
/// Converts \p n floats to halves, rounding to nearest even.
void floatToHalf(const float *src, Half *dst, std::size_t n);

} // namespace tessera::ops::matmul
