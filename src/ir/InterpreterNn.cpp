// The host interpreter's convolution, pooling, normalisation, loss and
// gradient kinds, each computed from its definition in double precision.
#include "ConvShapes.hpp"
#include "InterpreterInternal.hpp"

#include "tessera/ops/Reference.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::ir::detail {
namespace ref = ops::reference;

Results interpretConv(OpKind kind, const Attributes &attrs, const Operands &in,
                      const ValueType &t) {
  const Conv2dOptions a = decodeConv2dOptions(attrs);
  HostValue r = zeros(t);
  if (kind == OpKind::CONV2D) {
    const auto p = convParams(a, in[0]->shape, in[1]->shape, t.dtype);
    r.values = ref::convolution(p, in[0]->values, in[1]->values);
  } else if (kind == OpKind::CONV2D_BACKPROP_INPUT) {
    const auto p = convParams(a, t.shape, in[1]->shape, t.dtype);
    r.values = ref::convolutionInputGradient(p, in[0]->values, in[1]->values);
  } else {
    TESSERA_INTERNAL_ASSERT(kind == OpKind::CONV2D_BACKPROP_FILTER,
                            std::string(opKindName(kind)) +
                                " is not a convolution");
    const auto p = convParams(a, in[1]->shape, t.shape, t.dtype);
    r.values = ref::convolutionWeightGradient(p, in[0]->values, in[1]->values);
  }
  return {r};
}

Results interpretPool(OpKind kind, const Attributes &attrs, const Operands &in,
                      const ValueType &t) {
  const PoolOptions a = decodePoolOptions(attrs);
  const bool max = kind == OpKind::MAX_POOL || kind == OpKind::MAX_POOL_GRAD;
  const auto type = max ? ops::PoolingType::MAX : ops::PoolingType::AVG;
  HostValue r = zeros(t);
  switch (kind) {
  case OpKind::MAX_POOL:
  case OpKind::AVG_POOL:
    r.values =
        ref::pool(poolParams(a, type, in[0]->shape, t.dtype), in[0]->values);
    break;
  case OpKind::MAX_POOL_GRAD:
    r.values = ref::poolInputGradient(poolParams(a, type, t.shape, t.dtype),
                                      in[0]->values, in[2]->values);
    break;
  case OpKind::AVG_POOL_GRAD:
    r.values = ref::poolInputGradient(poolParams(a, type, t.shape, t.dtype), {},
                                      in[0]->values);
    break;
  default:
    TESSERA_INTERNAL_ASSERT(false, std::string(opKindName(kind)) +
                                       " is not a pooling");
  }
  return {r};
}

// Softmax and log-softmax of each row, shifted by the row's maximum so that
// no exponential overflows.
Results interpretSoftmax(OpKind kind, const Operands &in, const ValueType &t) {
  const auto [rows, n] = rowsOf(t.shape);
  HostValue r = zeros(t);
  const std::vector<double> &x = in[0]->values;
  for (std::size_t row = 0; row < rows; ++row) {
    const double *xr = x.data() + row * n;
    double *yr = r.values.data() + row * n;
    const double m = *std::max_element(xr, xr + n);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i)
      sum += std::exp(xr[i] - m);
    for (std::size_t i = 0; i < n; ++i)
      yr[i] = kind == OpKind::SOFTMAX ? std::exp(xr[i] - m) / sum
                                      : xr[i] - m - std::log(sum);
  }
  return {r};
}

Results interpretSoftmaxGrad(OpKind kind, const Operands &in,
                             const ValueType &t) {
  const auto [rows, n] = rowsOf(t.shape);
  HostValue r = zeros(t);
  for (std::size_t row = 0; row < rows; ++row) {
    const double *y = in[0]->values.data() + row * n;
    const double *dy = in[1]->values.data() + row * n;
    double *dx = r.values.data() + row * n;
    double s = 0;
    for (std::size_t i = 0; i < n; ++i)
      s += kind == OpKind::SOFTMAX_GRAD ? dy[i] * y[i] : dy[i];
    for (std::size_t i = 0; i < n; ++i)
      dx[i] = kind == OpKind::SOFTMAX_GRAD ? y[i] * (dy[i] - s)
                                           : dy[i] - std::exp(y[i]) * s;
  }
  return {r};
}

