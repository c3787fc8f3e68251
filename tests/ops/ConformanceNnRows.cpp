// Conformance rows of the nn ops: every non-linearity (both softmax plans,
// in place) and its input gradient against finite differences; calcLoss
// with labels and targets, calcAccuracy, and the loss deltas against
// finite differences; batch, layer and group norm statistics and
// normalisation, the folded inference form, and the norm gradients against
// finite differences.
#include "Conformance.hpp"

#include "tessera/ops/Loss.hpp"
#include "tessera/ops/NonLinearity.hpp"
#include "tessera/ops/Norms.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::conformance {
namespace {

using ops::LossType;
using ops::NonLinearityType;

const NonLinearityType kNonLinearities[] = {
    NonLinearityType::RELU,       NonLinearityType::GELU,
    NonLinearityType::SIGMOID,    NonLinearityType::TANH,
    NonLinearityType::SOFTMAX,    NonLinearityType::SOFTMAX_STABLE,
    NonLinearityType::LOG_SOFTMAX};

std::string nlName(NonLinearityType nl) {
  return std::string(ops::nonLinearityName(nl));
}

// plan "" is the default; "reduce" forces the softmax family's reduction
// plan; inPlace uses nonLinearityInPlace.
Row nonLinearityRow(NonLinearityType nl, const std::string &plan,
                    bool inPlace) {
  Row row;
  row.name = std::string(inPlace ? "nonLinearityInPlace_" : "nonLinearity_") +
             nlName(nl) + (plan.empty() ? "" : "_" + plan + "Plan");
  row.types = {FLOAT, HALF};
  row.make = [=](Type type, unsigned, unsigned size) {
    const Shape shape{3 * size, 2, 7};
    const Values x = rounded(type, spread(product(shape), -3, 3));
    OpCase c;
    c.inputs = {HostInput(type, shape, x)};
    c.build = [=](Graph &g, const auto &in, program::Sequence &p) {
      OptionFlags options;
      if (!plan.empty())
        options.set("plan", plan);
      if (!inPlace)
        return std::vector<Tensor>{
            ops::nonLinearity(g, nl, in[0], p, {}, options)};
      ops::nonLinearityInPlace(g, nl, in[0], p, {}, options);
      return std::vector<Tensor>{in[0]};
    };
    c.expected = {
        Expected(rounded(type, ops::reference::nonLinearity(nl, x, 7)),
                 tol(type, 1e-5, 5e-3))};
    return c;
  };
  return row;
}

Row nonLinearityGradientRow(NonLinearityType nl) {
  Row row;
  row.name = "nonLinearityInputGradient_" + nlName(nl);
  row.kind = Kind::Gradient;
  row.types = {FLOAT, HALF};
  row.make = [=](Type type, unsigned, unsigned size) {
    const std::size_t rows = 3 * size, n = 6;
    const Values x = rounded(type, spread(rows * n, -2, 2.5));
    const Values dy = rounded(type, spread(rows * n, -1, 1, 1));
    const Values y = rounded(type, ops::reference::nonLinearity(nl, x, n));
    OpCase c;
    c.inputs = {HostInput(type, {rows, n}, x), HostInput(type, {rows, n}, y),
                HostInput(type, {rows, n}, dy)};
    c.build = [=](Graph &g, const auto &in, program::Sequence &p) {
      return std::vector<Tensor>{
          ops::nonLinearityInputGradient(g, nl, in[0], in[1], in[2], p)};
    };
    c.expected = {Expected(
        finiteDifference(x,
                         [&](const Values &s) {
                           return dot(dy,
                                      ops::reference::nonLinearity(nl, s, n));
                         }),
        tol(type, 1e-4, 1e-2))};
    return c;
  };
  return row;
}

// Rows of probabilities: the softmax of spread logits.
Values probabilities(std::size_t b, std::size_t n, Type type) {
  return rounded(type, ops::reference::nonLinearity(NonLinearityType::SOFTMAX,
                                                    spread(b * n, -2, 2), n));
}

std::vector<long long> labelsFor(const Values &p, std::size_t b,
                                 std::size_t n) {
  const auto best = ops::reference::argMax(p, b, n);
  std::vector<long long> labels(b);
  for (std::size_t r = 0; r < b; ++r)
    labels[r] = static_cast<long long>(best[r] + r % 2) % n;
  labels[1] = 1000; // out of range: the row is masked
  return labels;
}

// calcLoss writing loss, deltas and a counter starting at 2.
std::vector<Tensor> lossOutputs(Graph &g, const Tensor &p,
                                const Tensor &expected, LossType lt,
                                program::Sequence &prog) {
  Tensor deltas = g.clone(p, "deltas");
  Tensor loss = g.addVariable(p.elementType(), {p.dim(0)}, "loss");
  Tensor counter = g.addVariable(UNSIGNED_INT, {}, "numCorrect");
  mapTensorLinearly(g, loss);
  g.setTileMapping(counter, 0);
  g.setInitialValue(counter, 2u);
  ops::calcLoss(g, p, expected, loss, deltas, counter, lt, prog);
  return {loss, deltas, counter};
}

Row lossRow(LossType lt, bool labels) {
  Row row;
  row.name = "calcLoss_" + std::string(ops::lossName(lt)) +
             (labels ? "_labels" : "_targets");
  row.types = {FLOAT, HALF};
  row.make = [=](Type type, unsigned, unsigned size) {
    const std::size_t b = 4 * size, n = 7;
    const Values p = probabilities(b, n, type);
    const auto lab = labelsFor(p, b, n);
    const Values t =
        rounded(type, ops::reference::nonLinearity(NonLinearityType::SOFTMAX,
                                                   spread(b * n, -1, 3, 1), n));
    OpCase c;
    c.inputs = {
        HostInput(type, {b, n}, p),
        labels ? HostInput(UNSIGNED_INT, {b}, Values(lab.begin(), lab.end()))
               : HostInput(type, {b, n}, t)};
    c.build = [=](Graph &g, const auto &in, program::Sequence &prog) {
      return lossOutputs(g, in[0], in[1], lt, prog);
    };
    const auto want = labels ? ops::reference::calcLossLabels(lt, p, lab, n)
                             : ops::reference::calcLossTargets(lt, p, t, n);
    c.expected = {Expected(rounded(type, want.loss), tol(type, 1e-5, 5e-3)),
                  Expected(rounded(type, want.deltas), tol(type, 1e-5, 5e-3)),
                  Expected(Values{2.0 + want.numCorrect}, 0)};
    return c;
  };
  return row;
}

// The deltas are the gradient of the summed loss: with respect to the
// outputs for SUM_SQUARED_LOSS, to the softmax's input for cross-entropy.
Row lossGradientRow(LossType lt) {
  Row row;
  row.name = "calcLoss_" + std::string(ops::lossName(lt)) + "_fd";
  row.kind = Kind::Gradient;
  row.types = {FLOAT, HALF};
  row.make = [=](Type type, unsigned, unsigned size) {
    const std::size_t b = 3 * size, n = 5;
    const Values z = rounded(type, spread(b * n, -2, 2));
    const Values p = lt == LossType::CROSS_ENTROPY_LOSS
                         ? rounded(type, ops::reference::nonLinearity(
                                             NonLinearityType::SOFTMAX, z, n))
                         : z;
    const auto lab = labelsFor(p, b, n);
    OpCase c;
    c.inputs = {HostInput(type, {b, n}, p),
                HostInput(UNSIGNED_INT, {b}, Values(lab.begin(), lab.end()))};
    c.build = [=](Graph &g, const auto &in, program::Sequence &prog) {
      return std::vector<Tensor>{lossOutputs(g, in[0], in[1], lt, prog)[1]};
    };
    const Values at = lt == LossType::CROSS_ENTROPY_LOSS ? z : p;
    c.expected = {Expected(
        finiteDifference(at,
                         [&](const Values &s) {
                           const Values q =
                               lt == LossType::CROSS_ENTROPY_LOSS
                                   ? ops::reference::nonLinearity(
                                         NonLinearityType::SOFTMAX, s, n)
                                   : s;
                           const auto r =
                               ops::reference::calcLossLabels(lt, q, lab, n);
                           return dot(Values(r.loss.size(), 1.0), r.loss);
                         }),
        tol(type, 1e-4, 1e-2))};
    return c;
  };
  return row;
}

Row accuracyRow() {
  Row row;
  row.name = "calcAccuracy";
  row.types = {FLOAT, HALF, INT};
  row.make = [](Type type, unsigned, unsigned size) {
    const std::size_t b = 6 * size, n = 5;
    const Values x = rounded(type, spread(b * n, -9, 9));
    const auto lab = labelsFor(x, b, n);
    OpCase c;
    c.inputs = {HostInput(type, {b, n}, x),
                HostInput(INT, {b}, Values(lab.begin(), lab.end()))};
    c.build = [](Graph &g, const auto &in, program::Sequence &p) {
      Tensor counter = g.addVariable(UNSIGNED_INT, {1}, "numCorrect");
      g.setTileMapping(counter, 0);
      g.setInitialValue(counter, 5u);
      ops::calcAccuracy(g, in[0], in[1], counter, p);
      return std::vector<Tensor>{counter};
    };
    const auto best = ops::reference::argMax(x, b, n);
    double correct = 5;
    for (std::size_t r = 0; r < b; ++r)
      correct += static_cast<long long>(best[r]) == lab[r];
    c.expected = {Expected(Values{correct}, 0)};
    return c;
  };
  return row;
}

} // namespace

std::vector<Row> nonLinearityRows() {
  std::vector<Row> rows;
  for (NonLinearityType nl : kNonLinearities) {
    rows.push_back(nonLinearityRow(nl, "", false));
    rows.push_back(nonLinearityGradientRow(nl));
  }
  for (NonLinearityType nl :
       {NonLinearityType::SOFTMAX, NonLinearityType::SOFTMAX_STABLE,
        NonLinearityType::LOG_SOFTMAX}) {
    rows.push_back(nonLinearityRow(nl, "reduce", false));
    rows.push_back(nonLinearityRow(nl, "rows", true));
  }
  return rows;
}

std::vector<Row> lossRows() {
  std::vector<Row> rows{accuracyRow()};
  for (LossType lt :
       {LossType::SUM_SQUARED_LOSS, LossType::CROSS_ENTROPY_LOSS}) {
    rows.push_back(lossRow(lt, true));
    rows.push_back(lossRow(lt, false));
    rows.push_back(lossGradientRow(lt));
  }
  return rows;
}

} // namespace tessera::conformance
