// Autodiff: every differentiable op kind's gradient agrees with central
// finite differences of the double-precision interpreter, and the backward
// ops it adds are annotated, named and verifiable.
#include "GradientCheck.hpp"

#include "tessera/ir/Text.hpp"
#include "tessera/ir/Verifier.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>

using namespace tessera;
using namespace tessera::ir;
using ::testing::HasSubstr;

namespace {

// Builds a one-op module for a kind: inputs with feeds, and a scalar loss
// sum(y * R) for a fixed random R, so that every output element has its
// own weight in the loss.
class CaseBuilder {
public:
  CaseBuilder(Module &m, Feeds &feeds) : b_(m), feeds_(feeds) {}
  Value input(const std::string &name, const Shape &shape, double lo = -1,
              double hi = 1) {
    feeds_[name] = {FLOAT, shape,
                    test::testValues(numElements(shape), ++seed_, lo, hi)};
    return b_.input(name, FLOAT, shape);
  }
  Value indices(const std::vector<double> &v, const Shape &shape) {
    return b_.constant(v, shape, INT);
  }
  void finish(Value y) {
    const Value r = b_.constant(test::testValues(y.type().numElements(), 99),
                                y.shape(), y.dtype());
    b_.output("loss", reduceSum(y * r));
  }

private:
  Builder b_;
  Feeds &feeds_;
  std::uint64_t seed_ = 0;
};

// Domains where the unary op is smooth and finite.
std::pair<double, double> unaryDomain(OpKind k) {
  switch (k) {
  case OpKind::LOGARITHM:
  case OpKind::LOGARITHM_ONE_PLUS:
  case OpKind::SQRT:
  case OpKind::RSQRT:
  case OpKind::INVERSE:
    return {0.5, 2};
  default:
    return {-1, 1};
  }
}

bool buildBinaryCase(OpKind k, CaseBuilder &c) {
  // b broadcasts along the rows, so the sum back to its shape is checked.
  Value a = k == OpKind::POWER       ? c.input("a", {2, 3}, 0.5, 2)
            : k == OpKind::REMAINDER ? c.input("a", {2, 3}, -3, 3)
                                     : c.input("a", {2, 3});
  Value b = k == OpKind::DIVIDE || k == OpKind::REMAINDER
                ? c.input("b", {3}, 0.7, 1.3)
                : c.input("b", {3});
  c.finish(apply(k, {a, b})[0]);
  return true;
}

bool buildShapeCase(OpKind k, CaseBuilder &c) {
  switch (k) {
  case OpKind::MATMUL:
    c.finish(matmul(c.input("a", {2, 3}), c.input("b", {3, 4})));
    return true;
  case OpKind::RESHAPE:
    c.finish(reshape(c.input("x", {2, 3}), {3, 2}));
    return true;
  case OpKind::TRANSPOSE:
    c.finish(transpose(c.input("x", {2, 3, 4}), {2, 0, 1}));
    return true;
  case OpKind::BROADCAST:
    c.finish(broadcast(c.input("x", {3, 1}), {2, 3, 4}));
    return true;
  case OpKind::REDUCE_SUM:
    c.finish(reduceSum(c.input("x", {2, 3, 4}), {0, 2}));
    return true;
  case OpKind::REDUCE_MEAN:
    c.finish(reduceMean(c.input("x", {2, 3, 4}), {1}, true));
    return true;
  case OpKind::REDUCE_MAX:
    c.finish(reduceMax(c.input("x", {2, 3, 4}), {-1}));
    return true;
  case OpKind::CONCAT:
    c.finish(concat({c.input("a", {2, 3}), c.input("b", {2, 2})}, 1));
    return true;
  case OpKind::SLICE:
    c.finish(slice(c.input("x", {3, 4}), {1, 1}, {3, 3}));
    return true;
  case OpKind::PAD:
    c.finish(pad(c.input("x", {2, 3}), {1, 0}, {0, 2}));
    return true;
  case OpKind::CAST:
    c.finish(cast(c.input("x", {2, 3}), HALF));
    return true;
  case OpKind::GATHER:
    c.finish(
        gather(c.input("table", {5, 3}), c.indices({4, 0, -1, 4}, {2, 2})));
    return true;
  case OpKind::CROSS_REPLICA_SUM: // one replica: the identity's gradient
    c.finish(crossReplicaSum(c.input("x", {2, 3})));
    return true;
  case OpKind::CROSS_REPLICA_MEAN:
    c.finish(crossReplicaMean(c.input("x", {2, 3})));
    return true;
  default:
    return false;
  }
}

bool buildNnCase(OpKind k, CaseBuilder &c) {
  const PoolOptions po{.kernel = {3, 2},
                       .strides = {2, 1},
                       .padLower = {1, 0},
                       .padUpper = {0, 1}};
  switch (k) {
  case OpKind::CONV2D:
    c.finish(conv2d(c.input("x", {2, 4, 5, 5}), c.input("w", {6, 2, 3, 3}),
                    {.strides = {2, 1},
                     .padLower = {1, 0},
                     .padUpper = {0, 1},
                     .dilations = {1, 2},
                     .groups = 2}));
    return true;
  case OpKind::MAX_POOL:
    c.finish(maxPool(c.input("x", {1, 2, 5, 5}), po));
    return true;
  case OpKind::AVG_POOL:
    c.finish(avgPool(c.input("x", {1, 2, 5, 5}), po));
    return true;
  case OpKind::SOFTMAX:
    c.finish(softmax(c.input("x", {3, 4})));
    return true;
  case OpKind::LOG_SOFTMAX:
    c.finish(logSoftmax(c.input("x", {3, 4})));
    return true;
  case OpKind::DROPOUT:
    c.finish(dropout(c.input("x", {4, 5}), 0.3, 5));
    return true;
  case OpKind::BATCH_NORM:
    c.finish(batchNorm(c.input("x", {3, 2, 2, 2}), c.input("g", {2}, 0.5, 2),
                       c.input("b", {2}), 1e-3)
                 .y);
    return true;
  case OpKind::LAYER_NORM:
    c.finish(layerNorm(c.input("x", {3, 4}), c.input("g", {4}, 0.5, 2),
                       c.input("b", {4}), 1e-3)
                 .y);
    return true;
  case OpKind::SPARSE_SOFTMAX_CROSS_ENTROPY:
    c.finish(sparseSoftmaxCrossEntropy(c.input("logits", {4, 3}),
                                       c.indices({2, 0, 5, 1}, {4})));
    return true;
  case OpKind::CATEGORICAL_CROSS_ENTROPY:
    c.finish(categoricalCrossEntropy(c.input("p", {3, 4}, 0.1, 1),
                                     c.input("t", {3, 4}, 0, 1)));
    return true;
  case OpKind::MEAN_SQUARED_ERROR:
    c.finish(meanSquaredError(c.input("a", {3, 4}), c.input("b", {3, 4})));
    return true;
  default:
    return false;
  }
}

// Builds the gradient check case for \p k; false for kinds that have no
// gradient.
bool buildCase(OpKind k, Module &m, Feeds &feeds) {
  CaseBuilder c(m, feeds);
  switch (opClass(k)) {
  case OpClass::Unary: {
    if (!unaryDerivative(*unaryOpType(k)).valid())
      return false;
    const auto [lo, hi] = unaryDomain(k);
    c.finish(apply(k, {c.input("x", {2, 3}, lo, hi)})[0]);
    return true;
  }
  case OpClass::Binary:
    return buildBinaryCase(k, c);
  case OpClass::Predicate:
  case OpClass::Compare:
    return false;
  case OpClass::Other:
    return buildShapeCase(k, c) || buildNnCase(k, c);
  }
  return false;
}

} // namespace

