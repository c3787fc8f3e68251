// Convolution: forward, input gradient and weight gradient against the host
// reference in float and half on 1, 4 and 1472 tiles (stride, padding,
// kernel dilation, groups, non-square shapes, both kernel orientations);
// gradients against finite differences of the reference forward pass;
// plans that split the reduced dimension; createInput / createWeights;
// addBias; errors; cycle estimates.
#include "OpsTestUtil.hpp"

#include "ops/conv/ConvInternal.hpp"
#include "ops/conv/ConvKernels.hpp"

#include "tessera/ops/Conv.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <set>
#include <string>

using namespace tessera;
using namespace tessera::ops;
using namespace tessera::test;
using ::testing::HasSubstr;

namespace {

std::size_t product(const std::vector<std::size_t> &s) {
  std::size_t n = 1;
  for (std::size_t d : s)
    n *= d;
  return n;
}

std::vector<double> rounded(Type t, std::vector<double> v) {
  for (double &x : v)
    x = reference::roundTo(t, x);
  return v;
}

std::vector<double> absolute(std::vector<double> v) {
  for (double &x : v)
    x = std::fabs(x);
  return v;
}

// Float sums differ from double ones by rounding that grows with the sum
// of the terms' magnitudes (l1); half results add their own rounding.
void expectClose(const std::vector<double> &got,
                 const std::vector<double> &want, const std::vector<double> &l1,
                 Type type, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double rel = type == HALF ? 2e-3 : 2e-6;
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * (l1[i] + 1.0))
        << what << " at element " << i;
}

ConvParams makeParams(Type type, std::size_t n, std::array<std::size_t, 2> in,
                      std::array<std::size_t, 2> k, std::size_t cin,
                      std::size_t cout, std::size_t groups = 1) {
  return ConvParams(type, n, in, k, cin, cout, groups);
}

struct Case {
  const char *name;
  ConvParams p;
};

// Shapes that exercise every addressing path of the vertices.
std::vector<Case> forwardCases(Type t) {
  std::vector<Case> cases;
  ConvParams a = makeParams(t, 2, {7, 6}, {3, 3}, 3, 4);
  a.paddingLower = a.paddingUpper = {1, 1};
  cases.push_back({"3x3 same padding", a});
  ConvParams b = makeParams(t, 1, {9, 8}, {3, 2}, 5, 7);
  b.stride = {2, 1};
  b.paddingLower = {1, 0};
  b.paddingUpper = {2, 1};
  cases.push_back({"stride 2x1, uneven padding", b});
  ConvParams c = makeParams(t, 2, {8, 7}, {3, 3}, 2, 3);
  c.kernelDilation = {2, 1};
  c.paddingLower = c.paddingUpper = {2, 1};
  cases.push_back({"dilation 2x1", c});
  ConvParams d = makeParams(t, 1, {5, 6}, {3, 3}, 2, 3, 3);
  d.stride = {2, 2};
  d.paddingLower = {1, 1};
  cases.push_back({"3 groups, stride 2x2", d});
  ConvParams e = makeParams(t, 2, {4, 3}, {1, 1}, 6, 20);
  cases.push_back({"1x1 kernel, narrow output, 20 channels", e});
  ConvParams f = makeParams(t, 1, {2, 40}, {1, 3}, 2, 5);
  f.kernelDilation = {1, 2};
  cases.push_back({"wide rows with a partial panel", f});
  ConvParams g = makeParams(t, 1, {6, 9}, {2, 3}, 3, 18);
  g.stride = {1, 3};
  g.paddingUpper = {0, 2};
  cases.push_back({"column stride 3", g});
  return cases;
}

RunResult runForward(unsigned tiles, const ConvParams &p,
                     const std::vector<double> &x, const std::vector<double> &w,
                     const OptionFlags &options = {}) {
  return runOp(tiles,
               {{p.inputType, p.getInputShape(), x},
                {p.inputType, p.getWeightsShape(), w}},
               [&](Graph &g, const auto &in, program::Sequence &prog) {
                 return std::vector<Tensor>{convolution(
                     g, in[0], in[1], p, false, prog, "conv", options)};
               });
}

void checkForward(unsigned tiles, const ConvParams &p, const std::string &what,
                  const OptionFlags &options = {}) {
  const Type t = p.inputType;
  const auto x = rounded(t, spread(product(p.getInputShape()), -1, 1));
  const auto w = rounded(t, spread(product(p.getWeightsShape()), -0.5, 0.5));
  const RunResult r = runForward(tiles, p, x, w, options);
  expectClose(r.outputs[0], reference::convolution(p, x, w),
              reference::convolution(p, absolute(x), absolute(w)), p.outputType,
              what);
}

