/// \file
/// Tensors sent to the host during fit(), as TensorFlow-for-IPU's
/// IPUOutfeedQueue with a Keras layer that enqueues its input:
///
/// \code
///   auto acts = std::make_shared<nn::OutfeedQueue>();   // ALL steps
///   nn::Sequential model({nn::Input({784}), nn::Dense(128, "relu"),
///                         nn::OutfeedLayer(acts, "dense_acts"),
///                         nn::Dense(10, "softmax")});
///   model.compile(c);
///   model.fit(train.batch(32, true));
///   for (auto &[name, t] : acts->dequeue())   // "dense_acts" [steps, 32, 128]
///     ...
/// \endcode
///
/// The layer is the identity; in the training module its input is also an
/// output of every step, which fit() hands to the queue after each device
/// run. Evaluation and prediction leave it out.
#pragma once

#include "tessera/data/HostTensor.hpp"
#include "tessera/nn/Layers.hpp"
#include "tessera/session/Feeds.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tessera::nn {

/// One step's values: (layer name, value) for each layer feeding a queue.
using OutfeedStep = std::vector<std::pair<std::string, data::HostTensor>>;

/// Host side of the outfeed layers that share it. Thread-safe: it may be
/// read while fit() runs.
class OutfeedQueue {
public:
  /// ALL keeps every step's values; LAST only the latest step's.
  explicit OutfeedQueue(session::OutfeedMode mode = session::OutfeedMode::ALL)
      : mode_(mode) {}
  session::OutfeedMode mode() const { return mode_; }

  /// Adds one training step's values (fit() calls this).
  void enqueue(OutfeedStep step);
  /// Removes what is queued: per layer, in the order of the first step,
  /// its values stacked over the steps ([steps, batch, ...]) in ALL mode,
  /// or the last step's value ([batch, ...]) in LAST mode. Empty when
  /// nothing is queued.
  OutfeedStep dequeue();
  /// Steps queued now (at most 1 in LAST mode).
  std::size_t size() const;

private:
  session::OutfeedMode mode_;
  mutable std::mutex mutex_;
  std::vector<OutfeedStep> steps_;
};

/// The identity, sending its input to \p queue on every training step.
class OutfeedLayer : public Layer {
public:
  explicit OutfeedLayer(std::shared_ptr<OutfeedQueue> queue,
                        std::string name = "");
  std::string typeName() const override { return "Outfeed"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<OutfeedLayer>(*this);
  }
  std::string defaultName() const override { return "outfeed"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;
  const std::shared_ptr<OutfeedQueue> &queue() const { return queue_; }

private:
  std::shared_ptr<OutfeedQueue> queue_;
};

} // namespace tessera::nn
