// The double-precision host interpreter: values it computes by hand-checked
// examples, and its handling of feeds.
#include "IrTestModels.hpp"

#include "tessera/ir/Interpreter.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace tessera;
using namespace tessera::ir;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Interpreter, DenseLayerWithBroadcastBias) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 2});
  Value w = b.variable("w", {2, 3}, init::values({1, 2, 3, 4, 5, 6}));
  Value bias = b.variable("b", {3}, init::values({0.5, -100, 0}));
  b.output("y", relu(matmul(x, w) + bias));
  Evaluation e = interpret(m, {{"x", {FLOAT, {2, 2}, {1, 0, 1, -1}}}});
  // [1 0] W = [1 2 3]; [1 -1] W = [-3 -3 -3].
  EXPECT_THAT(e.output("y").values, ElementsAre(1.5, 0, 3, 0, 0, 0));
  EXPECT_EQ(e.output("y").shape, (Shape{2, 3}));
  EXPECT_THAT(e[w].values, ElementsAre(1, 2, 3, 4, 5, 6));
  // A feed overrides a variable's initial value.
  Evaluation e2 = interpret(m, {{"x", {FLOAT, {2, 2}, {1, 0, 1, -1}}},
                                {"b", {FLOAT, {3}, {0, 0, 0}}}});
  EXPECT_THAT(e2.output("y").values, ElementsAre(1, 2, 3, 0, 0, 0));
}

TEST(Interpreter, FeedsAreChecked) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2});
  b.output("y", -x);
  EXPECT_THROW(interpret(m), IrError);
  try {
    interpret(m, {{"x", {FLOAT, {3}, {1, 2, 3}}}});
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("feed for 'x' has shape [3] and 3 values "
                                    "but the value is float[2]"));
  }
  EXPECT_THROW(interpret(m, {{"x", {INT, {2}, {1, 2}}}}), TypeError);
  EXPECT_THROW(
      interpret(m, {{"x", {FLOAT, {2}, {1, 2}}}, {"z", {FLOAT, {2}, {1, 2}}}}),
      IrError);
}

TEST(Interpreter, SoftmaxCrossEntropyAndAccuracy) {
  Module m;
  Builder b(m);
  Value logits = b.input("logits", FLOAT, {3, 3});
  Value labels = b.input("labels", INT, {3});
  b.output("loss", sparseSoftmaxCrossEntropy(logits, labels));
  b.output("acc", accuracy(logits, labels));
  b.output("p", softmax(logits));
  b.output("lp", logSoftmax(logits));
  b.output("arg", argmax(logits));
  // The third row's label is masked (out of range).
  Evaluation e =
      interpret(m, {{"logits", {FLOAT, {3, 3}, {1, 2, 3, 1000, 0, 0, 0, 0, 5}}},
                    {"labels", {INT, {3}, {2, 1, 7}}}});
  const double lse = std::log(std::exp(-2.0) + std::exp(-1.0) + 1.0);
  EXPECT_THAT(e.output("loss").values,
              ElementsAre(DoubleNear(lse, 1e-12), DoubleNear(1000, 1e-9), 0));
  EXPECT_THAT(e.output("acc").values, ElementsAre(DoubleNear(1.0 / 3, 1e-15)));
  EXPECT_THAT(e.output("arg").values, ElementsAre(2, 0, 2));
  EXPECT_EQ(e.output("arg").dtype, INT);
  double sum = 0;
  for (int i = 0; i < 3; ++i)
    sum += e.output("p").values[i];
  EXPECT_NEAR(sum, 1.0, 1e-15);
  EXPECT_NEAR(e.output("lp").values[2], -lse, 1e-12);
  EXPECT_NEAR(e.output("p").values[3], 1.0, 1e-15); // no overflow at 1000
}

TEST(Interpreter, ReductionsSlicesAndCasts) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 3});
  b.output("sum0", reduceSum(x, {0}));
  b.output("mean1", reduceMean(x, {1}, true));
  b.output("max", reduceMax(x));
  b.output("t", transpose(x));
  b.output("s", slice(x, {0, 1}, {2, 3}));
  b.output("p", pad(x, {1, 0}, {0, 1}));
  b.output("c", concat({x, x}, 0));
  b.output("i", cast(x, INT));
  b.output("bc", broadcast(reduceSum(x, {1}, true), {2, 3}));
  b.output("idiv", div(cast(x, INT), cast(x * 0.0 + 2.0, INT)));
  Evaluation e = interpret(m, {{"x", {FLOAT, {2, 3}, {1, -2.5, 3, 4, 5, -6}}}});
  EXPECT_THAT(e.output("sum0").values, ElementsAre(5, 2.5, -3));
  EXPECT_EQ(e.output("mean1").shape, (Shape{2, 1}));
  EXPECT_THAT(e.output("mean1").values, ElementsAre(0.5, 1));
  EXPECT_THAT(e.output("max").values, ElementsAre(5));
  EXPECT_THAT(e.output("t").values, ElementsAre(1, 4, -2.5, 5, 3, -6));
  EXPECT_THAT(e.output("s").values, ElementsAre(-2.5, 3, 5, -6));
  EXPECT_THAT(e.output("p").values,
              ElementsAre(0, 0, 0, 0, 1, -2.5, 3, 0, 4, 5, -6, 0));
  EXPECT_EQ(e.output("c").shape, (Shape{4, 3}));
  EXPECT_THAT(e.output("i").values, ElementsAre(1, -2, 3, 4, 5, -6));
  EXPECT_THAT(e.output("bc").values, ElementsAre(1.5, 1.5, 1.5, 3, 3, 3));
  // Integer division truncates as the int type does.
  EXPECT_THAT(e.output("idiv").values, ElementsAre(0, -1, 1, 2, 2, -3));
}

