// The ONNX importer on small models built with libonnx's protobuf classes,
// run on the host interpreter against values computed here.
#include "tessera/onnx/Importer.hpp"
#include "tessera/ir/Interpreter.hpp"

#include <onnx/onnx_pb.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace tessera;
using ::testing::HasSubstr;

namespace {

using TP = ::onnx::TensorProto;

// A model of one graph, built a node at a time.
class ModelMaker {
public:
  explicit ModelMaker(std::int64_t opset = 13) {
    model_.set_ir_version(8);
    auto *o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  ::onnx::GraphProto &graph() { return *model_.mutable_graph(); }

  void input(const std::string &name, std::vector<std::int64_t> shape,
             std::int32_t type = TP::FLOAT) {
    valueInfo(graph().add_input(), name, shape, type);
  }
  void output(const std::string &name) { graph().add_output()->set_name(name); }
  TP &initializer(const std::string &name, std::vector<std::int64_t> dims,
                  std::vector<float> values) {
    TP &t = *graph().add_initializer();
    t.set_name(name);
    t.set_data_type(TP::FLOAT);
    for (auto d : dims)
      t.add_dims(d);
    for (float v : values)
      t.add_float_data(v);
    return t;
  }
  void ints(const std::string &name, std::vector<std::int64_t> values) {
    TP &t = *graph().add_initializer();
    t.set_name(name);
    t.set_data_type(TP::INT64);
    t.add_dims(static_cast<std::int64_t>(values.size()));
    for (auto v : values)
      t.add_int64_data(v);
  }
  ::onnx::NodeProto &node(const std::string &op,
                          std::vector<std::string> inputs,
                          std::vector<std::string> outputs,
                          const std::string &name = "") {
    auto &n = *graph().add_node();
    n.set_op_type(op);
    n.set_name(name.empty() ? op + "_" + outputs.at(0) : name);
    for (auto &i : inputs)
      n.add_input(i);
    for (auto &o : outputs)
      n.add_output(o);
    return n;
  }
  std::string bytes() const { return model_.SerializeAsString(); }
  tessera::onnx::ImportedModel
  import(const tessera::onnx::ImportOptions &o = {}) const {
    return tessera::onnx::importModel(bytes(), o);
  }

private:
  static void valueInfo(::onnx::ValueInfoProto *vi, const std::string &name,
                        const std::vector<std::int64_t> &shape,
                        std::int32_t type) {
    vi->set_name(name);
    auto *t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    auto *s = t->mutable_shape();
    for (auto d : shape)
      s->add_dim()->set_dim_value(d);
  }
  ::onnx::ModelProto model_;
};

void setInt(::onnx::NodeProto &n, const std::string &name, std::int64_t v) {
  auto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

void setInts(::onnx::NodeProto &n, const std::string &name,
             std::vector<std::int64_t> v) {
  auto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (auto x : v)
    a->add_ints(x);
}

std::vector<double> iota(std::size_t n, double start = 0) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = start + double(i);
  return v;
}

std::vector<double> run(const tessera::onnx::ImportedModel &im, ir::Feeds feeds,
                        const std::string &output = "y") {
  return ir::interpret(im.module, feeds).output(output).values;
}

} // namespace

TEST(OnnxImporter, InitializersBecomeVariablesAndInputsBecomeInputs) {
  ModelMaker mm;
  mm.input("x", {2, 3});
  mm.initializer("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  mm.node("MatMul", {"x", "w"}, {"y"});
  mm.output("y");
  const tessera::onnx::ImportedModel im = mm.import();
  EXPECT_EQ(im.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(im.outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(im.opset, 13);
  ASSERT_EQ(im.module.variables().size(), 1u);
  const ir::Variable &w = im.module.variables()[0];
  EXPECT_EQ(im.module.value(w.value).name, "w");
  EXPECT_TRUE(w.trainable);
  EXPECT_EQ(w.init.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // [[1, 0, 1], [0, 1, 0]] x w
  EXPECT_EQ(run(im, {{"x", {FLOAT, {2, 3}, {1, 0, 1, 0, 1, 0}}}}),
            (std::vector<double>{6, 8, 3, 4}));
}

TEST(OnnxImporter, GemmWithTransposeAlphaBetaAndBias) {
  ModelMaker mm;
  mm.input("a", {2, 2});
  mm.initializer("b", {3, 2}, {1, 0, 0, 1, 1, 1}); // transposed: [2, 3]
  mm.initializer("c", {3}, {10, 20, 30});
  auto &n = mm.node("Gemm", {"a", "b", "c"}, {"g"});
  setInt(n, "transB", 1);
  auto *alpha = n.add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(::onnx::AttributeProto::FLOAT);
  alpha->set_f(2.0f);
  mm.node("Relu", {"g"}, {"y"});
  mm.output("y");
  const auto y = run(mm.import(), {{"a", {FLOAT, {2, 2}, {1, 2, -30, 0}}}});
  // 2 * a x b^T + c: row 0 [2, 4, 6] + c, row 1 [-60, 0, -60] + c.
  EXPECT_EQ(y, (std::vector<double>{12, 24, 36, 0, 20, 0}));
}

TEST(OnnxImporter, ShapeArithmeticFoldsAtImport) {
  // PyTorch's flatten before a classifier: Shape -> Gather -> Unsqueeze ->
  // Concat -> Reshape, all known at import.
  ModelMaker mm;
  mm.input("x", {2, 3, 4});
  mm.ints("zero", {0});
  mm.ints("minusOne", {-1});
  mm.node("Shape", {"x"}, {"s"});
  auto &g = mm.node("Gather", {"s", "zero"}, {"n"});
  setInt(g, "axis", 0);
  auto &c = mm.node("Concat", {"n", "minusOne"}, {"target"});
  setInt(c, "axis", 0);
  mm.node("Reshape", {"x", "target"}, {"y"});
  mm.output("y");
  const tessera::onnx::ImportedModel im = mm.import();
  ASSERT_EQ(im.module.ops().size(), 1u);
  EXPECT_EQ(im.module.ops()[0].kind, ir::OpKind::RESHAPE);
  EXPECT_EQ(im.module.typeOf(im.module.output("y")).shape, (ir::Shape{2, 12}));
}

TEST(OnnxImporter, GatherSliceTransposeAndSqueezeMoveTheRightElements) {
  ModelMaker mm;
  mm.input("x", {2, 3, 4});
  mm.ints("idx", {2, -1}); // -1 counts from the end: column 3
  auto &g = mm.node("Gather", {"x", "idx"}, {"g"}); // [2, 3, 2]
  setInt(g, "axis", 2);
  mm.ints("starts", {1});
  mm.ints("ends", {1000}); // clamped to the dimension
  mm.ints("axes", {-2});
  mm.node("Slice", {"g", "starts", "ends", "axes"}, {"s"}); // [2, 2, 2]
  auto &t = mm.node("Transpose", {"s"}, {"t"});
  setInts(t, "perm", {2, 0, 1}); // [2, 2, 2]
  mm.ints("ax", {0});
  mm.node("Unsqueeze", {"t", "ax"}, {"u"}); // [1, 2, 2, 2]
  mm.node("Squeeze", {"u", "ax"}, {"y"});
  mm.output("y");
  const auto y = run(mm.import(), {{"x", {FLOAT, {2, 3, 4}, iota(24)}}});
  // x[b][r][c] = 12b + 4r + c; y[k][b][r'] = x[b][1 + r'][{2, 3}[k]].
  EXPECT_EQ(y, (std::vector<double>{6, 10, 18, 22, 7, 11, 19, 23}));
}

TEST(OnnxImporter, SoftmaxOnAnInnerAxisAtOpset13) {
  ModelMaker mm;
  mm.input("x", {2, 2});
  auto &n = mm.node("Softmax", {"x"}, {"y"});
  setInt(n, "axis", 0);
  mm.output("y");
  const auto y = run(mm.import(), {{"x", {FLOAT, {2, 2}, {0, 1, 0, 3}}}});
  EXPECT_NEAR(y[0], 0.5, 1e-9);
  EXPECT_NEAR(y[2], 0.5, 1e-9);
  EXPECT_NEAR(y[1], 1 / (1 + std::exp(2.0)), 1e-9);
  EXPECT_NEAR(y[3], 1 / (1 + std::exp(-2.0)), 1e-9);
}

TEST(OnnxImporter, ConvWithBiasAndPaddingThenGlobalAveragePool) {
  ModelMaker mm;
  mm.input("x", {1, 1, 2, 2});
  mm.initializer("w", {1, 1, 2, 2}, {1, 1, 1, 1}); // sums of 2x2 windows
  mm.initializer("b", {1}, {0.5});
  auto &c = mm.node("Conv", {"x", "w", "b"}, {"c"});
  setInts(c, "pads", {1, 1, 0, 0}); // top and left only: 2x2 output
  mm.node("GlobalAveragePool", {"c"}, {"y"});
  mm.output("y");
  const auto im = mm.import();
  EXPECT_EQ(im.module.typeOf(im.module.output("y")).shape,
            (ir::Shape{1, 1, 1, 1}));
  // Windows: x0; x0+x1; x0+x2; all four. x = 1, 2, 3, 4.
  const double mean = (1 + 3 + 4 + 10) / 4.0 + 0.5;
  EXPECT_EQ(run(im, {{"x", {FLOAT, {1, 1, 2, 2}, {1, 2, 3, 4}}}}),
            (std::vector<double>{mean}));
}

TEST(OnnxImporter, MaxPoolCeilModeAddsTheLastPartialWindow) {
  ModelMaker mm;
  mm.input("x", {1, 1, 1, 5});
  auto &p = mm.node("MaxPool", {"x"}, {"y"});
  setInts(p, "kernel_shape", {1, 2});
  setInts(p, "strides", {1, 2});
  setInt(p, "ceil_mode", 1);
  mm.output("y");
  EXPECT_EQ(run(mm.import(), {{"x", {FLOAT, {1, 1, 1, 5}, {1, 5, 2, 3, 9}}}}),
            (std::vector<double>{5, 3, 9}));
}

TEST(OnnxImporter, SoftmaxCrossEntropyLossIsTheMeanNegativeLogLikelihood) {
  ModelMaker mm;
  mm.input("logits", {2, 3});
  mm.input("labels", {2}, TP::INT64);
  mm.node("SoftmaxCrossEntropyLoss", {"logits", "labels"}, {"y"});
  mm.output("y");
  const auto im = mm.import();
  const auto y = run(im, {{"logits", {FLOAT, {2, 3}, {0, 0, 0, 1, 2, 3}}},
                          {"labels", {INT, {2}, {1, 0}}}});
  const double row1 = std::log(std::exp(1) + std::exp(2) + std::exp(3)) - 1;
  ASSERT_EQ(y.size(), 1u);
  EXPECT_NEAR(y[0], (std::log(3.0) + row1) / 2, 1e-9);
}

TEST(OnnxImporter, ClipAtOpset11TakesItsBoundsAsInputs) {
  ModelMaker mm(11);
  mm.input("x", {4});
  mm.initializer("lo", {}, {0});
  mm.initializer("hi", {}, {6});
  mm.node("Clip", {"x", "lo", "hi"}, {"y"});
  mm.output("y");
  EXPECT_EQ(run(mm.import(), {{"x", {FLOAT, {4}, {-1, 3, 6, 9}}}}),
            (std::vector<double>{0, 3, 6, 6}));
}

TEST(OnnxImporter, UnsupportedOperatorNamesNodeOpTypeOpsetAndTheSupported) {
  ModelMaker mm;
  mm.input("x", {2, 2});
  mm.node("Einsum", {"x"}, {"y"}, "contract_1");
  mm.output("y");
  try {
    mm.import();
    FAIL() << "imported an unsupported operator";
  } catch (const UnsupportedError &e) {
    const std::string m = e.what();
    EXPECT_THAT(m, HasSubstr("node 'contract_1' (Einsum, opset 13)"));
    EXPECT_THAT(m, HasSubstr("operator Einsum is not supported"));
    for (const char *op : {"BatchNormalization", "Conv", "Gemm", "MaxPool",
                           "Reshape", "SoftmaxCrossEntropyLoss"})
      EXPECT_THAT(m, HasSubstr(op));
  }
}

TEST(OnnxImporter, TruncatedFilesAreSerializationErrors) {
  ModelMaker mm;
  mm.input("x", {2, 3});
  mm.initializer("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  mm.node("MatMul", {"x", "w"}, {"y"});
  mm.output("y");
  const std::string bytes = mm.bytes();
  ASSERT_NO_THROW(tessera::onnx::importModel(bytes));
  for (std::size_t keep : {std::size_t{0}, std::size_t{1}, bytes.size() / 4,
                           bytes.size() / 2, bytes.size() - 1})
    EXPECT_THROW(tessera::onnx::importModel(bytes.substr(0, keep)),
                 SerializationError)
        << "keeping " << keep << " of " << bytes.size() << " bytes";
}

TEST(OnnxImporter, TextIsNotAnOnnxModel) {
  try {
    tessera::onnx::importModel("hello, this is not a model\n", {},
                               "'notes.txt'");
    FAIL() << "imported text";
  } catch (const SerializationError &e) {
    EXPECT_THAT(e.what(), HasSubstr("'notes.txt'"));
    EXPECT_THAT(e.what(), HasSubstr("not"));
  }
}

TEST(OnnxImporter, MissingFileIsSerializationError) {
  EXPECT_THROW(tessera::onnx::importModelFile("/nonexistent/model.onnx"),
               SerializationError);
}

TEST(OnnxImporter, HugeDimensionsAreRejectedBeforeAllocating) {
  ModelMaker mm;
  mm.input("x", {2});
  TP &t = mm.initializer("w", {1 << 30, 1 << 30}, {});
  (void)t;
  mm.node("Add", {"x", "w"}, {"y"});
  mm.output("y");
  try {
    mm.import();
    FAIL() << "imported a 2^60-element initializer";
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("initializer 'w'"));
    EXPECT_THAT(e.what(), HasSubstr("maxElements"));
  }
}

TEST(OnnxImporter, DataShorterThanTheDimensionsIsAnError) {
  ModelMaker mm;
  mm.input("x", {4});
  mm.initializer("w", {4}, {1, 2, 3}); // one value short
  mm.node("Add", {"x", "w"}, {"y"});
  mm.output("y");
  try {
    mm.import();
    FAIL() << "imported a short initializer";
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("holds 3 elements"));
  }
}

TEST(OnnxImporter, SymbolicDimensionsNeedASize) {
  ModelMaker mm;
  mm.input("x", {1, 3});
  mm.graph()
      .mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("batch");
  mm.node("Relu", {"x"}, {"y"});
  mm.output("y");
  EXPECT_THROW(mm.import(), ShapeError);
  tessera::onnx::ImportOptions o;
  o.dimensions["batch"] = 5;
  const auto im = mm.import(o);
  EXPECT_EQ(im.module.typeOf(im.module.output("y")).shape, (ir::Shape{5, 3}));
}

TEST(OnnxImporter, OpsetsOutsideTheSupportedRangeAreUnsupported) {
  ModelMaker mm(6);
  mm.input("x", {2});
  mm.node("Relu", {"x"}, {"y"});
  mm.output("y");
  EXPECT_THROW(mm.import(), UnsupportedError);
}

TEST(OnnxImporter, UndefinedTensorIsNamed) {
  ModelMaker mm;
  mm.input("x", {2});
  mm.node("Add", {"x", "ghost"}, {"y"});
  mm.output("y");
  try {
    mm.import();
    FAIL() << "imported a node with an undefined input";
  } catch (const SerializationError &e) {
    EXPECT_THAT(e.what(), HasSubstr("'ghost'"));
  }
}

TEST(OnnxImporter, ANodeWithoutItsInputsIsNamed) {
  // A Concat with no inputs once escaped as std::out_of_range (fuzzing).
  ModelMaker mm;
  mm.input("x", {2});
  setInt(mm.node("Concat", {}, {"y"}), "axis", 0);
  mm.output("y");
  try {
    mm.import();
    FAIL() << "imported a Concat without inputs";
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("(Concat, opset"));
    EXPECT_THAT(e.what(), HasSubstr("input 0 is missing (the node has 0 "
                                    "inputs)"));
  }
}

TEST(OnnxImporter, BatchNormStatisticsAreNotTrainable) {
  ModelMaker mm;
  mm.input("x", {1, 2, 1, 1});
  mm.initializer("scale", {2}, {1, 2});
  mm.initializer("bias", {2}, {0, 1});
  mm.initializer("mean", {2}, {1, 1});
  mm.initializer("var", {2}, {4, 1});
  mm.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"});
  mm.output("y");
  const auto im = mm.import();
  std::map<std::string, bool> trainable;
  for (const ir::Variable &v : im.module.variables())
    trainable[im.module.value(v.value).name] = v.trainable;
  EXPECT_EQ(
      trainable,
      (std::map<std::string, bool>{
          {"bias", true}, {"mean", false}, {"scale", true}, {"var", false}}));
  const auto y = run(im, {{"x", {FLOAT, {1, 2, 1, 1}, {3, 3}}}});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], (3 - 1) / std::sqrt(4 + 1e-5), 1e-6);
  EXPECT_NEAR(y[1], (3 - 1) / std::sqrt(1 + 1e-5) * 2 + 1, 1e-6);
}

TEST(OnnxImporter, IgnoredLabelsCountNeitherInTheLossNorItsMean) {
  ModelMaker mm;
  mm.input("logits", {3, 2});
  mm.input("labels", {3}, TP::INT64);
  auto &n = mm.node("SoftmaxCrossEntropyLoss", {"logits", "labels"}, {"y"});
  setInt(n, "ignore_index", -100);
  mm.output("y");
  const auto y =
      run(mm.import(), {{"logits", {FLOAT, {3, 2}, {0, 0, 5, -5, 0, 1}}},
                        {"labels", {INT, {3}, {0, -100, 1}}}});
  const double row2 = std::log(1 + std::exp(1.0)) - 1;
  ASSERT_EQ(y.size(), 1u);
  EXPECT_NEAR(y[0], (std::log(2.0) + row2) / 2, 1e-9);
}

TEST(OnnxImporter, ConvTransposeSpreadsEachInputOverItsWindow) {
  ModelMaker mm;
  mm.input("x", {1, 1, 2, 2});
  mm.initializer("w", {1, 2, 2, 2}, {1, 1, 1, 1, 1, 2, 3, 4}); // 2 channels
  auto &c = mm.node("ConvTranspose", {"x", "w"}, {"y"});
  setInts(c, "strides", {2, 2});
  mm.output("y");
  const auto im = mm.import();
  EXPECT_EQ(im.module.typeOf(im.module.output("y")).shape,
            (ir::Shape{1, 2, 4, 4}));
  const auto y = run(im, {{"x", {FLOAT, {1, 1, 2, 2}, {1, 2, 3, 4}}}});
  // Channel 0: each x value fills its 2x2 block; channel 1: x times w.
  EXPECT_EQ(std::vector<double>(y.begin(), y.begin() + 8),
            (std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2}));
  EXPECT_EQ(std::vector<double>(y.begin() + 16, y.begin() + 20),
            (std::vector<double>{1, 2, 2, 4}));
  EXPECT_EQ(std::vector<double>(y.begin() + 20, y.begin() + 24),
            (std::vector<double>{3, 4, 6, 8}));
}