TEST(ConvForward, MatchesReferenceInFloatOnOneAndFourTiles) {
  for (unsigned tiles : {1u, 4u})
    for (const Case &c : forwardCases(FLOAT))
      checkForward(tiles, c.p,
                   std::string(c.name) + " on " + std::to_string(tiles));
}

TEST(ConvForward, MatchesReferenceInHalfOnOneAndFourTiles) {
  for (unsigned tiles : {1u, 4u})
    for (const Case &c : forwardCases(HALF))
      checkForward(tiles, c.p,
                   std::string(c.name) + " on " + std::to_string(tiles));
}

TEST(ConvForward, MatchesReferenceOn1472Tiles) {
  for (Type t : {FLOAT, HALF}) {
    ConvParams p = makeParams(t, 2, {5, 4}, {3, 3}, 3, 4, 2);
    p.paddingLower = p.paddingUpper = {1, 1};
    p.stride = {2, 1};
    checkForward(1472, p, "1472 tiles");
  }
}

TEST(ConvForward, MixedInputAndOutputTypes) {
  ConvParams p = makeParams(HALF, 2, {5, 5}, {3, 3}, 3, 4);
  p.outputType = FLOAT;
  checkForward(4, p, "half to float");
  ConvParams q = makeParams(FLOAT, 2, {5, 5}, {3, 3}, 3, 4);
  q.outputType = HALF;
  checkForward(4, q, "float to half");
}

// Deep inputs with few outputs on many tiles: the plan splits the input
// channels and reduces the partial sums in a second compute set.
TEST(ConvForward, SplitsInputChannelsAndReducesPartials) {
  ConvParams p = makeParams(FLOAT, 1, {2, 2}, {1, 1}, 256, 2);
  const Target target = Target::createIPUTarget(1, "ipu2");
  const auto s = conv::forwardShape(p, FLOAT);
  const conv::Plan plan =
      conv::choosePlan(target, s, conv::Pass::Forward, conv::ConvOptions{});
  EXPECT_GT(plan.inChans, 1u);
  checkForward(1472, p, "input channels split, float");
  ConvParams h = p;
  h.inputType = h.outputType = HALF;
  checkForward(1472, h, "input channels split, half partials",
               {{"partialsType", "half"}});
  checkForward(1472, h, "input channels split, float partials");
}

TEST(ConvForward, TransposedAndFlippedWeightsGiveTheInputGradient) {
  // Stride 1: dIn = conv(dOut, flip(transpose(W))) with padding k-1-p.
  ConvParams f = makeParams(FLOAT, 2, {6, 5}, {3, 2}, 3, 4);
  f.paddingLower = {1, 0};
  f.paddingUpper = {1, 1};
  ConvParams b = makeParams(FLOAT, 2, {6, 5}, {3, 2}, 4, 3);
  b.inputFieldShape = f.getOutputFieldShape();
  b.paddingLower = {1, 1};
  b.paddingUpper = {1, 0};
  ASSERT_EQ(b.getOutputFieldShape(), f.inputFieldShape);
  const auto dy = spread(product(f.getOutputShape()), -1, 1);
  const auto w = spread(product(f.getWeightsShape()), -0.5, 0.5);
  const RunResult r = runOp(
      4, {{FLOAT, f.getOutputShape(), dy}, {FLOAT, f.getWeightsShape(), w}},
      [&](Graph &g, const auto &in, program::Sequence &prog) {
        return std::vector<Tensor>{
            convolution(g, in[0], in[1], b, true, prog),
            convolutionInputGradient(g, in[0], in[1], f, prog)};
      });
  const auto want = reference::convolutionInputGradient(f, dy, w);
  const auto l1 =
      reference::convolutionInputGradient(f, absolute(dy), absolute(w));
  expectClose(r.outputs[0], want, l1, FLOAT, "transposed and flipped");
  expectClose(r.outputs[1], want, l1, FLOAT, "input gradient");
}

// ---- Gradients -------------------------------------------------------------

