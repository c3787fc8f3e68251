// How fit() sends tensors to outfeed queues (Outfeed.hpp): the plan of
// what the training module sends where, the outputs and variables it adds
// for that, and the delivery of each device run's values. Internal to nn.
#pragma once

#include "tessera/nn/Outfeed.hpp"
#include "tessera/session/Session.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tessera::nn::detail {

/// One tensor the training module sends to a queue.
struct OutfeedTap {
  std::shared_ptr<OutfeedQueue> queue;
  /// The key the queue gets: the layer's name, or "<variable>_grad".
  std::string key;
  /// The training module's output holding the value of each step.
  std::string output;
  /// For a LAST queue: the variable each step's value is copied into,
  /// read once per device run instead of a stream per step (empty: the
  /// output is streamed).
  std::string variable;
  /// The value sent (before the output exists), its shape (streams
  /// deliver it flat) and the type it is sent as.
  ir::ValueId value = 0;
  Shape shape;
  Type dtype = FLOAT;
  /// The host keeps the value of every \p every-th step only (1: each).
  unsigned every = 1;
};

/// The taps of \p module, a training module built with the training passes
/// for \p accumulation micro-batches per weight update: the model's outfeed
/// layers in layer order (those of a MaybeOutfeedQueue only when its
/// filters take them and a final layer follows), then the gradients of
/// \p gradients. With \p warn, writes the queues' warnings (filters that
/// match nothing, layers no final layer enqueues).
std::vector<OutfeedTap> planOutfeeds(const ir::Module &module,
                                     const std::vector<LayerRef> &layers,
                                     const GradientOutfeed &gradients,
                                     unsigned accumulation, bool warn);

/// Adds what \p taps need to \p module: gradient outputs, and the LAST
/// taps' variables with their updates.
void addOutfeeds(ir::Module &module, const std::vector<OutfeedTap> &taps);

/// The outputs fit() streams for \p taps, in the order deliverOutfeeds
/// reads them.
std::vector<std::string> streamedOutputs(const std::vector<OutfeedTap> &taps);

/// Hands a device run's values to the queues: components \p first.. of
/// each of \p steps (the streamed taps' values; \p replicas elements per
/// step), then the LAST taps' variables read from \p session. Does nothing
/// when \p steps is empty (synthetic data sends nothing back).
void deliverOutfeeds(const std::vector<OutfeedTap> &taps,
                     std::vector<data::Element> &steps, std::size_t first,
                     unsigned replicas, session::Session &session);

} // namespace tessera::nn::detail
