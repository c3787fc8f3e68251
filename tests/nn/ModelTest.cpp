// Sequential models on a small IPU Model: summary() matches Keras' shapes
// and parameter counts, fit lowers the loss and prints Keras' lines,
// evaluate agrees with predict, and user errors are typed and say what to
// do.
#include "tessera/nn/Model.hpp"

#include "ErrorOf.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include <unistd.h>

using namespace tessera::nn;
using tessera::nn::test::errorOf;
namespace data = tessera::data;
namespace passes = tessera::passes;
namespace session = tessera::session;
using data::HostTensor;
using tessera::FLOAT;
using tessera::INT;
using tessera::OptionError;
using tessera::ShapeError;
using tessera::TypeError;
using tessera::nn::Model;
using ::testing::HasSubstr;

namespace {

constexpr std::size_t kExamples = 64, kFeatures = 8, kBatch = 8;

// Two Gaussian-ish clusters in 8-D, separable by the sign of a projection.
std::pair<HostTensor, HostTensor> clusters(std::size_t n = kExamples) {
  std::vector<float> xs;
  std::vector<int> ys;
  for (std::size_t i = 0; i < n; ++i) {
    const int label = int(i % 2);
    for (std::size_t f = 0; f < kFeatures; ++f)
      xs.push_back((label ? 1.0f : -1.0f) * (0.5f + 0.1f * float(f % 3)) +
                   0.4f * std::sin(float(i * 7 + f * 13)));
    ys.push_back(label);
  }
  return {HostTensor::fromValues<float>({n, kFeatures}, xs),
          HostTensor::fromValues<int>({n}, ys)};
}

data::Dataset clusterData(std::size_t n = kExamples) {
  auto [x, y] = clusters(n);
  return data::Dataset::fromTensors({x, y}).batch(kBatch, true);
}

Sequential smallMlp() {
  return Sequential(
      {Input({kFeatures}), Dense(16, "relu"), Dense(2, "softmax")}, "small");
}

CompileOptions smallCompile(unsigned spe = 4) {
  CompileOptions o;
  o.optimizer = passes::Adam{0.05};
  o.metrics = {"accuracy"};
  o.stepsPerExecution = spe;
  o.config.ipuModel.tilesPerIpu = 16;
  return o;
}

FitOptions epochs(unsigned n) {
  FitOptions o;
  o.epochs = n;
  o.verbose = Verbosity::Silent;
  return o;
}

Conv2DOptions samePadding() {
  Conv2DOptions o;
  o.padding = Padding::Same;
  return o;
}

DenseOptions named(const std::string &name) {
  DenseOptions o;
  o.name = name;
  return o;
}

} // namespace

TEST(Summary, MlpShapesAndParameterCountsMatchKeras) {
  Sequential m(
      {Input({784}), Dense(256, "relu"), Dense(128, "relu"), Dense(10)}, "mlp");
  const std::string s = m.summary();
  EXPECT_THAT(s, HasSubstr("Model: \"mlp\""));
  EXPECT_THAT(s, HasSubstr("dense (Dense)                (None, 256)      "
                           "         200960"));
  EXPECT_THAT(s, HasSubstr("dense_1 (Dense)              (None, 128)      "
                           "         32896"));
  EXPECT_THAT(s, HasSubstr("dense_2 (Dense)              (None, 10)       "
                           "         1290"));
  EXPECT_THAT(s, HasSubstr("Total params: 235,146\n"));
  EXPECT_THAT(s, HasSubstr("Trainable params: 235,146\n"));
  EXPECT_THAT(s, HasSubstr("Non-trainable params: 0\n"));
  EXPECT_EQ(m.outputShape(), (Shape{10}));
}

TEST(Summary, CnnShapesAreChannelsLastAsInKeras) {
  Sequential m({Input({28, 28, 1}), Conv2D(32, {3, 3}, "relu"), MaxPool2D(),
                Conv2D(64, {3, 3}, "relu"), MaxPool2D(), Flatten(),
                Dense(128, "relu"), Dense(10)});
  const std::string s = m.summary();
  EXPECT_THAT(s, HasSubstr("conv2d (Conv2D)              (None, 26, 26, 32)"
                           "        320"));
  EXPECT_THAT(s, HasSubstr("max_pooling2d (MaxPooling2D) (None, 13, 13, 32)"));
  EXPECT_THAT(s, HasSubstr("conv2d_1 (Conv2D)            (None, 11, 11, 64)"
                           "        18496"));
  EXPECT_THAT(s, HasSubstr("(None, 5, 5, 64)"));
  EXPECT_THAT(s, HasSubstr("flatten (Flatten)            (None, 1600)"));
  EXPECT_THAT(s, HasSubstr("dense (Dense)                (None, 128)      "
                           "         204928"));
  EXPECT_THAT(s, HasSubstr("Total params: 225,034\n"));
}

