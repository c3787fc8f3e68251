/// \file
/// Building modules in C++ that reads like the model:
///
///     ir::Module m("mlp");
///     ir::Builder b(m);
///     Value x = b.input("x", FLOAT, {32, 784});
///     Value w = b.variable("w", {784, 256}, init::glorotUniform(1));
///     Value bias = b.variable("b", {256}, init::zeros());
///     Value y = relu(matmul(x, w) + bias);
///     {
///       ShardScope s(b, 1); // what is built here runs on IPU 1
///       ...
///     }
///
/// A Value is a handle to a value of a module; the free functions and
/// operators below append an operation to the operands' module with the
/// annotations of the enclosing scopes, infer the result's shape and type,
/// and throw ShapeError / TypeError naming the operands and their shapes
/// when they do not fit. Operands of one operation must come from the same
/// module (IrError otherwise).
///
/// Layouts: activations of conv2d and pooling are NCHW; conv2d weights are
/// [Cout, Cin / groups, kH, kW]; a dense layer is matmul(x [b, in],
/// w [in, out]).
#pragma once

#include "tessera/ir/Module.hpp"
#include "tessera/ir/OpAttrs.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera::ir {

/// A value of a module (a cheap handle).
class Value {
public:
  Value() = default;
  Value(Module &module, ValueId id) : module_(&module), id_(id) {}

  bool valid() const { return module_ != nullptr; }
  ValueId id() const { return id_; }
  /// The module; throws IrError for a default-constructed Value.
  Module &module() const;
  const ValueType &type() const { return module().typeOf(id_); }
  Type dtype() const { return type().dtype; }
  const Shape &shape() const { return type().shape; }
  std::size_t rank() const { return shape().size(); }
  const std::string &name() const { return module().value(id_).name; }

  friend bool operator==(const Value &a, const Value &b) {
    return a.module_ == b.module_ && a.id_ == b.id_;
  }

private:
  Module *module_ = nullptr;
  ValueId id_ = 0;
};

class Builder;

/// Sets some of the annotations new operations (and inputs, variables and
/// constants) get, until it is destroyed; scopes nest.
class AnnotationScope {
public:
  AnnotationScope(const AnnotationScope &) = delete;
  AnnotationScope &operator=(const AnnotationScope &) = delete;
  ~AnnotationScope();

protected:
  explicit AnnotationScope(Module &module);
  Module &module_;

private:
  Annotations saved_;
};

/// Operations built in the scope run on IPU \p ipu (a shard).
class ShardScope : public AnnotationScope {
public:
  ShardScope(Builder &b, unsigned ipu);
};
/// Operations built in the scope belong to pipeline stage \p stage.
class StageScope : public AnnotationScope {
public:
  StageScope(Builder &b, unsigned stage);
};
/// Operations built in the scope are recomputed in the backward pass.
class RecomputeScope : public AnnotationScope {
public:
  RecomputeScope(Builder &b, bool recompute = true);
};

/// Operations built in the scope have their results named
/// "<outer scopes>/<name>/<op kind>" (unique), so profiles and the text
/// form show which layer made them: `NameScope s(b, "dense_1");`.
class NameScope {
public:
  NameScope(Builder &b, const std::string &name);
  NameScope(const NameScope &) = delete;
  NameScope &operator=(const NameScope &) = delete;
  ~NameScope();

private:
  Module &module_;
  std::string saved_;
};

/// Creates the leaves of a module (inputs, variables, constants), names
/// outputs and opens annotation scopes.
class Builder {
public:
  explicit Builder(Module &module) : module_(&module) {}
  Module &module() const { return *module_; }

  /// An input fed by the host.
  Value input(const std::string &name, Type dtype, const Shape &shape);
  /// A parameter initialised by \p init.
  Value variable(const std::string &name, const Shape &shape, Initialiser init,
                 Type dtype = FLOAT, bool trainable = true);
  /// A constant of one value per element (or one for all).
  Value constant(std::vector<double> values, const Shape &shape,
                 Type dtype = FLOAT, const std::string &name = "");
  /// A scalar constant (shape []).
  Value scalar(double value, Type dtype = FLOAT);
  /// The value \p id, or the value named \p name (IrError when none is).
  Value value(ValueId id) const;
  Value value(std::string_view name) const;
  /// Names \p v as a result of the module.
  void output(const std::string &name, Value v);
  /// Makes \p next the value \p variable takes after each step: records
  /// the update (Module::setUpdate) and names \p next as the output
  /// "update/<variable>", which keeps it computed and shows it in dumps.
  void update(Value variable, Value next);

  /// Scopes, for `auto s = b.withIpu(2);`.
  [[nodiscard]] ShardScope withIpu(unsigned ipu) { return {*this, ipu}; }
  [[nodiscard]] StageScope withPipelineStage(unsigned stage) {
    return {*this, stage};
  }
  [[nodiscard]] RecomputeScope withRecompute(bool recompute = true) {
    return {*this, recompute};
  }

private:
  Module *module_;
};