std::vector<Case> gradientCases(Type t) {
  std::vector<Case> cases;
  ConvParams a = makeParams(t, 2, {6, 5}, {3, 3}, 3, 4);
  a.paddingLower = a.paddingUpper = {1, 1};
  cases.push_back({"3x3 same padding", a});
  ConvParams b = makeParams(t, 1, {9, 8}, {3, 2}, 2, 3);
  b.stride = {2, 3};
  b.paddingLower = {1, 0};
  b.paddingUpper = {0, 2};
  cases.push_back({"stride 2x3", b});
  ConvParams c = makeParams(t, 2, {7, 7}, {2, 3}, 2, 2, 2);
  c.kernelDilation = {2, 2};
  c.paddingLower = {0, 2};
  c.paddingUpper = {1, 0};
  cases.push_back({"dilation and 2 groups", c});
  ConvParams d = makeParams(t, 1, {5, 4}, {1, 1}, 4, 3);
  d.paddingUpper = {3, 0};
  d.stride = {2, 1};
  cases.push_back({"1x1 kernel, padding only read as zeros", d});
  return cases;
}

// Runs both gradients of p with deltas dy on \p tiles tiles.
RunResult runGradients(unsigned tiles, const ConvParams &p,
                       const std::vector<double> &x,
                       const std::vector<double> &w,
                       const std::vector<double> &dy) {
  const Type t = p.inputType;
  return runOp(tiles,
               {{t, p.getInputShape(), x},
                {t, p.getWeightsShape(), w},
                {t, p.getOutputShape(), dy}},
               [&](Graph &g, const auto &in, program::Sequence &prog) {
                 return std::vector<Tensor>{
                     convolutionInputGradient(g, in[2], in[1], p, prog),
                     convolutionWeightGradient(g, in[2], in[0], p, prog)};
               });
}

void checkGradients(unsigned tiles, const ConvParams &p,
                    const std::string &what) {
  const Type t = p.inputType;
  const auto x = rounded(t, spread(product(p.getInputShape()), -1, 1));
  const auto w = rounded(t, spread(product(p.getWeightsShape()), -0.5, 0.5));
  const auto dy = rounded(t, spread(product(p.getOutputShape()), -1, 1));
  const RunResult r = runGradients(tiles, p, x, w, dy);
  expectClose(r.outputs[0], reference::convolutionInputGradient(p, dy, w),
              reference::convolutionInputGradient(p, absolute(dy), absolute(w)),
              t, what + ": input gradient");
  expectClose(
      r.outputs[1], reference::convolutionWeightGradient(p, dy, x),
      reference::convolutionWeightGradient(p, absolute(dy), absolute(x)), t,
      what + ": weight gradient");
}

TEST(ConvGradients, MatchReferenceInFloatAndHalfOnOneAndFourTiles) {
  for (Type t : {FLOAT, HALF})
    for (unsigned tiles : {1u, 4u})
      for (const Case &c : gradientCases(t))
        checkGradients(tiles, c.p,
                       std::string(c.name) + " " + std::string(typeName(t)) +
                           " on " + std::to_string(tiles));
}

TEST(ConvGradients, MatchReferenceOn1472Tiles) {
  for (Type t : {FLOAT, HALF}) {
    ConvParams p = makeParams(t, 3, {6, 5}, {3, 3}, 2, 3);
    p.paddingLower = p.paddingUpper = {1, 1};
    p.stride = {2, 1};
    checkGradients(1472, p,
                   std::string("1472 tiles ") + std::string(typeName(t)));
  }
}

// Many output positions and few weights: the weight-gradient plan splits
// the batch and rows and reduces the partial sums.
TEST(ConvGradients, WeightGradientSplitsBatchAndRows) {
  ConvParams p = makeParams(FLOAT, 4, {12, 12}, {3, 3}, 2, 2);
  p.paddingLower = p.paddingUpper = {1, 1};
  const auto s = conv::forwardShape(p, FLOAT);
  const conv::Plan plan =
      conv::choosePlan(Target::createIPUTarget(1, "ipu2"), s,
                       conv::Pass::WeightGrad, conv::ConvOptions{});
  EXPECT_GT(plan.reduceParts(conv::Pass::WeightGrad), 1u);
  checkGradients(1472, p, "batch and rows split");
}

