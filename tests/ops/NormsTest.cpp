// Norms: batch, layer and group statistics and normalisation against the
// host reference in float and half on 1, 4 and 1472 tiles (both variance
// algorithms, biased and unbiased), gradients against finite differences of
// the reference, the folded inference form, errors and estimates.
#include "OpsTestUtil.hpp"

#include "tessera/ops/Norms.hpp"
#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

using namespace tessera;
using namespace tessera::ops;
using namespace tessera::test;

namespace {

std::vector<double> roundAll(Type t, std::vector<double> v) {
  for (double &x : v)
    x = reference::roundTo(t, x);
  return v;
}

void expectClose(double tol, const std::vector<double> &got,
                 const std::vector<double> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << what << " at " << i;
}

std::size_t product(const std::vector<std::size_t> &shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  return n;
}

// Which norm: 0 groups is batch norm; layer norm is 1 group.
enum class Kind { Batch, Layer, Group };
unsigned groupsOf(Kind k) {
  return k == Kind::Batch ? 0 : k == Kind::Layer ? 1 : 2;
}
const char *nameOf(Kind k) {
  return k == Kind::Batch ? "batch" : k == Kind::Layer ? "layer" : "group";
}

std::pair<Tensor, Tensor> stats(Kind k, Graph &g, const Tensor &x, float eps,
                                program::Sequence &p, bool unbiased,
                                bool stable) {
  switch (k) {
  case Kind::Batch:
    return batchNormStatistics(g, x, eps, p, unbiased, stable);
  case Kind::Layer:
    return layerNormStatistics(g, x, eps, p, unbiased, stable);
  case Kind::Group:
    break;
  }
  return groupNormStatistics(g, x, eps, p, 2, unbiased, stable);
}

std::pair<Tensor, Tensor> normaliseWith(Kind k, Graph &g, const Tensor &x,
                                        const Tensor &gamma, const Tensor &beta,
                                        const Tensor &mean, const Tensor &istd,
                                        program::Sequence &p) {
  switch (k) {
  case Kind::Batch:
    return batchNormalise(g, x, gamma, beta, mean, istd, p);
  case Kind::Layer:
    return layerNormalise(g, x, gamma, beta, mean, istd, p);
  case Kind::Group:
    break;
  }
  return groupNormalise(g, x, gamma, beta, mean, istd, p);
}

NormGradients gradientsFromActs(Kind k, Graph &g, const Tensor &x,
                                const Tensor &dy, const Tensor &mean,
                                const Tensor &istd, const Tensor &gamma,
                                program::Sequence &p) {
  switch (k) {
  case Kind::Batch:
    return batchNormGradients(g, x, dy, mean, istd, gamma, p);
  case Kind::Layer:
    return layerNormGradients(g, x, dy, mean, istd, gamma, p);
  case Kind::Group:
    break;
  }
  return groupNormGradients(g, x, dy, mean, istd, gamma, p);
}

NormGradients gradientsFromWhitened(Kind k, Graph &g, const Tensor &xh,
                                    const Tensor &dy, const Tensor &istd,
                                    const Tensor &gamma, program::Sequence &p) {
  switch (k) {
  case Kind::Batch:
    return batchNormGradients(g, xh, dy, istd, gamma, p);
  case Kind::Layer:
    return layerNormGradients(g, xh, dy, istd, gamma, p);
  case Kind::Group:
    break;
  }
  return groupNormGradients(g, xh, dy, istd, gamma, p);
}

const Kind kKinds[] = {Kind::Batch, Kind::Layer, Kind::Group};

} // namespace

class NormsConformance
    : public ::testing::TestWithParam<std::pair<unsigned, Type>> {};

