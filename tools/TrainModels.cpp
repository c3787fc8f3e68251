// The models of `tessera train` and `tessera plan`, and their stages.
#include "TrainModels.hpp"

#include "tessera/support/Error.hpp"

#include <fmt/format.h>

namespace tessera::tools {

std::size_t trainModelLayers(const std::string &model) {
  return model == "cnn" ? 7 : 3;
}

nn::Sequential buildTrainModel(const std::string &model, std::uint64_t seed) {
  using namespace nn;
  if (model == "mlp")
    return Sequential({nn::Input({784}), Dense(256, "relu"), Dense(128, "relu"),
                       Dense(10, "softmax")},
                      "mlp", seed);
  if (model == "cnn")
    return Sequential({nn::Input({28, 28, 1}), Conv2D(32, {3, 3}, "relu"),
                       MaxPool2D({2, 2}), Conv2D(64, {3, 3}, "relu"),
                       MaxPool2D({2, 2}), Flatten(), Dense(128, "relu"),
                       Dense(10, "softmax")},
                      "cnn", seed);
  throw OptionError("--model " + model + ": unknown model; use mlp or cnn");
}

namespace {

// Keras' ResNet epsilon, slightly above 1e-5 as Keras has it.
constexpr double kBnEpsilon = 1.001e-5;

nn::KerasTensor conv(const nn::KerasTensor &x, unsigned filters,
                     unsigned kernel, unsigned stride, nn::Padding padding,
                     const std::string &name) {
  nn::Conv2DOptions c;
  c.strides = {stride, stride};
  c.padding = padding;
  c.name = name + "_conv";
  nn::BatchNormOptions b;
  b.epsilon = kBnEpsilon;
  b.name = name + "_bn";
  return nn::BatchNorm(b)(nn::Conv2D(filters, {kernel, kernel}, c)(x));
}

// Keras' block1: a 1x1, 3x3, 1x1 bottleneck of 4 * filters outputs added
// to the input or to a 1x1 projection of it.
nn::KerasTensor bottleneck(const nn::KerasTensor &x, unsigned filters,
                           unsigned stride, bool convShortcut,
                           const std::string &name) {
  using nn::Padding;
  const nn::KerasTensor shortcut =
      convShortcut
          ? conv(x, 4 * filters, 1, stride, Padding::Valid, name + "_0")
          : x;
  nn::KerasTensor y = conv(x, filters, 1, stride, Padding::Valid, name + "_1");
  y = nn::ActivationLayer("relu", name + "_1_relu")(y);
  y = conv(y, filters, 3, 1, Padding::Same, name + "_2");
  y = nn::ActivationLayer("relu", name + "_2_relu")(y);
  y = conv(y, 4 * filters, 1, 1, Padding::Valid, name + "_3");
  y = nn::Add(name + "_add")({shortcut, y});
  return nn::ActivationLayer("relu", name + "_out")(y);
}

nn::KerasTensor stack(nn::KerasTensor x, unsigned filters, unsigned blocks,
                      unsigned stride, const std::string &name) {
  x = bottleneck(x, filters, stride, true, name + "_block1");
  for (unsigned i = 2; i <= blocks; ++i)
    x = bottleneck(x, filters, 1, false, fmt::format("{}_block{}", name, i));
  return x;
}

} // namespace

nn::Model buildResNet50(unsigned imageSize, unsigned classes,
                        std::uint64_t seed) {
  if (imageSize < 32)
    throw OptionError(fmt::format(
        "--image-size {}: ResNet-50 needs images of at least 32x32 (its "
        "five stride-2 steps shrink them 32 times); use 32 or more",
        imageSize));
  using nn::Padding;
  // One KerasTensor: each conversion of an Input makes a new input node.
  const nn::KerasTensor input =
      nn::Input({imageSize, imageSize, 3}, FLOAT, "input_1");
  nn::KerasTensor x = nn::ZeroPadding2D({{{3, 3}, {3, 3}}}, "conv1_pad")(input);
  x = conv(x, 64, 7, 2, Padding::Valid, "conv1");
  x = nn::ActivationLayer("relu", "conv1_relu")(x);
  x = nn::ZeroPadding2D({{{1, 1}, {1, 1}}}, "pool1_pad")(x);
  nn::PoolOptions pool;
  pool.strides = nn::Size2{2, 2};
  pool.name = "pool1_pool";
  x = nn::MaxPool2D({3, 3}, pool)(x);
  x = stack(x, 64, 3, 1, "conv2");
  x = stack(x, 128, 4, 2, "conv3");
  x = stack(x, 256, 6, 2, "conv4");
  x = stack(x, 512, 3, 2, "conv5");
  x = nn::GlobalAvgPool2D("avg_pool")(x);
  nn::DenseOptions dense;
  dense.activation = nn::Activation::Softmax;
  dense.name = "predictions";
  x = nn::Dense(classes, dense)(x);
  return nn::Model(input, x, "resnet50", seed);
}

std::vector<unsigned> evenStages(std::size_t layers, unsigned stages) {
  std::vector<unsigned> assignment(layers);
  for (std::size_t i = 0; i < layers; ++i)
    assignment[i] = unsigned(i * stages / layers);
  return assignment;
}

void applyPipelining(nn::Model &model, unsigned stages,
                     const std::string &schedule, unsigned accumulation,
                     bool recompute) {
  if (stages == 0) {
    passes::GradientAccumulationOptions a;
    a.count = accumulation;
    model.setGradientAccumulationOptions(a);
    return;
  }
  model.setPipelineStageAssignment(
      evenStages(model.layers().size() - 1, stages));
  nn::PipeliningOptions p;
  p.accumulation.count = accumulation;
  p.schedule = *session::parseSchedule(schedule);
  p.recompute = recompute;
  model.setPipeliningOptions(p);
}

} // namespace tessera::tools
