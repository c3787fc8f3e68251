// Random ops: the generator against Random123's known answers, every op
// against the element-by-element host reference on 1, 4 and 1472 tiles in
// float and half, the same results whatever the tiles and host threads,
// distribution statistics over 10k samples, dropout's scale and mask reuse,
// errors and estimates.
#include "OpsTestUtil.hpp"

#include "tessera/ops/Random.hpp"
#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <numbers>
#include <numeric>
#include <optional>
#include <set>

using namespace tessera;
using namespace tessera::ops;
using namespace tessera::test;
using ::testing::HasSubstr;

namespace {

using Seed = std::array<std::uint32_t, 2>;
using Builder = std::function<std::vector<Tensor>(
    Graph &, const Tensor &ref, const Tensor *seed, program::Sequence &)>;

struct RandomRun {
  std::vector<std::vector<double>> outputs;
  std::uint64_t cycles = 0;
};

// Runs \p build on a model of \p tiles tiles. The reference tensor (FLOAT
// or \p refType, mapped linearly) holds \p input when given; the seed
// tensor, when given, lives on the last tile and is written from the host.
RandomRun runRandom(unsigned tiles, const std::vector<std::size_t> &shape,
                    std::optional<Seed> seed, const Builder &build,
                    unsigned hostThreads = 0,
                    const std::vector<double> *input = nullptr,
                    Type refType = FLOAT) {
  IPUModel model;
  model.tilesPerIPU = tiles;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  Tensor ref = g.addVariable(refType, shape, "ref");
  mapTensorLinearly(g, ref);
  if (input)
    g.createHostWrite("ref", ref);
  Tensor seedT;
  if (seed) {
    seedT = g.addVariable(UNSIGNED_INT, {2}, "seed");
    g.setTileMapping(seedT, tiles - 1);
    g.createHostWrite("seed", seedT);
  }
  program::Sequence prog;
  std::vector<Tensor> outs = build(g, ref, seed ? &seedT : nullptr, prog);
  for (std::size_t i = 0; i < outs.size(); ++i)
    g.createHostRead("out" + std::to_string(i), outs[i]);
  OptionFlags options;
  if (hostThreads)
    options.set("engine.hostThreads", std::to_string(hostThreads));
  Engine e(g, prog, options);
  e.load(device);
  if (seed)
    e.writeTensor("seed", seed->data(), seed->data() + 2);
  if (input) {
    std::vector<float> f(input->begin(), input->end());
    std::vector<std::byte> raw(f.size() * typeSize(refType));
    convertElements(FLOAT, f.data(), refType, raw.data(), f.size());
    e.writeTensor("ref", raw.data(), raw.data() + raw.size());
  }
  e.run();
  RandomRun r;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const Type t = outs[i].elementType();
    std::vector<std::byte> raw(outs[i].numElements() * typeSize(t));
    e.readTensor("out" + std::to_string(i), raw.data(),
                 raw.data() + raw.size());
    std::vector<double> v(outs[i].numElements());
    for (std::size_t k = 0; k < v.size(); ++k)
      v[k] = elementAsDouble(t, raw.data() + k * typeSize(t));
    r.outputs.push_back(std::move(v));
  }
  for (std::uint64_t c : e.getCycleCounts())
    r.cycles += c;
  return r;
}

double mean(const std::vector<double> &v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

double variance(const std::vector<double> &v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v)
    s += (x - m) * (x - m);
  return s / double(v.size() - 1);
}

// Every random op on one reference, in a fixed order.
std::vector<Tensor> allOps(Graph &g, const Tensor &ref, const Tensor *seed,
                           program::Sequence &p, Type type) {
  return {uniform(g, seed, 7, ref, type, -2.0, 3.0, p),
          normal(g, seed, 7, ref, type, 1.0, 2.0, p),
          truncatedNormal(g, seed, 7, ref, type, -1.0, 0.5, 1.5, p),
          bernoulli(g, seed, 7, ref, type, 0.3, p),
          truncatedNormal(g, seed, 8, ref, type, 2.0, 1.0, 0.3, p),
          dropout(g, seed, 7, ref, ref, 0.75, 4.0, p)};
}

} // namespace