Results interpretDropout(const Attributes &attrs, const Operands &in,
                         const ValueType &t) {
  const DropoutAttrs a = decodeDropoutAttrs(attrs);
  std::array<std::uint32_t, 2> seed{};
  if (in.size() == 2) {
    seed = {static_cast<std::uint32_t>(in[1]->values[0]),
            static_cast<std::uint32_t>(in[1]->values[1])};
  } else {
    seed = {static_cast<std::uint32_t>(a.seed),
            static_cast<std::uint32_t>(a.seed >> 32)};
  }
  const double keep = 1 - a.rate;
  const std::vector<double> mask =
      ref::randomBernoulli(seed, a.seedModifier, t.numElements(), keep);
  HostValue r = zeros(t);
  for (std::size_t i = 0; i < mask.size(); ++i)
    r.values[i] = in[0]->values[i] * mask[i] / keep;
  return {r};
}

namespace {

// Batch norm groups by channel (groups 0 for the reference), layer norm by
// row of [rows, D] (one group per sample).
struct NormLayout {
  Shape shape;
  unsigned groups;
  std::size_t channels, stats;
};

NormLayout normLayout(OpKind kind, const Shape &x) {
  if (kind == OpKind::BATCH_NORM || kind == OpKind::BATCH_NORM_GRAD)
    return {x, 0, x[1], x[1]};
  const auto [rows, d] = rowsOf(x);
  return {{rows, d}, 1, d, rows};
}

} // namespace

Results interpretNorm(OpKind kind, const Attributes &attrs, const Operands &in,
                      const std::vector<ValueType> &types) {
  const NormLayout l = normLayout(kind, in[0]->shape);
  const ref::NormStatistics st = ref::normStatistics(
      in[0]->values, l.shape, l.groups, attrs.getFloat("eps"), false);
  HostValue y = zeros(types[0]), mean = zeros(types[1]), inv = zeros(types[2]);
  y.values = ref::normalise(in[0]->values, l.shape, l.groups, in[1]->values,
                            in[2]->values, st)
                 .first;
  mean.values = st.mean;
  inv.values = st.invStdDev;
  return {y, mean, inv};
}

// dx = gamma * invStd / M * (M * dy - sum(dy) - xhat * sum(dy * xhat)) over
// each statistic's M elements; dgamma = sum(dy * xhat), dbeta = sum(dy) per
// channel.
Results interpretNormGrad(OpKind kind, const Operands &in,
                          const std::vector<ValueType> &types) {
  const NormLayout l = normLayout(kind, in[0]->shape);
  const std::vector<double> &x = in[0]->values, &dy = in[1]->values,
                            &mean = in[2]->values, &inv = in[3]->values,
                            &gamma = in[4]->values;
  const bool batch = l.groups == 0;
  const std::size_t n = x.size(), inner = batch ? numElements(l.shape) /
                                                      (l.shape[0] * l.channels)
                                                : 1;
  auto chanOf = [&](std::size_t i) {
    return batch ? i / inner % l.channels : i % l.channels;
  };
  auto statOf = [&](std::size_t i) {
    return batch ? chanOf(i) : i / l.channels;
  };
  std::vector<double> xhat(n), sumG(l.stats), sumGX(l.stats), count(l.stats);
  HostValue dx = zeros(types[0]), dgamma = zeros(types[1]),
            dbeta = zeros(types[2]);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = statOf(i), c = chanOf(i);
    xhat[i] = (x[i] - mean[k]) * inv[k];
    const double g = dy[i] * gamma[c];
    sumG[k] += g;
    sumGX[k] += g * xhat[i];
    count[k] += 1;
    dgamma.values[c] += dy[i] * xhat[i];
    dbeta.values[c] += dy[i];
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = statOf(i);
    const double g = dy[i] * gamma[chanOf(i)];
    dx.values[i] =
        inv[k] / count[k] * (count[k] * g - sumG[k] - xhat[i] * sumGX[k]);
  }
  return {dx, dgamma, dbeta};
}

