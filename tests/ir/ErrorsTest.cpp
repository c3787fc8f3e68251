// Every user error of building IR: the error type and a message that says
// what is wrong with the numbers.
#include "tessera/ir/Builder.hpp"
#include "tessera/ir/Lowering.hpp"

#include "tessera/device/IPUModel.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

using namespace tessera;
using namespace tessera::ir;
using ::testing::HasSubstr;

namespace {

enum class Kind { Shape, Type, Ir, Unsupported };

struct ErrorCase {
  const char *what;
  Kind kind;
  std::function<void(Builder &)> build;
  const char *message;
};

// Inputs every case can use.
struct Inputs {
  Value m23, m34, v3, i2, i23, img, w;
  explicit Inputs(Builder &b)
      : m23(b.input("m23", FLOAT, {2, 3})), m34(b.input("m34", FLOAT, {3, 4})),
        v3(b.input("v3", FLOAT, {3})), i2(b.input("i2", INT, {2})),
        i23(b.input("i23", INT, {2, 3})),
        img(b.input("img", FLOAT, {1, 4, 5, 5})),
        w(b.input("w", FLOAT, {2, 4, 3, 3})) {}
};

void expectError(const ErrorCase &c) {
  SCOPED_TRACE(c.what);
  Module m;
  Builder b(m);
  try {
    c.build(b);
    ADD_FAILURE() << "no error";
  } catch (const ShapeError &e) {
    EXPECT_EQ(c.kind, Kind::Shape) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(c.message));
  } catch (const TypeError &e) {
    EXPECT_EQ(c.kind, Kind::Type) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(c.message));
  } catch (const IrError &e) {
    EXPECT_EQ(c.kind, Kind::Ir) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(c.message));
  } catch (const UnsupportedError &e) {
    EXPECT_EQ(c.kind, Kind::Unsupported) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(c.message));
  }
}

std::vector<ErrorCase> shapeAndDataCases() {
  return {
      {"matmul rank", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         matmul(i.m23, i.v3);
       },
       "must both be matrices [m, k] x [k, n] or both batches"},
      {"matmul groups", Kind::Shape,
       [](Builder &b) {
         matmul(b.input("a", FLOAT, {2, 2, 3}), b.input("b", FLOAT, {3, 3, 4}));
       },
       "'a' float[2, 2, 3] has 2 groups but 'b' float[3, 3, 4] has 3"},
      {"matmul int", Kind::Type,
       [](Builder &b) {
         Inputs i(b);
         matmul(i.i23, i.i23);
       },
       "'i23' int[2, 3] must be float or half"},
      {"broadcast target", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         broadcast(i.m23, {3, 3});
       },
       "'m23' float[2, 3] does not broadcast to [3, 3]"},
      {"reduce axis twice", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         reduceSum(i.m23, {1, -1});
       },
       "reduceSum: axis -1 is listed twice"},
      {"reduce axis range", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         reduceMax(i.m23, {2});
       },
       "axis 2 is out of range for rank 2 (use -2 to 1)"},
      {"reduceMean int", Kind::Type,
       [](Builder &b) {
         Inputs i(b);
         reduceMean(i.i23);
       },
       "reduceMean: 'i23' int[2, 3] must be float or half"},
      {"concat dims", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         concat({i.m23, i.m34}, 1);
       },
       "'m34' float[3, 4] does not match 'm23' float[2, 3] in every "
       "dimension but the concatenated one (1)"},
      {"concat scalar", Kind::Shape,
       [](Builder &b) { concat({b.scalar(1)}, 0); },
       "cannot concatenate scalars"},
      {"pad list length", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         pad(i.m23, {1}, {1, 1});
       },
       "pad: attribute 'lower' has 1 elements; it needs 2"},
      {"cast name", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         apply(OpKind::CAST, {i.m23}, {{"dtype", std::string("double")}});
       },
       "dtype \"double\" is not a type"},
      {"cast short", Kind::Type,
       [](Builder &b) {
         Inputs i(b);
         cast(i.m23, SHORT);
       },
       "casts are between float, half, int, uint and bool"},
      {"crossReplicaMean int", Kind::Type,
       [](Builder &b) {
         Inputs i(b);
         crossReplicaMean(i.i2);
       },
       "'i2' int[2] must be float or half to average it over replicas"},
      {"gather float indices", Kind::Type,
       [](Builder &b) {
         Inputs i(b);
         gather(i.m34, i.m23);
       },
       "'m23' float[2, 3] must hold indices (int or uint)"},
      {"gatherGrad shape", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         gatherGrad(i.m34, i.i2, 5);
       },
       "'m34' float[3, 4] must start with the shape of 'i2' int[2]"},
      {"gatherGrad rows", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         gatherGrad(i.m23, i.i2, 0);
       },
       "numRows must be at least 1"},
      {"elementwise short", Kind::Type,
       [](Builder &b) { neg(b.input("s", SHORT, {2})); },
       "has a type elementwise operations do not take"},
      {"attribute kind", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         apply(OpKind::CONCAT, {i.m23}, {{"axis", std::string("x")}});
       },
       "concat: attribute 'axis' must be an integer"},
      {"negative size", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         apply(OpKind::RESHAPE, {i.m23},
               {{"shape", std::vector<std::int64_t>{-6}}});
       },
       "attribute 'shape' holds -6; each element must be at least 0"},
      {"operand count", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         apply(OpKind::ADD, {i.m23});
       },
       "add: 1 operands given; it takes 2"},
      {"operand not a value", Kind::Ir,
       [](Builder &b) { b.module().addOp(OpKind::NEGATE, {99}); },
       "neg: operand %99 is not a value of this module"},
      {"no operands", Kind::Ir, [](Builder &) { apply(OpKind::ADD, {}); },
       "without operands the module is unknown"},
      {"biasAdd", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         biasAdd(i.m34, i.v3, 1);
       },
       "biasAdd: the bias float[3] must be 1-D with the size of dimension 1 "
       "of the input float[3, 4]"},
  };
}