TEST(Autodiff, EveryDifferentiableKindAgreesWithFiniteDifferences) {
  std::set<std::string> notDifferentiable;
  for (unsigned i = 0; i < numOpKinds; ++i) {
    const auto k = static_cast<OpKind>(i);
    Module m;
    Feeds feeds;
    if (!buildCase(k, m, feeds)) {
      notDifferentiable.insert(std::string(opKindName(k)));
      continue;
    }
    SCOPED_TRACE(std::string(opKindName(k)));
    const std::size_t checked = test::checkGradients(m, feeds);
    EXPECT_GT(checked, 0u);
    EXPECT_NO_THROW(verify(m));
  }
  // What has no gradient: BOOL and INT results, and the gradient kinds.
  EXPECT_EQ(notDifferentiable,
            (std::set<std::string>{"geluGrad",
                                   "logicalNot",
                                   "isFinite",
                                   "eq",
                                   "neq",
                                   "lt",
                                   "lteq",
                                   "gt",
                                   "gteq",
                                   "logicalAnd",
                                   "logicalOr",
                                   "argmax",
                                   "accuracy",
                                   "unaryGrad",
                                   "binaryGrad",
                                   "softmaxGrad",
                                   "logSoftmaxGrad",
                                   "conv2dBackpropInput",
                                   "conv2dBackpropFilter",
                                   "maxPoolGrad",
                                   "avgPoolGrad",
                                   "sparseSoftmaxCrossEntropyGrad",
                                   "batchNormGrad",
                                   "layerNormGrad",
                                   "gatherGrad"}));
}

