// The outfeed callback: it empties its queue at the end of each epoch or
// every K steps, and the statistics it prints and appends to CSV and JSON
// lines are those of the tensors it dequeued, computed here on the host.
#include "tessera/nn/OutfeedCallback.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

using namespace tessera::nn;
namespace data = tessera::data;
namespace passes = tessera::passes;
using data::HostTensor;
using ::testing::HasSubstr;

namespace {

constexpr std::size_t kExamples = 64, kFeatures = 5, kBatch = 4;
constexpr std::size_t kSteps = kExamples / kBatch;

// Host statistics, written independently of the callback's.
struct Expected {
  double mean, std, min, max, l2, zeros;
};

Expected expected(const HostTensor &t) {
  const auto v = t.values<float>();
  double sum = 0, sq = 0, mn = 1e300, mx = -1e300, zeros = 0;
  for (float x : v) {
    sum += x;
    sq += double(x) * x;
    mn = std::min(mn, double(x));
    mx = std::max(mx, double(x));
    zeros += x == 0.0f;
  }
  const double mean = sum / double(v.size());
  double var = 0;
  for (float x : v)
    var += (x - mean) * (x - mean);
  return {mean,          std::sqrt(var / double(v.size())), mn, mx,
          std::sqrt(sq), zeros / double(v.size())};
}

void expectMatches(const TensorStats &s, const HostTensor &t) {
  const Expected e = expected(t);
  EXPECT_EQ(s.count, t.numElements());
  EXPECT_NEAR(s.mean, e.mean, 1e-12 * (1 + std::abs(e.mean))) << s.name;
  EXPECT_NEAR(s.std, e.std, 1e-12 * (1 + e.std)) << s.name;
  EXPECT_EQ(s.min, e.min) << s.name;
  EXPECT_EQ(s.max, e.max) << s.name;
  EXPECT_NEAR(s.l2Norm, e.l2, 1e-12 * (1 + e.l2)) << s.name;
  EXPECT_EQ(s.zeroFraction, e.zeros) << s.name;
  EXPECT_EQ(s.nans + s.infs, 0u);
}

Sequential model(const std::shared_ptr<OutfeedQueue> &q) {
  DenseOptions relu;
  relu.activation = Activation::Relu;
  relu.name = "hidden";
  return Sequential({Input({kFeatures}), Dense(8, relu),
                     OutfeedLayer(q, "hidden_acts"), Dense(2, "softmax")},
                    "m", 11);
}

void train(Model &m, const std::shared_ptr<Callback> &cb, unsigned epochs) {
  std::vector<float> xs;
  std::vector<int> ys;
  for (std::size_t i = 0; i < kExamples; ++i) {
    for (std::size_t f = 0; f < kFeatures; ++f)
      xs.push_back(std::cos(float(i * 7 + f)));
    ys.push_back(int(i % 2));
  }
  CompileOptions c;
  c.optimizer = passes::SGD{0.05};
  c.stepsPerExecution = 4;
  c.config.ipuModel.tilesPerIpu = 16;
  c.gradientOutfeed = {std::make_shared<MaybeOutfeedQueue>(
                           std::vector<std::string>{"hidden/bias"}),
                       GradientOutfeedMode::PreAccumulated};
  m.compile(c);
  FitOptions f;
  f.epochs = epochs;
  f.verbose = Verbosity::Silent;
  f.callbacks = {cb};
  m.fit(HostTensor::fromValues<float>({kExamples, kFeatures}, xs),
        HostTensor::fromValues<int>({kExamples}, ys), kBatch, f, false);
}

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("tessera_outfeed_cb_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::vector<std::string> lines(const std::string &path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

} // namespace

TEST(OutfeedCallback, PrintsEachEpochsStatisticsOfTheDequeuedTensors) {
  auto q = std::make_shared<OutfeedQueue>();
  std::ostringstream out;
  OutfeedCallbackOptions o;
  o.name = "Single layer activations callback";
  o.out = &out;
  auto cb = std::make_shared<OutfeedCallback>(q, o);
  Sequential m = model(q);
  train(m, cb, 2);
  // The second epoch's report: its steps' activations.
  ASSERT_EQ(cb->lastDequeued().size(), 1u);
  const HostTensor &acts = cb->lastDequeued()[0].second;
  EXPECT_EQ(acts.shape(), (tessera::ir::Shape{kSteps, kBatch, 8}));
  ASSERT_EQ(cb->lastStats().size(), 1u);
  expectMatches(cb->lastStats()[0], acts);
  EXPECT_GT(cb->lastStats()[0].zeroFraction, 0.0); // ReLU zeros some
  EXPECT_EQ(q->size(), 0u);
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("Single layer activations callback\nkey: "
                              "hidden_acts shape: (16, 4, 8)\nEpoch 1 - "
                              "Summary Stats\nIndex Name"));
  EXPECT_THAT(text, HasSubstr("Epoch 2 - Summary Stats"));
  EXPECT_THAT(text, HasSubstr(fmt::format("0     hidden_acts{}{:<13.6f}",
                                          std::string(21, ' '),
                                          cb->lastStats()[0].mean)));
}

