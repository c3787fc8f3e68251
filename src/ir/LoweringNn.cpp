// Lowering of the convolution, pooling, normalisation, loss and metric
// kinds to the ops library.
#include "ConvShapes.hpp"
#include "LoweringInternal.hpp"

#include "tessera/ops/Conv.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/Loss.hpp"
#include "tessera/ops/NonLinearity.hpp"
#include "tessera/ops/Norms.hpp"
#include "tessera/ops/Pooling.hpp"
#include "tessera/ops/Random.hpp"
#include "tessera/ops/Reduce.hpp"

namespace tessera::ir::detail {
using namespace ops;

Results convOp(LowerContext &c) {
  const Conv2dOptions a = decodeConv2dOptions(c.op.attrs);
  const OptionFlags o = withPartials(c.options.convOptions, c.op);
  switch (c.op.kind) {
  case OpKind::CONV2D: {
    const Shape &w = c.inTypes[1].shape;
    const ConvParams p =
        convParams(a, c.inTypes[0].shape, w, c.inTypes[0].dtype);
    return {convolution(c.graph, c.in[0],
                        c.in[1].reshape(opsWeightsShape(a, w)), p, false,
                        c.prog, c.dc, o)};
  }
  case OpKind::CONV2D_BACKPROP_INPUT: {
    const Shape &w = c.inTypes[1].shape;
    const ConvParams p =
        convParams(a, c.outTypes[0].shape, w, c.inTypes[0].dtype);
    return {convolutionInputGradient(c.graph, c.in[0],
                                     c.in[1].reshape(opsWeightsShape(a, w)), p,
                                     c.prog, c.dc, o)};
  }
  case OpKind::CONV2D_BACKPROP_FILTER: {
    const Shape &w = c.outTypes[0].shape;
    const ConvParams p =
        convParams(a, c.inTypes[1].shape, w, c.inTypes[0].dtype);
    return {
        convolutionWeightGradient(c.graph, c.in[0], c.in[1], p, c.prog, c.dc, o)
            .reshape(w)};
  }
  default:
    TESSERA_INTERNAL_ASSERT(false, std::string(opKindName(c.op.kind)) +
                                       " is not a convolution");
  }
}

Results poolOp(LowerContext &c) {
  const PoolOptions a = decodePoolOptions(c.op.attrs);
  const Type t = c.outTypes[0].dtype;
  switch (c.op.kind) {
  case OpKind::MAX_POOL:
  case OpKind::AVG_POOL: {
    const auto type =
        c.op.kind == OpKind::MAX_POOL ? PoolingType::MAX : PoolingType::AVG;
    return {pool(c.graph, poolParams(a, type, c.inTypes[0].shape, t), c.in[0],
                 c.prog, c.dc)};
  }
  case OpKind::MAX_POOL_GRAD:
    return {poolInputGradient(
        c.graph, poolParams(a, PoolingType::MAX, c.inTypes[0].shape, t),
        c.in[0], c.in[1], c.in[2], c.prog, c.dc)};
  case OpKind::AVG_POOL_GRAD:
    return {poolInputGradient(
        c.graph, poolParams(a, PoolingType::AVG, c.outTypes[0].shape, t),
        Tensor(), Tensor(), c.in[0], c.prog, c.dc)};
  default:
    TESSERA_INTERNAL_ASSERT(false, std::string(opKindName(c.op.kind)) +
                                       " is not a pooling");
  }
}

Results softmaxOp(LowerContext &c) {
  const bool log =
      c.op.kind == OpKind::LOG_SOFTMAX || c.op.kind == OpKind::LOG_SOFTMAX_GRAD;
  const auto type =
      log ? NonLinearityType::LOG_SOFTMAX : NonLinearityType::SOFTMAX_STABLE;
  if (c.op.kind == OpKind::SOFTMAX || c.op.kind == OpKind::LOG_SOFTMAX)
    return {nonLinearity(c.graph, type, c.in[0], c.prog, c.dc)};
  return {
      nonLinearityInputGradient(c.graph, type, c.in[0], c.in[1], c.prog, c.dc)};
}

Results dropoutOp(LowerContext &c) {
  const DropoutAttrs a = decodeDropoutAttrs(c.op.attrs);
  const double keep = 1 - a.rate;
  OptionFlags options;
  const Tensor *seed = nullptr;
  if (c.in.size() == 2)
    seed = &c.in[1];
  else
    options.set("seed", std::to_string(a.seed));
  return {ops::dropout(c.graph, seed, a.seedModifier, c.in[0], c.in[0], keep,
                       1 / keep, c.prog, c.dc, options)};
}

// Layer norm normalises rows of [rows, D]: the ops library's layer norm of
// a 2-D tensor, whose "channels" are the D features.
Results normOp(LowerContext &c) {
  const float eps = static_cast<float>(c.op.attrs.getFloat("eps"));
  const bool batch = c.op.kind == OpKind::BATCH_NORM;
  const Shape &x = c.inTypes[0].shape;
  const Tensor acts =
      batch ? c.in[0] : c.in[0].reshape({numElements(x) / x.back(), x.back()});
  // The two-pass (stable) variance: training inputs can have |mean| much
  // larger than their spread.
  auto [mean, inv] = batch ? batchNormStatistics(c.graph, acts, eps, c.prog,
                                                 false, true, FLOAT, c.dc)
                           : layerNormStatistics(c.graph, acts, eps, c.prog,
                                                 false, true, FLOAT, c.dc);
  Tensor y = (batch ? batchNormalise(c.graph, acts, c.in[1], c.in[2], mean, inv,
                                     c.prog, c.dc)
                    : layerNormalise(c.graph, acts, c.in[1], c.in[2], mean, inv,
                                     c.prog, c.dc))
                 .first;
  return {y.reshape(x), mean.reshape(c.outTypes[1].shape),
          inv.reshape(c.outTypes[2].shape)};
}

Results normGradOp(LowerContext &c) {
  const bool batch = c.op.kind == OpKind::BATCH_NORM_GRAD;
  const Shape &x = c.inTypes[0].shape;
  const Shape rows{numElements(x) / x.back(), x.back()};
  const Tensor acts = batch ? c.in[0] : c.in[0].reshape(rows);
  const Tensor dy = batch ? c.in[1] : c.in[1].reshape(rows);
  auto [dx, dgamma, dbeta] =
      batch
          ? batchNormGradients(c.graph, acts, dy, c.in[2], c.in[3], c.in[4],
                               c.prog, FLOAT, c.dc)
          : layerNormGradients(c.graph, acts, dy, c.in[2].flatten(),
                               c.in[3].flatten(), c.in[4], c.prog, FLOAT, c.dc);
  return {dx.reshape(x), dgamma, dbeta};
}

namespace {

// 0, 1, ..., n-1 as a [1, n] constant of the labels' type, to compare each
// row's label with.
Tensor classIndices(Graph &graph, Type type, std::size_t n,
                    const DebugContext &dc) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = double(i);
  return addConstantTensor(graph, {type, {1, n}}, v,
                           DebugContext(dc, "classes"));
}

} // namespace

