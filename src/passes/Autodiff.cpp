// Reverse-mode differentiation: one backward sweep over the operations on
// a path from a wanted value to the loss, each adding the operations that
// carry its results' gradients to its operands.
#include "tessera/passes/Autodiff.hpp"

#include <algorithm>
#include <optional>

namespace tessera::passes {

using namespace ir;

Value Gradients::operator[](const Value &v) const {
  for (const auto &[wrt, grad] : entries_)
    if (wrt == v)
      return grad;
  throw IrError("no gradient was computed for " + v.module().describe(v.id()) +
                "; pass it to autodiff among the values to differentiate for");
}

namespace {

// The gradients flowing to one op's operands (unset: none).
using OperandGrads = std::vector<std::optional<Value>>;

// g summed over the dimensions that broadcasting added to reach g's shape
// from `target`. `target` is a copy: callers pass a value's shape, a
// reference into the module's value table, which adding the reduction
// below may reallocate.
Value sumToShape(Value g, const Shape target) {
  if (g.shape() == target)
    return g;
  const std::size_t lead = g.rank() - target.size();
  std::vector<std::int64_t> axes;
  for (std::size_t d = 0; d < g.rank(); ++d)
    if (d < lead || (target[d - lead] == 1 && g.shape()[d] != 1))
      axes.push_back(static_cast<std::int64_t>(d));
  Value r = axes.empty() ? g : reduceSum(g, axes);
  return r.shape() == target ? r : reshape(r, target);
}

// The shape of x reduced over `axes` with the reduced dimensions kept.
Shape keptShape(const Shape &x, const Attributes &attrs) {
  const std::vector<bool> reduced =
      decodeReduceAttrs(attrs).reducedDims(x.size());
  Shape kept = x;
  for (std::size_t d = 0; d < kept.size(); ++d)
    if (reduced[d])
      kept[d] = 1;
  return kept;
}

// [..., 1] from [...]: a per-row gradient lined up with rows of [..., n].
Value perRow(Value g) {
  Shape s = g.shape();
  s.push_back(1);
  return reshape(g, s);
}

class Differentiator {
public:
  explicit Differentiator(Module &m) : m_(m), b_(m) {}
  Gradients run(Value loss, std::vector<Value> wrt);

private:
  Value v(ValueId id) { return {m_, id}; }
  void markActive(const std::vector<Value> &wrt, Value loss);
  void accumulate(ValueId id, Value g);
  void differentiate(std::size_t opIndex);
  OperandGrads rule(const Op &op, const std::vector<Value> &x,
                    const std::vector<Value> &y, const std::vector<Value> &g);
  OperandGrads elementwiseRule(const Op &op, const std::vector<Value> &x,
                               Value y, Value g);
  OperandGrads shapeRule(const Op &op, const std::vector<Value> &x, Value g);
  OperandGrads nnRule(const Op &op, const std::vector<Value> &x,
                      const std::vector<Value> &y, Value g);
  [[noreturn]] void noGradient(const Op &op) const;
  /// \p r, the result of the matmul or convolution just appended, with
  /// \p forward's partials type: the backward pass accumulates as the
  /// forward op does.
  Value partialsLike(const Op &forward, Value r);
  /// Whether operand i of the op being differentiated needs a gradient.
  bool need(std::size_t i) const { return need_[i]; }

