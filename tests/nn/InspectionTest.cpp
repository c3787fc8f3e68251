// Tensor inspection during fit(): MaybeOutfeed layers send exactly the
// tensors their queue's filters name, enqueued by a final layer; filters
// matching nothing warn with the names they could match; the optimizer
// sends each micro-batch's gradient or, once per weight update, the
// accumulated gradient it applies; a LAST queue keeps its value on the
// device instead of streaming every step; queues outlive their model.
#include "tessera/nn/Model.hpp"
#include "tessera/nn/Outfeed.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

using namespace tessera::nn;
namespace data = tessera::data;
namespace passes = tessera::passes;
namespace session = tessera::session;
using data::HostTensor;
using ::testing::HasSubstr;

namespace {

constexpr std::size_t kExamples = 64, kFeatures = 8, kBatch = 4, kHidden = 6;
constexpr std::size_t kSteps = kExamples / kBatch;

std::pair<HostTensor, HostTensor> clusters() {
  std::vector<float> xs;
  std::vector<int> ys;
  for (std::size_t i = 0; i < kExamples; ++i) {
    for (std::size_t f = 0; f < kFeatures; ++f)
      xs.push_back((i % 3 ? 1.0f : -1.0f) + 0.5f * std::sin(float(i * f)));
    ys.push_back(int(i % 3 != 0));
  }
  return {HostTensor::fromValues<float>({kExamples, kFeatures}, xs),
          HostTensor::fromValues<int>({kExamples}, ys)};
}

DenseOptions dense(const std::string &name, Activation a) {
  DenseOptions o;
  o.activation = a;
  o.name = name;
  return o;
}

// The tutorial's pipelined model, small: two Dense layers tapped by
// MaybeOutfeed layers on one queue.
Sequential tapped(const std::shared_ptr<MaybeOutfeedQueue> &q,
                  bool lastFinal = true) {
  return Sequential({Input({kFeatures}),
                     Dense(kHidden, dense("Dense_128", Activation::Relu)),
                     MaybeOutfeedLayer(q, false, "Dense_128_acts"),
                     Dense(2, dense("Dense_10", Activation::Softmax)),
                     MaybeOutfeedLayer(q, lastFinal, "Dense_10_acts")},
                    "tapped", 3);
}

CompileOptions compileOptions(unsigned spe = 4) {
  CompileOptions o;
  o.optimizer = passes::SGD{0.1};
  o.stepsPerExecution = spe;
  o.config.ipuModel.tilesPerIpu = 16;
  return o;
}

void train(Model &m, unsigned epochs = 1) {
  auto [x, y] = clusters();
  FitOptions f;
  f.epochs = epochs;
  f.verbose = Verbosity::Silent;
  m.fit(std::move(x), std::move(y), kBatch, f, /*shuffle=*/false);
}

std::vector<std::string> keys(const OutfeedStep &s) {
  std::vector<std::string> k;
  for (const auto &[name, t] : s)
    k.push_back(name);
  return k;
}

const HostTensor &valueOf(const OutfeedStep &s, const std::string &key) {
  for (const auto &[name, t] : s)
    if (name == key)
      return t;
  throw std::runtime_error("no key " + key);
}

} // namespace

TEST(MaybeOutfeed, FiltersSelectExactlyTheNamedTensors) {
  std::ostringstream warnings;
  auto some =
      std::make_shared<MaybeOutfeedQueue>(std::vector<std::string>{"Dense_10"},
                                          session::OutfeedMode::ALL, &warnings);
  Sequential m = tapped(some);
  m.compile(compileOptions());
  train(m);
  const OutfeedStep got = some->dequeue();
  EXPECT_EQ(keys(got), std::vector<std::string>{"Dense_10_acts"});
  EXPECT_EQ(valueOf(got, "Dense_10_acts").shape(),
            (tessera::ir::Shape{kSteps, kBatch, 2}));
  EXPECT_EQ(warnings.str(), "");

  auto every = std::make_shared<MaybeOutfeedQueue>();
  Sequential all = tapped(every);
  all.compile(compileOptions());
  train(all);
  EXPECT_EQ(keys(every->dequeue()),
            (std::vector<std::string>{"Dense_128_acts", "Dense_10_acts"}));
}

