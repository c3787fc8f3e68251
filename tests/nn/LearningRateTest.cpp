// Learning-rate schedules on nn models: a rate set between fits or by a
// LearningRateScheduler during one trains exactly as a model compiled with
// that rate, plain, with gradient accumulation and pipelined, without a
// second compile; ReduceLROnPlateau lowers it when the loss stalls.
#include "tessera/nn/Model.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

using namespace tessera::nn;
namespace data = tessera::data;
namespace passes = tessera::passes;
namespace session = tessera::session;
using data::HostTensor;

namespace {

constexpr std::size_t kIn = 6, kOut = 3, kBatch = 2, kSteps = 8;

enum class Layout { Plain, Accumulated, Pipelined };

struct TempDir {
  std::filesystem::path path;
  TempDir()
      : path(std::filesystem::temp_directory_path() /
             ("tessera-lr-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::size_t files() const {
    std::size_t n = 0;
    for (const auto &e : std::filesystem::recursive_directory_iterator(path))
      n += e.is_regular_file();
    return n;
  }
};

Sequential mlp(Layout layout, double lr, const std::string &cache) {
  Sequential m({Input({kIn}), Dense(8, "tanh"), Dense(kOut)}, "mlp", 7);
  CompileOptions o;
  o.optimizer = passes::SGD{lr, 0.9};
  o.loss = "mse";
  o.stepsPerExecution = 4;
  o.config.ipuModel.tilesPerIpu = 16;
  o.config.executableCachePath = cache;
  if (layout == Layout::Pipelined) {
    o.config.autoSelectIpus = 2;
    m.setPipelineStageAssignment({0, 1});
    PipeliningOptions p;
    p.accumulation.count = 2;
    m.setPipeliningOptions(p);
  } else if (layout == Layout::Accumulated) {
    m.setGradientAccumulationOptions({.count = 2});
  }
  m.compile(o);
  return m;
}

// \p epochs epochs of a fixed regression problem, fed in order.
void train(Model &m, unsigned epochs,
           std::vector<std::shared_ptr<Callback>> callbacks = {}) {
  const std::size_t n = kBatch * kSteps;
  std::vector<float> xs, ys;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < kIn; ++j)
      xs.push_back(float(std::sin(0.37 * double(i * kIn + j))));
    for (std::size_t j = 0; j < kOut; ++j)
      ys.push_back(float(std::cos(0.21 * double(i + j))));
  }
  FitOptions f;
  f.epochs = epochs;
  f.verbose = Verbosity::Silent;
  f.callbacks = std::move(callbacks);
  m.fit(HostTensor::fromValues<float>({n, kIn}, xs),
        HostTensor::fromValues<float>({n, kOut}, ys), kBatch, f,
        /*shuffle=*/false);
}

void expectSameWeights(Model &got, Model &want) {
  const session::Checkpoint a = got.getWeights(), b = want.getWeights();
  std::size_t compared = 0;
  for (const std::string &name : got.weightNames())
    for (const auto &[n, t] : a.variables)
      for (const auto &[wn, wt] : b.variables)
        if (n == name && wn == name) {
          const auto x = t.values<float>(), y = wt.values<float>();
          ASSERT_EQ(x.size(), y.size()) << name;
          for (std::size_t i = 0; i < x.size(); ++i)
            EXPECT_EQ(x[i], y[i]) << name << "[" << i << "]";
          ++compared;
        }
  EXPECT_EQ(compared, 4u); // two kernels and two biases
}

// The reference: an epoch at 0.05, then the weights moved to a model
// compiled at 0.01 for the second epoch.
Sequential reference(Layout layout, const std::string &cache) {
  Sequential first = mlp(layout, 0.05, cache);
  train(first, 1);
  Sequential second = mlp(layout, 0.01, cache);
  second.setWeights(first.getWeights());
  train(second, 1);
  // The rate is no part of the executable: the same one, from the cache.
  EXPECT_TRUE(second.lastFitStats().cacheHit);
  return second;
}