// The forward pass's host kernel (a band of output channels per batch,
// rows and input-channel piece, in place of one vertex per tile) and the
// reduction's (one vertex per block) write exactly the bytes the tiles'
// vertices do, forward and for the input gradient (whose weights the
// kernel reads as they lie and flips itself), in float and half, and
// change no estimate.
TEST(ConvForward, HostKernelWritesExactlyWhatTheTilesWould) {
  const OptionFlags tilesOnly{{"engine.hostKernels", "false"}};
  for (Type t : {FLOAT, HALF}) {
    std::vector<Case> cases = forwardCases(t);
    // The Fashion-MNIST CNN's convolutions.
    cases.push_back(
        {"1 to 32 channels, 28x28", makeParams(t, 4, {28, 28}, {3, 3}, 1, 32)});
    cases.push_back({"32 to 64 channels, 13x13",
                     makeParams(t, 4, {13, 13}, {3, 3}, 32, 64)});
    for (const Case &c : cases) {
      const ConvParams &p = c.p;
      const auto x = rounded(t, spread(product(p.getInputShape()), -1, 1));
      const auto w =
          rounded(t, spread(product(p.getWeightsShape()), -0.5, 0.5));
      const auto dy = rounded(t, spread(product(p.getOutputShape()), -1, 1));
      const auto both = [&](const OptionFlags &options) {
        return runOp(
            1472,
            {{t, p.getInputShape(), x},
             {t, p.getWeightsShape(), w},
             {t, p.getOutputShape(), dy}},
            [&](Graph &g, const auto &in, program::Sequence &prog) {
              return std::vector<Tensor>{
                  convolution(g, in[0], in[1], p, false, prog),
                  convolutionInputGradient(g, in[2], in[1], p, prog)};
            },
            options);
      };
      const std::string what =
          std::string(c.name) + " " + std::string(typeName(t));
      const RunResult host = both({}), onTiles = both(tilesOnly);
      EXPECT_EQ(host.outputs, onTiles.outputs) << what;
      EXPECT_EQ(host.cycles, onTiles.cycles) << what;
      EXPECT_EQ(onTiles.hostKernelSteps, 0u) << what;
      const auto ran = [&](const char *set) {
        return std::count(host.hostKernelSets.begin(),
                          host.hostKernelSets.end(), set) == 1;
      };
      EXPECT_TRUE(ran("convolution/convolve")) << what;
      // (The CNN's first input gradient has one output channel to split.)
      EXPECT_EQ(ran("convolutionInputGradient/convolve"),
                p.inputChannelsPerConvGroup > 1)
          << what;
      if (p.inputChannelsPerConvGroup == 32) { // plans that split Cin
        EXPECT_TRUE(ran("convolution/reduce")) << what;
        EXPECT_TRUE(ran("convolutionInputGradient/reduce")) << what;
      }
    }
  }
}

// The weight gradient's host kernel (a band of output channels over every
// input channel per batch-and-rows piece, in place of one vertex per tile)
// and the reduction's write exactly the bytes the tiles' vertices do, in
// float and half, with and without partial sums to reduce, and change no
// estimate.
TEST(ConvGradients, WeightGradientHostKernelWritesExactlyWhatTheTilesWould) {
  const OptionFlags tilesOnly{{"engine.hostKernels", "false"}};
  for (Type t : {FLOAT, HALF}) {
    std::vector<Case> cases = gradientCases(t);
    // The shape of the Fashion-MNIST CNN's second convolution.
    cases.push_back({"32 to 64 channels, 13x13",
                     makeParams(t, 4, {13, 13}, {3, 3}, 32, 64)});
    for (const Case &c : cases)
      for (unsigned tiles : {4u, 1472u}) {
        const ConvParams &p = c.p;
        const auto x = rounded(t, spread(product(p.getInputShape()), -1, 1));
        const auto dy = rounded(t, spread(product(p.getOutputShape()), -1, 1));
        const auto grad = [&](const OptionFlags &options) {
          return runOp(
              tiles, {{t, p.getInputShape(), x}, {t, p.getOutputShape(), dy}},
              [&](Graph &g, const auto &in, program::Sequence &prog) {
                return std::vector<Tensor>{
                    convolutionWeightGradient(g, in[1], in[0], p, prog)};
              },
              options);
        };
        const std::string what = std::string(c.name) + " " +
                                 std::string(typeName(t)) + " on " +
                                 std::to_string(tiles);
        const RunResult host = grad({}), onTiles = grad(tilesOnly);
        EXPECT_EQ(host.outputs, onTiles.outputs) << what;
        EXPECT_EQ(host.cycles, onTiles.cycles) << what;
        EXPECT_EQ(onTiles.hostKernelSteps, 0u) << what;
        const auto &sets = host.hostKernelSets;
        EXPECT_EQ(std::count(sets.begin(), sets.end(),
                             "convolutionWeightGradient/convolve"),
                  1)
            << what;
        if (tiles == 1472 && p.inputChannelsPerConvGroup == 32) {
          EXPECT_EQ(std::count(sets.begin(), sets.end(),
                               "convolutionWeightGradient/reduce"),
                    1)
              << what;
        }
      }
  }
}

