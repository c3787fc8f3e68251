// Conformance rows of the products: matMul (float and half partials),
// matMulGrouped, matMulAcc and matMulGroupedAcc; of the convolutions:
// forward (strided and padded; grouped and dilated), input gradient and
// weight gradient against the reference and against finite differences;
// and of pooling: MAX, AVG and SUM forward and their input gradients.
#include "Conformance.hpp"

#include "tessera/ops/Conv.hpp"
#include "tessera/ops/MatMul.hpp"
#include "tessera/ops/Pooling.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::conformance {
namespace {

// Products round in proportion to the sum of the terms' magnitudes.
constexpr double kFloatTol = 2e-6, kHalfTol = 2e-3;

struct MatMulShape {
  std::size_t g, m, k, n;
};

Values groupedReference(const MatMulShape &s, const Values &a,
                        const Values &b) {
  return ops::reference::matMulGrouped(a, b, s.g, s.m, s.k, s.n);
}

// One row per entry point: product, grouped product, and the accumulating
// forms C += 0.5 A B.
Row matMulRow(const std::string &name, bool grouped, bool accumulate,
              bool halfPartials = false, bool floatOut = false) {
  Row row;
  row.name = name;
  row.types = halfPartials || floatOut ? std::vector<Type>{HALF}
                                       : std::vector<Type>{FLOAT, HALF};
  row.make = [=](Type type, unsigned, unsigned size) {
    OptionFlags options;
    if (halfPartials)
      options.set("partialsType", "half");
    const MatMulShape s{grouped ? 3u : 1u, 5 * size, 19, 6};
    const auto shape = [&](std::size_t x, std::size_t y) {
      return grouped ? Shape{s.g, x, y} : Shape{x, y};
    };
    const Values a = rounded(type, spread(s.g * s.m * s.k, -1, 1));
    const Values b = rounded(type, spread(s.g * s.k * s.n, -1, 1, 1));
    const Values c0 = rounded(type, spread(s.g * s.m * s.n, -2, 2, 2));
    OpCase c;
    c.inputs = {HostInput(type, shape(s.m, s.k), a),
                HostInput(type, shape(s.k, s.n), b),
                HostInput(type, shape(s.m, s.n), c0)};
    c.build = [=](Graph &g, const auto &in, program::Sequence &p) {
      if (accumulate) {
        if (grouped)
          ops::matMulGroupedAcc(g, in[2], 0.5f, in[0], in[1], p, {}, options);
        else
          ops::matMulAcc(g, in[2], 0.5f, in[0], in[1], p, {}, options);
        return std::vector<Tensor>{in[2]};
      }
      const Type out = floatOut ? FLOAT : in[0].elementType();
      return std::vector<Tensor>{
          grouped ? ops::matMulGrouped(g, in[0], in[1], p, out, {}, options)
                  : ops::matMul(g, in[0], in[1], p, out, {}, options)};
    };
    Values want = groupedReference(s, a, b);
    Values scale = groupedReference(s, absolute(a), absolute(b));
    if (accumulate)
      for (std::size_t i = 0; i < want.size(); ++i) {
        want[i] = c0[i] + 0.5 * want[i];
        scale[i] = std::fabs(c0[i]) + 0.5 * scale[i];
      }
    // Half partials round the running sums to half every 16 products.
    const double halfTol = halfPartials ? 8e-3 : kHalfTol;
    const Type out = floatOut ? FLOAT : type;
    c.expected = {Expected(rounded(out, want),
                           floatOut ? kFloatTol : tol(type, kFloatTol, halfTol),
                           scale)};
    return c;
  };
  return row;
}

// addBias: acts [N, C, H, W] += biases [C], in place.
Row addBiasRow() {
  Row row;
  row.name = "addBias";
  row.types = {FLOAT, HALF};
  row.make = [](Type type, unsigned, unsigned size) {
    const Shape shape{2 * size, 3, 4, 5};
    const Values x = rounded(type, spread(product(shape), -4, 4));
    const Values b = rounded(type, spread(3, -2, 2, 1));
    OpCase c;
    c.inputs = {HostInput(type, shape, x), HostInput(type, {3}, b)};
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      ops::addBias(g, in[0], in[1], p);
      return std::vector<Tensor>{in[0]};
    };
    Values want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      want[i] = ops::reference::roundTo(type, x[i] + b[(i / 20) % 3]);
    c.expected = {Expected(want, tol(type, 1e-6, 2e-3))};
    return c;
  };
  return row;
}

