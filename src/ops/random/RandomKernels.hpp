// Private to ops/: the counter-based generator behind the random ops and the
// transforms from its 32-bit words to each distribution. Shared by the
// vertices and the host reference, so both produce the same bits.
//
// The generator is Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel
// random numbers: as easy as 1, 2, 3", SC 2011): a keyed bijection of a
// 128-bit counter. Element g of a random tensor takes word g % 4 of the block
// whose counter is (g / 4 as 64 bits, seedModifier, attempt) under the key
// (seed[0], seed[1]), attempt being 0 except for the redraws of the
// truncated normal. So its value is a pure function of (seed, seedModifier,
// g) and never of the tiles, workers or host threads that computed it.
//
// Blocks are computed in batches laid out by lane (w[lane][block]) so the
// rounds and the float transforms run as vector code. The float transforms
// are out of line (RandomKernels.cpp) and always process whole groups of
// eight blocks with the same vector instructions, so a batch of one block
// (the reference) and a batch of 64 (a vertex) round every value alike.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace tessera::ops::random {

/// The two key words of the generator (the seed).
struct Key {
  std::uint32_t k0 = 0, k1 = 0;
};

// The round multipliers and key increments of Philox4x32 (the paper's
// constants; the increments are the golden ratio and sqrt(3) - 1 as 32-bit
// fractions).
inline constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kBump0 = 0x9E3779B9u, kBump1 = 0xBB67AE85u;
inline constexpr unsigned kRounds = 10;