TEST(OnnxImporter, ResultsLargerThanMaxElementsAreRejected) {
  ModelMaker mm;
  mm.input("x", {1, 1, 4, 4});
  mm.node("Pad", {"x", "pads"}, {"y"});
  mm.ints("pads", {0, 0, 1 << 20, 1 << 20, 0, 0, 1 << 20, 1 << 20});
  mm.output("y");
  try {
    mm.import();
    FAIL() << "imported a 2^42-element pad";
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("output 'y'"));
    EXPECT_THAT(e.what(), HasSubstr("maxElements"));
  }
}

TEST(OnnxImporter, ExpandCastReduceSumAndConcatOnDeviceValues) {
  ModelMaker mm;
  mm.input("x", {2, 1});
  mm.ints("shape", {2, 3});
  mm.node("Expand", {"x", "shape"}, {"e"}); // [2, 3]
  auto &c = mm.node("Cast", {"e"}, {"i"});
  setInt(c, "to", TP::INT32);
  auto &back = mm.node("Cast", {"i"}, {"f"}); // truncated toward zero
  setInt(back, "to", TP::FLOAT);
  mm.ints("axes", {1});
  auto &r = mm.node("ReduceSum", {"f", "axes"}, {"s"}); // [2, 1]
  setInt(r, "keepdims", 1);
  auto &cat = mm.node("Concat", {"s", "x"}, {"y"}); // [2, 2]
  setInt(cat, "axis", -1);
  mm.output("y");
  EXPECT_EQ(run(mm.import(), {{"x", {FLOAT, {2, 1}, {1.5, -2.5}}}}),
            (std::vector<double>{3, 1.5, -6, -2.5}));
}