TEST(RandomGenerator, PhiloxMatchesRandom123KnownAnswers) {
  // Random123's kat_vectors, philox4x32 10: counter, key, result.
  EXPECT_EQ(reference::philox4x32({0, 0, 0, 0}, 0, 0),
            (std::array<std::uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                          0x9b00dbd8}));
  EXPECT_EQ(
      reference::philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                            0xffffffff, 0xffffffff),
      (std::array<std::uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                    0x6d5451fd}));
  EXPECT_EQ(
      reference::philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                            0xa4093822, 0x299f31d0),
      (std::array<std::uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420,
                                    0x24126ea1}));
}

class RandomConformance
    : public ::testing::TestWithParam<std::pair<unsigned, Type>> {};

TEST_P(RandomConformance, EveryOpMatchesTheElementByElementReference) {
  const auto [tiles, type] = GetParam();
  const std::vector<std::size_t> shape{7, 9}; // 63: blocks cut at the end
  const std::size_t n = 63;
  const Seed seed{0x12345678u, 0x9abcdef0u};
  const std::vector<double> x = spread(n, -3.0, 3.0);
  RandomRun r = runRandom(
      tiles, shape, seed,
      [&](Graph &g, const Tensor &ref, const Tensor *s, program::Sequence &p) {
        return allOps(g, ref, s, p, type);
      },
      0, &x, type);
  const auto u = reference::randomUniform(seed, 7, n, type, -2.0, 3.0);
  const auto nm = reference::randomNormal(seed, 7, n, type, 1.0, 2.0);
  const auto tn =
      reference::randomTruncatedNormal(seed, 7, n, type, -1.0, 0.5, 1.5);
  const auto b = reference::randomBernoulli(seed, 7, n, 0.3);
  const auto narrow =
      reference::randomTruncatedNormal(seed, 8, n, type, 2.0, 1.0, 0.3);
  const auto d = reference::randomDropout(seed, 7, x, type, 0.75, 4.0);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(r.outputs[0][i], u[i]) << "uniform " << i;
    EXPECT_EQ(r.outputs[1][i], nm[i]) << "normal " << i;
    EXPECT_EQ(r.outputs[2][i], tn[i]) << "truncatedNormal " << i;
    EXPECT_EQ(r.outputs[3][i], b[i]) << "bernoulli " << i;
    EXPECT_EQ(r.outputs[4][i], narrow[i]) << "narrow truncatedNormal " << i;
    EXPECT_EQ(r.outputs[5][i], d[i]) << "dropout " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    TilesAndTypes, RandomConformance,
    ::testing::Values(std::pair{1u, FLOAT}, std::pair{4u, FLOAT},
                      std::pair{1472u, FLOAT}, std::pair{1u, HALF},
                      std::pair{4u, HALF}, std::pair{1472u, HALF}));

TEST(RandomDeterminism, ResultsAreTheSameOnAnyTilesAndHostThreads) {
  const std::vector<std::size_t> shape{37, 29};
  const Seed seed{42, 7};
  auto run = [&](unsigned tiles, unsigned threads) {
    return runRandom(
               tiles, shape, seed,
               [&](Graph &g, const Tensor &ref, const Tensor *s,
                   program::Sequence &p) {
                 auto outs = allOps(g, ref, s, p, FLOAT);
                 outs.pop_back(); // dropout of an unwritten input
                 outs.push_back(uniform(g, s, 3, ref, INT, -5, 1000, p));
                 return outs;
               },
               threads)
        .outputs;
  };
  const auto base = run(1, 1);
  EXPECT_EQ(run(4, 1), base);
  EXPECT_EQ(run(1472, 1), base);
  EXPECT_EQ(run(1, 2), base);
  EXPECT_EQ(run(4, 2), base);
  EXPECT_EQ(run(1472, 2), base);
}