TEST_P(NormsConformance, StatisticsAndNormaliseMatchTheReference) {
  const auto [tiles, type] = GetParam();
  const std::vector<std::size_t> shape =
      tiles == 1472 ? std::vector<std::size_t>{2, 4, 2}
                    : std::vector<std::size_t>{3, 4, 2, 3};
  const std::size_t c = shape[1];
  const auto x = roundAll(type, spread(product(shape), -1.5, 2.5));
  const auto gamma = roundAll(type, spread(c, 0.5, 1.5));
  const auto beta = roundAll(type, spread(c, -0.5, 0.5));
  const float eps = 1e-3f;
  const double tol = type == HALF ? 1e-2 : 1e-4;
  for (Kind k : kKinds)
    for (bool unbiased : {false, true})
      for (bool stable : {false, true}) {
        RunResult r = runOp(
            tiles, {{type, shape, x}, {type, {c}, gamma}, {type, {c}, beta}},
            [&](Graph &g, const auto &in, program::Sequence &p) {
              auto [mean, istd] = stats(k, g, in[0], eps, p, unbiased, stable);
              auto [out, whitened] =
                  normaliseWith(k, g, in[0], in[1], in[2], mean, istd, p);
              return std::vector<Tensor>{mean, istd, out, whitened};
            });
        const auto st =
            reference::normStatistics(x, shape, groupsOf(k), eps, unbiased);
        const auto [out, whitened] =
            reference::normalise(x, shape, groupsOf(k), gamma, beta, st);
        const std::string what = std::string(nameOf(k)) +
                                 (unbiased ? " unbiased" : " biased") +
                                 (stable ? " stable" : "");
        expectClose(tol, r.outputs[0], st.mean, what + " mean");
        expectClose(tol, r.outputs[1], st.invStdDev, what + " invStdDev");
        expectClose(tol, r.outputs[2], out, what + " out");
        expectClose(tol, r.outputs[3], whitened, what + " whitened");
      }
}

INSTANTIATE_TEST_SUITE_P(
    TilesAndTypes, NormsConformance,
    ::testing::Values(std::pair{1u, FLOAT}, std::pair{4u, FLOAT},
                      std::pair{1472u, FLOAT}, std::pair{1u, HALF},
                      std::pair{4u, HALF}, std::pair{1472u, HALF}));

TEST(NormsStatistics, StableAlgorithmKeepsPrecisionFarFromZero) {
  // Mean 1000, standard deviation ~0.03: E[x^2] - E[x]^2 cancels in float.
  const std::vector<std::size_t> shape{8, 2};
  std::vector<double> x = spread(16, -0.05, 0.05);
  for (double &v : x)
    v = reference::roundTo(FLOAT, v + 1000.0);
  RunResult r =
      runOp(2, {{FLOAT, shape, x}},
            [](Graph &g, const auto &in, program::Sequence &p) {
              auto st = batchNormStatistics(g, in[0], 1e-6f, p, false, true);
              return std::vector<Tensor>{st.second};
            });
  const auto want = reference::normStatistics(x, shape, 0, 1e-6, false);
  expectClose(1e-2, r.outputs[0], want.invStdDev, "stable invStdDev");
}

TEST(NormsLayout, StatisticsInPiecesLetMapsTakeATilesChannelsAtOnce) {
  // x [2, 64, 8, 4] laid out as [2, 8, 64, 4] over 16 tiles (as a
  // convolution lays out its output by rows): each tile holds one row of
  // all 64 channels. The statistics are copied into pieces of 32 channels,
  // so whitening reads a tile's channels as a list element per piece and
  // runs them as a region or two, not one region per channel.
  const std::size_t n = 2, c = 64, h = 8, w = 4;
  std::size_t maxRegions = 0, maxStatsPerTile = 0;
  const auto values = spread(n * c * h * w, -1, 1);
  RunResult r = runOp(
      16, {{FLOAT, {n, c, h, w}, values}},
      [&](Graph &g, const auto &in, program::Sequence &p) {
        Tensor rows = g.addVariable(FLOAT, {n, h, c, w}, "rows");
        mapTensorLinearly(g, rows);
        Tensor x = rows.dimShuffle({0, 2, 1, 3});
        p.add(program::Copy(in[0], x));
        const std::size_t before = g.getNumVertices();
        auto st = batchNormStatistics(g, x, 1e-3f, p, false, true);
        Tensor gamma = g.addVariable(FLOAT, {c}, "gamma");
        Tensor beta = g.addVariable(FLOAT, {c}, "beta");
        mapTensorLinearly(g, gamma);
        mapTensorLinearly(g, beta);
        g.setInitialValue(gamma, std::vector<float>(c, 1.0f));
        g.setInitialValue(beta, std::vector<float>(c, 0.0f));
        auto out = batchNormalise(g, x, gamma, beta, st.first, st.second, p);
        for (const auto &tile : g.getTileMapping(st.first)) {
          std::size_t k = 0;
          for (const Interval &iv : tile)
            k += iv.size();
          maxStatsPerTile = std::max(maxStatsPerTile, k);
        }
        for (std::size_t v = before; v < g.getNumVertices(); ++v) {
          const VertexData &vd = g.data().vertices[v];
          const auto &cs = g.data().computeSets[vd.computeSet];
          if (cs.isHostKernel || cs.name.find("whiten") == std::string::npos)
            continue;
          const auto &fields = vd.vertexClass->info.fields;
          for (std::size_t f = 0; f < fields.size(); ++f)
            if (fields[f].name == "out")
              maxRegions = std::max(maxRegions, vd.fields[f].tensors.size());
        }
        return std::vector<Tensor>{out.first};
      });
  EXPECT_LE(maxStatsPerTile, 32u);
  EXPECT_GE(maxRegions, 1u);
  EXPECT_LE(maxRegions, 2u);
  const auto st =
      reference::normStatistics(values, {n, c, h, w}, 0, 1e-3, false);
  const auto want =
      reference::normalise(values, {n, c, h, w}, 0, std::vector<double>(c, 1.0),
                           std::vector<double>(c, 0.0), st);
  expectClose(1e-4, r.outputs[0], want.first, "normalised");
}