std::vector<ErrorCase> nnCases() {
  return {
      {"conv channels", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         conv2d(i.img, b.input("k", FLOAT, {2, 3, 3, 3}));
       },
       "'k' float[2, 3, 3, 3] has 3 input channels per group but 'img' "
       "float[1, 4, 5, 5] has 4 channels in 1 group(s), 4 per group"},
      {"conv stride", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         conv2d(i.img, i.w, {.strides = {0, 1}});
       },
       "attribute 'strides' holds 0; each element must be at least 1"},
      {"conv groups", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         conv2d(i.img, i.w, {.groups = 0});
       },
       "groups must be at least 1, not 0"},
      {"conv backprop input shape", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         conv2dBackpropInput(i.img, i.w, {}, {1, 4, 5, 5});
       },
       "must be the convolution's output shape [1, 2, 3, 3]"},
      {"pool window", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         maxPool(i.img, {.kernel = {6, 2}});
       },
       "the window (6) is larger than 'img' float[1, 4, 5, 5] with padding "
       "(5) in dimension 2"},
      {"pool rank", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         avgPool(i.m23);
       },
       "'m23' float[2, 3] must be [N, C, H, W]"},
      {"avgPoolGrad shape", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         avgPoolGrad(i.img, {}, {1, 4, 5, 5});
       },
       "must be the pooling's output shape [1, 4, 2, 2]"},
      {"maxPoolGrad shape", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         maxPoolGrad(i.img, i.img, i.img, {});
       },
       "must be the pooling's output shape [1, 4, 2, 2]"},
      {"softmax scalar", Kind::Shape, [](Builder &b) { softmax(b.scalar(1)); },
       "needs a non-empty last axis to normalise"},
      {"dropout rate", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         dropout(i.m23, 1.0, 1);
       },
       "dropout: rate 1.000000 must be in [0, 1)"},
      {"dropout seed", Kind::Type,
       [](Builder &b) {
         Inputs i(b);
         dropout(i.m23, 0.5, i.i2);
       },
       "'i2' int[2] must be a seed: uint with 2 elements"},
      {"batchNorm gamma", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         batchNorm(i.img, i.v3, i.v3);
       },
       "'v3' float[3] must have shape [4] for 'img' float[1, 4, 5, 5]"},
      {"batchNorm eps", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         Value g = b.input("g", FLOAT, {4});
         batchNorm(i.img, g, g, 0);
       },
       "eps must be > 0"},
      {"batchNormInference", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         batchNormInference(i.img, i.v3, i.v3, i.v3, i.v3);
       },
       "batchNormInference: float[3] must have one element per channel: [4]"},
      {"labels", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         sparseSoftmaxCrossEntropy(i.m34, i.i2);
       },
       "'i2' int[2] must hold one label per row of 'm34' float[3, 4]: "
       "shape [3]"},
      {"labels type", Kind::Type,
       [](Builder &b) {
         Inputs i(b);
         accuracy(i.m23, i.m23);
       },
       "must hold indices (int or uint)"},
      {"loss shapes", Kind::Shape,
       [](Builder &b) {
         Inputs i(b);
         meanSquaredError(i.m23, i.m34);
       },
       "'m23' float[2, 3] and 'm34' float[3, 4] must have the same shape"},
      {"argmax bool", Kind::Type,
       [](Builder &b) {
         Inputs i(b);
         argmax(lt(i.m23, 0.0));
       },
       "must be float, half, int or uint"},
      {"unaryGrad op", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         unaryGrad(OpKind::ADD, i.v3, i.v3, i.v3);
       },
       "op \"add\" is not a unary elementwise operation"},
      {"unaryGrad derivative", Kind::Ir,
       [](Builder &b) {
         Inputs i(b);
         unaryGrad(OpKind::GELU_GRAD, i.v3, i.v3, i.v3);
       },
       "op \"geluGrad\" has no derivative"},
      {"normal stddev", Kind::Unsupported,
       [](Builder &b) { b.variable("v", {2}, init::normal(0, -1, 1)); },
       "variable 'v': normal initialiser: the standard deviation (-1.0) "
       "must be >= 0"},
  };
}

} // namespace