ops::ConvParams convParams(Type type, std::size_t batch, bool grouped) {
  ops::ConvParams p(type, batch, {6, 5}, {3, 3}, 2, 3, grouped ? 2 : 1);
  if (grouped) {
    p.kernelDilation = {2, 1};
    p.paddingLower = {2, 0};
    p.paddingUpper = {1, 1};
  } else {
    p.stride = {2, 1};
    p.paddingLower = p.paddingUpper = {1, 1};
  }
  return p;
}

enum class ConvPass { Forward, InputGradient, WeightGradient };

// The pass's reference from its two operands.
Values convReference(ConvPass pass, const ops::ConvParams &p, const Values &u,
                     const Values &v) {
  switch (pass) {
  case ConvPass::Forward:
    return ops::reference::convolution(p, u, v);
  case ConvPass::InputGradient:
    return ops::reference::convolutionInputGradient(p, u, v);
  case ConvPass::WeightGradient:
    break;
  }
  return ops::reference::convolutionWeightGradient(p, u, v);
}

// Forward: (input, weights); input gradient: (deltas, weights); weight
// gradient: (deltas, input). Gradient rows check the two gradient passes
// against finite differences of L = sum(deltas * conv(input, weights)).
Row convRow(const std::string &name, ConvPass pass, bool grouped, Kind kind) {
  Row row;
  row.name = name;
  row.kind = kind;
  row.types = {FLOAT, HALF};
  row.make = [=](Type type, unsigned, unsigned size) {
    const ops::ConvParams p = convParams(type, size, grouped);
    const Values x = rounded(type, spread(product(p.getInputShape()), -1, 1));
    const Values w =
        rounded(type, spread(product(p.getWeightsShape()), -0.5, 0.5, 1));
    const Values dy =
        rounded(type, spread(product(p.getOutputShape()), -1, 1, 2));
    const HostInput xIn(type, p.getInputShape(), x),
        wIn(type, p.getWeightsShape(), w), dyIn(type, p.getOutputShape(), dy);
    OpCase c;
    c.inputs = pass == ConvPass::Forward ? std::vector<HostInput>{xIn, wIn}
               : pass == ConvPass::InputGradient
                   ? std::vector<HostInput>{dyIn, wIn}
                   : std::vector<HostInput>{dyIn, xIn};
    c.build = [=](Graph &g, const auto &in, program::Sequence &prog) {
      if (pass == ConvPass::Forward)
        return std::vector<Tensor>{
            ops::convolution(g, in[0], in[1], p, false, prog)};
      if (pass == ConvPass::InputGradient)
        return std::vector<Tensor>{
            ops::convolutionInputGradient(g, in[0], in[1], p, prog)};
      return std::vector<Tensor>{
          ops::convolutionWeightGradient(g, in[0], in[1], p, prog)};
    };
    const Values &u = c.inputs[0].replicas[0], &v = c.inputs[1].replicas[0];
    Values want = convReference(pass, p, u, v);
    const Values scale = convReference(pass, p, absolute(u), absolute(v));
    if (kind == Kind::Gradient) {
      auto loss = [&](const Values &xs, const Values &ws) {
        return dot(dy, ops::reference::convolution(p, xs, ws));
      };
      want =
          pass == ConvPass::InputGradient
              ? finiteDifference(x, [&](const Values &s) { return loss(s, w); })
              : finiteDifference(w,
                                 [&](const Values &s) { return loss(x, s); });
    }
    c.expected = {Expected(kind == Kind::Gradient ? want : rounded(type, want),
                           tol(type, 2e-5, kHalfTol), scale)};
    return c;
  };
  return row;
}