TEST(Autodiff, BatchedMatmulAndComposedOpsAgreeWithFiniteDifferences) {
  Module m;
  Feeds feeds;
  CaseBuilder c(m, feeds);
  Value a = c.input("a", {2, 3, 4});
  Value b = c.input("b", {2, 4, 2});
  Value x = c.input("x", {2, 3});
  Value gamma = c.input("gamma", {3}, 0.5, 2);
  Builder bld(m);
  Value bn = batchNormInference(x, gamma, bld.constant({0.1, 0.2, 0.3}, {3}),
                                bld.constant({0.5, -0.5, 0}, {3}),
                                bld.constant({1, 2, 3}, {3}));
  // x used three times: its gradients add up.
  Value y =
      reshape(matmul(a, b), {2, 6}) * reduceSum(x * x, {1}, true) +
      reduceSum(biasAdd(matmul(bn, transpose(x)), bld.constant({1, -1}, {2})),
                {1}, true);
  c.finish(y);
  EXPECT_EQ(test::checkGradients(m, feeds), 24u + 16u + 6u + 3u);
}

TEST(Autodiff, MlpWithSoftmaxCrossEntropy) {
  Module m;
  Feeds feeds;
  CaseBuilder c(m, feeds);
  Builder b(m);
  Value x = c.input("x", {4, 5});
  Value w1 = c.input("w1", {5, 6});
  Value b1 = c.input("b1", {6});
  Value w2 = c.input("w2", {6, 3});
  Value labels = b.constant({0, 2, 1, 2}, {4}, INT);
  Value logits = matmul(tanh(matmul(x, w1) + b1), w2);
  b.output("loss", reduceMean(sparseSoftmaxCrossEntropy(logits, labels)));
  EXPECT_EQ(test::checkGradients(m, feeds), 20u + 30u + 6u + 18u);
}

TEST(Autodiff, DefaultsToTrainableVariablesAndNamesGradients) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 3});
  Value w = b.variable("w", {3, 2}, init::glorotUniform(1));
  Value frozen = b.variable("frozen", {2}, init::ones(), FLOAT, false);
  Value unused = b.variable("unused", {4}, init::ones());
  Value loss = reduceSum(matmul(x, w) * frozen);
  passes::Gradients g = passes::autodiff(m, loss);
  ASSERT_EQ(g.entries().size(), 2u);
  EXPECT_EQ(g[w].name(), "grad/w");
  EXPECT_EQ(g[w].type(), w.type());
  EXPECT_THROW(g[frozen], IrError);
  // A variable the loss does not depend on gets a zero gradient.
  Evaluation e = interpret(m, {{"x", {FLOAT, {2, 3}, {1, 2, 3, 4, 5, 6}}}});
  EXPECT_EQ(e[g[unused]].values, std::vector<double>(4, 0.0));
  // d/dw of sum(x w 1) is x^T 1: column sums of x in every column.
  EXPECT_EQ(e[g[w]].values, (std::vector<double>{5, 5, 7, 7, 9, 9}));
  verify(m);
}

TEST(Autodiff, BackwardOpsAreNamedAfterTheirForwardOps) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 3});
  Value w = b.variable("w", {3, 2}, init::glorotUniform(1));
  Value loss;
  {
    NameScope s(b, "dense");
    loss = reduceSum(relu(matmul(x, w)));
  }
  passes::Gradients g = passes::autodiff(m, loss);
  // The weight's gradient keeps its conventional name; the ops on the way
  // carry the forward op's name.
  EXPECT_EQ(g[w].name(), "grad/w");
  bool reluGrad = false;
  for (ValueId id = 0; id < m.numValues(); ++id)
    reluGrad |= m.value(id).name.rfind("dense/relu/grad/", 0) == 0;
  EXPECT_TRUE(reluGrad);
  EXPECT_EQ(m.producer(g[w].id()).kind, OpKind::MATMUL);
}