// The loss L = sum(out * dy) is linear in x and w, so central differences
// of the reference forward pass equal the gradients up to rounding.
TEST(ConvGradients, MatchFiniteDifferences) {
  for (const Case &c : gradientCases(FLOAT)) {
    const ConvParams &p = c.p;
    const auto x = spread(product(p.getInputShape()), -1, 1);
    const auto w = spread(product(p.getWeightsShape()), -0.5, 0.5);
    const auto dy = spread(product(p.getOutputShape()), -1, 1);
    const RunResult r = runGradients(4, p, x, w, dy);
    const auto loss = [&](const std::vector<double> &xs,
                          const std::vector<double> &ws) {
      const auto out = reference::convolution(p, xs, ws);
      double l = 0;
      for (std::size_t i = 0; i < out.size(); ++i)
        l += out[i] * dy[i];
      return l;
    };
    const double h = 1e-3;
    for (std::size_t i = 0; i < x.size(); i += 7) {
      auto up = x, down = x;
      up[i] += h;
      down[i] -= h;
      const double fd = (loss(up, w) - loss(down, w)) / (2 * h);
      EXPECT_NEAR(r.outputs[0][i], fd, 1e-4) << c.name << " dIn " << i;
    }
    for (std::size_t i = 0; i < w.size(); i += 3) {
      auto up = w, down = w;
      up[i] += h;
      down[i] -= h;
      const double fd = (loss(x, up) - loss(x, down)) / (2 * h);
      EXPECT_NEAR(r.outputs[1][i], fd, 1e-4) << c.name << " dW " << i;
    }
  }
}

// ---- Layouts, bias -------------------------------------------------------

TEST(ConvLayout, CreatedTensorsAreMappedAndGiveTheSameResult) {
  ConvParams p = makeParams(FLOAT, 2, {8, 8}, {3, 3}, 4, 6);
  p.paddingLower = p.paddingUpper = {1, 1};
  const auto x = spread(product(p.getInputShape()), -1, 1);
  const auto w = spread(product(p.getWeightsShape()), -0.5, 0.5);
  const RunResult r = runOp(
      16, {{FLOAT, p.getInputShape(), x}, {FLOAT, p.getWeightsShape(), w}},
      [&](Graph &g, const auto &in, program::Sequence &prog) {
        Tensor a = createInput(g, p, "a");
        Tensor b = createWeights(g, p, "b");
        EXPECT_EQ(a.shape(), p.getInputShape());
        EXPECT_EQ(b.shape(), p.getWeightsShape());
        EXPECT_NO_THROW(g.getTileMapping(a));
        EXPECT_NO_THROW(g.getTileMapping(b));
        prog.add(program::Copy(in[0], a));
        prog.add(program::Copy(in[1], b));
        return std::vector<Tensor>{convolution(g, a, b, p, false, prog)};
      });
  expectClose(r.outputs[0], reference::convolution(p, x, w),
              reference::convolution(p, absolute(x), absolute(w)), FLOAT,
              "created tensors");
}

// A vertex's input rows that continue each other on its tile, or lie on
// other tiles, arrive as a few entries (a worker's regions), not one list
// element per row.
TEST(ConvLayout, VerticesTakeRowsAsFewEntries) {
  ConvParams p = makeParams(FLOAT, 2, {2, 2}, {3, 3}, 64, 64);
  p.paddingLower = p.paddingUpper = {1, 1};
  Graph g(Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "16"}}));
  addCodelets(g);
  program::Sequence prog;
  Tensor a = createInput(g, p, "a");
  convolution(g, a, createWeights(g, p, "b"), p, false, prog);
  // Input rows of the tile vertices; output rows of the host kernel's.
  std::size_t rows = 0, entries = 0, outRows = 0, outEntries = 0;
  for (const VertexData &v : g.data().vertices) {
    const std::string &name = v.vertexClass->info.name;
    const bool host = name == "tessera::ops::ConvPartialHost<float,float>";
    if (!host && name != "tessera::ops::ConvPartial<float,float>")
      continue;
    const auto &geometry = v.fields[3].state;
    std::vector<int> geo(geometry.size() / sizeof(int));
    std::memcpy(geo.data(), geometry.data(), geometry.size());
    if (host) {
      outRows += std::size_t(geo[conv::gBatch]) * geo[conv::gOutChans] *
                 geo[conv::gRows];
      outEntries += v.fields[2].tensors.size();
      continue;
    }
    rows += std::size_t(geo[conv::gBatch]) * geo[conv::gInChans] *
            geo[conv::gInRows];
    entries += v.fields[0].tensors.size();
  }
  ASSERT_GT(rows, 0u);
  EXPECT_LE(entries * 8, rows) << entries << " entries for " << rows << " rows";
  ASSERT_GT(outRows, 0u);
  EXPECT_LE(outEntries * 2, outRows)
      << outEntries << " entries for " << outRows << " rows";
}

