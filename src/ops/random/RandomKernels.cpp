// The float transforms of the random ops, written with GCC vector types over
// groups of eight blocks: the logarithm, sine and cosine of Box-Muller are
// short series evaluated with IEEE operations, so every value is the same
// whichever batch or machine thread computes it, and the loops need no libm
// calls (which do not vectorise).
#include "RandomKernels.hpp"

#include <cstring>
#include <numbers>

namespace tessera::ops::random {
namespace {

using v8f = float __attribute__((vector_size(32)));
using v8i = std::int32_t __attribute__((vector_size(32)));
using v8u = std::uint32_t __attribute__((vector_size(32)));

v8u load(const std::uint32_t *p) {
  v8u v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
v8f load(const float *p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void store(float *p, v8f v) { std::memcpy(p, &v, sizeof v); }

v8f toFloat(v8i x) { return __builtin_convertvector(x, v8f); }

// The word's top 24 bits as a fraction: [0, 1), every value exact.
v8f unit(v8u x) { return toFloat(v8i(x >> 8)) * 0x1p-24f; }
// The same, half a step up: (0, 1).
v8f openUnit(v8u x) { return (toFloat(v8i(x >> 8)) + 0.5f) * 0x1p-24f; }

// log(x) for normal x > 0: x = 2^e m with m in [sqrt(1/2), sqrt(2)), and
// log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, whose series to
// s^9 is within 1e-9 of it.
v8f logPositive(v8f x) {
  const v8u bits = v8u(x);
  v8i e = v8i(bits >> 23) - 127;
  v8f m = v8f((bits & 0x007fffffu) | 0x3f800000u);
  const v8i big = m > std::numbers::sqrt2_v<float>;
  m = big ? m * 0.5f : m;
  e -= big; // true is -1
  const v8f s = (m - 1.0f) / (m + 1.0f);
  const v8f s2 = s * s;
  const v8f series =
      s * (2.0f + s2 * (2.0f / 3 +
                        s2 * (2.0f / 5 + s2 * (2.0f / 7 + s2 * (2.0f / 9)))));
  return series + toFloat(e) * std::numbers::ln2_v<float>;
}

// sin and cos of 2 pi u for u in [0, 1): u * 4 is exact, so the quadrant
// n and the remainder r in [-pi/4, pi/4] are too; the Taylor series of
// sin r and cos r to r^9 and r^10 are within 2e-9.
void sinCosTurns(v8f u, v8f &sinOut, v8f &cosOut) {
  const v8f q = u * 4.0f;
  const v8i n = __builtin_convertvector(q + 0.5f, v8i);
  const v8f r = (q - toFloat(n)) * (std::numbers::pi_v<float> / 2);
  const v8f r2 = r * r;
  const v8f sr =
      r * (1.0f +
           r2 * (-1.0f / 6 + r2 * (1.0f / 120 + r2 * (-1.0f / 5040 +
                                                      r2 * (1.0f / 362880)))));
  const v8f cr =
      1.0f +
      r2 * (-0.5f + r2 * (1.0f / 24 +
                          r2 * (-1.0f / 720 +
                                r2 * (1.0f / 40320 + r2 * (-1.0f / 3628800)))));
  // Angle n pi/2 + r: n % 4 = 0 gives (sin r, cos r), 1 (cos r, -sin r),
  // 2 (-sin r, -cos r), 3 (-cos r, sin r).
  const v8i swap = (n & 1) != 0;
  const v8f s = swap ? cr : sr, c = swap ? sr : cr;
  const v8i negSin = (n & 2) != 0, negCos = ((n + 1) & 2) != 0;
  sinOut = negSin ? -s : s;
  cosOut = negCos ? -c : c;
}

double normalCdf(double x) {
  return 0.5 * std::erfc(-x * (1 / std::numbers::sqrt2));
}

// The standard normal quantile: the rational start of Abramowitz and Stegun
// 26.2.23 (error below 4.5e-4) refined by two Halley steps on normalCdf,
// which bring it to double precision.
double normalQuantile(double p) {
  const double q = p < 0.5 ? p : 1 - p;
  const double t = std::sqrt(-2 * std::log(q));
  double z = t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                     (1 + t * (1.432788 + t * (0.189269 + t * 0.001308)));
  if (p < 0.5)
    z = -z;
  const double sqrt2Pi = std::sqrt(2 * std::numbers::pi);
  for (int k = 0; k < 2; ++k) {
    const double e = normalCdf(z) - p;
    const double u = e * sqrt2Pi * std::exp(0.5 * z * z);
    z -= u / (1 + 0.5 * z * u);
  }
  return z;
}

// A standard normal within +-alpha for one element whose first draw missed
// (or, with `invertAll`, was not tried): the later attempts of its block,
// then inversion.
float redraw(Key key, std::uint32_t modifier, std::uint64_t block,
             unsigned lane, std::uint32_t firstWord, float alpha,
             bool invertAll) {
  alignas(32) Words w;
  alignas(32) Values v;
  std::uint32_t word = firstWord;
  if (!invertAll) {
    std::uint32_t attempt = 1;
    for (; attempt < kTruncatedAttempts; ++attempt) {
      singleBlock(key, modifier, block, w, attempt);
      normalBatch(w, v, 1, 0.0f, 1.0f);
      if (std::fabs(v[lane][0]) <= alpha)
        return v[lane][0];
    }
    singleBlock(key, modifier, block, w, attempt);
    word = w[lane][0];
  }
  const double a = alpha;
  const double lower = normalCdf(-a), width = std::erf(a / std::numbers::sqrt2);
  const double u = (static_cast<double>(word) + 0.5) * 0x1p-32;
  return static_cast<float>(
      std::clamp(normalQuantile(lower + width * u), -a, a));
}

} // namespace

void uniformBatch(const Words &w, Values &v, unsigned nb, float minVal,
                  float range) {
  for (unsigned l = 0; l < 4; ++l)
    for (unsigned b = 0; b < groupedBlocks(nb); b += 8)
      store(&v[l][b], minVal + range * unit(load(&w[l][b])));
}

void normalBatch(const Words &w, Values &v, unsigned nb, float mean,
                 float stdDev) {
  for (unsigned p = 0; p < 4; p += 2)
    for (unsigned b = 0; b < groupedBlocks(nb); b += 8) {
      const v8f radius = __builtin_ia32_sqrtps256(
          -2.0f * logPositive(openUnit(load(&w[p][b]))));
      v8f s, c;
      sinCosTurns(unit(load(&w[p + 1][b])), s, c);
      store(&v[p][b], mean + stdDev * (radius * c));
      store(&v[p + 1][b], mean + stdDev * (radius * s));
    }
}

void truncatedNormalBatch(Key key, std::uint32_t modifier, std::uint64_t first,
                          const Words &w, Values &v, unsigned nb, float mean,
                          float stdDev, float alpha) {
  // Most draws miss below alpha ~ 0.674 (half the mass within): invert.
  const bool invertAll = std::erf(alpha / std::numbers::sqrt2) < 0.5;
  if (!invertAll)
    normalBatch(w, v, nb, 0.0f, 1.0f);
  for (unsigned l = 0; l < 4; ++l)
    for (unsigned b = 0; b < nb; ++b)
      if (invertAll || !(std::fabs(v[l][b]) <= alpha))
        v[l][b] =
            redraw(key, modifier, first + b, l, w[l][b], alpha, invertAll);
  for (unsigned l = 0; l < 4; ++l) {
    std::fill(v[l] + nb, v[l] + groupedBlocks(nb), 0.0f);
    for (unsigned b = 0; b < groupedBlocks(nb); b += 8)
      store(&v[l][b], mean + stdDev * load(&v[l][b]));
  }
}

} // namespace tessera::ops::random
