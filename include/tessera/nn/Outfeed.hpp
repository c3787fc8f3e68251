/// \file
/// Tensors sent to the host during fit(), as TensorFlow-for-IPU's
/// IPUOutfeedQueue and the tensor-inspection tutorial's MaybeOutfeedQueue,
/// Outfeed / MaybeOutfeed layers and OutfeedOptimizer:
///
/// \code
///   auto acts = std::make_shared<nn::OutfeedQueue>();   // ALL steps
///   auto some = std::make_shared<nn::MaybeOutfeedQueue>(
///       std::vector<std::string>{"Dense_10"});          // name filters
///   auto grads = std::make_shared<nn::MaybeOutfeedQueue>(
///       std::vector<std::string>{"Dense_128"});
///   nn::Sequential model({nn::Input({784}), nn::Dense(128, "relu"),
///                         nn::OutfeedLayer(acts, "dense_acts"),
///                         nn::Dense(10, "softmax", "Dense_10"),
///                         nn::MaybeOutfeedLayer(some, true,
///                         "Dense_10_acts")});
///   nn::CompileOptions c;
///   c.gradientOutfeed = {grads, nn::GradientOutfeedMode::Accumulated};
///   model.compile(c);
///   model.fit(train.batch(32, true));
///   for (auto &[name, t] : acts->dequeue())   // "dense_acts" [steps, 32, 128]
///     ...
/// \endcode
///
/// The layers are the identity; in the training module their input is also
/// an output of every step, which fit() hands to the queue after each device
/// run. Evaluation and prediction leave them out. A queue in LAST mode is
/// kept on the device instead: the training module copies each step's value
/// into a variable, which fit() reads once per device run, so only the last
/// step's value crosses to the host (the first replica's, when the model
/// is replicated; ALL queues get each replica's values, in replica order).
/// The queue holds plain host tensors: what it got stays dequeueable after
/// the model that filled it is gone.
#pragma once

#include "tessera/data/HostTensor.hpp"
#include "tessera/nn/Layers.hpp"
#include "tessera/session/Feeds.hpp"

#include <cstddef>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tessera::nn {

/// One enqueue's values: (key, value) for each tensor sent together.
using OutfeedStep = std::vector<std::pair<std::string, data::HostTensor>>;

/// Host side of the outfeeds that share it. Thread-safe: it may be read
/// while fit() runs, and it outlives the model that fills it (what it holds
/// stays until dequeued).
class OutfeedQueue {
public:
  /// ALL keeps every step's values; LAST only the latest value of each key.
  explicit OutfeedQueue(session::OutfeedMode mode = session::OutfeedMode::ALL)
      : mode_(mode) {}
  virtual ~OutfeedQueue() = default;
  session::OutfeedMode mode() const { return mode_; }

  /// Adds one step's values (fit() calls this).
  void enqueue(OutfeedStep step);
  /// Removes what is queued: per key, in the order keys were first
  /// enqueued, its values stacked over the steps that sent it
  /// ([steps, batch, ...]) in ALL mode, or its latest value ([batch, ...])
  /// in LAST mode. Empty when nothing is queued.
  OutfeedStep dequeue();
  /// Enqueues not yet dequeued (at most 1 in LAST mode).
  std::size_t size() const;

private:
  session::OutfeedMode mode_;
  mutable std::mutex mutex_;
  std::vector<OutfeedStep> steps_;
};

/// An OutfeedQueue that takes only the tensors whose key contains one of
/// its filters (the tutorial's MaybeOutfeedQueue); no filters take every
/// tensor. When a training module is built, each filter that matches none
/// of the keys offered to the queue is reported on the warning stream,
/// with the keys it could have matched.
class MaybeOutfeedQueue : public OutfeedQueue {
public:
  explicit MaybeOutfeedQueue(
      std::vector<std::string> filters = {},
      session::OutfeedMode mode = session::OutfeedMode::ALL,
      std::ostream *warnings = &std::cerr)
      : OutfeedQueue(mode), filters_(std::move(filters)), warnings_(warnings) {}
  const std::vector<std::string> &filters() const { return filters_; }
  /// Whether \p key contains a filter (always, without filters).
  bool matches(const std::string &key) const;
  /// The filters matching none of \p offered; each is also written (when
  /// the warning stream is set) as one line naming \p what was offered
  /// and the keys.
  std::vector<std::string> checkFilters(const std::vector<std::string> &offered,
                                        const std::string &what) const;
  /// Where its warnings go (null: nowhere).
  std::ostream *warnings() const { return warnings_; }

private:
  std::vector<std::string> filters_;
  std::ostream *warnings_;
};

/// The identity, sending its input to \p queue on every training step
/// under the layer's name.
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

/// The identity, adding its input to \p queue's next enqueue when the
/// layer's name passes the queue's filters (the tutorial's MaybeOutfeed).
/// The tensors the queue's layers collect are enqueued together by the
/// next layer (in layer order) with \p finalOutfeed set, once per step; a
/// layer after the queue's last final layer sends nothing, and building
/// the training module warns about it.
class MaybeOutfeedLayer : public OutfeedLayer {
public:
  MaybeOutfeedLayer(std::shared_ptr<MaybeOutfeedQueue> queue, bool finalOutfeed,
                    std::string name = "");
  std::string typeName() const override { return "MaybeOutfeed"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<MaybeOutfeedLayer>(*this);
  }
  std::string defaultName() const override { return "maybe_outfeed"; }
  bool finalOutfeed() const { return final_; }
  const MaybeOutfeedQueue &maybeQueue() const;

private:
  bool final_;
};

/// Which gradients the optimizer sends (the tutorial's
/// OutfeedOptimizerMode). They differ only with gradient accumulation (or
/// pipelining) over N micro-batches.
enum class GradientOutfeedMode {
  /// AFTER_COMPUTE: each micro-batch's gradient as computed, N per weight
  /// update.
  PreAccumulated,
  /// BEFORE_APPLY: the accumulated gradient the optimizer applies (the sum
  /// or mean of the N, by the accumulation's reduction), once per update.
  Accumulated
};

/// The optimizer's gradients sent to a queue during fit(), keyed
/// "<variable>_grad" ("Dense_128/kernel_grad") and filtered by the queue's
/// filters, one enqueue per micro-batch (PreAccumulated) or per weight
/// update (Accumulated). In ALL mode the accumulated gradient streams the
/// running accumulator every micro-batch and the host keeps the value of
/// each update's last micro-batch; a LAST queue keeps it on the device.
/// Without a queue nothing is sent.
struct GradientOutfeed {
  std::shared_ptr<MaybeOutfeedQueue> queue;
  GradientOutfeedMode mode = GradientOutfeedMode::Accumulated;
};

} // namespace tessera::nn