TEST(MaybeOutfeed, AFilterMatchingNothingWarnsNamingTheTensors) {
  std::ostringstream warnings;
  auto q =
      std::make_shared<MaybeOutfeedQueue>(std::vector<std::string>{"Dense_256"},
                                          session::OutfeedMode::ALL, &warnings);
  Sequential m = tapped(q);
  m.compile(compileOptions());
  train(m);
  EXPECT_THAT(warnings.str(), HasSubstr("filter \"Dense_256\" matches none"));
  EXPECT_THAT(warnings.str(), HasSubstr("Dense_128_acts, Dense_10_acts"));
  EXPECT_EQ(q->size(), 0u);
}

TEST(MaybeOutfeed, TensorsAfterTheLastFinalLayerAreNotEnqueued) {
  std::ostringstream warnings;
  auto q = std::make_shared<MaybeOutfeedQueue>(
      std::vector<std::string>{}, session::OutfeedMode::ALL, &warnings);
  Sequential m = tapped(q, /*lastFinal=*/false);
  m.compile(compileOptions());
  train(m);
  EXPECT_EQ(q->size(), 0u);
  EXPECT_THAT(warnings.str(), HasSubstr("\"Dense_10_acts\" comes after the "
                                        "last layer of its queue"));
}

namespace {

// Two steps per weight update: a model trained with \p mode gradients of
// the hidden layer sent to a fresh queue, which is returned.
std::shared_ptr<MaybeOutfeedQueue>
gradientsOf(GradientOutfeedMode mode, passes::AccumulationReduction reduction,
            unsigned count) {
  auto q = std::make_shared<MaybeOutfeedQueue>(
      std::vector<std::string>{"Dense_128"});
  auto acts = std::make_shared<MaybeOutfeedQueue>();
  Sequential m = tapped(acts);
  m.setGradientAccumulationOptions({.count = count, .reduction = reduction});
  CompileOptions o = compileOptions(8);
  o.gradientOutfeed = {q, mode};
  m.compile(o);
  train(m);
  return q;
}

} // namespace

TEST(GradientOutfeed, PreAccumulatedIsOnePerMicroBatchAccumulatedOnePerUpdate) {
  constexpr unsigned N = 4;
  const OutfeedStep pre = gradientsOf(GradientOutfeedMode::PreAccumulated,
                                      passes::AccumulationReduction::MEAN, N)
                              ->dequeue();
  const OutfeedStep acc = gradientsOf(GradientOutfeedMode::Accumulated,
                                      passes::AccumulationReduction::MEAN, N)
                              ->dequeue();
  const std::vector<std::string> want{"Dense_128/kernel_grad",
                                      "Dense_128/bias_grad"};
  ASSERT_EQ(keys(pre), want);
  ASSERT_EQ(keys(acc), want);
  for (const std::string &key : want) {
    const HostTensor &p = valueOf(pre, key), &a = valueOf(acc, key);
    ASSERT_EQ(p.dim(0), kSteps) << key;
    ASSERT_EQ(a.dim(0), kSteps / N) << key;
    const std::size_t n = a.numElements() / a.dim(0);
    const auto pv = p.values<float>(), av = a.values<float>();
    // What the MEAN accumulator computes, in its order and precision.
    for (std::size_t u = 0; u < kSteps / N; ++u)
      for (std::size_t e = 0; e < n; ++e) {
        float sum = 0;
        for (std::size_t k = 0; k < N; ++k)
          sum = sum + pv[(u * N + k) * n + e] * float(1.0 / N);
        EXPECT_EQ(av[u * n + e], sum)
            << key << " update " << u << " [" << e << "]";
      }
  }
}

