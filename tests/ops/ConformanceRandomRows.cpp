// Conformance rows of the random ops and of slicing. Random ops must equal
// the element-by-element reference exactly on every tile count (so their
// results do not depend on the tiles) and have the distribution's
// statistics; slicing ops must equal the reference, out-of-range offsets
// included, and multiUpdateAdd must be the adjoint of multiSlice.
#include "Conformance.hpp"

#include "tessera/ops/DynamicSlice.hpp"
#include "tessera/ops/Random.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <numeric>

namespace tessera::conformance {
namespace {

const std::array<std::uint32_t, 2> kSeed{0x12345678u, 0x9abcdef0u};

double mean(const Values &v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

double variance(const Values &v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v)
    s += (x - m) * (x - m);
  return s / double(v.size() - 1);
}

// The sample's mean and variance within five standard errors of the
// distribution's, and every value within [lo, hi].
void expectMoments(const Values &v, double m, double var, double lo,
                   double hi) {
  const double n = double(v.size());
  EXPECT_NEAR(mean(v), m, 5 * std::sqrt(var / n)) << "mean";
  EXPECT_NEAR(variance(v), var, 5 * var * std::sqrt(2 / n)) << "variance";
  EXPECT_GE(*std::min_element(v.begin(), v.end()), lo);
  EXPECT_LE(*std::max_element(v.begin(), v.end()), hi);
}

enum class Dist { Uniform, Normal, TruncatedNormal, Bernoulli, Dropout };

// Variance of a standard normal truncated to [-a, a].
double truncatedVariance(double a) {
  const double phi = std::exp(-0.5 * a * a) / std::sqrt(2 * std::numbers::pi);
  return 1 - 2 * a * phi / std::erf(a / std::sqrt(2.0));
}

Values randomReference(Dist d, Type type, const Values &x) {
  const std::size_t n = x.size();
  switch (d) {
  case Dist::Uniform:
    return type == INT
               ? ops::reference::randomUniform(kSeed, 7, n, type, -3, 4)
               : ops::reference::randomUniform(kSeed, 7, n, type, -2, 3);
  case Dist::Normal:
    return ops::reference::randomNormal(kSeed, 7, n, type, 1, 2);
  case Dist::TruncatedNormal:
    return ops::reference::randomTruncatedNormal(kSeed, 7, n, type, -1, 0.5,
                                                 1.5);
  case Dist::Bernoulli:
    return ops::reference::randomBernoulli(kSeed, 7, n, 0.3);
  case Dist::Dropout:
    break;
  }
  return ops::reference::randomDropout(kSeed, 7, x, type, 0.75, 4);
}

Tensor buildRandom(Dist d, Type type, Graph &g, const std::vector<Tensor> &in,
                   program::Sequence &p) {
  const Tensor *seed = &in[1];
  switch (d) {
  case Dist::Uniform:
    return type == INT ? ops::uniform(g, seed, 7, in[0], type, -3, 4, p)
                       : ops::uniform(g, seed, 7, in[0], type, -2, 3, p);
  case Dist::Normal:
    return ops::normal(g, seed, 7, in[0], type, 1, 2, p);
  case Dist::TruncatedNormal:
    return ops::truncatedNormal(g, seed, 7, in[0], type, -1, 0.5, 1.5, p);
  case Dist::Bernoulli:
    return ops::bernoulli(g, seed, 7, in[0], type, 0.3, p);
  case Dist::Dropout:
    break;
  }
  return ops::dropout(g, seed, 7, in[0], in[0], 0.75, 4, p);
}

void checkMoments(Dist d, Type type, const Values &x, const Values &v) {
  switch (d) {
  case Dist::Uniform:
    if (type == INT)
      expectMoments(v, 0.5, (8.0 * 8.0 - 1) / 12, -3, 4);
    else
      expectMoments(v, 0.5, 25.0 / 12, -2, 3);
    return;
  case Dist::Normal:
    expectMoments(v, 1, 4, -1e9, 1e9);
    return;
  case Dist::TruncatedNormal:
    expectMoments(v, -1, 0.25 * truncatedVariance(1.5), -1.75, -0.25);
    return;
  case Dist::Bernoulli:
    expectMoments(v, 0.3, 0.21, 0, 1);
    return;
  case Dist::Dropout:
    break;
  }
  // Kept elements are scaled by 4, the others zero, 3 in 4 kept.
  Values kept(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_TRUE(v[i] == 0 ||
                std::fabs(v[i] - 4 * x[i]) <= 4e-3 * std::fabs(4 * x[i]))
        << i;
    kept[i] = v[i] != 0;
  }
  expectMoments(kept, 0.75, 0.1875, 0, 1);
}

Row randomRow(const std::string &name, Dist d, std::vector<Type> types) {
  Row row;
  row.name = name;
  row.types = std::move(types);
  row.make = [=](Type type, unsigned, unsigned size) {
    const std::size_t n = 2048 * size;
    // Never zero: dropout's kept values are told apart from dropped ones.
    const Values x = rounded(type == INT ? FLOAT : type, spread(n, 0.5, 2));
    OpCase c;
    c.inputs = {HostInput(type == INT ? FLOAT : type, {32 * size, 64}, x),
                HostInput(UNSIGNED_INT, {2},
                          Values{double(kSeed[0]), double(kSeed[1])})};
    c.build = [=](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{buildRandom(d, type, g, in, p)};
    };
    c.expected = {Expected(randomReference(d, type, x), 0)};
    c.check = [=](const Outcome &o) {
      checkMoments(d, type, x, o.outputs[0][0]);
    };
    return c;
  };
  return row;
}

// dropoutWithMask's output and mask, and applyDropoutMask of deltas with
// that mask (the dropout gradient).
Row dropoutMaskRow() {
  Row row;
  row.name = "dropoutWithMask_applyDropoutMask";
  row.types = {FLOAT, HALF};
  row.make = [](Type type, unsigned, unsigned size) {
    const std::size_t n = 512 * size;
    const Values x = rounded(type, spread(n, 0.5, 2));
    const Values dy = rounded(type, spread(n, -1, 1, 1));
    OpCase c;
    c.inputs = {HostInput(type, {n}, x),
                HostInput(UNSIGNED_INT, {2},
                          Values{double(kSeed[0]), double(kSeed[1])}),
                HostInput(type, {n}, dy)};
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      auto [out, mask] =
          ops::dropoutWithMask(g, &in[1], 9, in[0], in[0], 0.6, 2.5, p);
      return std::vector<Tensor>{out, mask,
                                 ops::applyDropoutMask(g, in[2], mask, 2.5, p)};
    };
    const Values mask = ops::reference::randomBernoulli(kSeed, 9, n, 0.6);
    Values applied(n);
    for (std::size_t i = 0; i < n; ++i)
      applied[i] = ops::reference::roundTo(type, dy[i] * mask[i] * 2.5);
    c.expected = {
        Expected(ops::reference::randomDropout(kSeed, 9, x, type, 0.6, 2.5), 0),
        Expected(mask, 0), Expected(applied, tol(type, 1e-6, 2e-3))};
    return c;
  };
  return row;
}

// ---- Slicing ------------------------------------------------------------

struct SliceCase {
  Shape shape;
  std::vector<std::size_t> dims, sizes, offsets;
};

// dynamicSlice and dynamicUpdate of two dimensions, one offset clamped.
SliceCase dynamicCase(unsigned size) {
  return {{6 * size, 5, 4}, {2, 1}, {3, 2}, {1, 9}};
}

// Gathered rows, duplicates and one out of range (zeros / ignored); a
// larger size gathers more rows from a larger table.
SliceCase multiCase(unsigned size) {
  const std::size_t rows = 10 * size;
  SliceCase s{{rows, 6}, {0}, {1}, {}};
  for (std::size_t k = 0; k < size; ++k)
    s.offsets.insert(s.offsets.end(),
                     {3 + k, k, rows - 1, rows, std::size_t(3), 7 + k});
  return s;
}

Shape sliceShape(const SliceCase &s, bool multi) {
  Shape out = s.shape;
  for (std::size_t k = 0; k < s.dims.size(); ++k)
    out[s.dims[k]] = s.sizes[k];
  if (multi)
    out.insert(out.begin(), s.offsets.size() / s.dims.size());
  return out;
}

enum class SliceOp { Slice, Update, MultiSlice, MultiUpdate, MultiUpdateAdd };

Values sliceReference(SliceOp op, const SliceCase &s, Values t,
                      const Values &v) {
  namespace ref = ops::reference;
  switch (op) {
  case SliceOp::Slice:
    return ref::dynamicSlice(t, s.shape, s.offsets, s.dims, s.sizes);
  case SliceOp::Update:
    ref::dynamicUpdate(t, s.shape, v, s.offsets, s.dims, s.sizes);
    return t;
  case SliceOp::MultiSlice:
    return ref::multiSlice(t, s.shape, s.offsets, s.dims, s.sizes);
  case SliceOp::MultiUpdate:
    ref::multiUpdate(t, s.shape, v, s.offsets, s.dims, s.sizes);
    return t;
  case SliceOp::MultiUpdateAdd:
    break;
  }
  ref::multiUpdateAdd(t, s.shape, v, s.offsets, s.dims, s.sizes, 0.5);
  return t;
}

std::vector<Tensor> buildSlice(SliceOp op, const SliceCase &s, Graph &g,
                               const std::vector<Tensor> &in,
                               program::Sequence &p) {
  // in: t, offsets, slices, scale
  switch (op) {
  case SliceOp::Slice:
    return {ops::dynamicSlice(g, in[0], in[1], s.dims, s.sizes, p)};
  case SliceOp::Update:
    ops::dynamicUpdate(g, in[0], in[2], in[1], s.dims, s.sizes, p);
    break;
  case SliceOp::MultiSlice:
    return {ops::multiSlice(g, in[0], in[1], s.dims, s.sizes, p)};
  case SliceOp::MultiUpdate:
    ops::multiUpdate(g, in[0], in[2], in[1], s.dims, s.sizes, p);
    break;
  case SliceOp::MultiUpdateAdd:
    ops::multiUpdateAdd(g, in[0], in[2], in[1], in[3], s.dims, s.sizes, p);
    break;
  }
  return {in[0]};
}

Row sliceRow(const std::string &name, SliceOp op, std::vector<Type> types) {
  Row row;
  row.name = name;
  row.types = std::move(types);
  row.make = [=](Type type, unsigned, unsigned size) {
    const bool multi = op != SliceOp::Slice && op != SliceOp::Update;
    const SliceCase s = multi ? multiCase(size) : dynamicCase(size);
    const Shape vShape = sliceShape(s, multi);
    const Values t = rounded(type, spread(product(s.shape), -9, 9));
    const Values v = rounded(type, spread(product(vShape), 10, 20, 1));
    OpCase c;
    c.inputs = {HostInput(type, s.shape, t),
                HostInput(UNSIGNED_INT, {s.offsets.size()},
                          Values(s.offsets.begin(), s.offsets.end())),
                HostInput(type, vShape, v), HostInput(FLOAT, {}, Values{0.5})};
    c.build = [=](Graph &g, const auto &in, program::Sequence &p) {
      return buildSlice(op, s, g, in, p);
    };
    c.expected = {Expected(rounded(type, sliceReference(op, s, t, v)),
                           tol(type, 1e-6, 2e-3))};
    return c;
  };
  return row;
}

// multiUpdateAdd of the deltas into zeros is the gradient of
// L = sum(dy * multiSlice(t)) with respect to t.
Row multiSliceGradientRow() {
  Row row;
  row.name = "multiUpdateAdd_fd";
  row.kind = Kind::Gradient;
  row.types = {FLOAT, HALF};
  row.make = [](Type type, unsigned, unsigned size) {
    const SliceCase s = multiCase(size);
    const Shape dyShape = sliceShape(s, true);
    const Values t = rounded(type, spread(product(s.shape), -9, 9));
    const Values dy = rounded(type, spread(product(dyShape), -2, 2, 1));
    OpCase c;
    c.inputs = {HostInput(type, s.shape, Values(t.size(), 0.0)),
                HostInput(UNSIGNED_INT, {s.offsets.size()},
                          Values(s.offsets.begin(), s.offsets.end())),
                HostInput(type, dyShape, dy),
                HostInput(FLOAT, {}, Values{1.0})};
    c.build = [s](Graph &g, const auto &in, program::Sequence &p) {
      return buildSlice(SliceOp::MultiUpdateAdd, s, g, in, p);
    };
    c.expected = {
        Expected(finiteDifference(t,
                                  [&](const Values &x) {
                                    return dot(dy, ops::reference::multiSlice(
                                                       x, s.shape, s.offsets,
                                                       s.dims, s.sizes));
                                  }),
                 tol(type, 1e-6, 2e-3))};
    return c;
  };
  return row;
}

} // namespace

std::vector<Row> randomRows() {
  return {randomRow("uniform", Dist::Uniform, {FLOAT, HALF, INT}),
          randomRow("normal", Dist::Normal, {FLOAT, HALF}),
          randomRow("truncatedNormal", Dist::TruncatedNormal, {FLOAT, HALF}),
          randomRow("bernoulli", Dist::Bernoulli, {FLOAT, HALF, INT}),
          randomRow("dropout", Dist::Dropout, {FLOAT, HALF}),
          dropoutMaskRow()};
}

std::vector<Row> sliceRows() {
  return {sliceRow("dynamicSlice", SliceOp::Slice, {FLOAT, HALF, INT}),
          sliceRow("dynamicUpdate", SliceOp::Update, {FLOAT, HALF, INT}),
          sliceRow("multiSlice", SliceOp::MultiSlice, {FLOAT, HALF, INT}),
          sliceRow("multiUpdate", SliceOp::MultiUpdate, {FLOAT, HALF, INT}),
          sliceRow("multiUpdateAdd", SliceOp::MultiUpdateAdd, {FLOAT, HALF}),
          multiSliceGradientRow()};
}

} // namespace tessera::conformance