TEST(OnnxImporter, AveragePoolCountsPaddingOnlyWhenAsked) {
  for (int countPad : {0, 1}) {
    ModelMaker mm;
    mm.input("x", {1, 1, 2, 2});
    auto &p = mm.node("AveragePool", {"x"}, {"y"});
    setInts(p, "kernel_shape", {2, 2});
    setInts(p, "pads", {1, 1, 0, 0});
    setInt(p, "count_include_pad", countPad);
    mm.output("y");
    const auto y = run(mm.import(), {{"x", {FLOAT, {1, 1, 2, 2}, iota(4, 1)}}});
    ASSERT_EQ(y.size(), 4u);
    // The top-left window holds x0 and three padding zeros.
    EXPECT_DOUBLE_EQ(y[0], countPad ? 0.25 : 1.0) << countPad;
    EXPECT_DOUBLE_EQ(y[3], 2.5);
  }
}

TEST(OnnxImporter, LogSoftmaxBeforeOpset13FlattensFromTheAxis) {
  ModelMaker mm(11);
  mm.input("x", {1, 2, 2});
  mm.node("LogSoftmax", {"x"}, {"y"}); // axis 1: over all 4 elements
  mm.output("y");
  const auto y = run(mm.import(), {{"x", {FLOAT, {1, 2, 2}, {0, 0, 0, 0}}}});
  for (double v : y)
    EXPECT_NEAR(v, -std::log(4.0), 1e-12);
}