TEST(Summary, BatchNormMovingStatisticsAreNotTrainable) {
  Sequential m({Input({6, 6, 3}), Conv2D(4, {3, 3}, samePadding()), BatchNorm(),
                GlobalAvgPool2D(), LayerNorm(), Dropout(0.5), Dense(2)});
  const std::string s = m.summary();
  EXPECT_THAT(s, HasSubstr("(None, 6, 6, 4)"));
  EXPECT_THAT(
      s,
      HasSubstr("batch_normalization (BatchNo (None, 6, 6, 4)           16"));
  EXPECT_THAT(s, HasSubstr("global_average_pooling2d (Gl (None, 4)"));
  // conv 3*3*3*4 + 4 = 112; bn 4 x 4; ln 8; dense 4*2 + 2 = 10.
  EXPECT_EQ(m.countParams(), (std::pair<std::size_t, std::size_t>{138, 8}));
  EXPECT_THAT(s, HasSubstr("Non-trainable params: 8\n"));
}

TEST(Fit, TrainingLowersTheLossAndPrintsKerasLines) {
  Sequential m = smallMlp();
  m.compile(smallCompile());
  std::ostringstream out;
  FitOptions fo;
  fo.epochs = 3;
  fo.verbose = Verbosity::LinePerEpoch;
  fo.out = &out;
  int epochsSeen = 0;
  auto cb = std::make_shared<LambdaCallback>();
  cb->epochEnd = [&](unsigned, const Logs &) { ++epochsSeen; };
  fo.callbacks.push_back(cb);
  History h = m.fit(clusterData(), fo);
  ASSERT_EQ(h.epochs.size(), 3u);
  EXPECT_EQ(epochsSeen, 3);
  EXPECT_LT(logValue(h.epochs[2], "loss"), 0.5 * logValue(h.epochs[0], "loss"));
  EXPECT_GT(logValue(h.epochs[2], "accuracy"), 0.9);
  const std::regex line(
      "Epoch 1/3\n8/8 \\[={30}\\] - [0-9]+s [0-9]+(s|ms|us)/step - loss: "
      "[0-9]\\.[0-9]{4} - accuracy: [0-9]\\.[0-9]{4}\nEpoch 2/3\n");
  EXPECT_TRUE(std::regex_search(out.str(), line)) << out.str();
  const FitStats &st = m.lastFitStats();
  EXPECT_EQ(st.steps, 24u);
  EXPECT_EQ(st.batchSize, kBatch);
  EXPECT_GT(st.estimatedCyclesPerRun, 0u);
  EXPECT_GT(st.ipuSecondsPerStep(), 0.0);
  // The breakdown adds up to the estimate; a training step computes,
  // exchanges and streams its batch in (on one IPU the syncs are part of
  // the compute and exchange steps).
  const tessera::CycleBreakdown &c = st.estimatedCyclesByKind;
  EXPECT_EQ(c.total(), st.estimatedCyclesPerRun);
  EXPECT_GT(c.compute, 0u);
  EXPECT_GT(c.exchange, 0u);
  EXPECT_GT(c.host, 0u);
  const tessera::MemorySummary &mem = st.memory;
  EXPECT_GT(mem.tilesUsed, 0u);
  EXPECT_LE(mem.tilesUsed, mem.tiles);
  EXPECT_GT(mem.total.alwaysLive, 0u);
  EXPECT_GT(mem.maxTileBytes, 0u);
  EXPECT_LE(mem.maxTileBytes, mem.bytesPerTile);
  EXPECT_LE(mem.maxTileBytes, mem.total.total());
}

TEST(Fit, ProgressBarRedrawsOneLine) {
  Sequential m = smallMlp();
  m.compile(smallCompile(2));
  std::ostringstream out;
  FitOptions fo;
  fo.verbose = Verbosity::ProgressBar;
  fo.out = &out;
  m.fit(clusterData(), fo);
  EXPECT_THAT(out.str(), HasSubstr("\r2/8 [======>.......................]"));
  EXPECT_THAT(out.str(), HasSubstr("\r8/8 [==============================]"));
}