// L = sum(dy * out(x, gamma, beta)) with statistics from x, in double.
double lossOf(Kind k, const std::vector<double> &x,
              const std::vector<std::size_t> &shape,
              const std::vector<double> &gamma, const std::vector<double> &beta,
              const std::vector<double> &dy, double eps) {
  const auto st = reference::normStatistics(x, shape, groupsOf(k), eps, false);
  const auto out = reference::normalise(x, shape, groupsOf(k), gamma, beta, st);
  double l = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    l += dy[i] * out.first[i];
  return l;
}

std::vector<double> difference(std::vector<double> &v,
                               const std::function<double()> &loss) {
  std::vector<double> g(v.size());
  const double h = 1e-6;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double lp = loss();
    v[i] = keep - h;
    const double lm = loss();
    v[i] = keep;
    g[i] = (lp - lm) / (2 * h);
  }
  return g;
}

TEST(NormsGradients, MatchFiniteDifferencesOfTheReference) {
  const std::vector<std::size_t> shape{3, 4, 5};
  const std::size_t c = 4, n = product(shape);
  const double eps = 1e-3;
  for (Kind k : kKinds) {
    auto x = roundAll(FLOAT, spread(n, -1.0, 2.0));
    auto gamma = roundAll(FLOAT, spread(c, 0.5, 1.5));
    auto beta = roundAll(FLOAT, spread(c, -0.5, 0.5));
    auto dy = roundAll(FLOAT, spread(n, -1.0, 1.0));
    std::reverse(dy.begin(), dy.end());
    auto loss = [&] { return lossOf(k, x, shape, gamma, beta, dy, eps); };
    const auto dx = difference(x, loss);
    const auto dGamma = difference(gamma, loss);
    const auto dBeta = difference(beta, loss);
    const auto st =
        reference::normStatistics(x, shape, groupsOf(k), eps, false);
    const auto whitened =
        reference::normalise(x, shape, groupsOf(k), gamma, beta, st).second;
    RunResult r =
        runOp(4,
              {{FLOAT, shape, x},
               {FLOAT, shape, dy},
               {FLOAT, {c}, gamma},
               {FLOAT, {st.mean.size()}, st.mean},
               {FLOAT, {st.mean.size()}, st.invStdDev},
               {FLOAT, shape, whitened}},
              [&](Graph &g, const auto &in, program::Sequence &p) {
                auto [a0, a1, a2] = gradientsFromActs(k, g, in[0], in[1], in[3],
                                                      in[4], in[2], p);
                auto [w0, w1, w2] =
                    gradientsFromWhitened(k, g, in[5], in[1], in[4], in[2], p);
                return std::vector<Tensor>{a0, a1, a2, w0, w1, w2};
              });
    const std::string what = nameOf(k);
    for (unsigned form = 0; form < 2; ++form) {
      expectClose(1e-3, r.outputs[3 * form], dx,
                  what + (form ? " from whitened" : " from acts") +
                      " gradsOut");
      expectClose(1e-3, r.outputs[3 * form + 1], dGamma, what + " gammaDelta");
      expectClose(1e-3, r.outputs[3 * form + 2], dBeta, what + " betaDelta");
    }
  }
}

