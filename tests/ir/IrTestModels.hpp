// Modules shared by the IR tests: one that uses every op kind (for the
// printer, parser and verifier), and a small MLP.
#pragma once

#include "tessera/ir/Builder.hpp"

#include <set>

namespace tessera::test {

/// Adds the convolution and pooling kinds; returns their input image.
inline ir::Value addConvAndPoolOps(ir::Builder &b) {
  using namespace ir;
  Value img = b.input("img", FLOAT, {2, 4, 6, 6});
  Value k = b.variable("k", {6, 2, 3, 3}, init::heNormal(6));
  const Conv2dOptions co{.strides = {2, 1},
                         .padLower = {1, 0},
                         .padUpper = {1, 1},
                         .dilations = {1, 2},
                         .groups = 2};
  Value c = conv2d(img, k, co);
  (void)conv2dBackpropInput(c, k, co, img.shape());
  (void)conv2dBackpropFilter(c, img, co, {3, 3});
  const PoolOptions po{.kernel = {3, 2},
                       .strides = {1, 2},
                       .padLower = {1, 0},
                       .padUpper = {1, 0}};
  Value mp = maxPool(img, po);
  (void)maxPoolGrad(img, mp, mp, po);
  Value ap = avgPool(img, po);
  (void)avgPoolGrad(ap, po, img.shape());
  return img;
}

/// A module with at least one op of every kind, some of them annotated.
inline ir::Module everyOpModule() {
  using namespace ir;
  Module m("every op");
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 3});
  Value pos = b.input("pos", FLOAT, {2, 3});
  Value labels = b.input("labels", INT, {2});
  Value i = b.input("i", INT, {2, 3});
#define TESSERA_UNARY(E, n, N, k, g) (void)n(pos);
#define TESSERA_PREDICATE(E, n, N, k) (void)n(x);
#define TESSERA_BINARY(E, n, N, k, ga, gb) (void)n(pos, x);
#define TESSERA_COMPARE(E, n, N, k) (void)n(x, pos);
#include "tessera/ops/Elementwise.def"
  (void)add(i, i);
  Value w = b.variable("w", {3, 4}, init::glorotUniform(3));
  Value y = matmul(x, w);
  Value bw = b.variable("batched w", {2, 3, 4}, init::uniform(-1, 1, 4));
  (void)matmul(reshape(x, {2, 1, 3}), bw);
  {
    ShardScope s(b, 1);
    auto stage = b.withPipelineStage(0);
    y = transpose(broadcast(reshape(y, {2, 4, 1}), {2, 4, 5}), {2, 0, 1});
    (void)reduceSum(y, {0}, true);
    (void)reduceMean(y, {-1});
    (void)reduceMax(y);
    (void)concat({y, y}, 2);
    (void)slice(y, {1, 0, 0}, {3, 2, 4});
    (void)pad(y, {0, 1, 0}, {1, 0, 2});
    (void)cast(y, INT);
    (void)crossReplicaSum(y);
    (void)crossReplicaMean(y);
  }
  Value table = b.variable("table", {10, 4}, init::normal(0, 0.1, 5));
  Value g = gather(table, i);
  (void)gatherGrad(g, i, 10);
  Value img = addConvAndPoolOps(b);
  {
    RecomputeScope r(b);
    Value sm = softmax(x);
    (void)softmaxGrad(sm, x);
    Value lsm = logSoftmax(x);
    (void)logSoftmaxGrad(lsm, x);
  }
  (void)dropout(x, 0.25, 42, 3);
  (void)dropout(x, 0.5, b.constant({1, 2}, {2}, UNSIGNED_INT), 1);
  Value gam = b.variable("gamma", {4}, init::ones());
  Value bet = b.variable("beta", {4}, init::zeros(), FLOAT, false);
  NormResult bn = batchNorm(img, gam, bet, 1e-3);
  (void)batchNormGrad(img, exp(bn.y), bn.mean, bn.invStdDev, gam);
  Value g3 = b.variable("gamma3", {3}, init::constant(0.5));
  NormResult ln = layerNorm(x, g3, g3, 1e-5);
  (void)layerNormGrad(x, exp(ln.y), ln.mean, ln.invStdDev, g3);
  Value loss = sparseSoftmaxCrossEntropy(x, labels);
  (void)sparseSoftmaxCrossEntropyGrad(x, labels, loss);
  (void)categoricalCrossEntropy(softmax(x), pos);
  (void)meanSquaredError(x, pos);
  (void)argmax(x);
  (void)accuracy(x, labels);
  Value ey = exp(pos);
  (void)unaryGrad(OpKind::EXPONENT, pos, ey, x);
  Value py = pow(pos, x);
  (void)binaryGrad(OpKind::POWER, pos, x, py, py);
  b.output("loss", reduceMean(loss));
  b.output("y", y);
  return m;
}

/// The kinds a module uses.
inline std::set<ir::OpKind> kindsUsed(const ir::Module &m) {
  std::set<ir::OpKind> kinds;
  for (const ir::Op &op : m.ops())
    kinds.insert(op.kind);
  return kinds;
}

} // namespace tessera::test