TEST(Fit, ValidationDataJoinsTheLogsLineAndCallbacks) {
  Sequential m = smallMlp();
  m.compile(smallCompile());
  std::ostringstream out;
  FitOptions fo;
  fo.epochs = 2;
  fo.verbose = Verbosity::LinePerEpoch;
  fo.out = &out;
  fo.validationData = clusterData(32);
  Logs seen;
  auto cb = std::make_shared<LambdaCallback>();
  cb->epochEnd = [&](unsigned, const Logs &l) { seen = l; };
  fo.callbacks.push_back(cb);
  History h = m.fit(clusterData(), fo);
  ASSERT_EQ(h.epochs.size(), 2u);
  const Logs direct = m.evaluate(clusterData(32));
  EXPECT_NEAR(logValue(h.epochs[1], "val_loss"), logValue(direct, "loss"),
              1e-6);
  EXPECT_NEAR(logValue(seen, "val_accuracy"), logValue(direct, "accuracy"),
              1e-6);
  EXPECT_TRUE(std::regex_search(
      out.str(), std::regex("accuracy: [0-9.]+ - val_loss: [0-9.]+ - "
                            "val_accuracy: [0-9.]+\n")))
      << out.str();
}

TEST(Fit, ArraysWithoutShuffleKeepTheirOrder) {
  // Two models fed the same examples in order take the same steps; with
  // shuffling, the order (and so the weights) differ.
  auto train = [](bool shuffle) {
    Sequential m = smallMlp();
    m.compile(smallCompile());
    auto [x, y] = clusters();
    m.fit(std::move(x), std::move(y), kBatch, epochs(1), shuffle);
    return m.getWeights().variables[0].second;
  };
  const HostTensor ordered = train(false);
  EXPECT_EQ(ordered, train(false));
  EXPECT_FALSE(ordered == train(true));
}

TEST(Evaluate, AgreesWithPredictAndUsesTheTrainedWeights) {
  Sequential m = smallMlp();
  m.compile(smallCompile());
  const Logs before = m.evaluate(clusterData());
  m.fit(clusterData(), epochs(3));
  const Logs after = m.evaluate(clusterData());
  EXPECT_LT(logValue(after, "loss"), logValue(before, "loss"));

  auto [x, y] = clusters();
  const HostTensor p = m.predict(x, kBatch);
  ASSERT_EQ(p.shape(), (data::Shape{kExamples, 2}));
  std::size_t correct = 0;
  double loss = 0;
  for (std::size_t i = 0; i < kExamples; ++i) {
    const float a = p.values<float>()[2 * i], b = p.values<float>()[2 * i + 1];
    EXPECT_NEAR(a + b, 1.0f, 1e-5);
    correct += int(b > a) == y.values<int>()[i];
    loss -= std::log(std::max(y.values<int>()[i] ? b : a, 1e-7f));
  }
  EXPECT_NEAR(logValue(after, "accuracy"), double(correct) / kExamples, 1e-6);
  EXPECT_NEAR(logValue(after, "loss"), loss / kExamples, 1e-4);
}

TEST(Predict, PadsTheLastBatchAndKeepsTheOutputShape) {
  Sequential m = smallMlp();
  m.compile(smallCompile());
  auto [x, y] = clusters(13);
  const HostTensor p = m.predict(x, kBatch);
  EXPECT_EQ(p.shape(), (data::Shape{13, 2}));
  // The first 8 rows do not depend on the batch they came in.
  auto [x8, y8] = clusters(8);
  const HostTensor q = m.predict(x8, kBatch);
  for (std::size_t i = 0; i < 16; ++i)
    EXPECT_FLOAT_EQ(p.values<float>()[i], q.values<float>()[i]);
}

