// Shape inference for the convolution, pooling, normalisation, loss and
// gradient kinds.
#include "ConvShapes.hpp"
#include "InferContext.hpp"

namespace tessera::ir::detail {
namespace {

using Types = std::vector<ValueType>;

// The output shape of conv2d of an input of shape x with weights of shape w.
Shape convOutput(const InferContext &c, const Conv2dOptions &a, const Shape &x,
                 const Shape &w, const std::string &xName,
                 const std::string &wName) {
  if (x.size() != 4 || w.size() != 4)
    c.shapeError(xName + " must be [N, C, H, W] and " + wName +
                 " [Cout, Cin / groups, kH, kW]");
  if (x[1] % a.groups || w[0] % a.groups)
    c.shapeError("groups (" + std::to_string(a.groups) +
                 ") must divide the input channels of " + xName +
                 " and the output channels of " + wName);
  if (w[1] != x[1] / a.groups)
    c.shapeError(wName + " has " + std::to_string(w[1]) +
                 " input channels per group but " + xName + " has " +
                 std::to_string(x[1]) + " channels in " +
                 std::to_string(a.groups) + " group(s), " +
                 std::to_string(x[1] / a.groups) + " per group");
  Shape out{x[0], w[0], 0, 0};
  for (unsigned d = 0; d < 2; ++d) {
    const std::size_t padded = x[2 + d] + a.padLower[d] + a.padUpper[d];
    const std::size_t span = (w[2 + d] - 1) * a.dilations[d] + 1;
    if (w[2 + d] == 0 || padded < span)
      c.shapeError("the kernel of " + wName + " spans " + std::to_string(span) +
                   " elements in dimension " + std::to_string(2 + d) + " but " +
                   xName + " is only " + std::to_string(padded) +
                   " there with padding; pad more or use a smaller kernel");
    out[2 + d] = (padded - span) / a.strides[d] + 1;
  }
  return out;
}

Shape poolOutput(const InferContext &c, const PoolOptions &a, const Shape &x,
                 const std::string &xName) {
  if (x.size() != 4)
    c.shapeError(xName + " must be [N, C, H, W]");
  Shape out{x[0], x[1], 0, 0};
  for (unsigned d = 0; d < 2; ++d) {
    const std::size_t padded = x[2 + d] + a.padLower[d] + a.padUpper[d];
    if (padded < a.kernel[d])
      c.shapeError("the window (" + std::to_string(a.kernel[d]) +
                   ") is larger than " + xName + " with padding (" +
                   std::to_string(padded) + ") in dimension " +
                   std::to_string(2 + d));
    out[2 + d] = (padded - a.kernel[d]) / a.strides[d] + 1;
  }
  return out;
}

} // namespace

Types inferConv(const InferContext &c) {
  c.requireFloat(0);
  c.requireSameType(0, 1);
  const Conv2dOptions a = c.decode(decodeConv2dOptions);
  switch (c.kind) {
  case OpKind::CONV2D:
    return {{c.dtype(0), convOutput(c, a, c.shape(0), c.shape(1), c.describe(0),
                                    c.describe(1))}};
  case OpKind::CONV2D_BACKPROP_INPUT: {
    const Shape x = c.getSizes("inputShape", 4, 1);
    const Shape out = convOutput(c, a, x, c.shape(1),
                                 "input " + shapeToString(x), c.describe(1));
    if (out != c.shape(0))
      c.shapeError(c.describe(0) + " must be the convolution's output shape " +
                   shapeToString(out));
    return {{c.dtype(0), x}};
  }
  case OpKind::CONV2D_BACKPROP_FILTER: {
    const Shape k = c.getSizes("kernel", 2, 1);
    if (c.in[0].rank() != 4 || c.in[1].rank() != 4)
      c.shapeError(c.describe(0) + " and " + c.describe(1) +
                   " must be [N, C, H, W]");
    const Shape w{c.shape(0)[1], c.shape(1)[1] / a.groups, k[0], k[1]};
    const Shape out = convOutput(c, a, c.shape(1), w, c.describe(1),
                                 "weights " + shapeToString(w));
    if (out != c.shape(0))
      c.shapeError(c.describe(0) + " must be the convolution's output shape " +
                   shapeToString(out));
    return {{c.dtype(0), w}};
  }
  default:
    TESSERA_INTERNAL_ASSERT(false, c.op() + " is not a convolution");
  }
}

Types inferPool(const InferContext &c) {
  c.requireFloat(0);
  const PoolOptions a = c.decode(decodePoolOptions);
  if (c.kind == OpKind::MAX_POOL || c.kind == OpKind::AVG_POOL)
    return {{c.dtype(0), poolOutput(c, a, c.shape(0), c.describe(0))}};
  if (c.kind == OpKind::AVG_POOL_GRAD) {
    const Shape x = c.getSizes("inputShape", 4, 1);
    if (poolOutput(c, a, x, "input " + shapeToString(x)) != c.shape(0))
      c.shapeError(c.describe(0) + " must be the pooling's output shape " +
                   shapeToString(poolOutput(c, a, x, "")));
    return {{c.dtype(0), x}};
  }
  TESSERA_INTERNAL_ASSERT(c.kind == OpKind::MAX_POOL_GRAD,
                          c.op() + " is not a pooling");
  // maxPoolGrad(x, y, dy)
  const Shape y = poolOutput(c, a, c.shape(0), c.describe(0));
  for (std::size_t i = 1; i < 3; ++i) {
    c.requireSameType(0, i);
    if (c.shape(i) != y)
      c.shapeError(c.describe(i) + " must be the pooling's output shape " +
                   shapeToString(y));
  }
  return {c.in[0]};
}

Types inferSoftmax(const InferContext &c) {
  c.requireFloat(0);
  if (c.in[0].rank() == 0 || c.shape(0).back() == 0)
    c.shapeError(c.describe(0) + " needs a non-empty last axis to normalise");
  for (std::size_t i = 1; i < c.in.size(); ++i) {
    c.requireSameType(0, i);
    c.requireSameShape(0, i);
  }
  return {c.in[0]};
}

Types inferDropout(const InferContext &c) {
  c.requireFloat(0);
  c.decode(decodeDropoutAttrs);
  if (c.in.size() == 2 &&
      (c.dtype(1) != UNSIGNED_INT || c.in[1].numElements() != 2))
    c.typeError(c.describe(1) + " must be a seed: uint with 2 elements");
  return {c.in[0]};
}

// batchNorm and layerNorm, and their gradients: the shape of the
// per-channel parameters and of the statistics.
Types inferNorm(const InferContext &c) {
  const bool batch =
      c.kind == OpKind::BATCH_NORM || c.kind == OpKind::BATCH_NORM_GRAD;
  const bool grad =
      c.kind == OpKind::BATCH_NORM_GRAD || c.kind == OpKind::LAYER_NORM_GRAD;
  c.requireFloat(0);
  const Shape &x = c.shape(0);
  if (x.size() < (batch ? 2u : 1u))
    c.shapeError(c.describe(0) + (batch ? " must be [N, C, ...]"
                                        : " needs a last axis to normalise"));
  const Shape param{batch ? x[1] : x.back()};
  const Shape stats = batch ? param : Shape(x.begin(), x.end() - 1);
  // Operands: (x, gamma, beta) or (x, dy, mean, invStdDev, gamma).
  const std::vector<Shape> expected =
      grad ? std::vector<Shape>{x, x, stats, stats, param}
           : std::vector<Shape>{x, param, param};
  for (std::size_t i = 1; i < c.in.size(); ++i) {
    c.requireSameType(0, i);
    if (c.shape(i) != expected[i])
      c.shapeError(c.describe(i) + " must have shape " +
                   shapeToString(expected[i]) + " for " + c.describe(0));
  }
  if (!grad && !(c.getFloat("eps") > 0))
    c.attrError("eps must be > 0");
  if (grad)
    return {c.in[0], {c.dtype(0), param}, {c.dtype(0), param}};
  return {c.in[0], {c.dtype(0), stats}, {c.dtype(0), stats}};
}

namespace {

// Logits [b, n] with labels [b]: the sparse cross-entropy, its gradient and
// accuracy.
void checkLogitsAndLabels(const InferContext &c) {
  c.requireFloat(0);
  c.requireRank(0, 2);
  c.requireIndex(1);
  if (c.shape(1) != Shape{c.shape(0)[0]})
    c.shapeError(c.describe(1) + " must hold one label per row of " +
                 c.describe(0) + ": shape [" + std::to_string(c.shape(0)[0]) +
                 "]");
}

} // namespace

Types inferLabelled(const InferContext &c) {
  checkLogitsAndLabels(c);
  switch (c.kind) {
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY:
    return {{c.dtype(0), {c.shape(0)[0]}}};
  case OpKind::ACCURACY:
    return {{FLOAT, {}}};
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY_GRAD:
    c.requireSameType(0, 2);
    if (c.shape(2) != Shape{c.shape(0)[0]})
      c.shapeError(c.describe(2) + " must hold one loss gradient per row: [" +
                   std::to_string(c.shape(0)[0]) + "]");
    return {c.in[0]};
  default:
    TESSERA_INTERNAL_ASSERT(false, c.op() + " takes no logits and labels");
  }
}

Types inferRowLoss(const InferContext &c) {
  c.requireFloat(0);
  c.requireSameType(0, 1);
  c.requireSameShape(0, 1);
  if (c.in[0].rank() == 0)
    c.shapeError(c.describe(0) + " needs a last axis to reduce");
  return {{c.dtype(0), Shape(c.shape(0).begin(), c.shape(0).end() - 1)}};
}

Types inferArgmax(const InferContext &c) {
  if (c.in[0].rank() == 0 || c.shape(0).back() == 0)
    c.shapeError(c.describe(0) + " needs a non-empty last axis");
  const Type t = c.dtype(0);
  if (!isFloatingPoint(t) && t != INT && t != UNSIGNED_INT)
    c.typeError(c.describe(0) + " must be float, half, int or uint");
  return {{INT, Shape(c.shape(0).begin(), c.shape(0).end() - 1)}};
}

Types inferElementwiseGrad(const InferContext &c) {
  const std::string &name = c.getString("op");
  std::optional<OpKind> k = opKindFromName(name);
  const bool unary = c.kind == OpKind::UNARY_GRAD;
  if (!k || opClass(*k) != (unary ? OpClass::Unary : OpClass::Binary))
    c.attrError("op \"" + name + "\" is not a " + (unary ? "unary" : "binary") +
                " elementwise operation");
  const bool has = unary ? unaryDerivative(*unaryOpType(*k)).valid()
                         : binaryDerivatives(*binaryOpType(*k)).first.valid();
  if (!has)
    c.attrError("op \"" + name + "\" has no derivative");
  c.requireFloat(0);
  for (std::size_t i = 1; i < c.in.size(); ++i)
    c.requireSameType(0, i);
  const std::size_t y = c.in.size() - 2, dy = c.in.size() - 1;
  c.requireSameShape(y, dy);
  for (std::size_t i = 0; i < y; ++i) {
    std::optional<Shape> s = broadcastShapes(c.shape(i), c.shape(y));
    if (!s || *s != c.shape(y))
      c.shapeError(c.describe(i) + " does not broadcast to " + c.describe(y));
  }
  if (unary)
    return {c.in[dy]};
  return {c.in[dy], c.in[dy]};
}

} // namespace tessera::ir::detail