// The result of a plan that splits rows and channels lies in memory block
// by block, so a tile's share is one run: a map over it takes a region or
// two per tile, not one per output row.
TEST(ConvLayout, ResultsLieInMemoryBlockByBlock) {
  ConvParams p = makeParams(FLOAT, 2, {8, 8}, {1, 1}, 256, 256);
  Graph g(Target::createIPUTarget(1, "ipu2"));
  addCodelets(g);
  program::Sequence prog;
  const auto s = conv::forwardShape(p, FLOAT);
  const conv::Plan plan =
      conv::choosePlan(g.getTarget(), s, conv::Pass::Forward, {});
  ASSERT_GT(plan.rows, 1u);
  ASSERT_GT(plan.outChans, 1u);
  Tensor y = convolution(g, createInput(g, p, "x"), createWeights(g, p, "w"), p,
                         false, prog);
  const std::size_t before = g.getNumVertices();
  using namespace expr;
  map(g, Max(_1, Const(0.0f)), {y}, prog);
  const std::vector<std::size_t> perVertex = outRegionsSince(g, before);
  const std::size_t vertices = perVertex.size();
  const std::size_t regions =
      std::accumulate(perVertex.begin(), perVertex.end(), std::size_t{0});
  ASSERT_GT(vertices, 0u);
  EXPECT_LE(regions, 2 * vertices)
      << regions << " regions on " << vertices << " tiles";
}

// Weights whose plan splits both channel dimensions lie slab by slab, so an
// update of them (an optimizer's map) takes a region or two per tile.
TEST(ConvLayout, CreatedWeightsLieInMemorySlabBySlab) {
  ConvParams p = makeParams(FLOAT, 2, {2, 2}, {3, 3}, 256, 256);
  p.paddingLower = p.paddingUpper = {1, 1};
  Graph g(Target::createIPUTarget(1, "ipu2"));
  addCodelets(g);
  const auto s = conv::forwardShape(p, FLOAT);
  const conv::Plan plan =
      conv::choosePlan(g.getTarget(), s, conv::Pass::Forward, {});
  ASSERT_GT(plan.inChans, 1u);
  ASSERT_GT(plan.outChans, 1u);
  program::Sequence prog;
  Tensor w = createWeights(g, p, "w");
  const std::size_t before = g.getNumVertices();
  using namespace expr;
  mapInPlace(g, _1 * Const(0.5f), {w}, prog);
  const std::vector<std::size_t> perVertex = outRegionsSince(g, before);
  const std::size_t vertices = perVertex.size();
  const std::size_t regions =
      std::accumulate(perVertex.begin(), perVertex.end(), std::size_t{0});
  ASSERT_GT(vertices, 0u);
  EXPECT_LE(regions, 2 * vertices)
      << regions << " regions on " << vertices << " tiles";
}

// Tiles holding some element of \p t.
std::set<unsigned> tilesOf(const Graph &g, const Tensor &t) {
  std::set<unsigned> tiles;
  const TileMapping m = g.getTileMapping(t);
  for (unsigned tile = 0; tile < m.size(); ++tile)
    if (!m[tile].empty())
      tiles.insert(tile);
  return tiles;
}

