// Half precision through nn: Keras' dtype policies (float32,
// mixed_float16, float16) per layer and global, the partials type, and
// loss scaling. A mixed_float16 ResNet-style block (conv, batch norm, relu,
// residual add, dense head) trains on the IPU Model and its loss falls,
// close to the float32 run; dynamic loss scaling skips overflowing steps,
// halves the scale and trains on; static scaling by a power of 2 gives the
// weights unscaled training gives; bad settings are typed errors that say
// what to do.
#include "tessera/nn/Model.hpp"

#include "ErrorOf.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace tessera::nn;
using tessera::nn::test::errorOf;
namespace data = tessera::data;
namespace ir = tessera::ir;
namespace passes = tessera::passes;
namespace session = tessera::session;
using data::HostTensor;
using tessera::FLOAT;
using tessera::HALF;
using tessera::INT;
using tessera::OptionError;
using tessera::Type;
using tessera::TypeError;
using ::testing::HasSubstr;

namespace {

constexpr std::size_t kExamples = 32, kBatch = 8, kSide = 6, kClasses = 4;

// Sets the global policy for one test and restores float32 after it.
struct GlobalPolicy {
  explicit GlobalPolicy(const std::string &name) { setGlobalPolicy(name); }
  ~GlobalPolicy() { setGlobalPolicy("float32"); }
};

// Images whose class sets which channel is bright and where, plus noise.
std::pair<HostTensor, HostTensor> images() {
  std::vector<float> xs;
  std::vector<int> ys;
  for (std::size_t i = 0; i < kExamples; ++i) {
    const int label = int(i % kClasses);
    for (std::size_t p = 0; p < kSide * kSide; ++p)
      for (std::size_t c = 0; c < 3; ++c) {
        const bool lit = c == std::size_t(label % 3) &&
                         (p % kSide < kSide / 2) == (label < 3);
        xs.push_back((lit ? 1.0f : 0.0f) +
                     0.3f * std::sin(float(i * 31 + p * 7 + c * 3)));
      }
    ys.push_back(label);
  }
  return {HostTensor::fromValues<float>({kExamples, kSide, kSide, 3}, xs),
          HostTensor::fromValues<int>({kExamples}, ys)};
}

Conv2DOptions same(const std::string &activation = "") {
  Conv2DOptions o;
  o.padding = Padding::Same;
  o.activation = activationFromName(activation);
  return o;
}

// conv -> [conv, batch norm, relu, conv, batch norm] + shortcut -> relu ->
// global average pool -> dense softmax.
Model resnetBlock() {
  KerasTensor x = Input({kSide, kSide, 3});
  KerasTensor h0 = Conv2D(8, {3, 3}, same("relu"))(x);
  KerasTensor h = Conv2D(8, {3, 3}, same())(h0);
  h = ActivationLayer("relu")(BatchNorm()(h));
  h = BatchNorm()(Conv2D(8, {3, 3}, same())(h));
  h = ActivationLayer("relu")(Add()({h, h0}));
  KerasTensor y = Dense(kClasses, "softmax")(GlobalAvgPool2D()(h));
  return Model(x, y, "resnet_block", 7);
}

CompileOptions options(std::optional<LossScaleOptions> scale = std::nullopt) {
  CompileOptions o;
  o.optimizer = passes::SGD{0.1, 0.9};
  o.config.ipuModel.tilesPerIpu = 16;
  o.lossScale = scale;
  return o;
}

FitOptions quiet(unsigned epochs, std::optional<std::size_t> steps = {}) {
  FitOptions o;
  o.epochs = epochs;
  o.stepsPerEpoch = steps;
  o.verbose = Verbosity::Silent;
  return o;
}

std::vector<double> losses(Model &m, unsigned epochs) {
  auto [x, y] = images();
  const History h = m.fit(x, y, kBatch, quiet(epochs), false);
  std::vector<double> out;
  for (const Logs &l : h.epochs)
    out.push_back(logValue(l, "loss"));
  return out;
}

const HostTensor &weight(const session::Checkpoint &c,
                         const std::string &name) {
  for (const auto &[n, t] : c.variables)
    if (n == name)
      return t;
  throw std::runtime_error("no variable " + name);
}

std::vector<unsigned char> bytesOf(const HostTensor &t) {
  const auto *p = static_cast<const unsigned char *>(t.data());
  return {p, p + t.numBytes()};
}

std::size_t countOps(const ir::Module &m, ir::OpKind kind, Type dtype,
                     const char *partials = nullptr) {
  std::size_t n = 0;
  for (const ir::Op &op : m.ops())
    if (op.kind == kind && m.typeOf(op.results[0]).dtype == dtype &&
        (!partials || (op.attrs.has(ir::kPartialsType) &&
                       op.attrs.getString(ir::kPartialsType) == partials)))
      ++n;
  return n;
}

data::ComponentSpec labelSpec() { return {"y", INT, {kBatch}}; }

} // namespace