// Rows of logits with a label each: the sparse cross-entropy, its gradient
// and accuracy. A label outside [0, n) masks its row.
Results interpretLabelled(OpKind kind, const Operands &in, const ValueType &t) {
  const auto [rows, n] = rowsOf(in[0]->shape);
  const std::vector<double> &x = in[0]->values, &labels = in[1]->values;
  HostValue r = zeros(t);
  std::size_t correct = 0;
  for (std::size_t row = 0; row < rows; ++row) {
    const double *xr = x.data() + row * n;
    const double label = labels[row];
    const bool valid = label >= 0 && label < double(n);
    const auto best = std::size_t(std::max_element(xr, xr + n) - xr);
    if (kind == OpKind::ACCURACY) {
      correct += valid && double(best) == label;
      continue;
    }
    if (!valid)
      continue;
    const double m = xr[best];
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i)
      sum += std::exp(xr[i] - m);
    if (kind == OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY) {
      r.values[row] = m + std::log(sum) - xr[std::size_t(label)];
      continue;
    }
    for (std::size_t i = 0; i < n; ++i)
      r.values[row * n + i] =
          (std::exp(xr[i] - m) / sum - (double(i) == label ? 1.0 : 0.0)) *
          in[2]->values[row];
  }
  if (kind == OpKind::ACCURACY)
    r.values[0] = rows ? double(correct) / double(rows) : 0.0;
  return {r};
}

Results interpretRowLoss(OpKind kind, const Operands &in, const ValueType &t) {
  const auto [rows, n] = rowsOf(in[0]->shape);
  HostValue r = zeros(t);
  for (std::size_t row = 0; row < rows; ++row)
    for (std::size_t i = 0; i < n; ++i) {
      const double a = in[0]->values[row * n + i],
                   b = in[1]->values[row * n + i];
      r.values[row] += kind == OpKind::MEAN_SQUARED_ERROR
                           ? (a - b) * (a - b) / double(n)
                           : -b * std::log(a);
    }
  return {r};
}

Results interpretArgmax(const Operands &in, const ValueType &t) {
  const auto [rows, n] = rowsOf(in[0]->shape);
  HostValue r = zeros(t);
  for (std::size_t row = 0; row < rows; ++row) {
    const double *xr = in[0]->values.data() + row * n;
    r.values[row] = double(std::max_element(xr, xr + n) - xr);
  }
  return {r};
}

Results interpretElementwiseGrad(OpKind kind, const Attributes &attrs,
                                 const Operands &in,
                                 const std::vector<ValueType> &t) {
  const OpKind op = *opKindFromName(attrs.getString("op"));
  const std::size_t y = in.size() - 2, dy = in.size() - 1;
  std::vector<std::vector<std::size_t>> idx;
  for (std::size_t i = 0; i < y; ++i)
    idx.push_back(broadcastIndices(in[i]->shape, t[0].shape));
  std::vector<ops::expr::Expr> d;
  if (kind == OpKind::UNARY_GRAD) {
    d = {unaryDerivative(*unaryOpType(op))};
  } else {
    auto [da, db] = binaryDerivatives(*binaryOpType(op));
    d = {da, db};
  }
  Results r;
  for (const ops::expr::Expr &e : d) {
    HostValue g = zeros(t[0]);
    std::vector<double> args(y + 1);
    for (std::size_t k = 0; k < g.values.size(); ++k) {
      for (std::size_t i = 0; i < y; ++i)
        args[i] = in[i]->values[idx[i][k]];
      args[y] = in[y]->values[k];
      g.values[k] = in[dy]->values[k] * ref::evaluate(e, args);
    }
    r.push_back(std::move(g));
  }
  return r;
}

} // namespace tessera::ir::detail
