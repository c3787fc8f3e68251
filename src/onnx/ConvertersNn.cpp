// Converters of ONNX's neural-network operators: convolution, pooling,
// normalisation, activations, matrix products, softmax and losses.
#include "ImporterInternal.hpp"

#include <cmath>

namespace tessera::onnx::detail {

namespace {

using ir::OpKind;
using ir::Pair;
using ir::Value;

// Two spatial numbers from an ints attribute, \p dflt when absent.
Pair pairAttr(Context &ctx, const std::string &name, unsigned dflt) {
  auto v = ctx.attrInts(name);
  if (!v)
    return {dflt, dflt};
  if (v->size() != 2 || (*v)[0] < 0 || (*v)[1] < 0 ||
      (*v)[0] > kMaxAttributeSize || (*v)[1] > kMaxAttributeSize)
    ctx.unsupported(name + " must hold 2 numbers in [0, 2^24] (only 2-D "
                           "convolution and pooling on NCHW inputs import)");
  return {static_cast<unsigned>((*v)[0]), static_cast<unsigned>((*v)[1])};
}

struct Window {
  Pair kernel, strides, dilations, padLower, padUpper;
};

// The window of a Conv or pooling node on x [N, C, H, W], with auto_pad
// and ceil_mode turned into explicit padding.
Window window(Context &ctx, const ir::Shape &x, Pair kernel) {
  if (x.size() != 4)
    ctx.unsupported("the input is " + ir::shapeToString(x) +
                    "; only 2-D convolution and pooling on [N, C, H, W] "
                    "inputs import");
  Window w{kernel,
           pairAttr(ctx, "strides", 1),
           pairAttr(ctx, "dilations", 1),
           {0, 0},
           {0, 0}};
  if (auto pads = ctx.attrInts("pads")) {
    if (pads->size() != 4 ||
        std::any_of(pads->begin(), pads->end(),
                    [](auto p) { return p < 0 || p > kMaxAttributeSize; }))
      ctx.unsupported("pads must hold 4 numbers in [0, 2^24]");
    w.padLower = {unsigned((*pads)[0]), unsigned((*pads)[1])};
    w.padUpper = {unsigned((*pads)[2]), unsigned((*pads)[3])};
  }
  const std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  const bool ceilMode = ctx.attrInt("ceil_mode", 0) != 0;
  for (int d = 0; d < 2; ++d) {
    if (w.strides[d] == 0 || w.dilations[d] == 0 || w.kernel[d] == 0)
      ctx.shapeError("kernel, strides and dilations must be positive");
    const std::size_t in = x[2 + d], s = w.strides[d];
    const std::size_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      const std::size_t out = (in + s - 1) / s;
      const std::size_t need = (out - 1) * s + extent;
      const unsigned total = need > in ? unsigned(need - in) : 0;
      w.padLower[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.padUpper[d] = total - w.padLower[d];
    } else if (autoPad == "VALID") {
      w.padLower[d] = w.padUpper[d] = 0;
    } else if (autoPad != "NOTSET") {
      ctx.unsupported("auto_pad '" + autoPad + "' is not an ONNX value");
    }
    const std::size_t padded = in + w.padLower[d] + w.padUpper[d];
    if (padded < extent)
      ctx.shapeError("the window (" + std::to_string(extent) +
                     ") is larger than the padded input (" +
                     std::to_string(padded) + ")");
    if (ceilMode) {
      // Ceil mode adds a last, partial window unless it would start in
      // the upper padding; extra upper padding makes floor give that.
      std::size_t out = (padded - extent + s - 1) / s + 1;
      if ((out - 1) * s >= in + w.padLower[d])
        --out;
      const std::size_t need = (out - 1) * s + extent;
      if (need > padded)
        w.padUpper[d] += unsigned(need - padded);
    }
  }
  return w;
}

void conv(Context &ctx) {
  Value x = ctx.value(0), w = ctx.value(1);
  if (w.rank() != 4)
    ctx.unsupported("the weights are " + w.type().toString() +
                    "; only 2-D convolutions import");
  const Window win =
      window(ctx, x.shape(), {unsigned(w.shape()[2]), unsigned(w.shape()[3])});
  ir::Conv2dOptions o;
  o.strides = win.strides;
  o.dilations = win.dilations;
  o.padLower = win.padLower;
  o.padUpper = win.padUpper;
  o.groups = static_cast<unsigned>(ctx.attrInt("group", 1));
  Value y = ir::conv2d(x, w, o);
  if (ctx.has(2))
    y = ir::biasAdd(y, ctx.value(2), 1);
  ctx.out(0, y);
}

// A transposed convolution is the input gradient of the convolution whose
// weights it has: ONNX's [C, M / group, kH, kW] are that convolution's
// [Cout, Cin / group, kH, kW].
void convTranspose(Context &ctx) {
  Value x = ctx.value(0), w = ctx.value(1);
  if (x.rank() != 4 || w.rank() != 4)
    ctx.unsupported("only 2-D transposed convolutions on [N, C, H, W] "
                    "inputs import, not " +
                    x.type().toString() + " with weights " +
                    w.type().toString());
  if (ctx.attr("output_shape") ||
      ctx.attrString("auto_pad", "NOTSET") != "NOTSET")
    ctx.unsupported("output_shape and auto_pad are not supported; give pads");
  ir::Conv2dOptions o;
  o.strides = pairAttr(ctx, "strides", 1);
  o.dilations = pairAttr(ctx, "dilations", 1);
  o.groups = static_cast<unsigned>(ctx.attrInt("group", 1));
  if (auto pads = ctx.attrInts("pads")) {
    if (pads->size() != 4 ||
        std::any_of(pads->begin(), pads->end(),
                    [](auto p) { return p < 0 || p > kMaxAttributeSize; }))
      ctx.unsupported("pads must hold 4 numbers in [0, 2^24]");
    o.padLower = {unsigned((*pads)[0]), unsigned((*pads)[1])};
    o.padUpper = {unsigned((*pads)[2]), unsigned((*pads)[3])};
  }
  const Pair extra = pairAttr(ctx, "output_padding", 0);
  ir::Shape out{x.shape()[0], w.shape()[1] * o.groups, 0, 0};
  for (int d = 0; d < 2; ++d) {
    const auto size = static_cast<std::int64_t>(
        (x.shape()[2 + d] - 1) * o.strides[d] +
        (w.shape()[2 + d] - 1) * o.dilations[d] + 1 + extra[d]);
    const std::int64_t padded = size - o.padLower[d] - o.padUpper[d];
    if (padded <= 0 || extra[d] >= std::max(o.strides[d], o.dilations[d]))
      ctx.shapeError("the pads or output_padding leave no valid output");
    out[2 + d] = static_cast<std::size_t>(padded);
  }
  Value y = ir::conv2dBackpropInput(x, w, o, out);
  if (ctx.has(2))
    y = ir::biasAdd(y, ctx.value(2), 1);
  ctx.out(0, y);
}

void pool(Context &ctx, bool max) {
  Value x = ctx.value(0);
  auto k = ctx.attrInts("kernel_shape");
  if (!k)
    ctx.shapeError("kernel_shape is missing");
  const Pair kernel = pairAttr(ctx, "kernel_shape", 1);
  Window w = window(ctx, x.shape(), kernel);
  if (w.dilations != Pair{1, 1})
    ctx.unsupported("pooling with dilations is not supported");
  if (ctx.wantsOutput(1))
    ctx.unsupported("the Indices output of MaxPool is not supported");
  if (!max && ctx.attrInt("count_include_pad", 0) != 0 &&
      (w.padLower != Pair{0, 0} || w.padUpper != Pair{0, 0})) {
    // Padding that counts in the average is real zeros.
    x = ir::pad(x, {0, 0, w.padLower[0], w.padLower[1]},
                {0, 0, w.padUpper[0], w.padUpper[1]});
    w.padLower = w.padUpper = {0, 0};
  }
  ir::PoolOptions o{w.kernel, w.strides, w.padLower, w.padUpper};
  ctx.out(0, max ? ir::maxPool(x, o) : ir::avgPool(x, o));
}

void globalPool(Context &ctx, bool max) {
  Value x = ctx.value(0);
  std::vector<std::int64_t> axes;
  for (std::size_t d = 2; d < x.rank(); ++d)
    axes.push_back(static_cast<std::int64_t>(d));
  ctx.out(0,
          max ? ir::reduceMax(x, axes, true) : ir::reduceMean(x, axes, true));
}

// Whether a BatchNormalization node is in training mode: the attribute
// from opset 14, the running-statistics outputs before.
bool batchNormTrainingMode(Context &ctx) {
  if (ctx.opset() >= 14)
    return ctx.attrInt("training_mode", 0) != 0;
  for (int i = 1; i < 5; ++i)
    if (ctx.wantsOutput(i))
      return true;
  return false;
}

// Training: the batch's statistics normalise; the running ones move
// towards them (PyTorch's unbiased variance) and are updated each step.
void batchNormTraining(Context &ctx) {
  Value x = ctx.value(0);
  if (x.rank() < 2)
    ctx.shapeError("the input is " + x.type().toString() +
                   "; batch normalisation needs [N, C, ...]");
  const std::size_t n = x.type().numElements() / x.shape()[1];
  if (n < 2)
    ctx.shapeError("training needs more than one value per channel, but " +
                   x.type().toString() + " has " + std::to_string(n) +
                   " (a larger batch, or the model in eval mode)");
  const double eps = ctx.attrFloat("epsilon", 1e-5);
  // The attribute is float: 0.9f, not 0.9; PyTorch's momentum is 1 minus it.
  const double momentum = ctx.attrFloat("momentum", 0.9);
  ir::NormResult r = ir::batchNorm(x, ctx.value(1), ctx.value(2), eps);
  const Value variance = ir::inv(ir::square(r.invStdDev)) - eps;
  const Value unbiased = variance * (double(n) / double(n - 1));
  Value mean = ctx.value(3), var = ctx.value(4);
  const Value newMean = mean * momentum + r.mean * (1 - momentum);
  const Value newVar = var * momentum + unbiased * (1 - momentum);
  for (auto [running, next] : {std::pair{mean, newMean}, {var, newVar}})
    if (ctx.module().value(running.id()).kind == ir::ValueKind::Variable)
      ctx.addStateUpdate(running, next);
  ctx.out(0, r.y);
  ctx.out(1, newMean);
  ctx.out(2, newVar);
  ctx.out(3, r.mean);
  ctx.out(4, variance);
}

void batchNormalization(Context &ctx) {
  if (ctx.training() && batchNormTrainingMode(ctx))
    return batchNormTraining(ctx);
  for (int i = 1; i < 5; ++i)
    if (ctx.outputConsumed(i))
      ctx.unsupported("output " + std::to_string(i) +
                      " (running or saved statistics) is read, which only "
                      "training computes; train it in a training session, or "
                      "export the model in eval() mode");
  ctx.out(0, ir::batchNormInference(ctx.value(0), ctx.value(1), ctx.value(2),
                                    ctx.value(3), ctx.value(4),
                                    ctx.attrFloat("epsilon", 1e-5)));
}

// ir::reshape, or \p v itself when it has the shape already.
Value reshaped(Value v, const ir::Shape &shape) {
  return v.shape() == shape ? v : ir::reshape(v, shape);
}

// [.., m, k] x [k, n] and batched products with equal batch dimensions, by
// reshaping to the IR's [m, k] x [k, n] and [g, m, k] x [g, k, n].
void matMul(Context &ctx) {
  Value a = ctx.value(0), b = ctx.value(1);
  ir::Shape as = a.shape(), bs = b.shape();
  if (as.empty() || bs.empty())
    ctx.shapeError("MatMul of a scalar");
  const bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  const std::size_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k)
    ctx.shapeError("lhs " + a.type().toString() + " has " + std::to_string(k) +
                   " columns but rhs " + b.type().toString() + " has " +
                   std::to_string(bs[bs.size() - 2]) + " rows");
  ir::Shape batch(as.begin(), as.end() - 2);
  const ir::Shape bBatch(bs.begin(), bs.end() - 2);
  Value y;
  if (bBatch.empty()) {
    const std::size_t rows = ir::numElements(batch) * m;
    y = ir::matmul(reshaped(a, {rows, k}), reshaped(b, {k, n}));
  } else {
    if (batch.empty())
      batch = bBatch;
    if (bBatch != batch && !(as.size() == 2))
      ctx.unsupported("batched MatMul needs equal batch dimensions: " +
                      a.type().toString() + " x " + b.type().toString());
    const std::size_t g = ir::numElements(batch);
    Value a3 = as.size() == 2 ? ir::broadcast(reshaped(a, {1, m, k}), {g, m, k})
                              : reshaped(a, {g, m, k});
    y = ir::matmul(a3, reshaped(b, {g, k, n}));
  }
  ir::Shape out = batch;
  if (!aVec)
    out.push_back(m);
  if (!bVec)
    out.push_back(n);
  ctx.out(0, reshaped(y, out));
}

void gemm(Context &ctx) {
  Value a = ctx.value(0), b = ctx.value(1);
  if (a.rank() != 2 || b.rank() != 2)
    ctx.shapeError("Gemm needs 2-D operands, not " + a.type().toString() +
                   " and " + b.type().toString());
  if (ctx.attrInt("transA", 0))
    a = ir::transpose(a, {1, 0});
  if (ctx.attrInt("transB", 0))
    b = ir::transpose(b, {1, 0});
  Value y = ir::matmul(a, b);
  const double alpha = ctx.attrFloat("alpha", 1.0);
  if (alpha != 1.0)
    y = y * alpha;
  if (ctx.has(2)) {
    Value c = ctx.value(2);
    const double beta = ctx.attrFloat("beta", 1.0);
    if (beta != 1.0)
      c = c * beta;
    y = y + c;
  }
  ctx.out(0, y);
}

// Softmax along \p axis: opset 13 normalises along that axis alone, older
// opsets over the flattened dimensions from axis on.
void softmaxLike(Context &ctx, bool log) {
  Value x = ctx.value(0);
  const ir::Shape shape = x.shape();
  const std::size_t axis =
      ctx.axis(ctx.attrInt("axis", ctx.opset() >= 13 ? -1 : 1), x.rank());
  auto f = [log](Value v) { return log ? ir::logSoftmax(v) : ir::softmax(v); };
  if (axis + 1 == x.rank()) {
    ctx.out(0, f(x));
  } else if (ctx.opset() < 13) {
    const std::size_t outer = ir::numElements(
        ir::Shape(shape.begin(), shape.begin() + std::ptrdiff_t(axis)));
    Value y = f(ir::reshape(x, {outer, ir::numElements(shape) / outer}));
    ctx.out(0, ir::reshape(y, shape));
  } else {
    std::vector<std::int64_t> perm;
    for (std::size_t d = 0; d < x.rank(); ++d)
      perm.push_back(static_cast<std::int64_t>(d));
    std::swap(perm[axis], perm.back());
    ctx.out(0, ir::transpose(f(ir::transpose(x, perm)), perm));
  }
}

// Training drops (inverted dropout, as PyTorch); inference, and a node
// whose training_mode input is false or absent, is the identity.
void dropout(Context &ctx) {
  if (ctx.outputConsumed(1))
    ctx.unsupported("the mask output of Dropout is read, which is not "
                    "supported");
  double ratio = ctx.attrFloat("ratio", 0.5);
  bool active = ctx.training();
  // A ratio attribute is the form of opsets 7-11 (PopART's builders write
  // it at later opsets too), where the session, not the node, decides.
  if (ctx.opset() >= 12 && !ctx.attr("ratio")) {
    if (ctx.has(1)) {
      const ir::HostValue &r = ctx.known(1, "ratio");
      if (r.values.size() != 1)
        ctx.shapeError("the ratio must be a scalar");
      ratio = r.values[0];
    }
    active =
        active && ctx.has(2) && ctx.known(2, "training_mode").values.at(0) != 0;
  }
  if (!(ratio >= 0 && ratio < 1))
    ctx.unsupported("the ratio " + std::to_string(ratio) +
                    " is outside [0, 1)");
  Slot &x = ctx.in(0);
  if (!active || ratio == 0)
    return ctx.out(0, x); // the identity
  const Type t = x.type().dtype;
  if (t != FLOAT && t != HALF)
    ctx.unsupported("Dropout of " + x.type().toString() + " in training");
  ctx.out(0, ir::dropout(ctx.materialise(x), ratio, ctx.dropoutSeed(),
                         ctx.nextDropoutModifier()));
}

void clip(Context &ctx) {
  Slot x = ctx.in(0);
  const Type t = x.type().dtype;
  auto bound = [&](int i, const char *name) -> std::optional<double> {
    if (ctx.opset() < 11) {
      if (ctx.attr(name))
        return ctx.attrFloat(name, 0);
      return std::nullopt;
    }
    if (!ctx.has(i))
      return std::nullopt;
    const ir::HostValue &v = ctx.known(i, std::string(name) + " bound");
    if (v.values.size() != 1)
      ctx.shapeError(std::string(name) + " must be a scalar");
    return v.values[0];
  };
  if (auto lo = bound(1, "min"))
    x = ctx.apply(OpKind::MAXIMUM, {x, Context::knownSlot(t, {}, {*lo})});
  if (auto hi = bound(2, "max"))
    x = ctx.apply(OpKind::MINIMUM, {x, Context::knownSlot(t, {}, {*hi})});
  ctx.out(0, x);
}

// -mean/sum of logProbs[i, labels[i]] over rows i, from a one-hot mask.
Value negativeLogLikelihood(Context &ctx, Value logProbs, Value labels) {
  if (logProbs.rank() != 2 || labels.rank() != 1 ||
      labels.shape()[0] != logProbs.shape()[0])
    ctx.unsupported("only [N, C] inputs with [N] labels are supported, not " +
                    logProbs.type().toString() + " and " +
                    labels.type().toString());
  if (ctx.has(2))
    ctx.unsupported("class weights are not supported");
  const std::size_t n = logProbs.shape()[0], c = logProbs.shape()[1];
  std::vector<double> classes(c);
  for (std::size_t i = 0; i < c; ++i)
    classes[i] = double(i);
  Value iota = ctx.builder().constant(classes, {c}, labels.dtype());
  Value mask =
      ir::cast(ir::eq(ir::reshape(labels, {n, 1}), iota), logProbs.dtype());
  Value perRow = -ir::reduceSum(logProbs * mask, {1});
  const std::string reduction = ctx.attrString("reduction", "mean");
  if (ctx.attr("ignore_index")) {
    // Rows whose label is ignore_index count neither in the sum nor in the
    // mean's denominator (PyTorch sets -100 by default).
    const double ignored = double(ctx.attrInt("ignore_index", 0));
    Value valid = ir::cast(ir::neq(labels, ignored), logProbs.dtype());
    perRow = perRow * valid;
    if (reduction == "mean")
      return ir::reduceSum(perRow) / ir::reduceSum(valid);
  }
  if (reduction == "mean")
    return ir::reduceMean(perRow);
  if (reduction == "sum")
    return ir::reduceSum(perRow);
  if (reduction == "none")
    return perRow;
  ctx.unsupported("reduction '" + reduction + "' is not an ONNX value");
}

void nllLoss(Context &ctx) {
  ctx.out(0, negativeLogLikelihood(ctx, ctx.value(0), ctx.value(1)));
}

void softmaxCrossEntropyLoss(Context &ctx) {
  Value logProbs = ir::logSoftmax(ctx.value(0));
  ctx.out(0, negativeLogLikelihood(ctx, logProbs, ctx.value(1)));
  ctx.out(1, logProbs);
}

// erf from elementwise operations (Abramowitz and Stegun 7.1.26, absolute
// error below 1.5e-7, under float's resolution near 1): PyTorch exports
// GELU as x * (1 + erf(x / sqrt(2))) / 2, and the IR has no erf.
void erf(Context &ctx) {
  Value x = ctx.value(0);
  if (x.dtype() != FLOAT && x.dtype() != HALF)
    ctx.unsupported("Erf of " + x.type().toString() + " is not supported");
  const Value a = ir::abs(x);
  const Value t = ir::inv(a * 0.3275911 + 1.0);
  Value poly = t * 1.061405429 - 1.453152027;
  for (double c : {1.421413741, -0.284496736, 0.254829592})
    poly = poly * t + c;
  poly = poly * t;
  ctx.out(0, ir::sign(x) * (1.0 - poly * ir::exp(-(a * a))));
}

template <OpKind K> void unary(Context &ctx) {
  ctx.out(0, ctx.apply(K, {ctx.in(0)}));
}

} // namespace

