// Host reference of the random ops: every element on its own, from one
// Philox block computed round by round and the shared float transforms run
// on a batch of that one block, so the tile-parallel vertices (which compute
// blocks in batches, region by region) are checked against the definition
// "element g is a function of (seed, modifier, g)".
#include "random/RandomKernels.hpp"

#include "tessera/ops/Reference.hpp"

namespace tessera::ops::reference {
namespace {

using Words = std::array<std::uint32_t, 4>;

random::Key keyOf(std::array<std::uint32_t, 2> seed) {
  return {seed[0], seed[1]};
}

// The word of element g.
std::uint32_t wordOf(std::array<std::uint32_t, 2> seed, std::uint32_t modifier,
                     std::uint64_t g) {
  const std::uint64_t block = g / 4;
  return philox4x32(
      {std::uint32_t(block), std::uint32_t(block >> 32), modifier, 0}, seed[0],
      seed[1])[g % 4];
}

// Each element from its own block: transform(w, v, firstBlock) on a batch
// of that one block, rounded to outType. The four elements of a block share
// its computation (weight initialisers draw tens of millions of values here).
template <typename Transform>
std::vector<double> fromTransform(std::array<std::uint32_t, 2> seed,
                                  std::uint32_t modifier, std::size_t n,
                                  Type outType, const Transform &transform) {
  std::vector<double> out(n);
  alignas(32) random::Words w;
  alignas(32) random::Values v;
  for (std::size_t g = 0; g < n; ++g) {
    if (g % 4 == 0) {
      random::singleBlock(keyOf(seed), modifier, g / 4, w);
      transform(w, v, g / 4);
    }
    out[g] = roundTo(outType, v[g % 4][0]);
  }
  return out;
}

} // namespace

std::array<std::uint32_t, 4>
philox4x32(const std::array<std::uint32_t, 4> &counter, std::uint32_t key0,
           std::uint32_t key1) {
  std::array<std::uint32_t, 4> out;
  random::philoxBlock({key0, key1}, counter.data(), out.data());
  return out;
}

std::vector<double> randomUniform(std::array<std::uint32_t, 2> seed,
                                  std::uint32_t seedModifier, std::size_t n,
                                  Type outType, double minVal, double maxVal) {
  if (outType == Type::INT) {
    const random::UniformIntDist dist{
        static_cast<std::int64_t>(minVal),
        static_cast<std::uint64_t>(static_cast<std::int64_t>(maxVal) -
                                   static_cast<std::int64_t>(minVal) + 1)};
    std::vector<double> out(n);
    for (std::size_t g = 0; g < n; ++g)
      out[g] = dist.value(wordOf(seed, seedModifier, g));
    return out;
  }
  const float lo = static_cast<float>(minVal), hi = static_cast<float>(maxVal);
  return fromTransform(
      seed, seedModifier, n, outType,
      [&](const random::Words &w, random::Values &v, std::uint64_t) {
        random::uniformBatch(w, v, 1, lo, hi - lo);
      });
}

std::vector<double> randomNormal(std::array<std::uint32_t, 2> seed,
                                 std::uint32_t seedModifier, std::size_t n,
                                 Type outType, double mean, double stdDev) {
  return fromTransform(
      seed, seedModifier, n, outType,
      [&](const random::Words &w, random::Values &v, std::uint64_t) {
        random::normalBatch(w, v, 1, static_cast<float>(mean),
                            static_cast<float>(stdDev));
      });
}

std::vector<double> randomTruncatedNormal(std::array<std::uint32_t, 2> seed,
                                          std::uint32_t seedModifier,
                                          std::size_t n, Type outType,
                                          double mean, double stdDev,
                                          double alpha) {
  return fromTransform(
      seed, seedModifier, n, outType,
      [&](const random::Words &w, random::Values &v, std::uint64_t block) {
        random::truncatedNormalBatch(
            keyOf(seed), seedModifier, block, w, v, 1, static_cast<float>(mean),
            static_cast<float>(stdDev), static_cast<float>(alpha));
      });
}

std::vector<double> randomBernoulli(std::array<std::uint32_t, 2> seed,
                                    std::uint32_t seedModifier, std::size_t n,
                                    double prob) {
  const std::uint64_t threshold =
      random::probabilityThreshold(static_cast<float>(prob));
  std::vector<double> out(n);
  for (std::size_t g = 0; g < n; ++g)
    out[g] = wordOf(seed, seedModifier, g) < threshold ? 1.0 : 0.0;
  return out;
}

std::vector<double> randomDropout(std::array<std::uint32_t, 2> seed,
                                  std::uint32_t seedModifier,
                                  const std::vector<double> &input, Type type,
                                  double keepProbability, double scale) {
  const std::vector<double> mask =
      randomBernoulli(seed, seedModifier, input.size(), keepProbability);
  std::vector<double> out(input.size());
  const float s = static_cast<float>(scale);
  for (std::size_t i = 0; i < input.size(); ++i) {
    const float x = static_cast<float>(roundTo(type, input[i]));
    out[i] = mask[i] != 0 ? roundTo(type, x * s) : 0.0;
  }
  return out;
}

} // namespace tessera::ops::reference
