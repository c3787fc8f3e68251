// PopART's C++ API (compat/include/popart): SessionOptions::enablePipelining
// reaches the session, which pipelines a training session's
// setPipelineStage stages and asks for enough gradient accumulation.
#include <popart/builder.hpp>
#include <popart/session.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

using ::testing::HasSubstr;

namespace {

struct TwoStages {
  std::string proto, loss;
};

// Two matmuls, stage s on IPU s, and a mean square.
TwoStages twoStages() {
  auto builder = popart::Builder::create();
  auto aiOnnx = builder->aiOnnxOpset11();
  const std::vector<float> w{0.5f, -0.25f, 0.75f, 0.1f};
  std::string h = builder->addInputTensor("FLOAT", {2, 2}, "x");
  for (std::int64_t s = 0; s < 2; ++s) {
    builder->setPipelineStage(s);
    builder->setVirtualGraph(s);
    const auto wt = builder->addInitializedInputTensor(
        {w.data(), popart::TensorInfo("FLOAT", {2, 2})});
    h = aiOnnx.tanh({aiOnnx.matmul({h, wt})});
  }
  const std::string loss =
      aiOnnx.reducemean({aiOnnx.mul({h, h})}, std::nullopt, 0);
  builder->addOutputTensor(loss);
  return {builder->getModelProto(), loss};
}

std::unique_ptr<popart::TrainingSession>
session(const TwoStages &m, bool pipelining, int accumulation) {
  popart::SessionOptions o;
  o.enablePipelining = pipelining;
  o.enableGradientAccumulation = accumulation > 1;
  o.accumulationFactor = accumulation;
  return popart::TrainingSession::createFromOnnxModel(
      m.proto, popart::DataFlow(1, {{m.loss, popart::AnchorReturnType("All")}}),
      m.loss, popart::ConstSGD(0.1f),
      popart::DeviceManager::createDeviceManager().createIpuModelDevice(
          {{"numIPUs", "2"}, {"tilesPerIPU", "4"}}),
      {}, o);
}

std::set<unsigned> stages(popart::Session &s) {
  std::set<unsigned> r;
  for (const auto &op : s.tessera().module().ops())
    if (op.annotations.pipelineStage)
      r.insert(*op.annotations.pipelineStage);
  return r;
}

} // namespace

TEST(PopartPipelining, EnablePipeliningTrainsTheStagesPipelined) {
  const TwoStages m = twoStages();
  auto pipelined = session(m, true, 2);
  EXPECT_EQ(stages(*pipelined), (std::set<unsigned>{0, 1}));
  EXPECT_NO_THROW(pipelined->prepareDevice());
  // Without enablePipelining the stages are ignored.
  EXPECT_TRUE(stages(*session(m, false, 2)).empty());
}

TEST(PopartPipelining, AccumulationBelowTheStagesIsAnError) {
  EXPECT_THAT([] { session(twoStages(), true, 1); },
              ::testing::ThrowsMessage<tessera::OptionError>(
                  HasSubstr("accumulationFactor of at least 2")));
}