TEST(Fit, ConvBatchNormDropoutModelLearns) {
  // 6x6 images: class 1 has a bright left half, class 0 a bright right one.
  const std::size_t n = 32;
  std::vector<float> xs;
  std::vector<int> ys;
  for (std::size_t i = 0; i < n; ++i) {
    const int label = int(i % 2);
    for (std::size_t r = 0; r < 6; ++r)
      for (std::size_t c = 0; c < 6; ++c)
        xs.push_back(((c < 3) == bool(label) ? 1.0f : 0.0f) +
                     0.2f * std::sin(float(i * 31 + r * 7 + c)));
    ys.push_back(label);
  }
  auto ds = data::Dataset::fromTensors(
                {HostTensor::fromValues<float>({n, 6, 6, 1}, xs),
                 HostTensor::fromValues<int>({n, 1}, ys)})
                .batch(8, true);
  Sequential m({Input({6, 6, 1}), Conv2D(4, {3, 3}, "relu"), BatchNorm(),
                MaxPool2D(), Flatten(), Dropout(0.25), Dense(2)});
  CompileOptions o = smallCompile(4);
  o.fromLogits = true;
  m.compile(o);
  History h = m.fit(ds, epochs(6));
  EXPECT_LT(logValue(h.epochs.back(), "loss"),
            logValue(h.epochs.front(), "loss"));
  const Logs eval = m.evaluate(ds);
  EXPECT_GT(logValue(eval, "accuracy"), 0.9);
  // The moving averages moved away from their initial values.
  const session::Checkpoint w = m.getWeights();
  bool moved = false;
  for (const auto &[name, t] : w.variables)
    if (name == "batch_normalization/moving_mean")
      for (float v : t.values<float>())
        moved = moved || v != 0.0f;
  EXPECT_TRUE(moved);
}

TEST(Fit, EmbeddingModelLearnsTokenClasses) {
  // Sequences of 4 token ids in [0, 10); the class is whether token 7
  // appears.
  const std::size_t n = 32;
  std::vector<int> xs, ys;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t t = 0; t < 4; ++t)
      xs.push_back(int((i * 3 + t * 5) % 7));
    if (i % 2)
      xs[i * 4 + i % 4] = 7;
    ys.push_back(int(i % 2));
  }
  auto ds = data::Dataset::fromTensors({HostTensor::fromValues<int>({n, 4}, xs),
                                        HostTensor::fromValues<int>({n}, ys)})
                .batch(8, true);
  Sequential m(
      {Input({4}, INT), Embedding(10, 8), Flatten(), Dense(2, "softmax")});
  EXPECT_THAT(m.summary(), HasSubstr("embedding (Embedding)        (None, 4, 8)"
                                     "              80"));
  m.compile(smallCompile(4));
  History h = m.fit(ds, epochs(8));
  EXPECT_GT(logValue(h.epochs.back(), "accuracy"), 0.9);
}

TEST(Errors, FitBeforeCompileIsAModelError) {
  Sequential m = smallMlp();
  EXPECT_THAT(
      errorOf<ModelError>([&] { m.fit(clusterData(), epochs(1)); }),
      HasSubstr("fit: model \"small\" is not compiled; call compile()"));
  EXPECT_THAT(errorOf<ModelError>([&] { m.evaluate(clusterData()); }),
              HasSubstr("not compiled"));
}

TEST(Errors, CompilingOrFittingFromAFitCallbackIsAModelError) {
  Sequential m = smallMlp();
  m.compile(smallCompile());
  auto recompile = std::make_shared<LambdaCallback>();
  recompile->epochEnd = [&](unsigned, const Logs &) {
    m.compile(smallCompile());
  };
  FitOptions fo = epochs(2);
  fo.callbacks = {recompile};
  EXPECT_THAT(errorOf<ModelError>([&] { m.fit(clusterData(), fo); }),
              HasSubstr("compile() called while fit() runs"));
  auto refit = std::make_shared<LambdaCallback>();
  refit->epochEnd = [&](unsigned, const Logs &) {
    m.fit(clusterData(), epochs(1));
  };
  fo.callbacks = {refit};
  EXPECT_THAT(errorOf<ModelError>([&] { m.fit(clusterData(), fo); }),
              HasSubstr("fit() called while fit() runs"));
  auto regroup = std::make_shared<LambdaCallback>();
  regroup->epochEnd = [&](unsigned, const Logs &) {
    m.setGradientAccumulationOptions({.count = 2});
  };
  fo.callbacks = {regroup};
  EXPECT_THAT(errorOf<ModelError>([&] { m.fit(clusterData(), fo); }),
              HasSubstr("options changed while fit() runs"));
  // The model is whole: it trains again.
  EXPECT_NO_THROW(m.fit(clusterData(), epochs(1)));
}