// Two layers of the same shape whose plans use far fewer units than tiles
// start on different tiles, rather than both on tile 0 (where every small
// layer's weights, optimizer state and work would pile up), and each
// layer's weights still lie on the tiles of the units that read them.
TEST(ConvLayout, SmallLayersSpreadOverDifferentTiles) {
  ConvParams p = makeParams(FLOAT, 1, {4, 4}, {1, 1}, 4, 4);
  Graph g(Target::createIPUTarget(1, "ipu2"));
  addCodelets(g);
  const auto s = conv::forwardShape(p, FLOAT);
  const conv::Plan plan =
      conv::choosePlan(g.getTarget(), s, conv::Pass::Forward, {});
  ASSERT_LE(plan.units() * 4, g.getTarget().getNumTiles());
  program::Sequence prog;
  Tensor x = createInput(g, p, "x");
  std::vector<std::set<unsigned>> weightTiles;
  for (const char *name : {"w1", "w2", "w3"}) {
    Tensor w = createWeights(g, p, name);
    Tensor y = convolution(g, x, w, p, false, prog);
    weightTiles.push_back(tilesOf(g, w));
    const std::set<unsigned> outTiles = tilesOf(g, y);
    EXPECT_TRUE(std::includes(outTiles.begin(), outTiles.end(),
                              weightTiles.back().begin(),
                              weightTiles.back().end()))
        << name << ": weights lie on tiles no unit of its plan runs on";
  }
  for (std::size_t i = 0; i < weightTiles.size(); ++i)
    for (std::size_t j = i + 1; j < weightTiles.size(); ++j) {
      std::vector<unsigned> shared;
      std::set_intersection(weightTiles[i].begin(), weightTiles[i].end(),
                            weightTiles[j].begin(), weightTiles[j].end(),
                            std::back_inserter(shared));
      EXPECT_LE(shared.size() * 2, weightTiles[i].size())
          << "layers " << i << " and " << j << " share " << shared.size()
          << " of " << weightTiles[i].size() << " weight tiles";
    }
}

TEST(ConvLayout, AddBiasAddsPerChannel) {
  ConvParams p = makeParams(FLOAT, 2, {3, 4}, {1, 1}, 1, 5);
  const std::vector<std::size_t> shape = p.getOutputShape();
  const auto a = spread(product(shape), -1, 1);
  const auto b = spread(5, -3, 3);
  const RunResult r = runOp(
      4, {{FLOAT, shape, a}, {FLOAT, {5}, b}},
      [&](Graph &g, const auto &in, program::Sequence &prog) {
        EXPECT_EQ(createBiases(g, p).shape(), std::vector<std::size_t>{5});
        addBias(g, in[0], in[1], prog);
        return std::vector<Tensor>{in[0]};
      });
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(r.outputs[0][i], a[i] + b[i / 12 % 5], 1e-6) << i;
}

// ---- Errors ---------------------------------------------------------------

template <typename E, typename F>
void expectError(F &&f, const std::string &fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing \"" << fragment << "\"";
  } catch (const E &e) {
    EXPECT_THAT(e.what(), HasSubstr(fragment));
  }
}

TEST(ConvErrors, ParamsSayWhatIsWrong) {
  ConvParams p = makeParams(FLOAT, 1, {4, 4}, {6, 3}, 1, 1);
  p.paddingLower = {1, 0};
  expectError<ShapeError>([&] { p.validate(); },
                          "kernel height 6 (dilated by 1: 6) is larger than "
                          "the padded input height 4 + 1 + 0 = 5");
  ConvParams q = makeParams(FLOAT, 1, {4, 4}, {1, 1}, 0, 1);
  expectError<ShapeError>([&] { q.validate(); },
                          "inputChannelsPerConvGroup is 0");
  ConvParams r = makeParams(INT, 1, {4, 4}, {1, 1}, 1, 1);
  expectError<TypeError>([&] { r.validate(); }, "use float or half");
  ConvParams s = makeParams(FLOAT, 1, {4, 4}, {1, 1}, 1, 1);
  s.stride = {0, 1};
  expectError<ShapeError>([&] { s.validate(); }, "height stride is 0");
}

TEST(ConvErrors, OperandsMustMatchTheParams) {
  Graph g(Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "4"}}));
  addCodelets(g);
  const ConvParams p = makeParams(FLOAT, 2, {5, 5}, {3, 3}, 3, 4);
  Tensor x = g.addVariable(FLOAT, {2, 3, 5, 6});
  Tensor w = g.addVariable(FLOAT, p.getWeightsShape());
  Tensor xh = g.addVariable(HALF, p.getInputShape());
  program::Sequence prog;
  expectError<ShapeError>(
      [&] { convolution(g, x, w, p, false, prog); },
      "convolution: the input has shape [2, 3, 5, 6] but the parameters "
      "need [2, 3, 5, 5]");
  expectError<TypeError>([&] { convolution(g, xh, w, p, false, prog); },
                         "the input has type half");
  Tensor xg = g.addVariable(FLOAT, p.getInputShape());
  expectError<ShapeError>(
      [&] { convolution(g, xg, w, p, true, prog); },
      "the weights has shape [1, 4, 3, 3, 3] but the parameters need "
      "[1, 3, 4, 3, 3]");
  expectError<OptionError>(
      [&] {
        createInput(g, p, {}, {{"partialType", "half"}});
      },
      "partialsType");
  expectError<OptionError>(
      [&] {
        createInput(g, p, {}, {{"availableMemoryProportion", "1.5"}});
      },
      "availableMemoryProportion");
}