/// Appends an operation of any kind to the operands' module (the generic
/// form the named functions use); returns its results.
std::vector<Value> apply(OpKind kind, const std::vector<Value> &operands,
                         Attributes attrs = {});
/// As apply, in \p module (for operations without operands).
std::vector<Value> apply(Module &module, OpKind kind,
                         const std::vector<Value> &operands,
                         Attributes attrs = {});

// ---- Elementwise: one function per row of ops/Elementwise.def -----------
// Binary operations broadcast by NumPy's rules; both operands must have the
// same type; comparisons and predicates give BOOL.
#define TESSERA_UNARY(E, n, N, k, g) Value n(Value x);
#define TESSERA_PREDICATE(E, n, N, k) Value n(Value x);
#define TESSERA_BINARY(E, n, N, k, ga, gb)                                     \
  Value n(Value a, Value b);                                                   \
  Value n(Value a, double b);                                                  \
  Value n(double a, Value b);
#define TESSERA_COMPARE(E, n, N, k)                                            \
  Value n(Value a, Value b);                                                   \
  Value n(Value a, double b);
#include "tessera/ops/Elementwise.def"

inline Value operator+(Value a, Value b) { return add(a, b); }
inline Value operator-(Value a, Value b) { return sub(a, b); }
inline Value operator*(Value a, Value b) { return mul(a, b); }
inline Value operator/(Value a, Value b) { return div(a, b); }
inline Value operator+(Value a, double b) { return add(a, b); }
inline Value operator-(Value a, double b) { return sub(a, b); }
inline Value operator*(Value a, double b) { return mul(a, b); }
inline Value operator/(Value a, double b) { return div(a, b); }
inline Value operator+(double a, Value b) { return add(a, b); }
inline Value operator-(double a, Value b) { return sub(a, b); }
inline Value operator*(double a, Value b) { return mul(a, b); }
inline Value operator/(double a, Value b) { return div(a, b); }
inline Value operator-(Value a) { return neg(a); }

// ---- Shapes and data movement ------------------------------------------

/// [m, k] x [k, n] -> [m, n], or batched [g, m, k] x [g, k, n] -> [g, m, n].
Value matmul(Value a, Value b);
/// The same elements in another shape (same element count).
Value reshape(Value x, const Shape &shape);
/// [d0, d1 * d2 * ...] (a scalar or vector becomes [1, n] / [n, 1]).
Value flatten(Value x);
/// Result dimension i is operand dimension perm[i]; empty: reversed.
Value transpose(Value x, std::vector<std::int64_t> perm = {});
/// \p x broadcast to \p shape by NumPy's rules.
Value broadcast(Value x, const Shape &shape);
/// x + bias along \p axis (bias is 1-D of x's size there): axis 1 is the
/// channels of NCHW activations and the features of [b, n] ones.
Value biasAdd(Value x, Value bias, unsigned axis = 1);
/// Reductions over \p axes (empty: all); \p keepDims keeps them as size 1.
Value reduceSum(Value x, std::vector<std::int64_t> axes = {},
                bool keepDims = false);
Value reduceMean(Value x, std::vector<std::int64_t> axes = {},
                 bool keepDims = false);
Value reduceMax(Value x, std::vector<std::int64_t> axes = {},
                bool keepDims = false);
/// Joins \p xs along \p axis.
Value concat(const std::vector<Value> &xs, unsigned axis);
/// Elements [begin[d], end[d]) of each dimension d.
Value slice(Value x, const Shape &begin, const Shape &end);
/// Zeros added: lower[d] before and upper[d] after dimension d.
Value pad(Value x, const Shape &lower, const Shape &upper);
/// Converted to \p dtype (float to integer truncates toward zero).
Value cast(Value x, Type dtype);
/// The elementwise sum (or mean, float and half only) of \p x over the
/// replicas of a replicated graph: every replica gets the same result. On
/// an unreplicated graph, and in the interpreter (which runs one replica),
/// both are the identity.
Value crossReplicaSum(Value x);
Value crossReplicaMean(Value x);
/// Rows of \p table ([V, ...]) picked by \p indices (INT or UNSIGNED_INT,
/// any shape): indices.shape + table.shape[1:]. An index outside [0, V)
/// gives a row of zeros (an embedding lookup).
Value gather(Value table, Value indices);

// ---- Convolution and pooling -------------------------------------------
// (options: Conv2dOptions and PoolOptions, OpAttrs.hpp)

/// x [N, Cin, H, W] convolved with w [Cout, Cin / groups, kH, kW]:
/// [N, Cout, H', W'], H' = (H + padLower + padUpper - (kH - 1) * dilation
/// - 1) / stride + 1 (rounded down), likewise W'.
Value conv2d(Value x, Value w, const Conv2dOptions &options = {});

