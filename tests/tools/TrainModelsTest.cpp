// The models of `tessera train`: Keras' ResNet-50 built with nn, checked
// against Keras' own layer and parameter counts without compiling it, and
// the command line's checks of its options.
#include "tools/TrainModels.hpp"
#include "tools/Subprocess.hpp"
#include "tools/ToolsTestPaths.hpp"

#include "tessera/nn/Model.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

using namespace tessera;
using namespace tessera::testing;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(TrainModels, ResNet50HasKerasLayersAndParametersAtEveryImageSize) {
  // tf.keras.applications.ResNet50(weights=None, classes=10): 177 layers
  // (the Input included), 23,555,082 trainable and 53,120 non-trainable
  // parameters (the BatchNorms' moving statistics), whatever the size.
  for (unsigned size : {32u, 224u}) {
    const nn::Model model = tools::buildResNet50(size, 10, 1);
    EXPECT_EQ(model.layers().size(), 177u) << size;
    const auto [trainable, frozen] = model.countParams();
    EXPECT_EQ(trainable, 23555082u) << size;
    EXPECT_EQ(frozen, 53120u) << size;
    EXPECT_EQ(trainable + frozen, 23608202u) << size;
    EXPECT_EQ(model.outputShape(), nn::Shape{10}) << size;
  }
}

TEST(TrainModels, ResNet50HasKerasLayerNames) {
  const nn::Model model = tools::buildResNet50(32, 10, 1);
  std::vector<std::string> names;
  for (const nn::LayerRef &layer : model.layers())
    names.push_back(layer->name());
  for (const char *name :
       {"conv1_pad", "conv1_conv", "pool1_pool", "conv2_block1_0_conv",
        "conv4_block6_out", "conv5_block3_3_bn", "avg_pool", "predictions"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  // Only the first block of each of the four stages projects its input.
  EXPECT_EQ(std::count_if(
                names.begin(), names.end(),
                [](const std::string &n) { return n.ends_with("_0_conv"); }),
            4);
}

TEST(TrainModels, ResNet50RefusesImagesSmallerThan32) {
  EXPECT_THROW(tools::buildResNet50(31, 10, 1), OptionError);
}

namespace {

ProcessResult train(std::vector<std::string> args) {
  args.insert(args.begin(), {kTesseraCli, "train"});
  return runProcess(args, {});
}

void expectOneLineError(const ProcessResult &r, const std::string &message) {
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("tessera train: error: "));
  EXPECT_THAT(r.err, HasSubstr(message));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

} // namespace

TEST(TrainCli, ResNet50OptionsAreCheckedBeforeBuilding) {
  expectOneLineError(train({"--model", "resnet50"}), "give --synthetic-data");
  expectOneLineError(
      train({"--model", "resnet50", "--synthetic-data", "--image-size", "16"}),
      "--image-size must be 32 to 4096, got 16");
  expectOneLineError(train({"--model", "cnn", "--image-size", "32"}),
                     "--image-size sizes resnet50's images");
  expectOneLineError(train({"--model", "resnet50", "--synthetic-data",
                            "--pipeline-stages", "2"}),
                     "leave it out for resnet50");
}

TEST(TrainCli, HelpDescribesResNet50AndSyntheticData) {
  const ProcessResult r = train({"--help"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--synthetic-data"));
  EXPECT_THAT(r.out, HasSubstr("--image-size"));
  EXPECT_THAT(r.out, HasSubstr("resnet50 is Keras' ResNet50"));
}

TEST(TrainCli, SyntheticDataTrainsAStepWithoutATestSet) {
  const ProcessResult r =
      train({"--model", "mlp", "--synthetic-data", "--batch-size", "4",
             "--steps-per-execution", "2", "--epochs", "1", "--no-cache"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Training on 8 synthetic 784 examples"));
  EXPECT_THAT(r.out, HasSubstr("2/2"));
  EXPECT_THAT(r.out, HasSubstr("Tile memory:"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("Test (")));
}

TEST(TrainCli, OptimizerOptionsAreChecked) {
  expectOneLineError(train({"--momentum", "0.5"}), "give --optimizer sgd too");
  expectOneLineError(train({"--optimizer", "sgd", "--momentum", "1"}),
                     "--momentum must be at least 0 and below 1, got 1");
}

TEST(TrainCli, SgdWithMomentumUnderMixedPrecisionTrains) {
  const ProcessResult r =
      train({"--model", "mlp", "--synthetic-data", "--batch-size", "4",
             "--steps-per-execution", "2", "--epochs", "1", "--no-cache",
             "--optimizer", "sgd", "--momentum", "0.8", "--dtype-policy",
             "mixed_float16"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("SGD lr 0.0005 momentum 0.8, dtype policy "
                               "mixed_float16"));
  EXPECT_THAT(r.out, HasSubstr("2/2"));
}