// Batch norm's gradients from the activations compute xhat inside the maps
// that read it: no map (and no temporary) of its own, and the same bits as
// whitening first and taking the gradients of the whitened activations.
TEST(NormsGradients, FromActsNeedNoWhitenMapAndKeepTheBits) {
  const std::vector<std::size_t> shape{2, 6, 9, 7};
  const std::size_t c = 6, n = product(shape);
  const auto x = spread(n, -1.0, 2.0);
  auto dy = spread(n, -1.0, 1.0);
  std::reverse(dy.begin(), dy.end());
  std::vector<std::string> sets;
  RunResult r =
      runOp(8,
            {{FLOAT, shape, x},
             {FLOAT, shape, dy},
             {FLOAT, {c}, spread(c, 0.5, 1.5)}},
            [&](Graph &g, const auto &in, program::Sequence &p) {
              auto [mean, istd] =
                  batchNormStatistics(g, in[0], 1e-3f, p, false, true);
              const Tensor whitened =
                  batchNormalise(g, in[0], in[2], in[2], mean, istd, p).second;
              const std::size_t before = g.data().computeSets.size();
              auto [a0, a1, a2] = batchNormGradients(
                  g, in[0], in[1], mean, istd, in[2], p, FLOAT, "fromActs");
              for (std::size_t i = before; i < g.data().computeSets.size(); ++i)
                sets.push_back(g.data().computeSets[i].name);
              auto [w0, w1, w2] =
                  batchNormGradients(g, whitened, in[1], istd, in[2], p);
              return std::vector<Tensor>{a0, a1, a2, w0, w1, w2};
            });
  for (const std::string &name : sets)
    EXPECT_EQ(name.find("whiten"), std::string::npos) << name;
  for (unsigned k = 0; k < 3; ++k)
    EXPECT_EQ(r.outputs[k], r.outputs[k + 3]) << "output " << k;
}

TEST(NormsInference, FoldedBatchNormScalesAndShiftsPerChannel) {
  RunResult r = runOp(4,
                      {{FLOAT, {2, 3}, {1, 2, 3, 4, 5, 6}},
                       {FLOAT, {3}, {1, 10, 100}},
                       {FLOAT, {3}, {0.5, 0, -1}}},
                      [](Graph &g, const auto &in, program::Sequence &p) {
                        return std::vector<Tensor>{
                            batchNormalise(g, in[0], in[1], in[2], p)};
                      });
  EXPECT_EQ(r.outputs[0], (std::vector<double>{1.5, 20, 299, 4.5, 50, 599}));
}

TEST(NormsErrors, BadShapesAndTypesSayWhatIsWrong) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Graph g(model.createDevice().getTarget());
  ops::addCodelets(g);
  program::Sequence p;
  auto var = [&](Type t, std::vector<std::size_t> shape) {
    Tensor v = g.addVariable(t, shape, "v");
    mapTensorLinearly(g, v);
    return v;
  };
  auto expectError = [&](auto f, const char *substring) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one saying " << substring;
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(substring));
    }
  };
  Tensor acts = var(FLOAT, {2, 6, 3});
  Tensor c6 = var(FLOAT, {6});
  expectError([&] { groupNormStatistics(g, acts, 1e-5f, p, 4); },
              "4 groups do not divide the 6 channels");
  expectError([&] { batchNormStatistics(g, var(FLOAT, {6}), 1e-5f, p); },
              "rank >= 2");
  expectError(
      [&] {
        batchNormStatistics(g, var(INT, {2, 6}), 1e-5f, p);
      },
      "has type int");
  expectError([&] { batchNormalise(g, acts, var(FLOAT, {5}), c6, c6, c6, p); },
              "gamma has shape [5] but must be [6]");
  expectError([&] { batchNormalise(g, acts, c6, c6, var(HALF, {6}), c6, p); },
              "the mean is half but the activations are float");
  expectError(
      [&] {
        batchNormStatistics(g, var(FLOAT, {1, 6}), 1e-5f, p, true);
      },
      "unbiased variance needs at least 2 elements");
  expectError(
      [&] {
        layerNormalise(g, acts, c6, c6, var(FLOAT, {3}), var(FLOAT, {3}), p);
      },
      "statistics of shape [3] do not fit activations of shape [2, 6, 3]");
  EXPECT_THROW(batchNormStatistics(g, acts, 1e-5f, p, false, false, FLOAT, {},
                                   {{"unknown", "1"}}),
               OptionError);
}

TEST(NormsEstimates, CyclesArePositiveDeterministicAndGrowWithSize) {
  auto cycles = [](std::size_t batch) {
    const std::vector<std::size_t> shape{batch, 8, 16};
    return runOp(4, {{FLOAT, shape, spread(product(shape), -1, 1)}},
                 [](Graph &g, const auto &in, program::Sequence &p) {
                   auto [mean, istd] = layerNormStatistics(g, in[0], 1e-5f, p);
                   return std::vector<Tensor>{mean, istd};
                 })
        .cycles;
  };
  const auto small = cycles(2), big = cycles(64);
  EXPECT_GT(small, 0u);
  EXPECT_GT(big, small);
  EXPECT_EQ(cycles(2), small);
}