TEST(MixedPrecision, PolicyNamesAndTypesAreKeras) {
  EXPECT_EQ(Policy("mixed_float16").computeDtype(), HALF);
  EXPECT_EQ(Policy("mixed_float16").variableDtype(), FLOAT);
  EXPECT_EQ(Policy("float16").variableDtype(), HALF);
  EXPECT_EQ(Policy().name(), "float32");
  EXPECT_EQ(globalPolicy().name(), "float32");
  {
    GlobalPolicy g("mixed_float16");
    EXPECT_EQ(Dense(3).dtypePolicy().name(), "mixed_float16");
    // Inputs keep their type; the first layer casts.
    EXPECT_EQ(Input({3}).dtypePolicy().name(), "float32");
  }
  EXPECT_EQ(Dense(3).dtypePolicy().name(), "float32");
}

TEST(MixedPrecision, MixedResNetBlockComputesInHalfWithFloatWeights) {
  GlobalPolicy g("mixed_float16");
  Model m = resnetBlock();
  m.compile(options());
  const ir::Module t = m.trainingModule(kBatch, labelSpec());
  EXPECT_EQ(countOps(t, ir::OpKind::CONV2D, HALF), 3u);
  // The head's forward matmul and its two gradients.
  EXPECT_EQ(countOps(t, ir::OpKind::MATMUL, HALF), 3u);
  EXPECT_EQ(countOps(t, ir::OpKind::CONV2D_BACKPROP_FILTER, HALF), 3u);
  for (const ir::Variable &v : t.variables())
    EXPECT_EQ(t.typeOf(v.value).dtype, FLOAT) << t.value(v.value).name;
  // Keras' compile turns on dynamic loss scaling under mixed_float16.
  EXPECT_EQ(m.lossScale(), 32768);
}

TEST(MixedPrecision, MixedResNetBlockTrainsAndItsLossFalls) {
  GlobalPolicy g("mixed_float16");
  Model m = resnetBlock();
  m.compile(options());
  const std::vector<double> l = losses(m, 6);
  EXPECT_TRUE(std::isfinite(l.front()));
  EXPECT_LT(l.back(), 0.7 * l.front()) << l.front() << " -> " << l.back();
  // No overflow at 2^15 with these small gradients: the scale held.
  EXPECT_EQ(m.lossScale(), 32768);
  // Inference (moving statistics, float outputs) runs in half too.
  auto [x, y] = images();
  const HostTensor p = m.predict(x, kBatch);
  EXPECT_EQ(p.type(), FLOAT);
  const Logs e =
      m.evaluate(data::Dataset::fromTensors({x, y}).batch(kBatch, true));
  EXPECT_TRUE(std::isfinite(logValue(e, "loss")));
}

TEST(MixedPrecision, Float32AndMixedLossesAreClose) {
  Model f32 = resnetBlock();
  f32.compile(options());
  const std::vector<double> a = losses(f32, 3);
  GlobalPolicy g("mixed_float16");
  Model mixed = resnetBlock();
  mixed.compile(options());
  const std::vector<double> b = losses(mixed, 3);
  for (std::size_t e = 0; e < a.size(); ++e)
    EXPECT_NEAR(b[e], a[e], 0.01 * a[e]) << "epoch " << e;
}