TEST(Autodiff, BackwardOpsRunWhereTheirForwardOpsRan) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 2});
  Value w0 = b.variable("w0", {2, 2}, init::ones());
  Value w1 = b.variable("w1", {2, 2}, init::ones());
  Value h, y;
  {
    ShardScope s(b, 0);
    StageScope st(b, 0);
    h = relu(matmul(x, w0));
  }
  {
    ShardScope s(b, 1);
    StageScope st(b, 1);
    y = reduceSum(sigmoid(matmul(h, w1)));
  }
  const std::size_t forward = m.ops().size();
  passes::Gradients g = passes::autodiff(m, y);
  ASSERT_GT(m.ops().size(), forward);
  for (std::size_t i = forward; i < m.ops().size(); ++i) {
    const Op &op = m.ops()[i];
    EXPECT_TRUE(op.annotations.backward) << i;
    ASSERT_TRUE(op.annotations.ipu.has_value()) << opKindName(op.kind);
    EXPECT_EQ(op.annotations.ipu, op.annotations.pipelineStage);
  }
  EXPECT_EQ(m.producer(g[w0].id()).annotations.ipu, 0u);
  EXPECT_EQ(m.producer(g[w1].id()).annotations.ipu, 1u);
  EXPECT_NO_THROW(verify(m, {.numIpus = 2}));
  // The module with its backward pass still prints and parses.
  EXPECT_EQ(print(parse(print(m))), print(m));
}

TEST(Autodiff, OpsWithoutGradientsOnThePathAreReported) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 3});
  Value labels = b.input("labels", INT, {2});
  try {
    passes::autodiff(m, accuracy(x, labels), {x});
    FAIL();
  } catch (const UnsupportedError &e) {
    EXPECT_THAT(e.what(), HasSubstr("autodiff: accuracy('x', 'labels') -> %2 "
                                    "is on the path to the loss but has no "
                                    "gradient"));
  }
  // An integer value carries no gradient, so argmax cuts the path.
  Value viaArgmax = reduceSum(cast(argmax(x), FLOAT));
  passes::Gradients g = passes::autodiff(m, viaArgmax, {x});
  EXPECT_EQ(m.value(g[x].id()).kind, ValueKind::Constant);
  EXPECT_THROW(passes::autodiff(m, reduceSum(x), {labels}), TypeError);
  EXPECT_THROW(passes::autodiff(m, labels, {x}), TypeError);
  NormResult bn =
      batchNorm(x, b.input("g", FLOAT, {3}), b.input("be", FLOAT, {3}));
  EXPECT_THROW(passes::autodiff(m, reduceSum(bn.mean), {x}), UnsupportedError);
}

TEST(Autodiff, PassManagerRunsTheAutodiffPassAndVerifies) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 2});
  Value w = b.variable("w", {2, 2}, init::ones());
  b.output("loss", reduceMean(square(matmul(x, w))));
  std::ostringstream dump;
  passes::PassManagerOptions options;
  options.dump = &dump;
  passes::PassManager pm(options);
  pm.add(std::make_unique<passes::AutodiffPass>(
      passes::AutodiffOptions{.gradientOutputs = true}));
  EXPECT_TRUE(pm.run(m));
  EXPECT_NO_THROW(m.output("grad/w"));
  ASSERT_TRUE(m.gradientOf(w.id()));
  EXPECT_EQ(*m.gradientOf(w.id()), m.output("grad/w"));
  EXPECT_THAT(dump.str(), HasSubstr("gradient %w = %grad/w"));
  EXPECT_THAT(dump.str(), HasSubstr("# after autodiff\nmodule {"));
  EXPECT_THAT(dump.str(), HasSubstr("output \"grad/w\" = %grad/w"));

  // A pass that breaks the module is named by the verifier's error.
  struct Breaker : passes::Pass {
    std::string_view name() const override { return "breaker"; }
    bool run(Module &mod) override {
      mod.mutableOps()[0].operands[0] = mod.ops().back().results[0];
      return true;
    }
  };
  passes::PassManager broken;
  broken.add(std::make_unique<Breaker>());
  try {
    broken.run(m);
    FAIL();
  } catch (const IrError &e) {
    EXPECT_THAT(e.what(), HasSubstr("does not verify after pass 'breaker'"));
  }
}