TEST(Errors, WrongInputShapeIsAShapeError) {
  Sequential m = smallMlp();
  m.compile(smallCompile());
  auto [x, y] = clusters();
  auto wide = data::Dataset::fromTensors({x.reshaped({kExamples / 2, 16}),
                                          y.reshaped({kExamples / 2, 2})})
                  .batch(kBatch, true);
  EXPECT_THAT(
      errorOf<ShapeError>([&] { m.fit(wide); }),
      HasSubstr("fit: the dataset's inputs (component 0) have shape "
                "[8,16] but the model's Input \"input\" takes (None, 8)"));
  auto ragged = data::Dataset::fromTensors({x, y}).batch(10);
  EXPECT_THAT(errorOf<ShapeError>([&] { m.fit(ragged); }),
              HasSubstr("dropRemainder = true"));
  EXPECT_THAT(errorOf<ShapeError>([&] {
                m.predict(x.reshaped({32, 16}));
              }),
              HasSubstr("predict: the inputs have shape [32,16]"));
}

TEST(Errors, WrongDtypesAreTypeErrors) {
  Sequential m = smallMlp();
  m.compile(smallCompile());
  auto [x, y] = clusters();
  auto intImages =
      data::Dataset::fromTensors({x.cast(INT), y}).batch(kBatch, true);
  EXPECT_THAT(
      errorOf<TypeError>([&] { m.fit(intImages); }),
      HasSubstr("are int [8,8] but the model's Input \"input\" takes float"));
  auto floatLabels =
      data::Dataset::fromTensors({x, y.cast(FLOAT)}).batch(kBatch, true);
  EXPECT_THAT(errorOf<TypeError>([&] { m.fit(floatLabels); }),
              HasSubstr("labels must be int class ids"));
  Sequential emb({Input({4}), Embedding(10, 2)});
  EXPECT_THAT(errorOf<TypeError>([&] { emb.summary(); }),
              HasSubstr("embedding (Embedding): expects integer token ids"));
}

TEST(Errors, LayersThatDoNotFitAreShapeErrorsAtCompile) {
  Sequential m({Input({784}), Conv2D(8, {3, 3})});
  EXPECT_THAT(errorOf<ShapeError>([&] { m.compile(smallCompile()); }),
              HasSubstr("conv2d (Conv2D): expects images of rank 4 (batch, "
                        "height, width, channels) but got shape (None, 784)"));
  Sequential small({Input({2, 2, 1}), MaxPool2D({3, 3})});
  EXPECT_THAT(errorOf<ShapeError>([&] { small.summary(); }),
              HasSubstr("the window is 3x3 but the input is only 2x2"));
}

TEST(Errors, BadOptionsAndModelsAreReported) {
  Sequential m = smallMlp();
  CompileOptions o = smallCompile();
  o.loss = "hinge";
  EXPECT_THAT(errorOf<OptionError>([&] { m.compile(o); }),
              HasSubstr("unknown loss \"hinge\""));
  o = smallCompile();
  o.metrics = {"auc"};
  EXPECT_THAT(errorOf<OptionError>([&] { m.compile(o); }),
              HasSubstr("unknown metric \"auc\""));
  m.compile(smallCompile(3));
  EXPECT_THAT(errorOf<OptionError>([&] { m.fit(clusterData()); }),
              HasSubstr("an epoch of 8 steps is not a whole number of device "
                        "runs of stepsPerExecution = 3"));
  EXPECT_THAT(errorOf<OptionError>([] { Dense(3, "relu6"); }),
              HasSubstr("unknown activation \"relu6\""));
  Sequential noInput({Dense(3)});
  EXPECT_THAT(errorOf<ModelError>([&] { noInput.summary(); }),
              HasSubstr("has no Input"));
  EXPECT_THAT(errorOf<ModelError>([&] { noInput.add(Input({3})); }),
              HasSubstr("an Input must be the first layer"));
  EXPECT_THAT(
      errorOf<ModelError>([&] { noInput.add(Dense(3, named("dense"))); }),
      HasSubstr("two layers are named \"dense\""));
}

TEST(Weights, SetWeightsRestoresAModel) {
  Sequential a = smallMlp();
  a.compile(smallCompile());
  a.fit(clusterData(), epochs(2));
  const session::Checkpoint w = a.getWeights();
  Sequential b = smallMlp();
  b.compile(smallCompile());
  b.setWeights(w);
  auto [x, y] = clusters(16);
  const HostTensor pa = a.predict(x, kBatch), pb = b.predict(x, kBatch);
  EXPECT_EQ(pa, pb);
  Sequential wider({Input({kFeatures}), Dense(17, "relu"), Dense(2)}, "wide");
  wider.compile(smallCompile());
  EXPECT_THAT(
      errorOf<tessera::SerializationError>([&] { wider.setWeights(w); }),
      HasSubstr("have no variable \"dense/kernel\" of type "
                "float[8, 17], which model \"wide\" needs"));
}