TEST(RandomDeterminism, TheMappingOfTheReferenceDoesNotMatter) {
  const Seed seed{1, 2};
  auto run = [&](bool reversed) {
    return runRandom(4, {64}, seed,
                     [&](Graph &g, const Tensor &, const Tensor *s,
                         program::Sequence &p) {
                       Tensor ref = g.addVariable(FLOAT, {64}, "other");
                       for (unsigned i = 0; i < 64; ++i)
                         g.setTileMapping(ref.slice(i, i + 1),
                                          reversed ? 3 - i % 4 : i / 16);
                       return std::vector<Tensor>{
                           normal(g, s, 0, ref, FLOAT, 0, 1, p)};
                     })
        .outputs[0];
  };
  EXPECT_EQ(run(false), run(true));
}

// A reference mapped one element at a time, round robin over 4 tiles, is
// 256 regions: each tile's workers take them as lists (at most 6 vertices
// a tile, as PopLibs' 2-D vertices), and the values are those of a
// linearly mapped reference.
TEST(RandomPlan, AFragmentedMappingGivesAtMostSixVerticesATile) {
  const Seed seed{3, 4};
  std::size_t vertices = 0;
  auto run = [&](bool fragmented) {
    return runRandom(4, {1024}, seed,
                     [&](Graph &g, const Tensor &linear, const Tensor *s,
                         program::Sequence &p) {
                       Tensor ref = linear;
                       if (fragmented) {
                         ref = g.addVariable(FLOAT, {1024}, "fragmented");
                         for (unsigned i = 0; i < 1024; i += 4)
                           g.setTileMapping(ref.slice(i, i + 4), i / 4 % 4);
                       }
                       const std::size_t before = g.getNumVertices();
                       Tensor out = normal(g, s, 0, ref, FLOAT, 0, 1, p);
                       vertices = g.getNumVertices() - before;
                       return std::vector<Tensor>{out};
                     })
        .outputs[0];
  };
  const std::vector<double> linear = run(false);
  EXPECT_EQ(run(true), linear);
  EXPECT_LE(vertices, 4u * 6u);
  EXPECT_NE(linear[0], linear[1]);
}

TEST(RandomSeeds, DifferentSeedsAndModifiersGiveDifferentValues) {
  auto run = [&](Seed seed, std::uint32_t modifier) {
    return runRandom(4, {256}, seed,
                     [&](Graph &g, const Tensor &ref, const Tensor *s,
                         program::Sequence &p) {
                       return std::vector<Tensor>{
                           uniform(g, s, modifier, ref, FLOAT, 0, 1, p)};
                     })
        .outputs[0];
  };
  const auto a = run({1, 0}, 0);
  const auto b = run({2, 0}, 0);
  const auto c = run({1, 1}, 0);
  const auto d = run({1, 0}, 1);
  EXPECT_EQ(run({1, 0}, 0), a);
  std::size_t sameB = 0, sameC = 0, sameD = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sameB += a[i] == b[i];
    sameC += a[i] == c[i];
    sameD += a[i] == d[i];
  }
  EXPECT_LT(sameB, 3u);
  EXPECT_LT(sameC, 3u);
  EXPECT_LT(sameD, 3u);
}

TEST(RandomSeeds, TheHostSeedOptionEqualsASeedTensorOfItsWords) {
  const std::uint64_t host = 0x0123456789abcdefull;
  auto withTensor = runRandom(
      4, {50}, Seed{0x89abcdefu, 0x01234567u},
      [&](Graph &g, const Tensor &ref, const Tensor *s, program::Sequence &p) {
        return std::vector<Tensor>{normal(g, s, 5, ref, FLOAT, 0, 1, p)};
      });
  auto withOption = runRandom(
      4, {50}, std::nullopt,
      [&](Graph &g, const Tensor &ref, const Tensor *, program::Sequence &p) {
        return std::vector<Tensor>{normal(g, nullptr, 5, ref, FLOAT, 0, 1, p,
                                          {},
                                          {{"seed", std::to_string(host)}})};
      });
  EXPECT_EQ(withTensor.outputs, withOption.outputs);
}

