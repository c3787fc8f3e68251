#include "tessera/ir/Builder.hpp"

namespace tessera::ir {

Module &Value::module() const {
  if (!module_)
    throw IrError("the value is empty (default constructed); use a value "
                  "made by a Builder or an operation");
  return *module_;
}

AnnotationScope::AnnotationScope(Module &module)
    : module_(module), saved_(module.currentAnnotations()) {}
AnnotationScope::~AnnotationScope() { module_.currentAnnotations() = saved_; }

NameScope::NameScope(Builder &b, const std::string &name)
    : module_(b.module()), saved_(module_.currentNamePrefix()) {
  std::string &prefix = module_.currentNamePrefix();
  prefix = prefix.empty() ? name : prefix + "/" + name;
}
NameScope::~NameScope() { module_.currentNamePrefix() = saved_; }

ShardScope::ShardScope(Builder &b, unsigned ipu) : AnnotationScope(b.module()) {
  module_.currentAnnotations().ipu = ipu;
}
StageScope::StageScope(Builder &b, unsigned stage)
    : AnnotationScope(b.module()) {
  module_.currentAnnotations().pipelineStage = stage;
}
RecomputeScope::RecomputeScope(Builder &b, bool recompute)
    : AnnotationScope(b.module()) {
  module_.currentAnnotations().recompute = recompute;
}

Value Builder::input(const std::string &name, Type dtype, const Shape &shape) {
  return {*module_, module_->addInput(name, {dtype, shape},
                                      module_->currentAnnotations().ipu)};
}

Value Builder::variable(const std::string &name, const Shape &shape,
                        Initialiser init, Type dtype, bool trainable) {
  return {*module_,
          module_->addVariable(name, {dtype, shape}, std::move(init), trainable,
                               module_->currentAnnotations().ipu)};
}

Value Builder::constant(std::vector<double> values, const Shape &shape,
                        Type dtype, const std::string &name) {
  return {*module_,
          module_->addConstant(name, {dtype, shape}, std::move(values),
                               module_->currentAnnotations().ipu)};
}

Value Builder::scalar(double value, Type dtype) {
  return constant({value}, {}, dtype);
}

Value Builder::value(ValueId id) const {
  (void)module_->value(id);
  return {*module_, id};
}

Value Builder::value(std::string_view name) const {
  std::optional<ValueId> id = module_->findValue(name);
  if (!id)
    throw IrError("module '" + module_->name() + "' has no value named '" +
                  std::string(name) + "'");
  return {*module_, *id};
}

void Builder::output(const std::string &name, Value v) {
  if (&v.module() != module_)
    throw IrError("output '" + name + "': the value belongs to another module");
  module_->addOutput(name, v.id());
}

void Builder::update(Value variable, Value next) {
  if (&variable.module() != module_ || &next.module() != module_)
    throw IrError("update of '" + variable.name() +
                  "': the values belong to another module");
  module_->setUpdate(variable.id(), next.id());
  module_->addOutput("update/" + variable.name(), next.id());
}

std::vector<Value> apply(Module &module, OpKind kind,
                         const std::vector<Value> &operands, Attributes attrs) {
  std::vector<ValueId> ids;
  for (const Value &v : operands) {
    if (&v.module() != &module)
      throw IrError(std::string(opKindName(kind)) + ": operand " +
                    std::to_string(ids.size()) +
                    " belongs to another module; operands of one operation "
                    "must come from the same module");
    ids.push_back(v.id());
  }
  std::vector<Value> results;
  for (ValueId id :
       module.addOp(kind, ids, std::move(attrs), module.currentAnnotations()))
    results.emplace_back(module, id);
  return results;
}

std::vector<Value> apply(OpKind kind, const std::vector<Value> &operands,
                         Attributes attrs) {
  if (operands.empty())
    throw IrError(std::string(opKindName(kind)) +
                  ": without operands the module is unknown; use "
                  "apply(module, ...)");
  return apply(operands[0].module(), kind, operands, std::move(attrs));
}

namespace {

Value one(OpKind kind, const std::vector<Value> &operands,
          Attributes attrs = {}) {
  return apply(kind, operands, std::move(attrs))[0];
}

// A scalar of v's type in v's module, for `x * 2.0`.
Value scalarLike(Value v, double value) {
  Builder b(v.module());
  return b.scalar(value, v.dtype());
}

std::vector<std::int64_t> ints(const Shape &s) {
  return std::vector<std::int64_t>(s.begin(), s.end());
}

} // namespace

#define TESSERA_UNARY(E, n, N, k, g)                                           \
  Value n(Value x) { return one(OpKind::E, {x}); }
#define TESSERA_PREDICATE(E, n, N, k)                                          \
  Value n(Value x) { return one(OpKind::E, {x}); }
#define TESSERA_BINARY(E, n, N, k, ga, gb)                                     \
  Value n(Value a, Value b) { return one(OpKind::E, {a, b}); }                 \
  Value n(Value a, double b) { return one(OpKind::E, {a, scalarLike(a, b)}); } \
  Value n(double a, Value b) { return one(OpKind::E, {scalarLike(b, a), b}); }
#define TESSERA_COMPARE(E, n, N, k)                                            \
  Value n(Value a, Value b) { return one(OpKind::E, {a, b}); }                 \
  Value n(Value a, double b) { return one(OpKind::E, {a, scalarLike(a, b)}); }
#include "tessera/ops/Elementwise.def"

Value matmul(Value a, Value b) { return one(OpKind::MATMUL, {a, b}); }

Value reshape(Value x, const Shape &shape) {
  return one(OpKind::RESHAPE, {x}, {{"shape", ints(shape)}});
}

Value flatten(Value x) {
  const Shape &s = x.shape();
  if (s.empty())
    return reshape(x, {1, 1});
  return reshape(x, {s[0], numElements(s) / std::max<std::size_t>(s[0], 1)});
}

Value transpose(Value x, std::vector<std::int64_t> perm) {
  if (perm.empty())
    for (std::size_t i = x.rank(); i-- > 0;)
      perm.push_back(static_cast<std::int64_t>(i));
  return one(OpKind::TRANSPOSE, {x}, {{"perm", std::move(perm)}});
}

Value broadcast(Value x, const Shape &shape) {
  return one(OpKind::BROADCAST, {x}, {{"shape", ints(shape)}});
}

Value biasAdd(Value x, Value bias, unsigned axis) {
  if (axis >= x.rank() || bias.shape() != Shape{x.shape()[axis]})
    throw ShapeError("biasAdd: the bias " + bias.type().toString() +
                     " must be 1-D with the size of dimension " +
                     std::to_string(axis) + " of the input " +
                     x.type().toString());
  // Trailing ones line the bias up with `axis` under NumPy broadcasting.
  Shape s(x.rank() - axis, 1);
  s[0] = x.shape()[axis];
  return x + reshape(bias, s);
}

Value reduceSum(Value x, std::vector<std::int64_t> axes, bool keepDims) {
  return one(OpKind::REDUCE_SUM, {x},
             encode(ReduceAttrs{std::move(axes), keepDims}));
}
Value reduceMean(Value x, std::vector<std::int64_t> axes, bool keepDims) {
  return one(OpKind::REDUCE_MEAN, {x},
             encode(ReduceAttrs{std::move(axes), keepDims}));
}
Value reduceMax(Value x, std::vector<std::int64_t> axes, bool keepDims) {
  return one(OpKind::REDUCE_MAX, {x},
             encode(ReduceAttrs{std::move(axes), keepDims}));
}

Value concat(const std::vector<Value> &xs, unsigned axis) {
  return one(OpKind::CONCAT, xs, {{"axis", std::int64_t(axis)}});
}

Value slice(Value x, const Shape &begin, const Shape &end) {
  return one(OpKind::SLICE, {x}, {{"begin", ints(begin)}, {"end", ints(end)}});
}

Value pad(Value x, const Shape &lower, const Shape &upper) {
  return one(OpKind::PAD, {x},
             {{"lower", ints(lower)}, {"upper", ints(upper)}});
}

Value cast(Value x, Type dtype) {
  return one(OpKind::CAST, {x}, {{"dtype", std::string(dtypeName(dtype))}});
}

Value crossReplicaSum(Value x) { return one(OpKind::CROSS_REPLICA_SUM, {x}); }
Value crossReplicaMean(Value x) { return one(OpKind::CROSS_REPLICA_MEAN, {x}); }

Value gather(Value table, Value indices) {
  return one(OpKind::GATHER, {table, indices});
}

Value conv2d(Value x, Value w, const Conv2dOptions &options) {
  return one(OpKind::CONV2D, {x, w}, encode(options));
}

Value maxPool(Value x, const PoolOptions &options) {
  return one(OpKind::MAX_POOL, {x}, encode(options));
}
Value avgPool(Value x, const PoolOptions &options) {
  return one(OpKind::AVG_POOL, {x}, encode(options));
}

Value softmax(Value x) { return one(OpKind::SOFTMAX, {x}); }
Value logSoftmax(Value x) { return one(OpKind::LOG_SOFTMAX, {x}); }

Value dropout(Value x, double rate, std::uint64_t seed,
              std::uint32_t seedModifier) {
  return one(OpKind::DROPOUT, {x},
             encode(DropoutAttrs{rate, seed, seedModifier}));
}
Value dropout(Value x, double rate, Value seed, std::uint32_t seedModifier) {
  return one(OpKind::DROPOUT, {x, seed},
             encode(DropoutAttrs{rate, 0, seedModifier}));
}

NormResult batchNorm(Value x, Value gamma, Value beta, double eps) {
  std::vector<Value> r =
      apply(OpKind::BATCH_NORM, {x, gamma, beta}, {{"eps", eps}});
  return {r[0], r[1], r[2]};
}

Value batchNormInference(Value x, Value gamma, Value beta, Value mean,
                         Value variance, double eps) {
  if (x.rank() < 2)
    throw ShapeError("batchNormInference: the input " + x.type().toString() +
                     " must be [N, C, ...]");
  const Shape c{x.shape()[1]};
  for (const Value &p : {gamma, beta, mean, variance})
    if (p.shape() != c)
      throw ShapeError(
          "batchNormInference: " + p.type().toString() +
          " must have one element per channel: " + shapeToString(c));
  // Folding the statistics into one scale and one shift per channel keeps
  // the per-element work to a multiply and an add.
  const Value scale = gamma * rsqrt(variance + eps);
  const Value shift = beta - mean * scale;
  Shape s(x.rank() - 1, 1);
  s[0] = c[0];
  return x * reshape(scale, s) + reshape(shift, s);
}

NormResult layerNorm(Value x, Value gamma, Value beta, double eps) {
  std::vector<Value> r =
      apply(OpKind::LAYER_NORM, {x, gamma, beta}, {{"eps", eps}});
  return {r[0], r[1], r[2]};
}

Value sparseSoftmaxCrossEntropy(Value logits, Value labels) {
  return one(OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY, {logits, labels});
}
Value categoricalCrossEntropy(Value probs, Value targets) {
  return one(OpKind::CATEGORICAL_CROSS_ENTROPY, {probs, targets});
}
Value meanSquaredError(Value pred, Value target) {
  return one(OpKind::MEAN_SQUARED_ERROR, {pred, target});
}
Value argmax(Value x) { return one(OpKind::ARGMAX, {x}); }
Value accuracy(Value logits, Value labels) {
  return one(OpKind::ACCURACY, {logits, labels});
}

Value unaryGrad(OpKind op, Value x, Value y, Value dy) {
  return one(OpKind::UNARY_GRAD, {x, y, dy},
             {{"op", std::string(opKindName(op))}});
}

std::pair<Value, Value> binaryGrad(OpKind op, Value a, Value b, Value y,
                                   Value dy) {
  std::vector<Value> r = apply(OpKind::BINARY_GRAD, {a, b, y, dy},
                               {{"op", std::string(opKindName(op))}});
  return {r[0], r[1]};
}

Value softmaxGrad(Value y, Value dy) {
  return one(OpKind::SOFTMAX_GRAD, {y, dy});
}
Value logSoftmaxGrad(Value y, Value dy) {
  return one(OpKind::LOG_SOFTMAX_GRAD, {y, dy});
}

Value conv2dBackpropInput(Value dy, Value w, const Conv2dOptions &options,
                          const Shape &inputShape) {
  Attributes a = encode(options);
  a.set("inputShape", ints(inputShape));
  return one(OpKind::CONV2D_BACKPROP_INPUT, {dy, w}, std::move(a));
}

Value conv2dBackpropFilter(Value dy, Value x, const Conv2dOptions &options,
                           Pair kernel) {
  Attributes a = encode(options);
  a.set("kernel", std::vector<std::int64_t>{kernel[0], kernel[1]});
  return one(OpKind::CONV2D_BACKPROP_FILTER, {dy, x}, std::move(a));
}

Value maxPoolGrad(Value x, Value y, Value dy, const PoolOptions &options) {
  return one(OpKind::MAX_POOL_GRAD, {x, y, dy}, encode(options));
}

Value avgPoolGrad(Value dy, const PoolOptions &options,
                  const Shape &inputShape) {
  Attributes a = encode(options);
  a.set("inputShape", ints(inputShape));
  return one(OpKind::AVG_POOL_GRAD, {dy}, std::move(a));
}

Value sparseSoftmaxCrossEntropyGrad(Value logits, Value labels, Value dloss) {
  return one(OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY_GRAD,
             {logits, labels, dloss});
}

NormGrads batchNormGrad(Value x, Value dy, Value mean, Value invStdDev,
                        Value gamma) {
  std::vector<Value> r =
      apply(OpKind::BATCH_NORM_GRAD, {x, dy, mean, invStdDev, gamma});
  return {r[0], r[1], r[2]};
}

NormGrads layerNormGrad(Value x, Value dy, Value mean, Value invStdDev,
                        Value gamma) {
  std::vector<Value> r =
      apply(OpKind::LAYER_NORM_GRAD, {x, dy, mean, invStdDev, gamma});
  return {r[0], r[1], r[2]};
}

Value gatherGrad(Value dy, Value indices, std::size_t numRows) {
  return one(OpKind::GATHER_GRAD, {dy, indices},
             {{"numRows", static_cast<std::int64_t>(numRows)}});
}

} // namespace tessera::ir
