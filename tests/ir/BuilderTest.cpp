// Building modules: shapes and types are inferred, mistakes are typed
// errors that show the shapes, and scopes annotate what is built in them.
#include "tessera/ir/Builder.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using namespace tessera::ir;
using ::testing::HasSubstr;

TEST(Builder, MlpReadsNaturallyAndInfersShapes) {
  Module m("mlp");
  Builder b(m);
  Value x = b.input("x", FLOAT, {32, 784});
  Value w = b.variable("w", {784, 256}, init::glorotUniform(1));
  Value bias = b.variable("b", {256}, init::zeros());
  Value y = relu(matmul(x, w) + bias);
  EXPECT_EQ(y.type(), (ValueType{FLOAT, {32, 256}}));
  ASSERT_EQ(m.ops().size(), 3u);
  EXPECT_EQ(m.ops()[0].kind, OpKind::MATMUL);
  EXPECT_EQ(m.ops()[1].kind, OpKind::ADD);
  EXPECT_EQ(m.ops()[2].kind, OpKind::RELU);
  EXPECT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.variables().size(), 2u);
  EXPECT_EQ(m.value(w.id()).kind, ValueKind::Variable);
}

TEST(Builder, MatmulShapeErrorNamesOperandsAndShapes) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {32, 784});
  Value w = b.variable("w", {700, 256}, init::zeros());
  try {
    matmul(x, w);
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("matmul: 'x' float[32, 784] has 784 "
                                    "columns but 'w' float[700, 256] has "
                                    "700 rows"));
  }
  EXPECT_TRUE(m.ops().empty());
}

TEST(Builder, BinaryOpsBroadcastAndRejectMismatches) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {4, 1, 3});
  Value y = b.input("y", FLOAT, {5, 1});
  EXPECT_EQ((x * y).shape(), (Shape{4, 5, 3}));
  EXPECT_EQ((x + 1.0).shape(), (Shape{4, 1, 3}));
  EXPECT_EQ(lt(x, 0.0).dtype(), BOOL);
  Value z = b.input("z", FLOAT, {2, 4});
  EXPECT_THROW(x + z, ShapeError);
  try {
    x + z;
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("'x' float[4, 1, 3] and 'z' float[2, 4] "
                                    "do not broadcast"));
  }
  Value i = b.input("i", INT, {3});
  try {
    x - i;
    FAIL();
  } catch (const TypeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("sub: 'x' float[4, 1, 3] and 'i' int[3] "
                                    "must have the same type"));
  }
}

TEST(Builder, ConvPoolAndLossShapes) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {8, 3, 28, 28});
  Value w = b.variable("w", {16, 3, 5, 5}, init::heNormal(2));
  Value c =
      conv2d(x, w, {.strides = {1, 1}, .padLower = {2, 2}, .padUpper = {2, 2}});
  EXPECT_EQ(c.shape(), (Shape{8, 16, 28, 28}));
  Value p = maxPool(c, {.kernel = {2, 2}, .strides = {2, 2}});
  EXPECT_EQ(p.shape(), (Shape{8, 16, 14, 14}));
  Value f = flatten(p);
  EXPECT_EQ(f.shape(), (Shape{8, 16 * 14 * 14}));
  Value labels = b.input("labels", INT, {8});
  Value logits =
      matmul(f, b.variable("w2", {16 * 14 * 14, 10}, init::glorotUniform(3)));
  EXPECT_EQ(sparseSoftmaxCrossEntropy(logits, labels).shape(), (Shape{8}));
  EXPECT_EQ(accuracy(logits, labels).type(), (ValueType{FLOAT, {}}));
  EXPECT_EQ(argmax(logits).type(), (ValueType{INT, {8}}));
  Value grouped = b.variable("g", {16, 1, 3, 3}, init::zeros());
  try {
    conv2d(x, grouped, {.groups = 3});
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("groups (3) must divide"));
  }
}

TEST(Builder, ConvKernelLargerThanInputSaysByHowMuch) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {1, 1, 4, 4});
  Value w = b.variable("w", {1, 1, 5, 5}, init::zeros());
  try {
    conv2d(x, w);
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("spans 5 elements in dimension 2 but 'x' "
                                    "float[1, 1, 4, 4] is only 4"));
  }
}

TEST(Builder, NormsGiveStatisticsOfTheRightShape) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {4, 6, 5});
  Value g = b.variable("g", {6}, init::ones());
  Value be = b.variable("be", {6}, init::zeros());
  NormResult bn = batchNorm(x, g, be);
  EXPECT_EQ(bn.y.shape(), (Shape{4, 6, 5}));
  EXPECT_EQ(bn.mean.shape(), (Shape{6}));
  Value g2 = b.variable("g2", {5}, init::ones());
  NormResult ln = layerNorm(x, g2, g2);
  EXPECT_EQ(ln.invStdDev.shape(), (Shape{4, 6}));
  EXPECT_THROW(layerNorm(x, g, be), ShapeError);
}