TEST(RandomSeeds, TheSeedTensorIsReadWhenTheProgramRuns) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  Tensor ref = g.addVariable(FLOAT, {40}, "ref");
  mapTensorLinearly(g, ref);
  Tensor seed = g.addVariable(UNSIGNED_INT, {2}, "seed");
  g.setTileMapping(seed, 0);
  g.createHostWrite("seed", seed);
  program::Sequence prog;
  Tensor out = uniform(g, &seed, 0, ref, FLOAT, 0, 1, prog);
  g.createHostRead("out", out);
  Engine e(g, prog);
  e.load(device);
  auto runWith = [&](Seed s) {
    e.writeTensor("seed", s.data(), s.data() + 2);
    e.run();
    std::vector<float> v(40);
    e.readTensor("out", v.data(), v.data() + v.size());
    return std::vector<double>(v.begin(), v.end());
  };
  EXPECT_EQ(runWith({3, 4}),
            reference::randomUniform({3, 4}, 0, 40, FLOAT, 0, 1));
  EXPECT_EQ(runWith({5, 6}),
            reference::randomUniform({5, 6}, 0, 40, FLOAT, 0, 1));
}

TEST(RandomPlan, AHostSeededOpNeedsNoExchange) {
  IPUModel model;
  model.tilesPerIPU = 16;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  Tensor ref = g.addVariable(FLOAT, {1000}, VariableMappingMethod::LINEAR);
  program::Sequence prog;
  Tensor out = bernoulli(g, nullptr, 0, ref, FLOAT, 0.5, prog);
  EXPECT_EQ(g.getTileMapping(out), g.getTileMapping(ref));
  Engine e(g, prog);
  for (const Step &s : e.getExecutable().steps)
    EXPECT_NE(s.kind, StepKind::Exchange);
}

