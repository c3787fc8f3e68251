// fit()'s resume and synthetic-data options: initialEpoch numbers and runs
// the remaining epochs; with config.syntheticData the training step reads
// device-made inputs and labels (CompileOptions::syntheticDataInitializer)
// and sends nothing back, while evaluate() still reads its data.
#include "tessera/nn/Model.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

using namespace tessera::nn;
namespace data = tessera::data;
namespace passes = tessera::passes;
using data::HostTensor;
using tessera::OptionError;
using ::testing::HasSubstr;

namespace {

constexpr std::size_t kExamples = 64, kFeatures = 8, kBatch = 8;

data::Dataset clusterData() {
  std::vector<float> xs;
  std::vector<int> ys;
  for (std::size_t i = 0; i < kExamples; ++i) {
    for (std::size_t f = 0; f < kFeatures; ++f)
      xs.push_back((i % 2 ? 1.0f : -1.0f) + 0.4f * std::sin(float(i + f)));
    ys.push_back(int(i % 2));
  }
  return data::Dataset::fromTensors(
             {HostTensor::fromValues<float>({kExamples, kFeatures}, xs),
              HostTensor::fromValues<int>({kExamples}, ys)})
      .batch(kBatch, true);
}

Sequential mlp() {
  return Sequential(
      {Input({kFeatures}), Dense(16, "relu"), Dense(2, "softmax")}, "mlp");
}

CompileOptions options(bool synthetic = false, std::string rule = "") {
  CompileOptions o;
  o.optimizer = passes::Adam{0.05};
  o.metrics = {"accuracy"};
  o.stepsPerExecution = 4;
  o.config.ipuModel.tilesPerIpu = 16;
  o.config.syntheticData = synthetic;
  o.syntheticDataInitializer = std::move(rule);
  return o;
}

const tessera::ir::Variable *variable(const tessera::ir::Module &m,
                                      const std::string &name) {
  for (const tessera::ir::Variable &v : m.variables())
    if (m.value(v.value).name == name)
      return &v;
  return nullptr;
}

} // namespace

TEST(FitOptions, InitialEpochRunsAndNumbersTheRemainingEpochs) {
  Sequential m = mlp();
  m.compile(options());
  std::ostringstream out;
  FitOptions fo;
  fo.epochs = 4;
  fo.initialEpoch = 2;
  fo.verbose = Verbosity::LinePerEpoch;
  fo.out = &out;
  std::vector<unsigned> begun;
  struct Record : Callback {
    std::vector<unsigned> *seen;
    void onEpochBegin(unsigned e) override { seen->push_back(e); }
  };
  auto cb = std::make_shared<Record>();
  cb->seen = &begun;
  fo.callbacks.push_back(cb);
  History h = m.fit(clusterData(), fo);
  EXPECT_EQ(h.epochs.size(), 2u);
  EXPECT_EQ(begun, (std::vector<unsigned>{2, 3}));
  EXPECT_THAT(out.str(), HasSubstr("Epoch 3/4\n"));
  EXPECT_THAT(out.str(), HasSubstr("Epoch 4/4\n"));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("Epoch 1/4")));
  fo.initialEpoch = 4;
  EXPECT_THROW(m.fit(clusterData(), fo), OptionError);
}

TEST(FitOptions, SyntheticDataTrainsOnDeviceValuesAndReportsNothing) {
  Sequential m = mlp();
  m.compile(options(true, "random"));
  const HostTensor before = m.getWeights().variables[0].second;
  FitOptions fo;
  fo.epochs = 1;
  fo.verbose = Verbosity::Silent;
  History h = m.fit(clusterData(), fo);
  ASSERT_EQ(h.epochs.size(), 1u);
  EXPECT_TRUE(std::isnan(logValue(h.epochs[0], "loss")));
  // The steps ran: the weights moved.
  EXPECT_FALSE(before == m.getWeights().variables[0].second);
  // Evaluation reads the data it is given.
  EXPECT_FALSE(std::isnan(logValue(m.evaluate(clusterData()), "loss")));
  // The training step takes no inputs: x and y are device-made.
  const tessera::ir::Module tm =
      m.trainingModule(kBatch, clusterData().spec()[1]);
  EXPECT_TRUE(tm.inputs().empty());
  const tessera::ir::Variable *x = variable(tm, "synthetic/x");
  ASSERT_NE(x, nullptr);
  EXPECT_FALSE(x->trainable);
  EXPECT_EQ(x->init.kind, tessera::ir::InitKind::Uniform);
  const tessera::ir::Variable *y = variable(tm, "synthetic/y");
  ASSERT_NE(y, nullptr);
  // Class ids: uniform below the 2 classes, truncated.
  EXPECT_EQ(y->init.kind, tessera::ir::InitKind::Uniform);
  EXPECT_LT(y->init.b, 2.0);
}

TEST(FitOptions, SyntheticDataConstantsAndBadRules) {
  Sequential m = mlp();
  m.compile(options(true, "7"));
  const tessera::ir::Module tm =
      m.trainingModule(kBatch, clusterData().spec()[1]);
  EXPECT_EQ(variable(tm, "synthetic/x")->init.kind,
            tessera::ir::InitKind::Constant);
  EXPECT_EQ(variable(tm, "synthetic/x")->init.a, 7.0);
  // A label of 7 is clamped to the last of the 2 classes.
  EXPECT_EQ(variable(tm, "synthetic/y")->init.a, 1.0);
  Sequential bad = mlp();
  try {
    bad.compile(options(true, "gaussian"));
    FAIL() << "no error";
  } catch (const OptionError &e) {
    EXPECT_THAT(e.what(), HasSubstr("\"gaussian\""));
    EXPECT_THAT(e.what(), HasSubstr("random, uniform, normal or a number"));
  }
  // Without syntheticData the inputs are fed as usual.
  Sequential fed = mlp();
  fed.compile(options(false, "random"));
  EXPECT_EQ(fed.trainingModule(kBatch, clusterData().spec()[1]).inputs().size(),
            2u);
}
