// Functional models of several inputs and outputs: elements (x0, x1, y0,
// y1), Keras' per-output logs, weighted losses, predict returning one
// tensor per output, and the errors for elements that do not fit.
#include "tessera/nn/Model.hpp"

#include "ErrorOf.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace tessera::nn;
using tessera::nn::test::errorOf;
namespace data = tessera::data;
namespace passes = tessera::passes;
using data::HostTensor;
using tessera::OptionError;
using tessera::ShapeError;
using tessera::TypeError;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

constexpr std::size_t kExamples = 64, kBatch = 8;

// Input a [n, 4] says the class (the sign of its mean), input b [n, 3] the
// regression target (the sum of b).
struct TwoByTwo {
  HostTensor a, b, classes, sums;
};

TwoByTwo twoByTwo(std::size_t n = kExamples) {
  std::vector<float> a, b, sums;
  std::vector<int> classes;
  for (std::size_t i = 0; i < n; ++i) {
    const int label = int(i % 2);
    for (std::size_t f = 0; f < 4; ++f)
      a.push_back((label ? 1.0f : -1.0f) + 0.3f * std::sin(float(i * 5 + f)));
    float sum = 0;
    for (std::size_t f = 0; f < 3; ++f) {
      b.push_back(0.5f * std::cos(float(i * 3 + f * 7)));
      sum += b.back();
    }
    sums.push_back(sum);
    classes.push_back(label);
  }
  return {HostTensor::fromValues<float>({n, 4}, a),
          HostTensor::fromValues<float>({n, 3}, b),
          HostTensor::fromValues<int>({n}, classes),
          HostTensor::fromValues<float>({n, 1}, sums)};
}

// Two inputs, concatenated, then a class head and a regression head.
Model twoHeaded() {
  KerasTensor a = Input({4}, tessera::FLOAT, "a");
  KerasTensor b = Input({3}, tessera::FLOAT, "b");
  KerasTensor h = Dense(16, "relu")(Concatenate()({a, b}));
  DenseOptions clsOptions, regOptions;
  clsOptions.activation = Activation::Softmax;
  clsOptions.name = "cls";
  regOptions.name = "reg";
  KerasTensor cls = Dense(2, clsOptions)(h);
  KerasTensor reg = Dense(1, regOptions)(h);
  return Model({a, b}, {cls, reg}, "two_headed");
}

CompileOptions twoLosses() {
  CompileOptions o;
  o.optimizer = passes::Adam{0.03};
  o.losses = {"sparse_categorical_crossentropy", "mse"};
  o.metrics = {"accuracy"};
  o.stepsPerExecution = 4;
  o.config.ipuModel.tilesPerIpu = 16;
  return o;
}

FitOptions quiet(unsigned epochs) {
  FitOptions o;
  o.epochs = epochs;
  o.verbose = Verbosity::Silent;
  return o;
}

std::vector<std::string> names(const Logs &logs) {
  std::vector<std::string> n;
  for (const auto &[name, v] : logs)
    n.push_back(name);
  return n;
}

} // namespace

TEST(MultiIo, TwoInputsTwoOutputsTrainWithKerasLogs) {
  Model m = twoHeaded();
  EXPECT_EQ(m.inputLayers().size(), 2u);
  EXPECT_THAT(m.outputNames(), ElementsAre("cls", "reg"));
  EXPECT_EQ(m.outputShapes(), (std::vector<data::Shape>{{2}, {1}}));
  // Both Inputs are listed; 7*16+16 + 16*2+2 + 16+1.
  EXPECT_THAT(m.summary(), HasSubstr("Total params: 179\n"));
  m.compile(twoLosses());
  TwoByTwo d = twoByTwo();
  History h = m.fit({d.a, d.b}, {d.classes, d.sums}, kBatch, quiet(6));
  EXPECT_THAT(names(h.epochs[0]),
              ElementsAre("loss", "cls_loss", "reg_loss", "cls_accuracy"));
  const Logs &first = h.epochs.front(), &last = h.epochs.back();
  // The loss is the sum of the outputs' losses.
  EXPECT_NEAR(logValue(last, "loss"),
              logValue(last, "cls_loss") + logValue(last, "reg_loss"), 1e-4);
  EXPECT_LT(logValue(last, "reg_loss"), 0.5 * logValue(first, "reg_loss"));
  EXPECT_GT(logValue(last, "cls_accuracy"), 0.9);

  data::Dataset test = data::Dataset::fromTensors({d.a, d.b, d.classes, d.sums})
                           .batch(kBatch, true);
  const Logs eval = m.evaluate(test);
  EXPECT_THAT(names(eval),
              ElementsAre("loss", "cls_loss", "reg_loss", "cls_accuracy"));

  // predict: one tensor per output, agreeing with evaluate's regression
  // loss.
  std::vector<HostTensor> out = m.predict({d.a, d.b}, 16);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (data::Shape{kExamples, 2}));
  EXPECT_EQ(out[1].shape(), (data::Shape{kExamples, 1}));
  double se = 0;
  for (std::size_t i = 0; i < kExamples; ++i) {
    const double e = out[1].values<float>()[i] - d.sums.values<float>()[i];
    se += e * e;
  }
  EXPECT_NEAR(se / kExamples, logValue(eval, "reg_loss"), 1e-3);
  EXPECT_THAT(errorOf<ModelError>([&] { m.predict(d.a); }),
              HasSubstr("has 2 outputs"));
}