// ---- Estimates --------------------------------------------------------------

std::uint64_t forwardCycles(unsigned tiles, const ConvParams &p) {
  return runForward(tiles, p, std::vector<double>(product(p.getInputShape())),
                    std::vector<double>(product(p.getWeightsShape())))
      .cycles;
}

TEST(ConvEstimates, PositiveDeterministicAndGrowing) {
  ConvParams small = makeParams(FLOAT, 1, {8, 8}, {3, 3}, 4, 4);
  ConvParams large = small;
  large.batchSize = 4;
  const std::uint64_t a = forwardCycles(4, small);
  EXPECT_GT(a, 0u);
  EXPECT_EQ(a, forwardCycles(4, small));
  EXPECT_GT(forwardCycles(4, large), a);
  ConvParams half = small;
  half.inputType = half.outputType = HALF;
  EXPECT_GT(forwardCycles(4, half), 0u);
}

TEST(ConvEstimates, WorkersShareSmallBlocksEvenly) {
  // Four output rows over six workers: rows are cut into column and
  // channel parts, so each worker does about two thirds of a row.
  const Target t = Target::createIPUTarget(1);
  const auto cycles = [&](std::size_t rows) {
    return conv::convPartialCycles(rows, 64, 32, 576, 16, t);
  };
  const std::uint64_t row = 64 * 32 * 576 / 16;
  EXPECT_LT(cycles(4), row);
  EXPECT_GT(cycles(4), row * 4 / 6);
  for (std::size_t rows = 1; rows < 24; ++rows)
    EXPECT_LE(cycles(rows), cycles(rows + 1)) << rows;
}

TEST(ConvEstimates, ManyTilesBeatOneTile) {
  // Estimates only: build and compile, no run.
  ConvParams p = makeParams(FLOAT, 4, {16, 16}, {3, 3}, 16, 16);
  p.paddingLower = p.paddingUpper = {1, 1};
  const auto s = conv::forwardShape(p, FLOAT);
  const Target one = Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "1"}});
  const Target full = Target::createIPUTarget(1, "ipu2");
  const conv::ConvOptions o;
  const auto cyclesOne = conv::estimatePlanCycles(
      one, s, conv::Pass::Forward,
      conv::choosePlan(one, s, conv::Pass::Forward, o));
  const auto cyclesFull = conv::estimatePlanCycles(
      full, s, conv::Pass::Forward,
      conv::choosePlan(full, s, conv::Pass::Forward, o));
  EXPECT_GE(cyclesOne, p.getNumMacs() / 16);
  EXPECT_LT(cyclesFull * 20, cyclesOne);
}

} // namespace

// The reduction's register sums are zero() then addTo() per part, bit for
// bit: -0 parts sum to +0, lengths cross the vector and 256-float chunk
// edges, and 9 parts take three passes.
TEST(ConvKernels, SumFrom0IsZeroThenAddToPerPart) {
  struct Part {
    const float *p;
    const float *data() const { return p; }
  };
  for (std::size_t n : {1, 7, 8, 31, 32, 45, 77, 256, 300}) {
    std::vector<std::vector<float>> rows(9, std::vector<float>(n + 5));
    for (std::size_t r = 0; r < rows.size(); ++r)
      for (std::size_t i = 0; i < rows[r].size(); ++i)
        rows[r][i] = i % 5 == 0 ? -0.0f : 0.1f * float(i) - 0.37f * float(r);
    std::vector<Part> parts;
    for (const auto &r : rows)
      parts.push_back({r.data()});
    std::vector<float> want(n), got(n);
    ops::conv::kernels::zero(want.data(), n);
    for (const auto &r : rows)
      ops::conv::kernels::addTo(r.data() + 2, want.data(), n);
    ops::conv::kernels::sumFrom0(parts, 2, n, got.data());
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]),
                std::bit_cast<std::uint32_t>(want[i]))
          << "n " << n << " i " << i;
  }
}
