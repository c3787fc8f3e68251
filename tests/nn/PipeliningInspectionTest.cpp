// The tensor-inspection tutorial's models (examples/keras/
// pipelining_inspection): each of the four variants trains on
// Fashion-MNIST with its loss falling and its queues filled as the
// tutorial says; the two-stage model pipelined over 2 IPUs ends with the
// weights (and sends the gradients) of the same model trained on one IPU
// with the same gradient accumulation.
#include "Models.hpp"

#include "tessera/data/Dataset.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace pipelining_inspection;
namespace data = tessera::data;
namespace passes = tessera::passes;
namespace session = tessera::session;

namespace {

constexpr unsigned kAccumulation = 4, kSteps = 16;

data::Dataset fashion() {
  return data::fashionMnist(data::Split::Train)
      .take(32 * kSteps)
      .batch(32, true);
}

nn::History train(nn::Model &m, const Queues &q, bool pipelined,
                  unsigned epochs) {
  nn::CompileOptions c;
  c.optimizer = passes::SGD{0.05};
  c.stepsPerExecution = kSteps;
  c.config.autoSelectIpus = pipelined ? 2 : 1;
  c.gradientOutfeed = {q.gradients, nn::GradientOutfeedMode::Accumulated};
  m.compile(c);
  nn::FitOptions f;
  f.epochs = epochs;
  f.verbose = nn::Verbosity::Silent;
  return m.fit(fashion(), f);
}

std::vector<std::string> keys(const nn::OutfeedStep &s) {
  std::vector<std::string> k;
  for (const auto &[name, t] : s)
    k.push_back(name + " " + data::shapeString(t.shape()));
  return k;
}

} // namespace

TEST(PipeliningInspection, EachVariantTrainsAndFillsItsQueues) {
  for (ModelType type : {ModelType::Functional, ModelType::Sequential})
    for (bool pipelined : {false, true}) {
      SCOPED_TRACE(
          std::string(type == ModelType::Sequential ? "Sequential" : "Model") +
          (pipelined ? " pipelined" : ""));
      Queues q;
      auto m = createModel(type, pipelined, pipelined, q, kAccumulation);
      const nn::History h = train(*m, q, pipelined, 2);
      EXPECT_LT(nn::logValue(h.epochs[1], "loss"),
                nn::logValue(h.epochs[0], "loss"));
      // One accumulated gradient per weight update: 2 x 16 / 4.
      const std::string in = pipelined ? "256" : "784";
      EXPECT_EQ(
          keys(q.gradients->dequeue()),
          (std::vector<std::string>{"Dense_128/kernel_grad [8," + in + ",128]",
                                    "Dense_128/bias_grad [8,128]"}));
      if (pipelined) {
        EXPECT_EQ(q.activations->size(), 0u);
        EXPECT_EQ(keys(q.multiActivations->dequeue()),
                  (std::vector<std::string>{"Dense_128_acts [32,32,128]",
                                            "Dense_10_acts [32,32,10]"}));
      } else {
        EXPECT_EQ(keys(q.activations->dequeue()),
                  std::vector<std::string>{"Dense_128_acts [32,32,128]"});
      }
    }
}

TEST(PipeliningInspection, PipelinedAndUnpipelinedGiveTheSameWeights) {
  for (ModelType type : {ModelType::Functional, ModelType::Sequential}) {
    Queues pq, uq;
    auto pipelined = createModel(type, true, true, pq, kAccumulation, 9);
    auto plain = createModel(type, true, false, uq, kAccumulation, 9);
    train(*pipelined, pq, true, 1);
    train(*plain, uq, false, 1);
    const session::Checkpoint a = pipelined->getWeights(),
                              b = plain->getWeights();
    std::size_t compared = 0;
    for (const std::string &name : plain->weightNames())
      for (const auto &[n, t] : a.variables)
        for (const auto &[wn, wt] : b.variables)
          if (n == name && wn == name) {
            const auto x = t.values<float>(), y = wt.values<float>();
            ASSERT_EQ(x.size(), y.size()) << name;
            for (std::size_t i = 0; i < x.size(); ++i)
              ASSERT_NEAR(x[i], y[i], 1e-5 * std::abs(y[i]) + 1e-6)
                  << name << "[" << i << "]";
            ++compared;
          }
    EXPECT_EQ(compared, 6u); // three Dense layers' kernels and biases
    const nn::OutfeedStep pg = pq.gradients->dequeue(),
                          ug = uq.gradients->dequeue();
    ASSERT_EQ(keys(pg), keys(ug));
    const auto x = pg[0].second.values<float>(),
               y = ug[0].second.values<float>();
    for (std::size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(x[i], y[i], 1e-5 * std::abs(y[i]) + 1e-6) << i;
  }
}