ops::PoolParams poolParams(ops::PoolingType t, Type type, std::size_t batch) {
  return ops::PoolParams(t, {7, 5}, {3, 2}, {2, 1}, {1, 0}, {1, 1}, 2, batch,
                         type);
}

// Distinct values (exact in half) so that a window's maximum is unique and
// finite differences see no ties.
Values distinct(std::size_t n) {
  Values v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = (double((i * 37) % n) - double(n) / 2) / 16;
  return v;
}

Row poolRow(ops::PoolingType t, bool gradient, Kind kind) {
  Row row;
  row.name = std::string(gradient ? "poolInputGradient_" : "pool_") +
             ops::poolingTypeName(t) + (kind == Kind::Gradient ? "_fd" : "");
  row.kind = kind;
  row.types = {FLOAT, HALF};
  row.make = [=](Type type, unsigned, unsigned size) {
    const ops::PoolParams p = poolParams(t, type, size);
    const Values x = rounded(type, distinct(product(p.getInputShape())));
    const Values dy =
        rounded(type, spread(product(p.getOutputShape()), -1, 1, 1));
    OpCase c;
    c.inputs = {HostInput(type, p.getInputShape(), x),
                HostInput(type, p.getOutputShape(), dy)};
    c.build = [=](Graph &g, const auto &in, program::Sequence &prog) {
      Tensor out = ops::pool(g, p, in[0], prog);
      if (!gradient)
        return std::vector<Tensor>{out};
      return std::vector<Tensor>{
          ops::poolInputGradient(g, p, in[0], out, in[1], prog)};
    };
    Values want = gradient ? ops::reference::poolInputGradient(p, x, dy)
                           : ops::reference::pool(p, x);
    if (kind == Kind::Gradient)
      want = finiteDifference(x, [&](const Values &s) {
        return dot(dy, ops::reference::pool(p, s));
      });
    c.expected = {Expected(rounded(type, want), tol(type, 1e-5, 4e-3))};
    return c;
  };
  return row;
}

} // namespace

std::vector<Row> matMulRows() {
  return {matMulRow("matMul", false, false),
          matMulRow("matMul_halfPartials", false, false, true),
          matMulRow("matMul_toFloat", false, false, false, true),
          matMulRow("matMulGrouped_toFloat", true, false, false, true),
          matMulRow("matMulGrouped", true, false),
          matMulRow("matMulAcc", false, true),
          matMulRow("matMulGroupedAcc", true, true)};
}

std::vector<Row> convRows() {
  return {addBiasRow(),
          convRow("convolution", ConvPass::Forward, false, Kind::Forward),
          convRow("convolution_groupedDilated", ConvPass::Forward, true,
                  Kind::Forward),
          convRow("convolutionInputGradient", ConvPass::InputGradient, false,
                  Kind::Forward),
          convRow("convolutionWeightGradient", ConvPass::WeightGradient, false,
                  Kind::Forward),
          convRow("convolutionInputGradient_groupedDilated",
                  ConvPass::InputGradient, true, Kind::Forward),
          convRow("convolutionInputGradient_fd", ConvPass::InputGradient, false,
                  Kind::Gradient),
          convRow("convolutionWeightGradient_fd", ConvPass::WeightGradient,
                  true, Kind::Gradient)};
}

std::vector<Row> poolRows() {
  std::vector<Row> rows;
  for (auto t :
       {ops::PoolingType::MAX, ops::PoolingType::AVG, ops::PoolingType::SUM}) {
    rows.push_back(poolRow(t, false, Kind::Forward));
    rows.push_back(poolRow(t, true, Kind::Forward));
    rows.push_back(poolRow(t, true, Kind::Gradient));
  }
  return rows;
}

} // namespace tessera::conformance