TEST(RandomStatistics, TenThousandSamplesHaveTheExpectedMoments) {
  const Seed seed{2024, 11};
  RandomRun r = runRandom(
      4, {100, 100}, seed,
      [&](Graph &g, const Tensor &ref, const Tensor *s, program::Sequence &p) {
        return std::vector<Tensor>{
            uniform(g, s, 1, ref, FLOAT, -1.0, 3.0, p),
            normal(g, s, 2, ref, FLOAT, 0.5, 2.0, p),
            truncatedNormal(g, s, 3, ref, FLOAT, 1.0, 2.0, 1.0, p),
            bernoulli(g, s, 4, ref, FLOAT, 0.2, p),
            uniform(g, s, 5, ref, INT, -3, 4, p),
            normal(g, s, 6, ref, HALF, -2.0, 0.5, p),
            truncatedNormal(g, s, 7, ref, FLOAT, 0.0, 1.0, 0.5, p)};
      });
  const auto &u = r.outputs[0], &nm = r.outputs[1], &tn = r.outputs[2],
             &b = r.outputs[3], &ui = r.outputs[4], &nh = r.outputs[5],
             &narrow = r.outputs[6];
  EXPECT_NEAR(mean(u), 1.0, 0.04);
  EXPECT_NEAR(variance(u), 16.0 / 12, 16.0 / 12 * 0.05);
  EXPECT_GE(*std::min_element(u.begin(), u.end()), -1.0);
  EXPECT_LT(*std::max_element(u.begin(), u.end()), 3.0);
  EXPECT_NEAR(mean(nm), 0.5, 0.06);
  EXPECT_NEAR(variance(nm), 4.0, 4.0 * 0.06);
  EXPECT_NEAR(mean(nh), -2.0, 0.015);
  EXPECT_NEAR(variance(nh), 0.25, 0.25 * 0.06);
  // Truncated at one standard deviation: variance s^2 (1 - 2 a phi(a) /
  // (2 Phi(a) - 1)) with a = 1.
  auto truncatedVariance = [](double a) {
    const double phi = std::exp(-0.5 * a * a) / std::sqrt(2 * std::numbers::pi);
    return 1 - 2 * a * phi / std::erf(a / std::sqrt(2.0));
  };
  const double tv = 4.0 * truncatedVariance(1.0);
  EXPECT_GE(*std::min_element(tn.begin(), tn.end()), -1.0);
  EXPECT_LE(*std::max_element(tn.begin(), tn.end()), 3.0);
  EXPECT_NEAR(mean(tn), 1.0, 0.03);
  EXPECT_NEAR(variance(tn), tv, tv * 0.06);
  // Half a standard deviation: drawn by inversion.
  EXPECT_GE(*std::min_element(narrow.begin(), narrow.end()), -0.5);
  EXPECT_LE(*std::max_element(narrow.begin(), narrow.end()), 0.5);
  EXPECT_NEAR(mean(narrow), 0.0, 0.01);
  EXPECT_NEAR(variance(narrow), truncatedVariance(0.5),
              truncatedVariance(0.5) * 0.06);
  EXPECT_NEAR(mean(b), 0.2, 0.015);
  EXPECT_EQ(std::set<double>(b.begin(), b.end()), (std::set<double>{0, 1}));
  EXPECT_EQ(std::set<double>(ui.begin(), ui.end()),
            (std::set<double>{-3, -2, -1, 0, 1, 2, 3, 4}));
  EXPECT_NEAR(mean(ui), 0.5, 0.08);
}

TEST(RandomDropout, KeptValuesAreScaledAndTheMaskCanBeReused) {
  const Seed seed{77, 88};
  const std::size_t n = 4000;
  const std::vector<double> x = spread(n, 0.5, 2.0); // never zero
  RandomRun r = runRandom(
      4, {40, 100}, seed,
      [&](Graph &g, const Tensor &in, const Tensor *s, program::Sequence &p) {
        Tensor plain = dropout(g, s, 9, in, in, 0.6, 2.5, p);
        auto [out, mask] = dropoutWithMask(g, s, 9, in, in, 0.6, 2.5, p);
        Tensor again = applyDropoutMask(g, in, mask, 2.5, p);
        Tensor coin = bernoulli(g, s, 9, in, FLOAT, 0.6, p);
        return std::vector<Tensor>{plain, out, mask, again, coin};
      },
      0, &x);
  const auto &plain = r.outputs[0], &out = r.outputs[1], &mask = r.outputs[2],
             &again = r.outputs[3], &coin = r.outputs[4];
  EXPECT_EQ(plain, out);
  EXPECT_EQ(again, out);
  EXPECT_EQ(coin, mask);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(mask[i] == 0 || mask[i] == 1) << i;
    const float xi = static_cast<float>(x[i]);
    EXPECT_EQ(out[i], mask[i] ? double(xi * 2.5f) : 0.0) << i;
  }
  EXPECT_NEAR(mean(mask), 0.6, 0.03);
}

TEST(RandomDropout, HalfDropoutScalesInFloat) {
  const Seed seed{5, 5};
  const std::vector<double> x = spread(64, -4.0, 4.0);
  RandomRun r = runRandom(
      4, {64}, seed,
      [&](Graph &g, const Tensor &in, const Tensor *s, program::Sequence &p) {
        auto [out, mask] = dropoutWithMask(g, s, 0, in, in, 0.5, 2.0, p);
        return std::vector<Tensor>{out, mask};
      },
      0, &x, HALF);
  EXPECT_EQ(r.outputs[0], reference::randomDropout(seed, 0, x, HALF, 0.5, 2.0));
  EXPECT_EQ(r.outputs[1], reference::randomBernoulli(seed, 0, 64, 0.5));
}

