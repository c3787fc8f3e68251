// The models of `tessera train` and `tessera plan`, and their stages.
#include "TrainModels.hpp"

#include "tessera/support/Error.hpp"

namespace tessera::tools {

std::size_t trainModelLayers(const std::string &model) {
  return model == "cnn" ? 7 : 3;
}

nn::Sequential buildTrainModel(const std::string &model, std::uint64_t seed) {
  using namespace nn;
  if (model == "mlp")
    return Sequential({nn::Input({784}), Dense(256, "relu"), Dense(128, "relu"),
                       Dense(10, "softmax")},
                      "mlp", seed);
  if (model == "cnn")
    return Sequential({nn::Input({28, 28, 1}), Conv2D(32, {3, 3}, "relu"),
                       MaxPool2D({2, 2}), Conv2D(64, {3, 3}, "relu"),
                       MaxPool2D({2, 2}), Flatten(), Dense(128, "relu"),
                       Dense(10, "softmax")},
                      "cnn", seed);
  throw OptionError("--model " + model + ": unknown model; use mlp or cnn");
}

std::vector<unsigned> evenStages(std::size_t layers, unsigned stages) {
  std::vector<unsigned> assignment(layers);
  for (std::size_t i = 0; i < layers; ++i)
    assignment[i] = unsigned(i * stages / layers);
  return assignment;
}

void applyPipelining(nn::Model &model, unsigned stages,
                     const std::string &schedule, unsigned accumulation,
                     bool recompute) {
  if (stages == 0) {
    passes::GradientAccumulationOptions a;
    a.count = accumulation;
    model.setGradientAccumulationOptions(a);
    return;
  }
  model.setPipelineStageAssignment(
      evenStages(model.layers().size() - 1, stages));
  nn::PipeliningOptions p;
  p.accumulation.count = accumulation;
  p.schedule = *session::parseSchedule(schedule);
  p.recompute = recompute;
  model.setPipeliningOptions(p);
}

} // namespace tessera::tools