TEST(MixedPrecision, DynamicScalingRecoversFromAnOverflow) {
  GlobalPolicy g("mixed_float16");
  Model m = resnetBlock();
  // 2^30 overflows half gradients (largest 65504) at once.
  m.compile(options(LossScaleOptions{true, std::ldexp(1.0, 30), 2000}));
  auto [x, y] = images();
  m.fit(x, y, kBatch, quiet(1, 1), false); // fit builds the session
  const session::Checkpoint before = m.getWeights();
  m.fit(x, y, kBatch, quiet(1, 1), false);
  const session::Checkpoint after = m.getWeights();
  // The overflowing step was skipped: no weight moved, the scale halved.
  EXPECT_EQ(m.lossScale(), std::ldexp(1.0, 28));
  for (const std::string &name : m.weightNames())
    if (name.find("moving_") == std::string::npos) { // BN updates anyway
      EXPECT_EQ(bytesOf(weight(after, name)), bytesOf(weight(before, name)))
          << name;
    }
  // Training goes on: the scale falls until the gradients fit, then the
  // weights move and the loss falls.
  const std::vector<double> l = losses(m, 8);
  EXPECT_LT(m.lossScale(), std::ldexp(1.0, 28));
  EXPECT_GE(m.lossScale(), 1);
  EXPECT_NE(bytesOf(weight(m.getWeights(), "dense/kernel")),
            bytesOf(weight(after, "dense/kernel")));
  EXPECT_LT(l.back(), 0.8 * l.front()) << l.front() << " -> " << l.back();
}

TEST(MixedPrecision, CheckpointsCarryTheDynamicScale) {
  GlobalPolicy g("mixed_float16");
  Model m = resnetBlock();
  m.compile(options(LossScaleOptions{true, 512, 2}));
  auto [x, y] = images();
  m.fit(x, y, kBatch, quiet(1, 4), false);
  // Four finite steps at growth 2: 512 -> 2048.
  EXPECT_EQ(m.lossScale(), 2048);
  const session::Checkpoint c = m.getWeights();
  EXPECT_EQ(weight(c, passes::kLossScaleVariable).values<float>()[0], 2048);
  Model restored = resnetBlock();
  restored.compile(options(LossScaleOptions{true, 512, 2}));
  restored.setWeights(c);
  EXPECT_EQ(restored.lossScale(), 2048);
}

TEST(MixedPrecision, StaticScalingGivesTheUnscaledWeights) {
  auto train = [](std::optional<LossScaleOptions> scale) {
    Model m = resnetBlock();
    m.compile(options(scale));
    losses(m, 2);
    return m.getWeights();
  };
  const session::Checkpoint plain = train(std::nullopt);
  const session::Checkpoint scaled = train(LossScaleOptions{false, 1024, 2000});
  Model probe = resnetBlock();
  for (const std::string &name : probe.weightNames())
    EXPECT_EQ(bytesOf(weight(scaled, name)), bytesOf(weight(plain, name)))
        << name;
}

TEST(MixedPrecision, Float16PolicyKeepsHalfWeightsAndTrains) {
  GlobalPolicy g("float16");
  Model m = resnetBlock();
  m.compile(options(LossScaleOptions{true, 256, 2000}));
  const std::vector<double> l = losses(m, 6);
  EXPECT_EQ(weight(m.getWeights(), "dense/kernel").type(), HALF);
  EXPECT_EQ(weight(m.getWeights(), "batch_normalization/gamma").type(), HALF);
  EXPECT_LT(l.back(), 0.8 * l.front()) << l.front() << " -> " << l.back();
}

TEST(MixedPrecision, PartialsTypeReachesEveryMatmulAndConvolution) {
  GlobalPolicy g("mixed_float16");
  Model m = resnetBlock();
  CompileOptions o = options();
  o.partialsType = HALF;
  m.compile(o);
  const ir::Module t = m.trainingModule(kBatch, labelSpec());
  EXPECT_EQ(countOps(t, ir::OpKind::CONV2D, HALF, "half"), 3u);
  EXPECT_EQ(countOps(t, ir::OpKind::CONV2D_BACKPROP_INPUT, HALF, "half"), 2u);
  EXPECT_EQ(countOps(t, ir::OpKind::CONV2D_BACKPROP_FILTER, HALF, "half"), 3u);
  EXPECT_EQ(countOps(t, ir::OpKind::MATMUL, HALF, "half"), 3u);
  const std::vector<double> l = losses(m, 4);
  EXPECT_LT(l.back(), l.front());
}