  Module &m_;
  Builder b_;
  std::vector<bool> active_;
  std::vector<std::optional<Value>> grads_;
  std::vector<bool> need_;
};

void Differentiator::markActive(const std::vector<Value> &wrt, Value loss) {
  const std::size_t n = m_.numValues();
  std::vector<bool> fromWrt(n, false), toLoss(n, false);
  for (const Value &w : wrt)
    fromWrt[w.id()] = true;
  for (const Op &op : m_.ops()) {
    const bool any = std::any_of(op.operands.begin(), op.operands.end(),
                                 [&](ValueId o) { return fromWrt[o]; });
    for (ValueId r : op.results)
      fromWrt[r] = any && isFloatingPoint(m_.typeOf(r).dtype);
  }
  toLoss[loss.id()] = true;
  for (std::size_t i = m_.ops().size(); i-- > 0;) {
    const Op &op = m_.ops()[i];
    const bool any = std::any_of(op.results.begin(), op.results.end(),
                                 [&](ValueId r) { return toLoss[r]; });
    if (any)
      for (ValueId o : op.operands)
        toLoss[o] = true;
  }
  active_.assign(n, false);
  for (std::size_t i = 0; i < n; ++i)
    active_[i] = fromWrt[i] && toLoss[i] &&
                 isFloatingPoint(m_.typeOf(static_cast<ValueId>(i)).dtype);
}

void Differentiator::accumulate(ValueId id, Value g) {
  TESSERA_INTERNAL_ASSERT(g.type() == m_.typeOf(id),
                          "gradient of " + m_.describe(id) + " has type " +
                              g.type().toString() + ", not " +
                              m_.typeOf(id).toString());
  grads_[id] = grads_[id] ? *grads_[id] + g : g;
}

void Differentiator::noGradient(const Op &op) const {
  std::string operands;
  for (ValueId o : op.operands)
    operands += (operands.empty() ? "" : ", ") + m_.describe(o);
  throw UnsupportedError(
      "autodiff: " + std::string(opKindName(op.kind)) + "(" + operands +
      ") -> " + m_.describe(op.results[0]) +
      " is on the path to the loss but has no gradient; compute the "
      "loss without it or stop the gradient before it");
}

Value Differentiator::partialsLike(const Op &forward, Value r) {
  if (forward.attrs.has(kPartialsType))
    m_.mutableOps()[m_.value(r.id()).def].attrs.set(
        kPartialsType, forward.attrs.getString(kPartialsType));
  return r;
}

void Differentiator::differentiate(std::size_t opIndex) {
  // Copy: rules append ops, which may reallocate the op list.
  const Op op = m_.ops()[opIndex];
  const bool needed =
      std::any_of(op.operands.begin(), op.operands.end(),
                  [&](ValueId o) { return active_[o]; }) &&
      std::any_of(op.results.begin(), op.results.end(),
                  [&](ValueId r) { return active_[r] && grads_[r]; });
  if (!needed)
    return;
  // Backward ops run where the forward op ran.
  Annotations &current = m_.currentAnnotations();
  const Annotations saved = current;
  current = {op.annotations.ipu, op.annotations.pipelineStage, false, true};
  // Backward ops are named after the forward op they differentiate.
  std::string &prefix = m_.currentNamePrefix();
  const std::string savedPrefix = prefix;
  if (const std::string &name = m_.value(op.results[0]).name; !name.empty())
    prefix = name + "/grad";
  std::vector<Value> x, y, g;
  need_.clear();
  for (ValueId o : op.operands) {
    x.push_back(v(o));
    need_.push_back(active_[o]);
  }
  for (ValueId r : op.results) {
    y.push_back(v(r));
    g.push_back(grads_[r] ? *grads_[r] : Value());
  }
  const OperandGrads dx = rule(op, x, y, g);
  for (std::size_t i = 0; i < dx.size(); ++i)
    if (dx[i] && active_[op.operands[i]])
      accumulate(op.operands[i], *dx[i]);
  current = saved;
  prefix = savedPrefix;
}

Gradients Differentiator::run(Value loss, std::vector<Value> wrt) {
  if (wrt.empty())
    for (const Variable &var : m_.variables())
      if (var.trainable)
        wrt.push_back(v(var.value));
  for (const Value &w : wrt) {
    if (&w.module() != &m_)
      throw IrError("autodiff: a value to differentiate for belongs to "
                    "another module");
    if (!isFloatingPoint(w.dtype()))
      throw TypeError("autodiff: " + m_.describe(w.id()) + " is " +
                      w.type().toString() +
                      "; only float and half values have gradients");
  }
  grads_.assign(m_.numValues(), std::nullopt);
  markActive(wrt, loss);
  {
    const Annotations saved = m_.currentAnnotations();
    m_.currentAnnotations() = {std::nullopt, std::nullopt, false, true};
    if (m_.value(loss.id()).kind == ValueKind::OpResult)
      m_.currentAnnotations().ipu = m_.producer(loss.id()).annotations.ipu;
    grads_[loss.id()] = b_.constant({1.0}, loss.shape(), loss.dtype());
    m_.currentAnnotations() = saved;
  }
  const std::size_t forwardOps = m_.ops().size();
  const std::size_t firstNew = m_.numValues();
  grads_.resize(m_.numValues());
  for (std::size_t i = forwardOps; i-- > 0;) {
    differentiate(i);
    grads_.resize(m_.numValues());
  }
  Gradients result;
  for (const Value &w : wrt) {
    Value g = grads_[w.id()] ? *grads_[w.id()]
                             : b_.constant({0.0}, w.shape(), w.dtype());
    // A gradient this pass made is named for its value (replacing the
    // name scope's default); the user's own values keep their names.
    const bool made = g.id() >= firstNew && g.name().rfind("grad/", 0) != 0;
    if (g.name().empty() || made)
      m_.setName(g.id(), "grad/" + (w.name().empty() ? std::to_string(w.id())
                                                     : w.name()));
    result.add(w, g);
  }
  return result;
}

// ---- The rules ------------------------------------------------------------

OperandGrads Differentiator::rule(const Op &op, const std::vector<Value> &x,
                                  const std::vector<Value> &y,
                                  const std::vector<Value> &g) {
  // One case per kind and no default: a kind added to OpKinds.def or
  // Elementwise.def without a gradient rule (or an explicit "none") fails
  // to compile (-Wswitch).
  switch (op.kind) {
#define TESSERA_UNARY(E, n, N, k, g) case OpKind::E:
#define TESSERA_PREDICATE(E, n, N, k) case OpKind::E:
#define TESSERA_BINARY(E, n, N, k, ga, gb) case OpKind::E:
#define TESSERA_COMPARE(E, n, N, k) case OpKind::E:
#include "tessera/ops/Elementwise.def"
    return elementwiseRule(op, x, y[0], g[0]);
  case OpKind::MATMUL:
  case OpKind::RESHAPE:
  case OpKind::TRANSPOSE:
  case OpKind::BROADCAST:
  case OpKind::REDUCE_SUM:
  case OpKind::REDUCE_MEAN:
  case OpKind::REDUCE_MAX:
  case OpKind::CONCAT:
  case OpKind::SLICE:
  case OpKind::PAD:
  case OpKind::CAST:
  case OpKind::GATHER:
  case OpKind::CROSS_REPLICA_SUM:
  case OpKind::CROSS_REPLICA_MEAN:
    return shapeRule(op, x, g[0]);
  case OpKind::BATCH_NORM:
  case OpKind::LAYER_NORM: {
    if (g[1].valid() || g[2].valid())
      throw UnsupportedError(
          "autodiff: the loss depends on the statistics (mean, invStdDev) "
          "of " +
          std::string(opKindName(op.kind)) + " " + m_.describe(y[0].id()) +
          "; only gradients through its output are supported");
    const NormGrads n = op.kind == OpKind::BATCH_NORM
                            ? batchNormGrad(x[0], g[0], y[1], y[2], x[1])
                            : layerNormGrad(x[0], g[0], y[1], y[2], x[1]);
    return {n.dx, n.dgamma, n.dbeta};
  }
  case OpKind::CONV2D:
  case OpKind::MAX_POOL:
  case OpKind::AVG_POOL:
  case OpKind::SOFTMAX:
  case OpKind::LOG_SOFTMAX:
  case OpKind::DROPOUT:
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY:
  case OpKind::CATEGORICAL_CROSS_ENTROPY:
  case OpKind::MEAN_SQUARED_ERROR:
    return nnRule(op, x, y, g[0]);
  // Integer results, and the gradient kinds autodiff itself emits.
  case OpKind::ARGMAX:
  case OpKind::ACCURACY:
  case OpKind::UNARY_GRAD:
  case OpKind::BINARY_GRAD:
  case OpKind::SOFTMAX_GRAD:
  case OpKind::LOG_SOFTMAX_GRAD:
  case OpKind::CONV2D_BACKPROP_INPUT:
  case OpKind::CONV2D_BACKPROP_FILTER:
  case OpKind::MAX_POOL_GRAD:
  case OpKind::AVG_POOL_GRAD:
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY_GRAD:
  case OpKind::BATCH_NORM_GRAD:
  case OpKind::LAYER_NORM_GRAD:
  case OpKind::GATHER_GRAD:
    noGradient(op);
  }
  TESSERA_INTERNAL_ASSERT(false, "op kind out of range: " +
                                     std::to_string(unsigned(op.kind)));
}

OperandGrads Differentiator::elementwiseRule(const Op &op,
                                             const std::vector<Value> &x,
                                             Value y, Value g) {
  if (opClass(op.kind) == OpClass::Unary) {
    if (op.kind == OpKind::NEGATE)
      return {-g};
    if (!unaryDerivative(*unaryOpType(op.kind)).valid())
      noGradient(op);
    return {unaryGrad(op.kind, x[0], y, g)};
  }
  if (opClass(op.kind) != OpClass::Binary)
    noGradient(op);
  const Value a = x[0], b = x[1];
  Value ga, gb;
  switch (op.kind) {
  case OpKind::ADD:
    ga = g, gb = g;
    break;
  case OpKind::SUBTRACT:
    ga = g, gb = need(1) ? -g : Value();
    break;
  case OpKind::MULTIPLY:
    ga = need(0) ? g * b : Value(), gb = need(1) ? g * a : Value();
    break;
  case OpKind::DIVIDE:
    ga = need(0) ? g / b : Value(), gb = need(1) ? -(g * y / b) : Value();
    break;
  default:
    std::tie(ga, gb) = binaryGrad(op.kind, a, b, y, g);
    break;
  }
  OperandGrads r(2);
  if (need(0))
    r[0] = sumToShape(ga, a.shape());
  if (need(1))
    r[1] = sumToShape(gb, b.shape());
  return r;
}

OperandGrads Differentiator::shapeRule(const Op &op,
                                       const std::vector<Value> &x, Value g) {
  const Attributes &at = op.attrs;
  switch (op.kind) {
  case OpKind::MATMUL: {
    const std::vector<std::int64_t> t =
        x[0].rank() == 2 ? std::vector<std::int64_t>{1, 0}
                         : std::vector<std::int64_t>{0, 2, 1};
    OperandGrads r(2);
    if (need(0))
      r[0] = partialsLike(op, matmul(g, transpose(x[1], t)));
    if (need(1))
      r[1] = partialsLike(op, matmul(transpose(x[0], t), g));
    return r;
  }
  case OpKind::RESHAPE:
    return {reshape(g, x[0].shape())};
  case OpKind::TRANSPOSE: {
    const std::vector<std::int64_t> &perm = at.getInts("perm");
    std::vector<std::int64_t> inverse(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i)
      inverse[perm[i]] = static_cast<std::int64_t>(i);
    return {transpose(g, inverse)};
  }
  case OpKind::BROADCAST:
    return {sumToShape(g, x[0].shape())};
  case OpKind::REDUCE_SUM:
  case OpKind::REDUCE_MEAN:
  case OpKind::REDUCE_MAX: {
    const Shape kept = keptShape(x[0].shape(), at);
    Value share = reshape(g, kept);
    if (op.kind == OpKind::REDUCE_MEAN)
      share =
          share * (double(numElements(kept)) /
                   double(std::max<std::size_t>(x[0].type().numElements(), 1)));
    if (op.kind != OpKind::REDUCE_MAX)
      return {broadcast(share, x[0].shape())};
    // Ties share the gradient equally.
    const Value y = reshape(v(op.results[0]), kept);
    const Value mask = cast(eq(x[0], y), x[0].dtype());
    const Value count = reduceSum(mask, decodeReduceAttrs(at).axes, true);
    return {mask * (share / count)};
  }
  case OpKind::CONCAT: {
    const std::size_t ax = static_cast<std::size_t>(
        (at.getInt("axis") + std::int64_t(g.rank())) % std::int64_t(g.rank()));
    OperandGrads r;
    Shape begin(g.rank(), 0), end = g.shape();
    for (std::size_t i = 0; i < x.size(); ++i) {
      end[ax] = begin[ax] + x[i].shape()[ax];
      r.push_back(need(i) ? std::optional<Value>(slice(g, begin, end))
                          : std::nullopt);
      begin[ax] = end[ax];
    }
    return r;
  }
  case OpKind::SLICE: {
    const Shape begin = at.getSizes("begin"), end = at.getSizes("end");
    Shape upper(begin.size());
    for (std::size_t d = 0; d < upper.size(); ++d)
      upper[d] = x[0].shape()[d] - end[d];
    return {pad(g, begin, upper)};
  }
  case OpKind::PAD: {
    const Shape lower = at.getSizes("lower");
    Shape end(lower.size());
    for (std::size_t d = 0; d < end.size(); ++d)
      end[d] = lower[d] + x[0].shape()[d];
    return {slice(g, lower, end)};
  }
  case OpKind::CAST:
    return {cast(g, x[0].dtype())};
  // Replica r's input reaches every replica's output, so its gradient sums
  // (or averages) the output gradients of all replicas.
  case OpKind::CROSS_REPLICA_SUM:
    return {crossReplicaSum(g)};
  case OpKind::CROSS_REPLICA_MEAN:
    return {crossReplicaMean(g)};
  case OpKind::GATHER:
    return {gatherGrad(g, x[1], x[0].shape()[0]), std::nullopt};
  default:
    TESSERA_INTERNAL_ASSERT(false, std::string(opKindName(op.kind)) +
                                       " has no shape rule");
  }
}

OperandGrads Differentiator::nnRule(const Op &op, const std::vector<Value> &x,
                                    const std::vector<Value> &y, Value g) {
  switch (op.kind) {
  case OpKind::CONV2D: {
    const Conv2dOptions o = decodeConv2dOptions(op.attrs);
    const Shape w = x[1].shape(); // a copy: new ops may move the original
    OperandGrads r(2);
    if (need(0))
      r[0] = partialsLike(op, conv2dBackpropInput(g, x[1], o, x[0].shape()));
    if (need(1))
      r[1] =
          partialsLike(op, conv2dBackpropFilter(g, x[0], o,
                                                {static_cast<unsigned>(w[2]),
                                                 static_cast<unsigned>(w[3])}));
    return r;
  }
  case OpKind::MAX_POOL:
    return {maxPoolGrad(x[0], y[0], g, decodePoolOptions(op.attrs))};
  case OpKind::AVG_POOL:
    return {avgPoolGrad(g, decodePoolOptions(op.attrs), x[0].shape())};
  case OpKind::SOFTMAX:
    return {softmaxGrad(y[0], g)};
  case OpKind::LOG_SOFTMAX:
    return {logSoftmaxGrad(y[0], g)};
  case OpKind::DROPOUT: {
    // The mask is a function of the seed and the element index, so the
    // same dropout applied to the gradient multiplies it by the same mask.
    std::vector<Value> in{g};
    if (x.size() == 2)
      in.push_back(x[1]);
    return {apply(OpKind::DROPOUT, in, op.attrs)[0]};
  }
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY:
    return {sparseSoftmaxCrossEntropyGrad(x[0], x[1], g), std::nullopt};
  case OpKind::CATEGORICAL_CROSS_ENTROPY: {
    const Value gr = perRow(g);
    OperandGrads r(2);
    if (need(0))
      r[0] = -(x[1] / x[0]) * gr;
    if (need(1))
      r[1] = -log(x[0]) * gr;
    return r;
  }
  case OpKind::MEAN_SQUARED_ERROR: {
    const double n = double(x[0].shape().back());
    const Value d = (x[0] - x[1]) * perRow(g * (2.0 / n));
    OperandGrads r(2);
    if (need(0))
      r[0] = d;
    if (need(1))
      r[1] = -d;
    return r;
  }
  default:
    TESSERA_INTERNAL_ASSERT(false, std::string(opKindName(op.kind)) +
                                       " has no neural-network rule");
  }
}

} // namespace

Gradients autodiff(Module &module, Value loss, std::vector<Value> wrt) {
  if (&loss.module() != &module)
    throw IrError("autodiff: the loss belongs to another module");
  if (!isFloatingPoint(loss.dtype()))
    throw TypeError("autodiff: the loss " + module.describe(loss.id()) +
                    " is " + loss.type().toString() +
                    "; it must be float or half");
  return Differentiator(module).run(loss, std::move(wrt));
}

bool AutodiffPass::run(Module &module) {
  if (!(options_.lossScaling > 0))
    throw OptionError("autodiff: loss scaling must be positive, not " +
                      std::to_string(options_.lossScaling));
  Value loss(module, module.output(options_.lossOutput));
  if (options_.lossScale) {
    const Value scale(module, *options_.lossScale);
    loss = loss *
           (loss.dtype() == scale.dtype() ? scale : cast(scale, loss.dtype()));
  } else if (options_.lossScaling != 1) {
    loss = loss * options_.lossScaling;
  }
  const Gradients g = autodiff(module, loss);
  for (const auto &[wrt, grad] : g.entries()) {
    module.setGradient(wrt.id(), grad.id());
    if (options_.gradientOutputs)
      module.addOutput("grad/" + wrt.name(), grad.id());
  }
  return !g.entries().empty();
}

} // namespace tessera::passes