TEST(OnnxImporter, ErfIsWithinFloatResolutionOfStdErf) {
  ModelMaker mm;
  mm.input("x", {9});
  mm.node("Erf", {"x"}, {"y"});
  mm.output("y");
  const std::vector<double> xs{-4, -1.5, -0.7, -0.1, 0, 0.05, 0.5, 1.2, 3};
  const auto y = run(mm.import(), {{"x", {FLOAT, {9}, xs}}});
  for (std::size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(y[i], std::erf(xs[i]), 2e-7) << xs[i];
}

namespace {

// x [2, 2, 1, 1] through a BatchNormalization with its training outputs
// (opset 13: the running mean and variance are outputs 1 and 2).
ModelMaker trainingBatchNorm() {
  ModelMaker mm;
  mm.input("x", {2, 2, 1, 1});
  mm.initializer("scale", {2}, {1, 2});
  mm.initializer("bias", {2}, {0, 1});
  mm.initializer("mean", {2}, {1, 1});
  mm.initializer("var", {2}, {4, 1});
  auto &bn =
      mm.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
              {"y", "running_mean", "running_var", "saved_mean", "saved_var"});
  auto *momentum = bn.add_attribute();
  momentum->set_name("momentum");
  momentum->set_type(::onnx::AttributeProto::FLOAT);
  momentum->set_f(0.75f);
  mm.output("y");
  mm.output("running_mean");
  mm.output("running_var");
  return mm;
}

} // namespace