void addNnConverters(std::map<std::string, Converter, std::less<>> &t) {
  t["Conv"] = conv;
  t["ConvTranspose"] = convTranspose;
  t["MaxPool"] = [](Context &c) { pool(c, true); };
  t["AveragePool"] = [](Context &c) { pool(c, false); };
  t["GlobalAveragePool"] = [](Context &c) { globalPool(c, false); };
  t["GlobalMaxPool"] = [](Context &c) { globalPool(c, true); };
  t["BatchNormalization"] = batchNormalization;
  t["MatMul"] = matMul;
  t["Gemm"] = gemm;
  t["Softmax"] = [](Context &c) { softmaxLike(c, false); };
  t["LogSoftmax"] = [](Context &c) { softmaxLike(c, true); };
  t["Dropout"] = dropout;
  t["Clip"] = clip;
  t["NegativeLogLikelihoodLoss"] = nllLoss;
  t["SoftmaxCrossEntropyLoss"] = softmaxCrossEntropyLoss;
  t["Relu"] = unary<OpKind::RELU>;
  t["Sigmoid"] = unary<OpKind::SIGMOID>;
  t["Tanh"] = unary<OpKind::TANH>;
  t["Exp"] = unary<OpKind::EXPONENT>;
  t["Log"] = unary<OpKind::LOGARITHM>;
  t["Sqrt"] = unary<OpKind::SQRT>;
  t["Neg"] = unary<OpKind::NEGATE>;
  t["Abs"] = unary<OpKind::ABSOLUTE>;
  t["Reciprocal"] = unary<OpKind::INVERSE>;
  t["Floor"] = unary<OpKind::FLOOR>;
  t["Ceil"] = unary<OpKind::CEIL>;
  t["Sin"] = unary<OpKind::SIN>;
  t["Cos"] = unary<OpKind::COS>;
  t["Sign"] = unary<OpKind::SIGNUM>;
  t["Not"] = unary<OpKind::LOGICAL_NOT>;
  t["Erf"] = erf;
}

} // namespace tessera::onnx::detail