TEST(IrErrors, ShapeAndDataMovementErrorsSayWhatIsWrong) {
  for (const ErrorCase &c : shapeAndDataCases())
    expectError(c);
}

TEST(IrErrors, NnErrorsSayWhatIsWrong) {
  for (const ErrorCase &c : nnCases())
    expectError(c);
}

TEST(IrErrors, ModuleLookupsSayWhatIsMissing) {
  Module m("net");
  Builder b(m);
  Value x = b.input("x", FLOAT, {2});
  Value y = -x;
  EXPECT_THROW(m.value(99), IrError);
  EXPECT_THROW(m.variableOf(x.id()), IrError);
  EXPECT_THROW(m.constantOf(y.id()), IrError);
  EXPECT_THROW(m.producer(x.id()), IrError);
  EXPECT_THROW(m.addOutput("z", 99), IrError);
  b.output("y", y);
  try {
    m.output("z");
    FAIL();
  } catch (const IrError &e) {
    EXPECT_THAT(e.what(), HasSubstr("module 'net' has no output 'z' "
                                    "(outputs: y)"));
  }
  Module other;
  EXPECT_THROW(Builder(other).output("x", x), IrError);
}

TEST(IrErrors, UnloweredValuesHaveNoTensor) {
  Module m;
  Builder b(m);
  Value c = b.constant({1, 2}, {2});
  b.output("y", -b.input("x", FLOAT, {2}));
  IPUModel model;
  model.tilesPerIPU = 4;
  Graph g(model.createDevice().getTarget());
  program::Sequence prog;
  LoweredModule l = lowerToGraph(m, g, prog);
  try {
    l.tensor(c);
    FAIL();
  } catch (const IrError &e) {
    EXPECT_THAT(e.what(), HasSubstr("%0 has no tensor"));
  }
}