TEST(OnnxImporter, TrainingBatchNormUsesBatchStatisticsAndMovesRunningOnes) {
  tessera::onnx::ImportOptions o;
  o.training = true;
  const auto im = trainingBatchNorm().import(o);
  // Channel 0 holds 1 and 5 (mean 3, variance 4, unbiased 8); channel 1
  // holds 2 and 4 (mean 3, variance 1, unbiased 2).
  const ir::Feeds feeds{{"x", {FLOAT, {2, 2, 1, 1}, {1, 2, 5, 4}}}};
  const auto y = run(im, feeds);
  const double s0 = std::sqrt(4 + 1e-5), s1 = std::sqrt(1 + 1e-5);
  const std::vector<double> expected{-2 / s0, -1 / s1 * 2 + 1, 2 / s0,
                                     1 / s1 * 2 + 1};
  ASSERT_EQ(y.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(y[i], expected[i], 1e-5) << i;
  const auto mean = run(im, feeds, "running_mean");
  const auto var = run(im, feeds, "running_var");
  EXPECT_NEAR(mean[0], 1 * 0.75 + 3 * 0.25, 1e-5);
  EXPECT_NEAR(mean[1], 1 * 0.75 + 3 * 0.25, 1e-5);
  EXPECT_NEAR(var[0], 4 * 0.75 + 8 * 0.25, 1e-4);
  EXPECT_NEAR(var[1], 1 * 0.75 + 2 * 0.25, 1e-4);
  // The running statistics are the state the importer reports.
  std::set<std::string> updated;
  for (const auto &[variable, next] : im.stateUpdates)
    updated.insert(im.module.value(variable).name);
  EXPECT_EQ(updated, (std::set<std::string>{"mean", "var"}));
}

TEST(OnnxImporter, TrainingBatchNormOutsideTrainingIsTheInferenceForm) {
  ModelMaker mm = trainingBatchNorm();
  mm.graph().mutable_output()->DeleteSubrange(1, 2);
  const auto im = mm.import();
  EXPECT_TRUE(im.stateUpdates.empty());
  const auto y = run(im, {{"x", {FLOAT, {2, 2, 1, 1}, {1, 2, 5, 4}}}});
  EXPECT_NEAR(y[0], (1 - 1) / std::sqrt(4 + 1e-5), 1e-6);
  EXPECT_NEAR(y[2], (5 - 1) / std::sqrt(4 + 1e-5), 1e-6);
  // Reading the running statistics needs training.
  EXPECT_THAT([] { trainingBatchNorm().import(); },
              ::testing::ThrowsMessage<UnsupportedError>(
                  HasSubstr("running or saved statistics) is read")));
}

namespace {

ModelMaker dropoutModel(bool trainingMode) {
  ModelMaker mm;
  mm.input("x", {4, 250});
  mm.initializer("ratio", {}, {0.25f});
  TP &mode = *mm.graph().add_initializer();
  mode.set_name("mode");
  mode.set_data_type(TP::BOOL);
  mode.add_int32_data(trainingMode ? 1 : 0);
  mm.node("Dropout", {"x", "ratio", "mode"}, {"y", "mask"});
  mm.output("y");
  return mm;
}

} // namespace

TEST(OnnxImporter, TrainingDropoutZeroesAboutRatioAndScalesTheRest) {
  tessera::onnx::ImportOptions o;
  o.training = true;
  o.seed = 11;
  const auto im = dropoutModel(true).import(o);
  ASSERT_EQ(im.stateUpdates.size(), 1u);
  EXPECT_EQ(im.module.value(im.stateUpdates[0].first).name,
            "tessera/dropout_seed");
  const ir::Feeds feeds{{"x", {FLOAT, {4, 250}, std::vector<double>(1000, 3)}}};
  const auto y = run(im, feeds);
  std::size_t zeros = 0;
  for (double v : y) {
    if (v == 0)
      ++zeros;
    else
      EXPECT_NEAR(v, 3 / 0.75, 1e-6);
  }
  EXPECT_NEAR(double(zeros) / 1000, 0.25, 0.05);
  // Inference, or a node whose training_mode is false: the identity.
  for (const auto &model :
       {dropoutModel(true).import(), dropoutModel(false).import(o)}) {
    EXPECT_TRUE(model.stateUpdates.empty());
    EXPECT_EQ(run(model, feeds), std::vector<double>(1000, 3));
  }
}

TEST(OnnxImporter, FrozenInitializersAreNotTrainable) {
  ModelMaker mm;
  mm.input("x", {2, 3});
  mm.initializer("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  mm.initializer("b", {2}, {1, 1});
  mm.node("MatMul", {"x", "w"}, {"xw"});
  mm.node("Add", {"xw", "b"}, {"y"});
  mm.output("y");
  tessera::onnx::ImportOptions o;
  o.frozen = {"b"};
  const auto im = mm.import(o);
  std::map<std::string, bool> trainable;
  for (const ir::Variable &v : im.module.variables())
    trainable[im.module.value(v.value).name] = v.trainable;
  EXPECT_EQ(trainable,
            (std::map<std::string, bool>{{"b", false}, {"w", true}}));
  o.frozen = {"b", "c"};
  EXPECT_THAT([&] { mm.import(o); },
              ::testing::ThrowsMessage<OptionError>(HasSubstr(
                  "frozen names 'c', which is no float initializer")));
}

TEST(OnnxImporter, DropoutWithARatioAttributeDropsInTraining) {
  // The opset 7-11 form, which PopART's builders write at later opsets.
  ModelMaker mm;
  mm.input("x", {1000});
  auto &node = mm.node("Dropout", {"x"}, {"y"});
  auto *ratio = node.add_attribute();
  ratio->set_name("ratio");
  ratio->set_type(::onnx::AttributeProto::FLOAT);
  ratio->set_f(0.5f);
  mm.output("y");
  tessera::onnx::ImportOptions o;
  o.training = true;
  const ir::Feeds feeds{{"x", {FLOAT, {1000}, std::vector<double>(1000, 1)}}};
  const auto y = run(mm.import(o), feeds);
  const auto zeros = std::count(y.begin(), y.end(), 0.0);
  EXPECT_EQ(zeros + std::count(y.begin(), y.end(), 2.0), 1000);
  EXPECT_NEAR(double(zeros) / 1000, 0.5, 0.06);
  EXPECT_EQ(run(mm.import(), feeds), std::vector<double>(1000, 1));
}
