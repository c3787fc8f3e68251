// Outfeed layers and queues: fit() hands each training step's input of an
// OutfeedLayer to its queue (every step in ALL mode, the latest in LAST
// mode), layers sharing a queue report together, and evaluation and
// prediction leave the queue alone.
#include "tessera/nn/Outfeed.hpp"
#include "tessera/nn/Model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace tessera::nn;
namespace data = tessera::data;
namespace passes = tessera::passes;
namespace session = tessera::session;
using data::HostTensor;
using tessera::OptionError;

namespace {

constexpr std::size_t kExamples = 64, kFeatures = 8, kBatch = 8, kHidden = 4;

std::pair<HostTensor, HostTensor> clusters() {
  std::vector<float> xs;
  std::vector<int> ys;
  for (std::size_t i = 0; i < kExamples; ++i) {
    for (std::size_t f = 0; f < kFeatures; ++f)
      xs.push_back((i % 2 ? 1.0f : -1.0f) + 0.4f * std::sin(float(i + f)));
    ys.push_back(int(i % 2));
  }
  return {HostTensor::fromValues<float>({kExamples, kFeatures}, xs),
          HostTensor::fromValues<int>({kExamples}, ys)};
}

DenseOptions hidden() {
  DenseOptions o;
  o.activation = Activation::Relu;
  o.name = "hidden";
  return o;
}

Sequential tappedMlp(const std::shared_ptr<OutfeedQueue> &q) {
  return Sequential({Input({kFeatures}), Dense(kHidden, hidden()),
                     OutfeedLayer(q, "hidden_acts"), Dense(2, "softmax")},
                    "tapped");
}

CompileOptions compileOptions() {
  CompileOptions o;
  o.optimizer = passes::Adam{0.05};
  o.stepsPerExecution = 4;
  o.config.ipuModel.tilesPerIpu = 16;
  return o;
}

FitOptions silent(unsigned epochs = 1) {
  FitOptions o;
  o.epochs = epochs;
  o.verbose = Verbosity::Silent;
  return o;
}

const HostTensor &weight(const session::Checkpoint &c, const std::string &n) {
  for (const auto &[name, t] : c.variables)
    if (name == n)
      return t;
  throw std::runtime_error("no weight " + n);
}

} // namespace

TEST(Outfeed, AllModeStacksEveryStepsActivations) {
  auto q = std::make_shared<OutfeedQueue>();
  Sequential m = tappedMlp(q);
  m.compile(compileOptions());
  const session::Checkpoint initial = m.getWeights();
  auto [x, y] = clusters();
  const HostTensor xCopy = x;
  m.fit(std::move(x), std::move(y), kBatch, silent(2), /*shuffle=*/false);

  EXPECT_EQ(q->size(), 2 * kExamples / kBatch);
  OutfeedStep got = q->dequeue();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, "hidden_acts");
  const HostTensor &acts = got[0].second;
  ASSERT_EQ(acts.shape(),
            (tessera::ir::Shape{2 * kExamples / kBatch, kBatch, kHidden}));
  // The first step ran the first batch through the initial weights.
  auto kernel = weight(initial, "hidden/kernel").values<float>();
  auto bias = weight(initial, "hidden/bias").values<float>();
  auto xs = xCopy.values<float>();
  auto a = acts.values<float>();
  for (std::size_t i = 0; i < kBatch; ++i)
    for (std::size_t j = 0; j < kHidden; ++j) {
      float z = bias[j];
      for (std::size_t f = 0; f < kFeatures; ++f)
        z += xs[i * kFeatures + f] * kernel[f * kHidden + j];
      EXPECT_NEAR(a[i * kHidden + j], std::max(z, 0.0f), 1e-4)
          << "example " << i << " unit " << j;
    }
  EXPECT_EQ(q->size(), 0u);
  EXPECT_TRUE(q->dequeue().empty());
}

TEST(Outfeed, LastModeKeepsTheLatestStep) {
  auto all = std::make_shared<OutfeedQueue>();
  auto last = std::make_shared<OutfeedQueue>(session::OutfeedMode::LAST);
  Sequential m({Input({kFeatures}), Dense(kHidden, hidden()),
                OutfeedLayer(all, "a"), OutfeedLayer(last, "b"),
                Dense(2, "softmax")});
  m.compile(compileOptions());
  auto [x, y] = clusters();
  m.fit(std::move(x), std::move(y), kBatch, silent(), false);
  EXPECT_EQ(last->size(), 1u);
  OutfeedStep latest = last->dequeue();
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].first, "b");
  ASSERT_EQ(latest[0].second.shape(), (tessera::ir::Shape{kBatch, kHidden}));
  // Both layers see the same values: the last step of ALL is LAST's step.
  OutfeedStep every = all->dequeue();
  const auto a = every[0].second.values<float>();
  const auto b = latest[0].second.values<float>();
  const std::size_t offset = a.size() - b.size();
  for (std::size_t i = 0; i < b.size(); ++i)
    EXPECT_FLOAT_EQ(a[offset + i], b[i]);
}

TEST(Outfeed, LayersSharingAQueueReportTogetherAndOnlyInTraining) {
  auto q = std::make_shared<OutfeedQueue>();
  Sequential m({Input({kFeatures}), OutfeedLayer(q, "inputs"),
                Dense(kHidden, hidden()), OutfeedLayer(q, "hidden_acts"),
                Dense(2, "softmax")});
  m.compile(compileOptions());
  auto [x, y] = clusters();
  (void)m.predict(x, kBatch);
  (void)m.evaluate(data::Dataset::fromTensors({x, y}).batch(kBatch, true));
  EXPECT_EQ(q->size(), 0u);
  m.fit(x, y, kBatch, silent(), false);
  OutfeedStep got = q->dequeue();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, "inputs");
  EXPECT_EQ(got[1].first, "hidden_acts");
  // The first layer's values are the examples as they went in.
  const auto in = got[0].second.values<float>();
  const auto xs = x.values<float>();
  ASSERT_EQ(in.size(), xs.size());
  EXPECT_TRUE(std::equal(in.begin(), in.end(), xs.begin()));
}

TEST(Outfeed, ALayerNeedsAQueue) {
  EXPECT_THROW(OutfeedLayer(nullptr, "x"), OptionError);
}