TEST(MultiIo, LossWeightsScaleEachOutputsLoss) {
  Model m = twoHeaded();
  CompileOptions o = twoLosses();
  o.lossWeights = {0.5, 2.0};
  m.compile(o);
  TwoByTwo d = twoByTwo();
  data::Dataset test = data::Dataset::fromTensors({d.a, d.b, d.classes, d.sums})
                           .batch(kBatch, true);
  const Logs eval = m.evaluate(test);
  EXPECT_NEAR(logValue(eval, "loss"),
              0.5 * logValue(eval, "cls_loss") +
                  2.0 * logValue(eval, "reg_loss"),
              1e-4);
}

TEST(MultiIo, OneInputTwoOutputsTakesOneLossForBoth) {
  KerasTensor x = Input({4});
  KerasTensor h = Dense(8, "relu")(x);
  Model m(std::vector<KerasTensor>{x},
          {Dense(2, "softmax")(h), Dense(3, "softmax")(h)}, "forked");
  CompileOptions o = twoLosses();
  o.losses.clear(); // o.loss, sparse cross-entropy, for both
  m.compile(o);
  TwoByTwo d = twoByTwo();
  History h2 = m.fit({d.a}, {d.classes, d.classes}, kBatch, quiet(1));
  EXPECT_THAT(names(h2.epochs[0]),
              ElementsAre("loss", "dense_1_loss", "dense_2_loss",
                          "dense_1_accuracy", "dense_2_accuracy"));
}

TEST(MultiIo, ElementsThatDoNotFitAreReported) {
  Model m = twoHeaded();
  m.compile(twoLosses());
  TwoByTwo d = twoByTwo();
  // Labels missing: the message counts what the model needs.
  EXPECT_THAT(errorOf<ShapeError>([&] {
                m.fit(data::Dataset::fromTensors({d.a, d.b, d.classes})
                          .batch(kBatch, true),
                      quiet(1));
              }),
              HasSubstr("needs 4: 2 inputs, then labels for each of its 2 "
                        "outputs"));
  // Inputs swapped: input 0 is Input "a" of [None, 4].
  EXPECT_THAT(errorOf<ShapeError>([&] {
                m.fit({d.b, d.a}, {d.classes, d.sums}, kBatch, quiet(1));
              }),
              HasSubstr("Input \"a\" takes (None, 4)"));
  // Class ids where the regression head wants float targets.
  EXPECT_THAT(errorOf<TypeError>([&] {
                m.fit({d.a, d.b}, {d.classes, d.classes}, kBatch, quiet(1));
              }),
              HasSubstr("output \"reg\""));
  // A sparse label out of range in the first output's labels.
  HostTensor bad = d.classes;
  bad.values<int>()[5] = 7;
  EXPECT_THAT(errorOf<ShapeError>([&] {
                m.fit({d.a, d.b}, {bad, d.sums}, kBatch, quiet(1));
              }),
              HasSubstr("label 7 at row"));
  EXPECT_THAT(
      errorOf<ShapeError>([&] { m.predict(std::vector<HostTensor>{d.a}); }),
      HasSubstr("has 2 inputs but 1 tensors"));
}

TEST(MultiIo, ListsOfTheWrongLengthAreReported) {
  Model m = twoHeaded();
  CompileOptions o = twoLosses();
  o.losses = {"mse"};
  EXPECT_THAT(errorOf<OptionError>([&] { m.compile(o); }),
              HasSubstr("1 losses for the 2 outputs"));
  o = twoLosses();
  o.lossWeights = {1, 2, 3};
  EXPECT_THAT(errorOf<OptionError>([&] { m.compile(o); }),
              HasSubstr("3 loss weights for the 2 outputs"));
  KerasTensor a = Input({4});
  EXPECT_THAT(errorOf<ModelError>([&] {
                Model({a, a}, {Dense(2)(a)});
              }),
              HasSubstr("given twice"));
}
