// PipelineStage scopes in functional models: layers applied inside a
// scope are on its stage, the model orders its layers by stage and takes
// the stages as its assignment, trains pipelined to the weights of the
// same layers assigned by setPipelineStageAssignment, and scopes used
// wrongly are one-line errors.
#include "tessera/nn/Model.hpp"

#include "ErrorOf.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace tessera::nn;
using tessera::nn::test::errorOf;
namespace data = tessera::data;
namespace passes = tessera::passes;
namespace session = tessera::session;
using data::HostTensor;
using tessera::OptionError;
using ::testing::HasSubstr;

namespace {

constexpr std::size_t kIn = 6, kOut = 3, kBatch = 2, kSteps = 8;

// Input -> Dense(8) -> Dense(8) | Dense(8) -> Dense(3), stages 0, 0 | 1, 1.
Model scopedMlp() {
  KerasTensor input = Input({kIn}), h = input, y = input;
  {
    PipelineStage stage(0);
    h = Dense(8, "tanh")(input);
    h = Dense(8, "tanh")(h);
  }
  {
    PipelineStage stage(1);
    h = Dense(8, "tanh")(h);
    y = Dense(kOut)(h);
  }
  return Model(input, y, "mlp4", 7);
}

CompileOptions options() {
  CompileOptions o;
  o.optimizer = passes::SGD{0.05, 0.9};
  o.loss = "mse";
  o.stepsPerExecution = 2;
  o.config.ipuModel.tilesPerIpu = 16;
  o.config.autoSelectIpus = 2;
  return o;
}

PipeliningOptions accumulating(unsigned count) {
  PipeliningOptions p;
  p.accumulation.count = count;
  return p;
}

void train(Model &m) {
  const std::size_t n = kBatch * kSteps;
  std::vector<float> xs, ys;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < kIn; ++j)
      xs.push_back(float(std::sin(0.37 * double(i * kIn + j))));
    for (std::size_t j = 0; j < kOut; ++j)
      ys.push_back(float(std::cos(0.21 * double(i + j))));
  }
  FitOptions f;
  f.verbose = Verbosity::Silent;
  m.fit(HostTensor::fromValues<float>({n, kIn}, xs),
        HostTensor::fromValues<float>({n, kOut}, ys), kBatch, f,
        /*shuffle=*/false);
}

Dense named(unsigned units, const char *activation, const char *name) {
  Dense d(units, activation);
  d.setName(name);
  return d;
}

} // namespace

TEST(PipelineStageScope, LayersAppliedInAScopeAreOnItsStage) {
  const Model m = scopedMlp();
  EXPECT_EQ(m.pipelineStageAssignment(), (std::vector<unsigned>{0, 0, 1, 1}));
  EXPECT_THAT(m.summary(), HasSubstr("Stage"));
}

TEST(PipelineStageScope, TrainsAsTheSameAssignmentGivenByIndex) {
  Model scoped = scopedMlp();
  scoped.setPipeliningOptions(accumulating(2));
  scoped.compile(options());
  train(scoped);

  Sequential byIndex({Input({kIn}), Dense(8, "tanh"), Dense(8, "tanh"),
                      Dense(8, "tanh"), Dense(kOut)},
                     "mlp4", 7);
  byIndex.setPipelineStageAssignment({0, 0, 1, 1});
  byIndex.setPipeliningOptions(accumulating(2));
  byIndex.compile(options());
  train(byIndex);

  const auto a = scoped.getWeights(), b = byIndex.getWeights();
  Model untrained = scopedMlp();
  untrained.compile(options());
  const session::Checkpoint before = untrained.getWeights();
  const auto kernel = a.variables[0].second.values<float>();
  const auto initial = before.variables[0].second.values<float>();
  EXPECT_NE(std::vector<float>(kernel.begin(), kernel.end()),
            std::vector<float>(initial.begin(), initial.end()))
      << "training left " << a.variables[0].first << " unchanged";
  ASSERT_EQ(a.variables.size(), b.variables.size());
  for (std::size_t i = 0; i < a.variables.size(); ++i) {
    EXPECT_EQ(a.variables[i].first, b.variables[i].first);
    const auto x = a.variables[i].second.values<float>(),
               y = b.variables[i].second.values<float>();
    EXPECT_EQ(std::vector<float>(x.begin(), x.end()),
              std::vector<float>(y.begin(), y.end()))
        << a.variables[i].first;
  }
}

TEST(PipelineStageScope, LayersAreOrderedByStage) {
  // Depth-first from the output meets stage 1's Dense before stage 0's
  // second branch; the model puts the branch first.
  KerasTensor input = Input({kIn}), h = input, b = input, y = input;
  {
    PipelineStage stage(0);
    h = named(8, "tanh", "first")(input);
    b = named(8, "tanh", "branch")(input);
  }
  {
    PipelineStage stage(1);
    y = Dense(kOut)(Add()({named(8, "tanh", "second")(h), b}));
  }
  Model m(input, y, "branches", 3);
  EXPECT_EQ(m.pipelineStageAssignment(),
            (std::vector<unsigned>{0, 0, 1, 1, 1}));
  EXPECT_EQ(m.layers()[1]->name(), "first");
  EXPECT_EQ(m.layers()[2]->name(), "branch");
  EXPECT_EQ(m.layers()[3]->name(), "second");
  m.setPipeliningOptions(accumulating(2));
  m.compile(options());
  EXPECT_NO_THROW(train(m));
}

TEST(PipelineStageScopeErrors, ScopesDoNotNest) {
  PipelineStage outer(0);
  EXPECT_THAT(errorOf<OptionError>([] { PipelineStage inner(1); }),
              HasSubstr("already inside PipelineStage(0)"));
}

TEST(PipelineStageScopeErrors, ALayerOutsideAnyScope) {
  KerasTensor input = Input({kIn}), h = input;
  {
    PipelineStage stage(0);
    h = Dense(8)(input);
  }
  const KerasTensor y = named(kOut, "linear", "loose")(h);
  EXPECT_THAT(errorOf<ModelError>([&] { Model m(input, y); }),
              HasSubstr("loose (Dense) was applied outside any PipelineStage"));
}

TEST(PipelineStageScopeErrors, AStageReadingALaterStage) {
  KerasTensor input = Input({kIn}), h = input, y = input;
  {
    PipelineStage stage(1);
    h = named(8, "linear", "late")(input);
  }
  {
    PipelineStage stage(0);
    y = named(kOut, "linear", "early")(h);
  }
  EXPECT_THAT(errorOf<ModelError>([&] { Model m(input, y); }),
              HasSubstr("on pipeline stage 0 takes the output of"));
}