TEST(Weights, WeightNamesListLayerWeightsWithoutOptimizerState) {
  Sequential m({Input({4, 4, 1}), Conv2D(2, {3, 3}), BatchNorm(), Flatten(),
                Dropout(0.5), Dense(2)});
  m.compile(smallCompile());
  EXPECT_EQ(m.weightNames(),
            (std::vector<std::string>{
                "conv2d/kernel", "conv2d/bias", "batch_normalization/gamma",
                "batch_normalization/beta", "batch_normalization/moving_mean",
                "batch_normalization/moving_variance", "dense/kernel",
                "dense/bias"}));
}

TEST(TrainingModule, TheFashionCnnDifferentiatesEveryWeight) {
  // A bias gradient once read a shape that adding its reduction had moved
  // (Autodiff's sumToShape); this model's size made the table reallocate.
  Sequential m({Input({28, 28, 1}), Conv2D(32, {3, 3}, "relu"), MaxPool2D(),
                Conv2D(64, {3, 3}, "relu"), MaxPool2D(), Flatten(),
                Dense(128, "relu"), Dense(10)});
  CompileOptions o = smallCompile();
  o.fromLogits = true;
  m.compile(o);
  const tessera::ir::Module t = m.trainingModule(32, {"label", INT, {32}});
  std::size_t updates = 0;
  for (const auto &out : t.outputs())
    updates += out.name.rfind("update/", 0) == 0 &&
               out.name.find("/adam") == std::string::npos &&
               out.name != "update/optimizer/step";
  EXPECT_EQ(updates, 8u); // 4 kernels, 4 biases
}

TEST(Functional, ResidualModelSummarisesAndTrains) {
  KerasTensor x = Input({kFeatures});
  KerasTensor h = Dense(16, "relu")(x);
  KerasTensor skip = Dense(16)(x);
  KerasTensor joined = Concatenate()({Add()({h, skip}), h});
  KerasTensor y = Dense(2, "softmax")(joined);
  Model m(x, y, "residual");
  const std::string s = m.summary();
  EXPECT_THAT(s, HasSubstr("input (InputLayer)           [(None, 8)]      "
                           "         0"));
  EXPECT_THAT(s, HasSubstr("add (Add)                    (None, 16)"));
  EXPECT_THAT(s, HasSubstr("concatenate (Concatenate)    (None, 32)"));
  // 8*16+16 twice, then 32*2+2.
  EXPECT_THAT(s, HasSubstr("Total params: 354\n"));
  m.compile(smallCompile());
  History hist = m.fit(clusterData(), epochs(3));
  EXPECT_LT(logValue(hist.epochs[2], "loss"),
            0.5 * logValue(hist.epochs[0], "loss"));
  EXPECT_GT(logValue(m.evaluate(clusterData()), "accuracy"), 0.9);
}

TEST(Functional, BadGraphsAreReported) {
  KerasTensor a = Input({4}), b = Input({4});
  KerasTensor sum = Add()({Dense(3)(a), Dense(3)(b)});
  EXPECT_THAT(errorOf<ModelError>([&] { Model(a, sum); }),
              HasSubstr("an Input other than the model's"));
  Model mismatched(a, Add()({Dense(3)(a), Dense(5)(a)}));
  EXPECT_THAT(errorOf<ShapeError>([&] { mismatched.summary(); }),
              HasSubstr("add (Add): input 1 has shape (None, 5) but input 0 "
                        "has (None, 3)"));
  Model single(a, Dense(3)({a, a}));
  EXPECT_THAT(errorOf<ShapeError>([&] { single.summary(); }),
              HasSubstr("dense (Dense): takes one input but was applied to 2"));
}