TEST(Interpreter, DropoutKeepsTheExpectedShareAndScales) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {10000});
  b.output("a", dropout(x, 0.25, 7));
  b.output("b", dropout(x, 0.25, 7));
  b.output("c", dropout(x, 0.25, 8));
  Evaluation e =
      interpret(m, {{"x", {FLOAT, {10000}, std::vector<double>(10000, 3.0)}}});
  std::size_t kept = 0;
  for (double v : e.output("a").values) {
    EXPECT_TRUE(v == 0 || v == 4.0);
    kept += v != 0;
  }
  EXPECT_NEAR(double(kept) / 10000, 0.75, 0.02);
  EXPECT_EQ(e.output("a").values, e.output("b").values);
  EXPECT_NE(e.output("a").values, e.output("c").values);
}

TEST(Interpreter, NormsNormalise) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 3, 2});
  Value g = b.variable("g", {3}, init::values({1, 2, 3}));
  Value be = b.variable("be", {3}, init::values({0, 0, 1}));
  NormResult bn = batchNorm(x, g, be, 1e-9);
  b.output("bn", bn.y);
  b.output("bnMean", bn.mean);
  Value g2 = b.variable("g2", {2}, init::ones());
  Value b2 = b.variable("b2", {2}, init::zeros());
  b.output("ln", layerNorm(x, g2, b2, 1e-9).y);
  const std::vector<double> xs{1, 3, 0, 0, 5, 5, -1, -3, 2, 2, 7, 9};
  Evaluation e = interpret(m, {{"x", {FLOAT, {2, 3, 2}, xs}}});
  // Channel 0 holds 1, 3, -1, -3: mean 0, variance 5.
  EXPECT_THAT(e.output("bnMean").values, ElementsAre(0, 1, 6.5));
  EXPECT_NEAR(e.output("bn").values[0], 1 / std::sqrt(5.0), 1e-9);
  EXPECT_NEAR(e.output("bn").values[2], 2 * (0 - 1) / std::sqrt(1.0), 1e-8);
  // Each row of two distinct values normalises to -1, 1.
  EXPECT_NEAR(e.output("ln").values[0], -1, 1e-6);
  EXPECT_NEAR(e.output("ln").values[1], 1, 1e-6);
  EXPECT_NEAR(e.output("ln").values[2], 0, 1e-6);
}

TEST(Interpreter, ConvAndPoolMatchHandComputedValues) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {1, 1, 3, 3});
  Value w = b.variable("w", {1, 1, 2, 2}, init::values({1, 0, 0, -1}));
  b.output("c", conv2d(x, w));
  b.output("mp", maxPool(x, {.kernel = {2, 2}, .strides = {1, 1}}));
  b.output(
      "ap",
      avgPool(x, {.kernel = {2, 2}, .strides = {2, 2}, .padUpper = {1, 1}}));
  Evaluation e = interpret(
      m, {{"x", {FLOAT, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 10}}}});
  EXPECT_THAT(e.output("c").values, ElementsAre(-4, -4, -4, -5));
  EXPECT_THAT(e.output("mp").values, ElementsAre(5, 6, 8, 10));
  // Padding is not counted in averages.
  EXPECT_THAT(e.output("ap").values, ElementsAre(3, 4.5, 7.5, 10));
}

TEST(Interpreter, GatherPicksRowsAndZerosOutOfRange) {
  Module m;
  Builder b(m);
  Value t = b.variable("t", {3, 2}, init::values({1, 2, 3, 4, 5, 6}));
  Value i = b.input("i", INT, {2, 2});
  Value g = gather(t, i);
  b.output("g", g);
  b.output("gg", gatherGrad(g, i, 3));
  Evaluation e = interpret(m, {{"i", {INT, {2, 2}, {2, 0, -1, 2}}}});
  EXPECT_EQ(e.output("g").shape, (Shape{2, 2, 2}));
  EXPECT_THAT(e.output("g").values, ElementsAre(5, 6, 1, 2, 0, 0, 5, 6));
  EXPECT_THAT(e.output("gg").values, ElementsAre(1, 2, 0, 0, 10, 12));
}

TEST(Interpreter, RunsEveryOpKind) {
  Module m = test::everyOpModule();
  Feeds feeds;
  for (ValueId id : m.inputs()) {
    const ValueType &t = m.typeOf(id);
    std::vector<double> v(t.numElements());
    for (std::size_t k = 0; k < v.size(); ++k)
      v[k] = t.dtype == INT ? double(k % 2) : 0.25 + 0.1 * double(k % 7);
    feeds[m.value(id).name] = {t.dtype, t.shape, v};
  }
  Evaluation e = interpret(m, feeds);
  for (const Op &op : m.ops())
    for (ValueId r : op.results)
      EXPECT_EQ(e.at(r).values.size(), m.typeOf(r).numElements())
          << opKindName(op.kind);
  EXPECT_TRUE(std::isfinite(e.output("loss").values[0]));
}