TEST(RandomErrors, BadSeedsTypesAndParametersAreExplained) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  Tensor ref = g.addVariable(FLOAT, {8}, VariableMappingMethod::LINEAR);
  Tensor intSeed = g.addVariable(INT, {2}, VariableMappingMethod::LINEAR);
  Tensor longSeed =
      g.addVariable(UNSIGNED_INT, {3}, VariableMappingMethod::LINEAR);
  Tensor seed = g.addVariable(UNSIGNED_INT, {2}, VariableMappingMethod::LINEAR);
  program::Sequence p;
  auto message = [](auto &&f) {
    try {
      f();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THROW(uniform(g, &intSeed, 0, ref, FLOAT, 0, 1, p), TypeError);
  EXPECT_THAT(message([&] { uniform(g, &intSeed, 0, ref, FLOAT, 0, 1, p); }),
              HasSubstr("seed tensor has type int; it must be unsigned int"));
  EXPECT_THROW(normal(g, &longSeed, 0, ref, FLOAT, 0, 1, p), ShapeError);
  EXPECT_THAT(message([&] { normal(g, &longSeed, 0, ref, FLOAT, 0, 1, p); }),
              HasSubstr("exactly 2 elements"));
  EXPECT_THROW(normal(g, &seed, 0, ref, INT, 0, 1, p), TypeError);
  EXPECT_THROW(bernoulli(g, &seed, 0, ref, FLOAT, 1.5, p), UnsupportedError);
  EXPECT_THAT(message([&] { bernoulli(g, &seed, 0, ref, FLOAT, 1.5, p); }),
              HasSubstr("it must be in [0, 1]"));
  EXPECT_THROW(uniform(g, &seed, 0, ref, FLOAT, 2, 1, p), UnsupportedError);
  EXPECT_THROW(uniform(g, &seed, 0, ref, INT, 0.5, 3, p), UnsupportedError);
  EXPECT_THROW(truncatedNormal(g, &seed, 0, ref, FLOAT, 0, 1, 0, p),
               UnsupportedError);
  EXPECT_THROW(normal(g, &seed, 0, ref, FLOAT, 0, 1, p, {}, {{"seed", "3"}}),
               OptionError);
  EXPECT_THROW(normal(g, nullptr, 0, ref, FLOAT, 0, 1, p, {}, {{"sead", "3"}}),
               OptionError);
  Tensor other = g.addVariable(FLOAT, {4, 2}, VariableMappingMethod::LINEAR);
  EXPECT_THROW(dropout(g, &seed, 0, other, ref, 0.5, 2, p), ShapeError);
  Tensor ints = g.addVariable(INT, {8}, VariableMappingMethod::LINEAR);
  EXPECT_THROW(dropout(g, &seed, 0, ints, ref, 0.5, 2, p), TypeError);
}

TEST(RandomEstimates, CyclesArePositiveDeterministicAndGrowWithSize) {
  auto cycles = [](std::size_t n, bool normalDist) {
    return runRandom(4, {n}, Seed{1, 1},
                     [&](Graph &g, const Tensor &ref, const Tensor *s,
                         program::Sequence &p) {
                       return std::vector<Tensor>{
                           normalDist ? normal(g, s, 0, ref, FLOAT, 0, 1, p)
                                      : uniform(g, s, 0, ref, FLOAT, 0, 1, p)};
                     })
        .cycles;
  };
  for (bool normalDist : {false, true}) {
    const auto small = cycles(64, normalDist), big = cycles(16384, normalDist);
    EXPECT_GT(small, 0u);
    EXPECT_EQ(cycles(64, normalDist), small);
    EXPECT_GT(big, small);
  }
  EXPECT_GT(cycles(16384, true), cycles(16384, false));
}