/// One Philox4x32-10 block: the four words for counter \p c under \p key.
inline void philoxBlock(Key key, const std::uint32_t c[4],
                        std::uint32_t out[4]) {
  std::uint32_t x0 = c[0], x1 = c[1], x2 = c[2], x3 = c[3];
  std::uint32_t k0 = key.k0, k1 = key.k1;
  for (unsigned r = 0; r < kRounds; ++r) {
    if (r) {
      k0 += kBump0;
      k1 += kBump1;
    }
    const std::uint64_t p0 = std::uint64_t(kMul0) * x0;
    const std::uint64_t p1 = std::uint64_t(kMul1) * x2;
    const std::uint32_t y0 = std::uint32_t(p1 >> 32) ^ x1 ^ k0;
    const std::uint32_t y2 = std::uint32_t(p0 >> 32) ^ x3 ^ k1;
    x0 = y0;
    x1 = std::uint32_t(p1);
    x2 = y2;
    x3 = std::uint32_t(p0);
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

/// Blocks per batch: a multiple of the transforms' group of eight.
inline constexpr unsigned kBatch = 64;
/// Words of a batch by lane: w[lane][block].
using Words = std::uint32_t[4][kBatch];
/// Values of a batch by lane.
using Values = float[4][kBatch];

/// \p nb rounded up to the transforms' group of eight blocks.
inline unsigned groupedBlocks(unsigned nb) { return (nb + 7) & ~7u; }

namespace detail {
// The ten rounds over arrays; the restrict-qualified lanes let the compiler
// vectorise the 32x32->64-bit products.
inline void philoxRounds(std::uint32_t *__restrict x0,
                         std::uint32_t *__restrict x1,
                         std::uint32_t *__restrict x2,
                         std::uint32_t *__restrict x3, unsigned n, Key key) {
  std::uint32_t k0 = key.k0, k1 = key.k1;
  for (unsigned r = 0; r < kRounds; ++r) {
    if (r) {
      k0 += kBump0;
      k1 += kBump1;
    }
    for (unsigned b = 0; b < n; ++b) {
      const std::uint64_t p0 = std::uint64_t(kMul0) * x0[b];
      const std::uint64_t p1 = std::uint64_t(kMul1) * x2[b];
      const std::uint32_t y0 = std::uint32_t(p1 >> 32) ^ x1[b] ^ k0;
      const std::uint32_t y2 = std::uint32_t(p0 >> 32) ^ x3[b] ^ k1;
      x0[b] = y0;
      x1[b] = std::uint32_t(p1);
      x2[b] = y2;
      x3[b] = std::uint32_t(p0);
    }
  }
}
} // namespace detail

/// Words of blocks first ... first + nb - 1 (nb <= kBatch) for \p attempt;
/// the lanes up to the next group of eight are zero.
inline void philoxBatch(Key key, std::uint32_t modifier, std::uint64_t first,
                        unsigned nb, Words &w, std::uint32_t attempt = 0) {
  for (unsigned b = 0; b < nb; ++b) {
    w[0][b] = std::uint32_t(first + b);
    w[1][b] = std::uint32_t((first + b) >> 32);
    w[2][b] = modifier;
    w[3][b] = attempt;
  }
  detail::philoxRounds(w[0], w[1], w[2], w[3], nb, key);
  for (unsigned l = 0; l < 4; ++l)
    std::fill(w[l] + nb, w[l] + groupedBlocks(nb), 0u);
}

/// The words of one block (lane 0 of \p w; the rest of its group zero), as
/// the reference computes them: one block, round by round.
inline void singleBlock(Key key, std::uint32_t modifier, std::uint64_t block,
                        Words &w, std::uint32_t attempt = 0) {
  const std::uint32_t c[4] = {std::uint32_t(block), std::uint32_t(block >> 32),
                              modifier, attempt};
  std::uint32_t out[4];
  philoxBlock(key, c, out);
  for (unsigned l = 0; l < 4; ++l) {
    std::fill(w[l], w[l] + 8, 0u);
    w[l][0] = out[l];
  }
}

/// Calls fn(w, nb, first, i, skip, count) for each batch covering elements
/// offset ... offset + n - 1: blocks first ... first + nb - 1, whose
/// element-order positions skip ... skip + count - 1 (position e is lane e %
/// 4 of block e / 4) are elements offset + i ... of the result.
template <typename Fn>
void forEachBatch(Key key, std::uint32_t modifier, std::uint64_t offset,
                  std::size_t n, Fn &&fn) {
  alignas(32) Words w;
  const std::uint64_t end = offset + n;
  std::uint64_t g = offset;
  while (g < end) {
    const std::uint64_t first = g >> 2;
    const auto nb = static_cast<unsigned>(
        std::min<std::uint64_t>(kBatch, ((end - 1) >> 2) - first + 1));
    philoxBatch(key, modifier, first, nb, w);
    const std::uint64_t batchEnd = std::min(end, (first + nb) * 4);
    fn(w, nb, first, static_cast<std::size_t>(g - offset),
       static_cast<unsigned>(g - first * 4),
       static_cast<unsigned>(batchEnd - g));
    g = batchEnd;
  }
}

/// The first \p nb blocks of a batch in element order: e[4 b + l] =
/// w[l][b] (position e is lane e % 4 of block e / 4).
template <typename T>
void toElementOrder(const T (&w)[4][kBatch], unsigned nb, T *e) {
  for (unsigned b = 0; b < nb; ++b)
    for (unsigned l = 0; l < 4; ++l)
      e[4 * b + l] = w[l][b];
}

/// Uniform in [minVal, minVal + range): the word's top 24 bits as a
/// fraction, scaled.
void uniformBatch(const Words &w, Values &v, unsigned nb, float minVal,
                  float range);

/// Normal with \p mean and \p stdDev by the Box-Muller transform: lanes 0
/// and 1 of a block take the cosine and sine of the pair (word 0, word 1),
/// lanes 2 and 3 those of (word 2, word 3).
void normalBatch(const Words &w, Values &v, unsigned nb, float mean,
                 float stdDev);

/// Normal truncated to mean +- alpha * stdDev. Each element keeps the first
/// of its draws (attempt 0, 1, ... of its block) within the bounds; after
/// kTruncatedAttempts misses, or from the start when alpha is so small that
/// most draws miss, it is drawn by inversion of the normal distribution
/// function from the next attempt's word. \p w holds attempt 0 of blocks
/// first ... first + nb - 1.
inline constexpr unsigned kTruncatedAttempts = 16;
void truncatedNormalBatch(Key key, std::uint32_t modifier, std::uint64_t first,
                          const Words &w, Values &v, unsigned nb, float mean,
                          float stdDev, float alpha);

/// Uniform integers in [minVal, minVal + range - 1] (range up to 2^32):
/// the word scaled by the range, taking the high 32 bits of the product.
struct UniformIntDist {
  std::int64_t minVal = 0;
  std::uint64_t range = 1;
  int value(std::uint32_t x) const {
    return static_cast<int>(minVal +
                            static_cast<std::int64_t>((x * range) >> 32));
  }
};

/// The threshold a word is compared with for probability \p prob: a word
/// below it has probability round(prob * 2^32) / 2^32.
inline std::uint64_t probabilityThreshold(float prob) {
  const double p = std::clamp(static_cast<double>(prob), 0.0, 1.0);
  return static_cast<std::uint64_t>(std::llround(p * 0x1p32));
}

} // namespace tessera::ops::random