TEST(Fit, TakesArraysAsKerasDoes) {
  Sequential m = smallMlp();
  m.compile(smallCompile(1));
  auto [x, y] = clusters();
  // 64 examples in batches of 10: 6 steps an epoch, 4 examples left out.
  History h = m.fit(x, y, 10, epochs(4));
  EXPECT_EQ(m.lastFitStats().steps, 24u);
  EXPECT_LT(logValue(h.epochs[3], "loss"), logValue(h.epochs[0], "loss"));
  // A second fit goes on from the trained weights, on a new infeed.
  History more = m.fit(x, y, 10, epochs(1));
  EXPECT_LT(logValue(more.epochs[0], "loss"), logValue(h.epochs[0], "loss"));
  EXPECT_THAT(errorOf<OptionError>([&] { m.fit(x, y, 65); }),
              HasSubstr("batchSize must be between 1 and the number of "
                        "examples (64), got 65"));
}

namespace {

// The cluster data with label \p bad at example \p at.
data::Dataset dataWithLabel(int bad, std::size_t at) {
  auto [x, y] = clusters();
  y.values<int>()[at] = bad;
  return data::Dataset::fromTensors({x, y}).batch(kBatch, true);
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const ShapeError &e) {
    return e.what();
  }
  return "no ShapeError";
}

} // namespace

TEST(Errors, LabelsOutsideTheClassesAreNamedBeforeTheyTrain) {
  // A two-class model: 2 and -1 are no class. On the device they trained
  // silently to "loss 0".
  Sequential m = smallMlp();
  m.compile(smallCompile());
  EXPECT_THAT(errorOf([&] { m.fit(dataWithLabel(2, 19), epochs(1)); }),
              HasSubstr("fit: label 2 at row 3 of batch 2 (example 19 of the "
                        "dataset) is not a class id: the model has 2 "
                        "classes, so sparse labels must be 0 to 1"));
  EXPECT_THAT(errorOf([&] { m.fit(dataWithLabel(-1, 0), epochs(1)); }),
              HasSubstr("fit: label -1 at row 0 of batch 0"));
  EXPECT_THAT(errorOf([&] { m.evaluate(dataWithLabel(200, 63)); }),
              HasSubstr("evaluate: label 200 at row 7 of batch 7 (example 63 "
                        "of the dataset) is not a class id"));
  // Good labels still train after a refused batch.
  const History h = m.fit(clusterData(), epochs(1));
  EXPECT_EQ(h.epochs.size(), 1u);
}

TEST(Errors, AProfileThatCannotBeWrittenFailsTheFit) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera-nn-profile-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::ofstream(dir) << "a file where the profile folder should be";
  Sequential m = smallMlp();
  CompileOptions c = smallCompile();
  c.config.engineOptions.set({{"autoReport.outputExecutionProfile", "true"},
                              {"autoReport.directory", dir.string()}});
  m.compile(c);
  try {
    m.fit(clusterData(), epochs(1));
    ADD_FAILURE() << "the lost profile was not reported";
  } catch (const tessera::Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot write the profile to folder"));
  }
  std::filesystem::remove_all(dir);
}

TEST(Layers, ZeroPaddingPutsZerosAroundImagesInEitherLayout) {
  // Straight from the Input (channels-last) and after a 1x1 convolution
  // of weight 1 (channels-first): the same padded images.
  Conv2DOptions identity;
  identity.useBias = false;
  identity.kernelInitializer = tessera::ir::init::constant(1.0);
  Sequential last(
      {Input({2, 3, 1}), ZeroPadding2D({{{1, 0}, {2, 1}}}), Flatten()});
  Sequential first({Input({2, 3, 1}), Conv2D(1, {1, 1}, identity),
                    ZeroPadding2D({{{1, 0}, {2, 1}}}), Flatten()});
  EXPECT_THAT(last.summary(),
              HasSubstr("zero_padding2d (ZeroPadding2 (None, 3, 6, 1)"));
  std::vector<float> values(12);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = float(i + 1);
  const HostTensor x = HostTensor::fromValues<float>({2, 2, 3, 1}, values);
  for (Sequential *m : {&last, &first}) {
    m->compile(smallCompile(1));
    const HostTensor p = m->predict(x, 2);
    ASSERT_EQ(p.shape(), (data::Shape{2, 18}));
    for (std::size_t n = 0; n < 2; ++n)
      for (std::size_t r = 0; r < 3; ++r)
        for (std::size_t c = 0; c < 6; ++c) {
          const bool inside = r >= 1 && c >= 2 && c < 5;
          const float want =
              inside ? values[n * 6 + (r - 1) * 3 + (c - 2)] : 0.0f;
          EXPECT_EQ(p.values<float>()[n * 18 + r * 6 + c], want)
              << "example " << n << " row " << r << " column " << c;
        }
  }
}