TEST(Builder, ReshapeTransposeSliceConcatPadCast) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 3, 4});
  EXPECT_EQ(transpose(x).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(transpose(x, {0, 2, 1}).shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(reshape(x, {6, 4}).shape(), (Shape{6, 4}));
  EXPECT_EQ(slice(x, {0, 1, 0}, {2, 3, 2}).shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(concat({x, x}, 1).shape(), (Shape{2, 6, 4}));
  EXPECT_EQ(pad(x, {0, 1, 2}, {1, 0, 0}).shape(), (Shape{3, 4, 6}));
  EXPECT_EQ(cast(x, INT).dtype(), INT);
  EXPECT_EQ(reduceSum(x, {-1}).shape(), (Shape{2, 3}));
  EXPECT_EQ(reduceMean(x, {0, 2}, true).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(reduceMax(x).shape(), (Shape{}));
  EXPECT_EQ(broadcast(reduceSum(x, {1}, true), {2, 3, 4}).shape(),
            (Shape{2, 3, 4}));
  try {
    reshape(x, {5, 5});
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot reshape 'x' float[2, 3, 4] (24 "
                                    "elements) to [5, 5] (25 elements)"));
  }
  EXPECT_THROW(slice(x, {0, 0, 0}, {2, 4, 4}), ShapeError);
  EXPECT_THROW(transpose(x, {0, 0, 1}), IrError);
  EXPECT_THROW(reduceSum(x, {3}), IrError);
}

TEST(Builder, ShardAndStageScopesAnnotateWhatIsBuiltInThem) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2});
  Value a;
  {
    ShardScope s(b, 2);
    a = x + x;
    {
      auto stage = b.withPipelineStage(1);
      auto r = b.withRecompute();
      a = relu(a);
    }
    a = a * 2.0;
  }
  Value c = a - x;
  const auto &ops = m.ops();
  EXPECT_EQ(ops[0].annotations.ipu, 2u);
  EXPECT_EQ(ops[1].annotations.ipu, 2u);
  EXPECT_EQ(ops[1].annotations.pipelineStage, 1u);
  EXPECT_TRUE(ops[1].annotations.recompute);
  EXPECT_EQ(ops[2].annotations.ipu, 2u);
  EXPECT_FALSE(ops[2].annotations.pipelineStage.has_value());
  EXPECT_FALSE(ops[2].annotations.recompute);
  EXPECT_FALSE(m.producer(c.id()).annotations.ipu.has_value());
  // The constant 2.0 was made in the scope, so it lives on IPU 2 too.
  EXPECT_EQ(m.value(ops[2].operands[1]).ipu, 2u);
}

TEST(Builder, NamesAreMadeUniqueAndFound) {
  Module m;
  Builder b(m);
  Value w1 = b.variable("w", {2}, init::zeros());
  Value w2 = b.variable("w", {2}, init::zeros());
  EXPECT_EQ(w1.name(), "w");
  EXPECT_EQ(w2.name(), "w_1");
  EXPECT_EQ(b.value("w_1"), w2);
  EXPECT_THROW(b.value("nope"), IrError);
  b.output("y", w1 + w2);
  EXPECT_THROW(b.output("y", w1), IrError);
  EXPECT_EQ(m.output("y"), m.ops().back().results[0]);
}

TEST(Builder, OperandsFromAnotherModuleAreRejected) {
  Module m1, m2;
  Builder b1(m1), b2(m2);
  Value x = b1.input("x", FLOAT, {2});
  Value y = b2.input("y", FLOAT, {2});
  try {
    x + y;
    FAIL();
  } catch (const IrError &e) {
    EXPECT_THAT(e.what(), HasSubstr("belongs to another module"));
  }
  EXPECT_THROW(Value().shape(), IrError);
}

TEST(Builder, InitialisersAreCheckedAgainstTheVariable) {
  Module m;
  Builder b(m);
  try {
    b.variable("w", {2, 2}, init::values({1, 2, 3}));
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("variable 'w': the initialiser has 3 "
                                    "values but the shape needs 4"));
  }
  EXPECT_THROW(b.variable("i", {2}, init::glorotUniform(1), INT), TypeError);
  EXPECT_THROW(b.variable("u", {2}, init::uniform(1, 0, 1)), UnsupportedError);
  EXPECT_THROW(b.constant({1, 2}, {3}), ShapeError);
}

TEST(Initialisers, AreDeterministicAndFollowTheirRules) {
  const Shape s{300, 200};
  const std::vector<double> a = materialise(init::glorotUniform(5), FLOAT, s);
  EXPECT_EQ(a, materialise(init::glorotUniform(5), FLOAT, s));
  EXPECT_NE(a, materialise(init::glorotUniform(6), FLOAT, s));
  const double limit = std::sqrt(6.0 / 500);
  double sum = 0, sq = 0;
  for (double v : a) {
    EXPECT_LE(std::fabs(v), limit);
    sum += v;
    sq += v * v;
  }
  const double n = double(a.size());
  EXPECT_NEAR(sum / n, 0.0, 0.01 * limit);
  // A uniform in [-l, l] has variance l^2 / 3.
  EXPECT_NEAR(sq / n, limit * limit / 3, 0.02 * limit * limit);
  const std::vector<double> h = materialise(init::heNormal(1), FLOAT, s);
  double hv = 0;
  for (double v : h)
    hv += v * v;
  EXPECT_NEAR(hv / n, 2.0 / 300, 0.05 * 2.0 / 300);
  EXPECT_EQ(fans({16, 3, 5, 5}), (std::pair<double, double>{75, 400}));
}

TEST(Builder, NameScopesNameResultsByLayerAndOpKind) {
  Module m;
  Builder b(m);
  Value x = b.input("x", FLOAT, {2, 3});
  Value w = b.variable("w", {3, 4}, init::zeros());
  Value h, y;
  {
    NameScope outer(b, "model");
    NameScope layer(b, "dense");
    h = matmul(x, w);
    y = relu(h) + relu(h);
  }
  Value after = exp(y);
  EXPECT_EQ(h.name(), "model/dense/matmul");
  EXPECT_EQ(m.producer(y.id()).kind, OpKind::ADD);
  EXPECT_EQ(y.name(), "model/dense/add");
  // Two relus in one scope get unique names.
  const Op &add = m.producer(y.id());
  EXPECT_NE(m.value(add.operands[0]).name, m.value(add.operands[1]).name);
  EXPECT_TRUE(after.name().empty());
}
