// The fully connected models of the TensorFlow 2 tensor-inspection
// tutorial, built with tessera::nn: the single-IPU model
// (Flatten, Dense_128, an Outfeed of its activations, Dense_10) and the
// two-stage model (Flatten, Dense_256 on stage 0; Dense_128, Dense_10 and
// MaybeOutfeed layers of their activations on stage 1), each as a
// functional Model or a Sequential. main.cpp trains them; the nn tests
// check them (tests/nn/PipeliningInspectionTest.cpp).
#pragma once

#include "tessera/nn/Model.hpp"
#include "tessera/nn/Outfeed.hpp"

#include <memory>
#include <string>
#include <vector>

namespace pipelining_inspection {

namespace nn = tessera::nn;

enum class ModelType { Functional, Sequential };

/// The tutorial's queues: activations of the single-IPU model
/// (IPUOutfeedQueue), filtered activations of the two-stage model and
/// filtered gradients (MaybeOutfeedQueue).
struct Queues {
  std::shared_ptr<nn::OutfeedQueue> activations =
      std::make_shared<nn::OutfeedQueue>();
  std::shared_ptr<nn::MaybeOutfeedQueue> multiActivations =
      std::make_shared<nn::MaybeOutfeedQueue>();
  std::shared_ptr<nn::MaybeOutfeedQueue> gradients =
      std::make_shared<nn::MaybeOutfeedQueue>(
          std::vector<std::string>{"Dense_128"});
};

inline nn::DenseOptions dense(const std::string &name,
                              nn::Activation activation) {
  nn::DenseOptions o;
  o.activation = activation;
  o.name = name;
  return o;
}

/// The layers after the Input, in order.
inline std::vector<nn::LayerRef> layers(bool twoStage, const Queues &q) {
  using nn::Activation;
  if (!twoStage)
    return {nn::Flatten(), nn::Dense(128, dense("Dense_128", Activation::Relu)),
            nn::OutfeedLayer(q.activations, "Dense_128_acts"),
            nn::Dense(10, dense("Dense_10", Activation::Softmax))};
  return {nn::Flatten(),
          nn::Dense(256, dense("Dense_256", Activation::Relu)),
          nn::Dense(128, dense("Dense_128", Activation::Relu)),
          nn::MaybeOutfeedLayer(q.multiActivations, false, "Dense_128_acts"),
          nn::Dense(10, dense("Dense_10", Activation::Softmax)),
          nn::MaybeOutfeedLayer(q.multiActivations, true, "Dense_10_acts")};
}

/// The two-stage model's stages: Flatten and Dense_256 on stage 0.
inline const std::vector<unsigned> kStages = {0, 0, 1, 1, 1, 1};

/// One of the tutorial's models. \p twoStage picks the two-stage layers;
/// \p pipelined assigns them their stages and trains them pipelined over
/// 2 IPUs with \p accumulation micro-batches per update (the model must be
/// compiled with config.autoSelectIpus = 2), otherwise they train on one
/// IPU accumulating the gradients of \p accumulation steps.
inline std::unique_ptr<nn::Model> createModel(ModelType type, bool twoStage,
                                              bool pipelined, const Queues &q,
                                              unsigned accumulation,
                                              std::uint64_t seed = 1) {
  std::unique_ptr<nn::Model> m;
  const std::vector<nn::LayerRef> body = layers(twoStage, q);
  if (type == ModelType::Sequential) {
    std::vector<nn::LayerRef> all{nn::Input({28, 28, 1})};
    all.insert(all.end(), body.begin(), body.end());
    m = std::make_unique<nn::Sequential>(all, "sequential", seed);
  } else {
    const nn::KerasTensor input = nn::Input({28, 28, 1});
    nn::KerasTensor x = input;
    for (const nn::LayerRef &l : body)
      x = (*l)(x);
    m = std::make_unique<nn::Model>(input, x, "model", seed);
  }
  if (pipelined) {
    m->setPipelineStageAssignment(kStages);
    nn::PipeliningOptions p;
    p.accumulation.count = accumulation;
    m->setPipeliningOptions(p);
  } else {
    m->setGradientAccumulationOptions({.count = accumulation});
  }
  return m;
}

} // namespace pipelining_inspection
