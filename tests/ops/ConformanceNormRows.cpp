// Conformance rows of the norms: batch, layer and group norm statistics
// (biased, and unbiased with the stable algorithm) and normalisation, the
// folded batch norm of inference, and the gradients of each norm (from the
// activations and from the whitened activations) against finite
// differences of the reference.
#include "Conformance.hpp"

#include "tessera/ops/Norms.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::conformance {
namespace {

enum class Norm { Batch, Layer, Group };

// Groups as the reference counts them: 0 is batch norm, 1 layer norm.
unsigned groupsOf(Norm k) {
  return k == Norm::Batch ? 0 : k == Norm::Layer ? 1 : 2;
}

std::string nameOf(Norm k) {
  return k == Norm::Batch   ? "batchNorm"
         : k == Norm::Layer ? "layerNorm"
                            : "groupNorm";
}

constexpr float kEps = 1e-3f;

std::pair<Tensor, Tensor> statistics(Norm k, Graph &g, const Tensor &x,
                                     program::Sequence &p, bool unbiased,
                                     bool stable) {
  if (k == Norm::Batch)
    return ops::batchNormStatistics(g, x, kEps, p, unbiased, stable);
  if (k == Norm::Layer)
    return ops::layerNormStatistics(g, x, kEps, p, unbiased, stable);
  return ops::groupNormStatistics(g, x, kEps, p, 2, unbiased, stable);
}

std::pair<Tensor, Tensor> normalise(Norm k, Graph &g,
                                    const std::vector<Tensor> &t,
                                    program::Sequence &p) {
  // t: acts, gamma, beta, mean, invStdDev
  if (k == Norm::Batch)
    return ops::batchNormalise(g, t[0], t[1], t[2], t[3], t[4], p);
  if (k == Norm::Layer)
    return ops::layerNormalise(g, t[0], t[1], t[2], t[3], t[4], p);
  return ops::groupNormalise(g, t[0], t[1], t[2], t[3], t[4], p);
}

Shape shapeFor(unsigned size) { return {3 * size, 4, 2, 3}; }

Row normRow(Norm k, bool unbiased, bool stable) {
  Row row;
  row.name =
      nameOf(k) + (unbiased ? "_unbiased" : "") + (stable ? "_stable" : "");
  row.types = {FLOAT, HALF};
  row.make = [=](Type type, unsigned, unsigned size) {
    const Shape shape = shapeFor(size);
    const Values x = rounded(type, spread(product(shape), -1.5, 2.5));
    const Values gamma = rounded(type, spread(4, 0.5, 1.5, 1));
    const Values beta = rounded(type, spread(4, -0.5, 0.5, 2));
    OpCase c;
    c.inputs = {HostInput(type, shape, x), HostInput(type, {4}, gamma),
                HostInput(type, {4}, beta)};
    c.build = [=](Graph &g, const auto &in, program::Sequence &p) {
      auto [mean, istd] = statistics(k, g, in[0], p, unbiased, stable);
      auto [out, whitened] =
          normalise(k, g, {in[0], in[1], in[2], mean, istd}, p);
      return std::vector<Tensor>{mean, istd, out, whitened};
    };
    const auto st =
        ops::reference::normStatistics(x, shape, groupsOf(k), kEps, unbiased);
    const auto [out, whitened] =
        ops::reference::normalise(x, shape, groupsOf(k), gamma, beta, st);
    const double t = tol(type, 1e-4, 1e-2);
    c.expected = {Expected(st.mean, t), Expected(st.invStdDev, t),
                  Expected(out, t), Expected(whitened, t)};
    return c;
  };
  return row;
}

Row foldedRow() {
  Row row;
  row.name = "batchNormalise_folded";
  row.types = {FLOAT, HALF};
  row.make = [](Type type, unsigned, unsigned size) {
    const Shape shape = shapeFor(size);
    const Values x = rounded(type, spread(product(shape), -2, 2));
    const Values mul = rounded(type, spread(4, -2, 2, 1));
    const Values add = rounded(type, spread(4, -1, 1, 2));
    OpCase c;
    c.inputs = {HostInput(type, shape, x), HostInput(type, {4}, mul),
                HostInput(type, {4}, add)};
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{
          ops::batchNormalise(g, in[0], in[1], in[2], p)};
    };
    Values want(x.size());
    const std::size_t inner = 6;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::size_t ch = (i / inner) % 4;
      want[i] = ops::reference::roundTo(type, x[i] * mul[ch] + add[ch]);
    }
    c.expected = {Expected(want, tol(type, 1e-6, 4e-3))};
    return c;
  };
  return row;
}