TEST(MixedPrecision, AFloatLayerKeepsFloatAmongHalfOnes) {
  GlobalPolicy g("mixed_float16");
  KerasTensor x = Input({kSide, kSide, 3});
  KerasTensor h = Conv2D(4, {3, 3}, same("relu"))(x);
  h = Dropout(0.1)(MaxPool2D({2, 2})(h));
  Dense head(kClasses, "softmax");
  head.setDtypePolicy("float32");
  Model m(x, head(GlobalAvgPool2D()(h)));
  m.compile(options());
  const ir::Module t = m.trainingModule(kBatch, labelSpec());
  EXPECT_EQ(countOps(t, ir::OpKind::CONV2D, HALF), 1u);
  EXPECT_EQ(countOps(t, ir::OpKind::MATMUL, FLOAT), 3u); // forward, dx, dW
  EXPECT_EQ(countOps(t, ir::OpKind::MATMUL, HALF), 0u);
  EXPECT_EQ(countOps(t, ir::OpKind::DROPOUT, HALF), 2u); // and its gradient
  const std::vector<double> l = losses(m, 3);
  EXPECT_LT(l.back(), l.front());
}

TEST(MixedPrecision, BadSettingsAreTypedErrorsSayingWhatToDo) {
  EXPECT_THAT(errorOf<OptionError>([] { Policy("mixed_float61"); }),
              HasSubstr("unknown dtype policy \"mixed_float61\"; did you mean "
                        "\"mixed_float16\"? Known policies: float32, "
                        "mixed_float16, float16"));
  EXPECT_THAT(errorOf<OptionError>([] { setGlobalPolicy("half"); }),
              HasSubstr("unknown dtype policy \"half\""));
  EXPECT_EQ(globalPolicy().name(), "float32");
  EXPECT_THAT(errorOf<TypeError>([] {
                Input ids({5}, INT, "ids");
                ids.setDtypePolicy("float16");
              }),
              HasSubstr("ids (InputLayer): the Input takes int values, which "
                        "a \"float16\" policy cannot make half"));
  EXPECT_THAT(errorOf<TypeError>([] { Dense(2).setPartialsType(INT); }),
              HasSubstr("the partials type must be float or half, not int"));
  EXPECT_THAT(errorOf<TypeError>([] {
                Dense d(2);
                d.setPartialsType(HALF);
                Sequential m({Input({3}), d});
                m.compile(options());
              }),
              HasSubstr("dense (Dense): half partials need half inputs, but "
                        "the layer's dtype policy \"float32\" computes in "
                        "float; give it the \"mixed_float16\""));
  auto compileWith = [](LossScaleOptions s) {
    return errorOf<OptionError>([&] {
      Sequential m({Input({3}), Dense(2)});
      m.compile(options(s));
    });
  };
  EXPECT_THAT(compileWith({true, 0, 2000}),
              HasSubstr("the initial dynamic loss scale must be positive and "
                        "finite, not 0"));
  EXPECT_THAT(compileWith({false, INFINITY, 2000}),
              HasSubstr("the static loss scale must be positive and finite, "
                        "not inf"));
  EXPECT_THAT(compileWith({true, 128, 0}), HasSubstr("growthSteps >= 1"));
}

TEST(MixedPrecision, HalfPartialsRoundTheDevicesSums) {
  // Sums of 512 products: half partials round each running sum (every 16
  // products, as the IPU's accumulators do), float partials do not.
  GlobalPolicy g("mixed_float16");
  auto predict = [](std::optional<Type> partials) {
    Sequential m({Input({512}), Dense(4)}, "wide", 3);
    CompileOptions o = options();
    o.partialsType = partials;
    m.compile(o);
    std::vector<float> x(4 * 512);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = 1.0f + 0.001f * float(i % 97);
    const HostTensor y = m.predict(HostTensor::fromValues<float>({4, 512}, x));
    const auto v = y.values<float>();
    return std::vector<float>(v.begin(), v.end());
  };
  const std::vector<float> f = predict(std::nullopt), h = predict(HALF);
  EXPECT_NE(f, h);
  for (std::size_t i = 0; i < f.size(); ++i)
    EXPECT_NEAR(h[i], f[i], 0.02 * (1 + std::abs(f[i]))) << i;
}