class LearningRate : public ::testing::TestWithParam<Layout> {};

} // namespace

TEST_P(LearningRate, SetBetweenFitsTrainsAsIfCompiledWithIt) {
  TempDir cache;
  Sequential m = mlp(GetParam(), 0.05, cache.path.string());
  train(m, 1);
  m.setLearningRate(0.01);
  EXPECT_EQ(m.learningRate(), 0.01);
  train(m, 1);
  // One compile: the second fit ran the first's executable (a recompile
  // would have found it in the cache and said so).
  EXPECT_FALSE(m.lastFitStats().cacheHit);
  EXPECT_EQ(cache.files(), 1u);
  Sequential want = reference(GetParam(), cache.path.string());
  expectSameWeights(m, want);
  EXPECT_EQ(cache.files(), 1u);
  // Checkpoints leave the rate out; setWeights keeps the model's own.
  const session::Checkpoint saved = m.getWeights();
  for (const auto &[name, t] : saved.variables)
    EXPECT_NE(name, "optimizer/learning_rate");
  want.setLearningRate(0.2);
  want.setWeights(saved);
  EXPECT_EQ(want.learningRate(), 0.2);
}

TEST_P(LearningRate, SchedulerCallbackChangesItEachEpoch) {
  TempDir cache;
  Sequential m = mlp(GetParam(), 0.3, cache.path.string());
  std::vector<double> seen;
  train(m, 2,
        {std::make_shared<LearningRateScheduler>(
            m, [&](unsigned epoch, double lr) {
              seen.push_back(lr);
              return epoch == 0 ? 0.05 : 0.01;
            })});
  EXPECT_EQ(seen, (std::vector<double>{0.3, 0.05}));
  EXPECT_EQ(cache.files(), 1u);
  Sequential want = reference(GetParam(), cache.path.string());
  expectSameWeights(m, want);
}

INSTANTIATE_TEST_SUITE_P(Nn, LearningRate,
                         ::testing::Values(Layout::Plain, Layout::Accumulated,
                                           Layout::Pipelined),
                         [](const auto &info) {
                           switch (info.param) {
                           case Layout::Plain:
                             return "Plain";
                           case Layout::Accumulated:
                             return "Accumulated";
                           case Layout::Pipelined:
                             return "Pipelined";
                           }
                           return "";
                         });

TEST(LearningRateCallbacks, ReduceLROnPlateauLowersItWhenTheLossStalls) {
  Sequential m = mlp(Layout::Plain, 0.1, "");
  ReduceLROnPlateau r(m, "loss", 0.5, 2, 0.01, 0.03);
  const double losses[] = {1.0, 0.9, 0.895, 0.9, 0.8, 0.8, 0.8, 0.8, 0.8};
  std::vector<double> rates;
  for (unsigned e = 0; e < std::size(losses); ++e) {
    r.onEpochEnd(e, {{"loss", losses[e]}});
    rates.push_back(m.learningRate());
  }
  // 0.895 and 0.9 do not improve on 0.9 by 0.01: halved after the second;
  // 0.8 improves; then two stalls halve it again, and the floor holds.
  EXPECT_EQ(rates, (std::vector<double>{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.03,
                                        0.03, 0.03}));
  EXPECT_THROW(ReduceLROnPlateau(m, "loss", 1.5), tessera::OptionError);
}

TEST(LearningRateCallbacks, BadRatesAndUncompiledModelsAreErrors) {
  Sequential m({Input({kIn}), Dense(kOut)}, "mlp", 7);
  EXPECT_THROW(m.learningRate(), ModelError);
  EXPECT_THROW(m.setLearningRate(0.1), ModelError);
  CompileOptions o;
  o.optimizer = passes::Adam{};
  m.compile(o);
  EXPECT_EQ(m.learningRate(), 0.001);
  EXPECT_THAT([&] { m.setLearningRate(-1); },
              ::testing::ThrowsMessage<tessera::OptionError>(
                  ::testing::HasSubstr("positive and finite, not -1")));
}