// L = sum(dy * out(x, gamma, beta)), statistics from x, in double.
double normLoss(Norm k, const Values &x, const Shape &shape,
                const Values &gamma, const Values &beta, const Values &dy) {
  const auto st =
      ops::reference::normStatistics(x, shape, groupsOf(k), kEps, false);
  return dot(
      dy,
      ops::reference::normalise(x, shape, groupsOf(k), gamma, beta, st).first);
}

ops::NormGradients gradients(Norm k, Graph &g, const std::vector<Tensor> &t,
                             bool fromWhitened, program::Sequence &p) {
  // t: acts, dy, gamma, mean, invStdDev, whitened
  if (fromWhitened) {
    if (k == Norm::Batch)
      return ops::batchNormGradients(g, t[5], t[1], t[4], t[2], p);
    if (k == Norm::Layer)
      return ops::layerNormGradients(g, t[5], t[1], t[4], t[2], p);
    return ops::groupNormGradients(g, t[5], t[1], t[4], t[2], p);
  }
  if (k == Norm::Batch)
    return ops::batchNormGradients(g, t[0], t[1], t[3], t[4], t[2], p);
  if (k == Norm::Layer)
    return ops::layerNormGradients(g, t[0], t[1], t[3], t[4], t[2], p);
  return ops::groupNormGradients(g, t[0], t[1], t[3], t[4], t[2], p);
}

Row normGradientRow(Norm k) {
  Row row;
  row.name = nameOf(k) + "Gradients";
  row.kind = Kind::Gradient;
  row.types = {FLOAT, HALF};
  row.make = [=](Type type, unsigned, unsigned size) {
    const Shape shape{3 * size, 4, 5};
    const Values x = rounded(type, spread(product(shape), -1, 2));
    const Values gamma = rounded(type, spread(4, 0.5, 1.5, 1));
    const Values beta = rounded(type, spread(4, -0.5, 0.5, 2));
    const Values dy = rounded(type, spread(product(shape), -1, 1, 3));
    const auto st =
        ops::reference::normStatistics(x, shape, groupsOf(k), kEps, false);
    const Values whitened =
        ops::reference::normalise(x, shape, groupsOf(k), gamma, beta, st)
            .second;
    const Shape statShape{st.mean.size()};
    OpCase c;
    c.inputs = {HostInput(type, shape, x),
                HostInput(type, shape, dy),
                HostInput(type, {4}, gamma),
                HostInput(type, statShape, rounded(type, st.mean)),
                HostInput(type, statShape, rounded(type, st.invStdDev)),
                HostInput(type, shape, rounded(type, whitened))};
    c.build = [=](Graph &g, const auto &in, program::Sequence &p) {
      std::vector<Tensor> outs;
      for (bool fromWhitened : {false, true}) {
        auto [dx, dGamma, dBeta] = gradients(k, g, in, fromWhitened, p);
        outs.insert(outs.end(), {dx, dGamma, dBeta});
      }
      return outs;
    };
    const auto loss = [&](const Values &xs, const Values &gs,
                          const Values &bs) {
      return normLoss(k, xs, shape, gs, bs, dy);
    };
    const Values dx = finiteDifference(
        x, [&](const Values &s) { return loss(s, gamma, beta); });
    const Values dGamma = finiteDifference(
        gamma, [&](const Values &s) { return loss(x, s, beta); });
    const Values dBeta = finiteDifference(
        beta, [&](const Values &s) { return loss(x, gamma, s); });
    const double t = tol(type, 1e-3, 3e-2);
    for (int form = 0; form < 2; ++form)
      c.expected.insert(c.expected.end(), {Expected(dx, t), Expected(dGamma, t),
                                           Expected(dBeta, t)});
    return c;
  };
  return row;
}

} // namespace

std::vector<Row> normRows() {
  std::vector<Row> rows{foldedRow()};
  for (Norm k : {Norm::Batch, Norm::Layer, Norm::Group}) {
    rows.push_back(normRow(k, false, false));
    rows.push_back(normRow(k, true, true));
    rows.push_back(normGradientRow(k));
  }
  return rows;
}

} // namespace tessera::conformance