TEST(GradientOutfeed, SumAccumulationSendsTheSumAndNoAccumulationTheGradient) {
  constexpr unsigned N = 2;
  const OutfeedStep pre = gradientsOf(GradientOutfeedMode::PreAccumulated,
                                      passes::AccumulationReduction::SUM, N)
                              ->dequeue();
  const OutfeedStep acc = gradientsOf(GradientOutfeedMode::Accumulated,
                                      passes::AccumulationReduction::SUM, N)
                              ->dequeue();
  const auto pv = valueOf(pre, "Dense_128/bias_grad").values<float>();
  const auto av = valueOf(acc, "Dense_128/bias_grad").values<float>();
  ASSERT_EQ(av.size() * N, pv.size());
  for (std::size_t u = 0; u < av.size() / kHidden; ++u)
    for (std::size_t e = 0; e < kHidden; ++e)
      EXPECT_EQ(av[u * kHidden + e],
                pv[2 * u * kHidden + e] + pv[(2 * u + 1) * kHidden + e]);
  // Without accumulation the two modes send the same gradients.
  const OutfeedStep one = gradientsOf(GradientOutfeedMode::Accumulated,
                                      passes::AccumulationReduction::SUM, 1)
                              ->dequeue();
  const OutfeedStep onePre = gradientsOf(GradientOutfeedMode::PreAccumulated,
                                         passes::AccumulationReduction::SUM, 1)
                                 ->dequeue();
  const auto a1 = valueOf(one, "Dense_128/kernel_grad").values<float>();
  const auto p1 = valueOf(onePre, "Dense_128/kernel_grad").values<float>();
  ASSERT_EQ(a1.size(), kSteps * kFeatures * kHidden);
  EXPECT_TRUE(std::equal(a1.begin(), a1.end(), p1.begin(), p1.end()));
}

TEST(OutfeedLast, KeepsTheValueOnTheDeviceAndSendsOnlyTheLast) {
  auto all = std::make_shared<OutfeedQueue>();
  auto last = std::make_shared<OutfeedQueue>(session::OutfeedMode::LAST);
  auto build = [](std::shared_ptr<OutfeedQueue> q) {
    std::vector<LayerRef> layers{Input({kFeatures}),
                                 Dense(kHidden, dense("h", Activation::Relu))};
    if (q)
      layers.push_back(OutfeedLayer(q, "h_acts"));
    layers.push_back(Dense(2, dense("out", Activation::Softmax)));
    return Sequential(layers, "m", 5);
  };
  Sequential a = build(all), b = build(last), none = build(nullptr);
  for (Sequential *m : {&a, &b, &none}) {
    m->compile(compileOptions(8));
    train(*m, 2);
  }
  const std::uint64_t hostAll = a.lastFitStats().estimatedCyclesByKind.host,
                      hostLast = b.lastFitStats().estimatedCyclesByKind.host,
                      hostNone = none.lastFitStats().estimatedCyclesByKind.host;
  // LAST streams nothing per step: the host part is the model's own.
  EXPECT_EQ(hostLast, hostNone);
  EXPECT_GT(hostAll, hostLast);
  ASSERT_EQ(last->size(), 1u);
  const OutfeedStep l = last->dequeue(), every = all->dequeue();
  const HostTensor &lv = valueOf(l, "h_acts");
  ASSERT_EQ(lv.shape(), (tessera::ir::Shape{kBatch, kHidden}));
  const auto ev = valueOf(every, "h_acts").values<float>();
  ASSERT_EQ(ev.size(), 2 * kSteps * kBatch * kHidden);
  const auto v = lv.values<float>();
  EXPECT_TRUE(std::equal(v.begin(), v.end(), ev.end() - v.size()));
}

TEST(OutfeedLast, AccumulatedGradientsOnTheDeviceAreTheLastUpdates) {
  auto q = std::make_shared<MaybeOutfeedQueue>(
      std::vector<std::string>{"Dense_128/bias"}, session::OutfeedMode::LAST);
  auto acts = std::make_shared<MaybeOutfeedQueue>();
  Sequential m = tapped(acts);
  m.setGradientAccumulationOptions({.count = 4});
  CompileOptions o = compileOptions(8);
  o.gradientOutfeed = {q, GradientOutfeedMode::Accumulated};
  m.compile(o);
  train(m);
  const OutfeedStep got = q->dequeue();
  const OutfeedStep all = gradientsOf(GradientOutfeedMode::Accumulated,
                                      passes::AccumulationReduction::MEAN, 4)
                              ->dequeue();
  const auto want = valueOf(all, "Dense_128/bias_grad").values<float>();
  const auto have = valueOf(got, "Dense_128/bias_grad").values<float>();
  ASSERT_EQ(have.size(), kHidden);
  EXPECT_TRUE(std::equal(have.begin(), have.end(), want.end() - kHidden));
}