Results sparseCrossEntropyOp(LowerContext &c) {
  using namespace ops::expr;
  const Tensor &logits = c.in[0], &labels = c.in[1];
  const std::size_t b = logits.dim(0), n = logits.dim(1);
  if (c.op.kind == OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY) {
    // -log_softmax at the label, as a masked row sum: exact, where
    // calcLoss would clamp the probability at 1e-7.
    const Tensor ls = nonLinearity(c.graph, NonLinearityType::LOG_SOFTMAX,
                                   logits, c.prog, c.dc);
    const Tensor classes = classIndices(c.graph, labels.elementType(), n, c.dc);
    const Tensor picked =
        map(c.graph, Neg(_1) * Cast(_2 == _3, logits.elementType()),
            {ls, labels.reshape({b, 1}), classes}, c.prog, c.dc);
    return {reduce(c.graph, picked, {1}, Operation::ADD, c.prog, c.dc)};
  }
  const Tensor p = nonLinearity(c.graph, NonLinearityType::SOFTMAX_STABLE,
                                logits, c.prog, c.dc);
  Tensor loss =
      c.graph.addVariable(p.elementType(), {b}, DebugContext(c.dc, "loss"));
  mapTensorLinearly(c.graph, loss);
  Tensor deltas = c.graph.clone(p, DebugContext(c.dc, "deltas"));
  calcLoss(c.graph, p, labels, loss, deltas, LossType::CROSS_ENTROPY_LOSS,
           c.prog, c.dc);
  return {
      map(c.graph, _1 * _2, {deltas, c.in[2].reshape({b, 1})}, c.prog, c.dc)};
}

Results rowLossOp(LowerContext &c) {
  using namespace ops::expr;
  const Shape &x = c.inTypes[0].shape;
  const std::size_t n = x.back(), rows = numElements(x) / n;
  const bool mse = c.op.kind == OpKind::MEAN_SQUARED_ERROR;
  const Tensor terms = map(c.graph, mse ? Square(_1 - _2) : Neg(_2 * Log(_1)),
                           {c.in[0], c.in[1]}, c.prog, c.dc);
  const ReduceParams params(Operation::ADD, false,
                            mse ? 1.0f / static_cast<float>(n) : 1.0f);
  return {reduce(c.graph, terms.reshape({rows, n}), {1}, params, c.prog, c.dc)
              .reshape(c.outTypes[0].shape)};
}

Results argmaxOp(LowerContext &c) {
  const Shape &x = c.inTypes[0].shape;
  const std::size_t n = x.back(), rows = numElements(x) / n;
  // Indices below 2^31 read the same as INT: a view, not a cast.
  return {argMax(c.graph, c.in[0].reshape({rows, n}), c.prog, c.dc)
              .reinterpret(INT)
              .reshape(c.outTypes[0].shape)};
}

Results accuracyOp(LowerContext &c) {
  using namespace ops::expr;
  Tensor correct =
      c.graph.addVariable(UNSIGNED_INT, {}, DebugContext(c.dc, "correct"));
  c.graph.setTileMapping(correct, 0);
  zero(c.graph, correct, c.prog, c.dc);
  calcAccuracy(c.graph, c.in[0], c.in[1], correct, c.prog, c.dc);
  const double rows = static_cast<double>(c.in[0].dim(0));
  return {map(c.graph, Cast(_1, FLOAT) / Const(rows, FLOAT), {correct}, c.prog,
              c.dc)};
}

} // namespace tessera::ir::detail