TEST(OutfeedCallback, EveryKStepsAppendsCsvAndJsonLines) {
  auto q = std::make_shared<OutfeedQueue>();
  const std::string csv = tempPath("stats.csv"), json = tempPath("stats.jsonl");
  std::filesystem::remove(csv);
  std::filesystem::remove(json);
  OutfeedCallbackOptions o;
  o.everySteps = 8;
  o.out = nullptr;
  o.csvPath = csv;
  o.jsonLinesPath = json;
  auto cb = std::make_shared<OutfeedCallback>(q, o);
  Sequential m = model(q);
  train(m, cb, 2);
  // 32 steps, a report every 8: 4 reports of 8 steps each.
  const HostTensor &acts = cb->lastDequeued()[0].second;
  EXPECT_EQ(acts.dim(0), 8u);
  const std::vector<std::string> rows = lines(csv);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0], "callback,epoch,step,index,name,shape,count,mean,std,"
                     "min,max,l2_norm,zero_fraction,nans,infs");
  EXPECT_THAT(rows[4], HasSubstr("\"Outfeed callback\",2,32,0,"
                                 "\"hidden_acts\",8x4x8,256,"));
  const std::vector<std::string> js = lines(json);
  ASSERT_EQ(js.size(), 4u);
  const auto last = nlohmann::json::parse(js[3]);
  const Expected e = expected(acts);
  EXPECT_EQ(last["step"], 32);
  EXPECT_EQ(last["name"], "hidden_acts");
  EXPECT_NEAR(last["mean"].get<double>(), e.mean, 1e-12);
  EXPECT_NEAR(last["std"].get<double>(), e.std, 1e-12);
  EXPECT_EQ(last["min"].get<double>(), e.min);
  EXPECT_EQ(last["max"].get<double>(), e.max);
  EXPECT_NEAR(last["l2_norm"].get<double>(), e.l2, 1e-9);
  EXPECT_EQ(last["zero_fraction"].get<double>(), e.zeros);
  // The CSV row carries the same numbers, round-trippable.
  std::vector<std::string> fields;
  std::stringstream row(rows[4]);
  for (std::string f; std::getline(row, f, ',');)
    fields.push_back(f);
  ASSERT_EQ(fields.size(), 15u);
  EXPECT_EQ(std::stod(fields[7]), cb->lastStats()[0].mean);
  EXPECT_EQ(std::stod(fields[11]), cb->lastStats()[0].l2Norm);
  std::filesystem::remove(csv);
  std::filesystem::remove(json);
}

TEST(OutfeedCallback, StatisticsCountNansAndInfinitiesApart) {
  const HostTensor t = HostTensor::fromValues<float>(
      {6}, {1.0f, 0.0f, -3.0f, std::nanf(""), INFINITY, 2.0f});
  const TensorStats s = tensorStats("t", t);
  EXPECT_EQ(s.count, 6u);
  EXPECT_EQ(s.nans, 1u);
  EXPECT_EQ(s.infs, 1u);
  EXPECT_DOUBLE_EQ(s.mean, 0.0);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(14.0 / 4));
  EXPECT_EQ(s.min, -3.0);
  EXPECT_EQ(s.max, 2.0);
  EXPECT_DOUBLE_EQ(s.l2Norm, std::sqrt(14.0));
  EXPECT_DOUBLE_EQ(s.zeroFraction, 1.0 / 6);
  EXPECT_THROW(tensorStats("i", HostTensor::fromValues<int>({1}, {1})),
               tessera::TypeError);
}

TEST(OutfeedCallback, NothingQueuedSaysSo) {
  auto q = std::make_shared<OutfeedQueue>();
  std::ostringstream out;
  OutfeedCallbackOptions o;
  o.name = "Gradients callback";
  o.out = &out;
  OutfeedCallback cb(q, o);
  EXPECT_TRUE(cb.report(0, 0).empty());
  EXPECT_EQ(out.str(), "Gradients callback\nNo data enqueued\n");
  EXPECT_THROW(OutfeedCallback(nullptr), tessera::OptionError);
}