TEST(OutfeedErrors, AQueueOutlivesItsModel) {
  auto q = std::make_shared<MaybeOutfeedQueue>();
  {
    Sequential m = tapped(q);
    m.compile(compileOptions());
    train(m);
  }
  // The values were handed over after each device run: they stay.
  const OutfeedStep got = q->dequeue();
  ASSERT_EQ(keys(got),
            (std::vector<std::string>{"Dense_128_acts", "Dense_10_acts"}));
  EXPECT_EQ(valueOf(got, "Dense_10_acts").dim(0), kSteps);
  EXPECT_TRUE(q->dequeue().empty());
}

TEST(OutfeedErrors, AMaybeOutfeedLayerNeedsAQueue) {
  EXPECT_THROW(MaybeOutfeedLayer(nullptr, true, "x"), tessera::OptionError);
}

namespace {

// tapped()'s layers over two pipeline stages, with \p acts on the first
// Dense layer and gradients of both to \p grads.
std::unique_ptr<Sequential>
pipelined(const std::shared_ptr<OutfeedQueue> &acts,
          const std::shared_ptr<MaybeOutfeedQueue> &grads,
          GradientOutfeedMode mode) {
  auto m = std::make_unique<Sequential>(
      std::vector<LayerRef>{
          Input({kFeatures}),
          Dense(kHidden, dense("Dense_128", Activation::Relu)),
          OutfeedLayer(acts, "Dense_128_acts"),
          Dense(2, dense("Dense_10", Activation::Softmax))},
      "piped", 3);
  m->setPipelineStageAssignment({0, 0, 1});
  PipeliningOptions p;
  p.accumulation.count = 4;
  m->setPipeliningOptions(p);
  CompileOptions o = compileOptions(8);
  o.config.autoSelectIpus = 2;
  o.gradientOutfeed = {grads, mode};
  m->compile(o);
  train(*m);
  return m;
}

} // namespace

TEST(OutfeedLast, PipelinedModelsSendWhatUnpipelinedOnesDo) {
  auto allActs = std::make_shared<OutfeedQueue>();
  auto pre = std::make_shared<MaybeOutfeedQueue>();
  pipelined(allActs, pre, GradientOutfeedMode::PreAccumulated);
  auto lastActs = std::make_shared<OutfeedQueue>(session::OutfeedMode::LAST);
  auto lastGrads = std::make_shared<MaybeOutfeedQueue>(
      std::vector<std::string>{}, session::OutfeedMode::LAST);
  pipelined(lastActs, lastGrads, GradientOutfeedMode::Accumulated);

  const OutfeedStep grads = pre->dequeue();
  ASSERT_EQ(keys(grads), (std::vector<std::string>{
                             "Dense_128/kernel_grad", "Dense_128/bias_grad",
                             "Dense_10/kernel_grad", "Dense_10/bias_grad"}));
  for (const auto &[key, t] : grads)
    EXPECT_EQ(t.dim(0), kSteps) << key; // one per micro-batch
  // LAST: the last micro-batch's activations and the last update's
  // accumulated gradient, the mean of its 4 micro-batches.
  const OutfeedStep every = allActs->dequeue(), last = lastActs->dequeue();
  const auto ev = valueOf(every, "Dense_128_acts").values<float>();
  const auto lv = valueOf(last, "Dense_128_acts").values<float>();
  ASSERT_EQ(lv.size(), kBatch * kHidden);
  EXPECT_TRUE(std::equal(lv.begin(), lv.end(), ev.end() - lv.size()));
  const auto pv = valueOf(grads, "Dense_128/bias_grad").values<float>();
  const OutfeedStep applied = lastGrads->dequeue();
  const auto av = valueOf(applied, "Dense_128/bias_grad").values<float>();
  ASSERT_EQ(av.size(), kHidden);
  for (std::size_t e = 0; e < kHidden; ++e) {
    float sum = 0;
    for (std::size_t k = kSteps - 4; k < kSteps; ++k)
      sum = sum + pv[k * kHidden + e] * 0.25f;
    EXPECT_EQ(av[e], sum) << e;
  }
}
