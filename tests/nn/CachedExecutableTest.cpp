// An executable loaded from the executable cache runs bit for bit as the
// one just compiled: a small CNN (convolution, batch norm, pooling,
// dropout, dense; thousands of vertices, copies and spans) trains to the
// same losses and weights either way, and its estimates are the same.
#include "tessera/nn/Model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <unistd.h>

using namespace tessera::nn;
namespace data = tessera::data;
namespace passes = tessera::passes;
namespace session = tessera::session;
using data::HostTensor;

namespace {

constexpr std::size_t kBatch = 4, kExamples = 16;

Sequential cnn(const std::string &cache) {
  Sequential m({Input({8, 8, 3}), Conv2D(6, {3, 3}, "relu"), BatchNorm(),
                MaxPool2D({2, 2}), Dropout(0.25), Flatten(), Dense(4)},
               "cnn", 5);
  CompileOptions o;
  o.optimizer = passes::Adam{0.01};
  o.loss = "sparse_categorical_crossentropy";
  o.stepsPerExecution = 2;
  o.config.ipuModel.tilesPerIpu = 32;
  o.config.executableCachePath = cache;
  m.compile(o);
  return m;
}

History train(Model &m) {
  std::vector<float> xs;
  std::vector<std::int32_t> ys;
  for (std::size_t i = 0; i < kExamples * 8 * 8 * 3; ++i)
    xs.push_back(float(std::sin(0.13 * double(i))));
  for (std::size_t i = 0; i < kExamples; ++i)
    ys.push_back(static_cast<std::int32_t>(i % 4));
  FitOptions f;
  f.epochs = 2;
  f.verbose = Verbosity::Silent;
  return m.fit(HostTensor::fromValues<float>({kExamples, 8, 8, 3}, xs),
               HostTensor::fromValues<std::int32_t>({kExamples}, ys), kBatch, f,
               /*shuffle=*/false);
}

} // namespace

TEST(CachedExecutable, TrainsBitForBitAsTheFreshCompile) {
  const auto cache = std::filesystem::temp_directory_path() /
                     ("tessera-cached-exe-" + std::to_string(::getpid()));
  std::filesystem::remove_all(cache);
  Sequential fresh = cnn(cache.string());
  const History a = train(fresh);
  EXPECT_FALSE(fresh.lastFitStats().cacheHit);
  Sequential loaded = cnn(cache.string());
  const History b = train(loaded);
  EXPECT_TRUE(loaded.lastFitStats().cacheHit);
  std::filesystem::remove_all(cache);

  ASSERT_EQ(a.epochs.size(), b.epochs.size());
  for (std::size_t e = 0; e < a.epochs.size(); ++e)
    EXPECT_EQ(logValue(a.epochs[e], "loss"), logValue(b.epochs[e], "loss"))
        << "epoch " << e;
  const session::Checkpoint wa = fresh.getWeights(), wb = loaded.getWeights();
  ASSERT_EQ(wa.variables.size(), wb.variables.size());
  ASSERT_FALSE(wa.variables.empty());
  for (std::size_t v = 0; v < wa.variables.size(); ++v) {
    const auto &[name, ta] = wa.variables[v];
    const auto &[nameB, tb] = wb.variables[v];
    ASSERT_EQ(name, nameB);
    ASSERT_EQ(ta.type(), tb.type()) << name;
    ASSERT_EQ(ta.shape(), tb.shape()) << name;
    EXPECT_EQ(std::memcmp(ta.data(), tb.data(), ta.numBytes()), 0) << name;
  }
  EXPECT_EQ(fresh.lastFitStats().estimatedCyclesPerRun,
            loaded.lastFitStats().estimatedCyclesPerRun);
}