/// Max and average pooling of x [N, C, H, W]: padding never wins a max
/// and is not counted in an average.
Value maxPool(Value x, const PoolOptions &options = {});
Value avgPool(Value x, const PoolOptions &options = {});

// ---- Neural-network operations -----------------------------------------

/// Softmax and log-softmax over the last axis.
Value softmax(Value x);
Value logSoftmax(Value x);
/// x * mask / (1 - rate) where each mask element is 1 with probability
/// 1 - rate, drawn from the counter-based generator (ops/Random.hpp) with
/// \p seed (or the UNSIGNED_INT[2] seed tensor \p seed) and
/// \p seedModifier: the same mask for the same seed, modifier and shape.
Value dropout(Value x, double rate, std::uint64_t seed,
              std::uint32_t seedModifier = 0);
Value dropout(Value x, double rate, Value seed, std::uint32_t seedModifier = 0);

/// A normalisation's results: the output, and the mean and 1 / sqrt(var +
/// eps) it used (biased variance).
struct NormResult {
  Value y, mean, invStdDev;
};
/// Batch normalisation in training: statistics per channel (axis 1) of x
/// [N, C, ...] over every other axis; gamma, beta [C]; mean, invStdDev [C].
NormResult batchNorm(Value x, Value gamma, Value beta, double eps = 1e-3);
/// Batch normalisation in inference: (x - mean) / sqrt(variance + eps) *
/// gamma + beta per channel (axis 1), from elementwise operations.
Value batchNormInference(Value x, Value gamma, Value beta, Value mean,
                         Value variance, double eps = 1e-3);
/// Layer normalisation over the last axis of x [..., D]; gamma, beta [D];
/// mean and invStdDev have one element per row (x's shape without its
/// last axis).
NormResult layerNorm(Value x, Value gamma, Value beta, double eps = 1e-5);

// ---- Losses and metrics ------------------------------------------------

/// Per row of logits [b, n]: -log(softmax(logits)[label]) for labels [b]
/// (INT or UNSIGNED_INT); a label outside [0, n) gives 0. Result [b].
Value sparseSoftmaxCrossEntropy(Value logits, Value labels);
/// -sum(targets * log(probs)) over the last axis: [...] from [..., n].
Value categoricalCrossEntropy(Value probs, Value targets);
/// mean((pred - target)^2) over the last axis: [...] from [..., n].
Value meanSquaredError(Value pred, Value target);
/// The index of the largest element over the last axis (the first among
/// equal ones), as INT: [...] from [..., n].
Value argmax(Value x);
/// The fraction of rows of logits [b, n] whose argmax equals the label
/// (labels [b], INT or UNSIGNED_INT; out-of-range labels never match): a
/// FLOAT scalar.
Value accuracy(Value logits, Value labels);

// ---- Gradient operations (what autodiff emits) -------------------------

/// dy * d(op)/dx at x, y = op(x), for a unary elementwise kind.
Value unaryGrad(OpKind op, Value x, Value y, Value dy);
/// (dy * d(op)/da, dy * d(op)/db) at a, b, y = op(a, b), in y's shape.
std::pair<Value, Value> binaryGrad(OpKind op, Value a, Value b, Value y,
                                   Value dy);
/// The input gradients of softmax and logSoftmax from their output y.
Value softmaxGrad(Value y, Value dy);
Value logSoftmaxGrad(Value y, Value dy);
/// The input gradient of conv2d(x, w, options) for x of \p inputShape.
Value conv2dBackpropInput(Value dy, Value w, const Conv2dOptions &options,
                          const Shape &inputShape);
/// The weights gradient of conv2d(x, w, options) for a \p kernel sized w.
Value conv2dBackpropFilter(Value dy, Value x, const Conv2dOptions &options,
                           Pair kernel);
/// The input gradients of maxPool (to each window's first maximum) and
/// avgPool (spread over the window's input elements).
Value maxPoolGrad(Value x, Value y, Value dy, const PoolOptions &options);
Value avgPoolGrad(Value dy, const PoolOptions &options,
                  const Shape &inputShape);
/// (softmax(logits) - onehot(labels)) * dloss per row (0 for masked rows).
Value sparseSoftmaxCrossEntropyGrad(Value logits, Value labels, Value dloss);
/// A normalisation's gradients: dx, dgamma, dbeta.
struct NormGrads {
  Value dx, dgamma, dbeta;
};
NormGrads batchNormGrad(Value x, Value dy, Value mean, Value invStdDev,
                        Value gamma);
NormGrads layerNormGrad(Value x, Value dy, Value mean, Value invStdDev,
                        Value gamma);
/// The table gradient of gather: [numRows, ...] with dy's rows added at
/// their indices (out-of-range indices skipped).
Value gatherGrad(Value dy, Value indices, std::size_t numRows);

} // namespace tessera::ir
