// The outfeed layer and its host queue: the layer makes its input an output
// of the training module; fit() (Training.cpp) hands each step's values to
// the queue.
#include "tessera/nn/Outfeed.hpp"

#include "NnInternal.hpp"

#include <cstring>

namespace tessera::nn {

void OutfeedQueue::enqueue(OutfeedStep step) {
  std::lock_guard lock(mutex_);
  if (mode_ == session::OutfeedMode::LAST)
    steps_.clear();
  steps_.push_back(std::move(step));
}

std::size_t OutfeedQueue::size() const {
  std::lock_guard lock(mutex_);
  return steps_.size();
}

OutfeedStep OutfeedQueue::dequeue() {
  std::vector<OutfeedStep> steps;
  {
    std::lock_guard lock(mutex_);
    steps.swap(steps_);
  }
  if (steps.empty())
    return {};
  if (mode_ == session::OutfeedMode::LAST)
    return std::move(steps.back());
  // Every step has the same layers with the same shapes (one training
  // module), so each layer's values stack into one [steps, ...] tensor.
  OutfeedStep stacked;
  for (std::size_t i = 0; i < steps.front().size(); ++i) {
    const data::HostTensor &first = steps.front()[i].second;
    Shape shape{steps.size()};
    shape.insert(shape.end(), first.shape().begin(), first.shape().end());
    data::HostTensor all(first.type(), shape);
    auto *dst = static_cast<std::byte *>(all.data());
    for (const OutfeedStep &s : steps) {
      const data::HostTensor &t = s[i].second;
      TESSERA_INTERNAL_ASSERT(t.numBytes() == first.numBytes(),
                              "outfeed steps of different sizes");
      std::memcpy(dst, t.data(), t.numBytes());
      dst += t.numBytes();
    }
    stacked.emplace_back(steps.front()[i].first, std::move(all));
  }
  return stacked;
}

OutfeedLayer::OutfeedLayer(std::shared_ptr<OutfeedQueue> queue,
                           std::string name)
    : Layer(std::move(name)), queue_(std::move(queue)) {
  if (!queue_)
    throw OptionError("OutfeedLayer needs a queue; give it a "
                      "std::make_shared<nn::OutfeedQueue>()");
}

Activations OutfeedLayer::call(BuildContext &ctx, const Activations &x) const {
  // Only training steps report: evaluation and prediction have no queue
  // reader, as on TensorFlow-for-IPU where fit() drives the outfeed.
  if (ctx.training())
    ctx.builder().output(detail::outfeedOutput(name()),
                         ctx.channelsLast(x).value);
  return x;
}

} // namespace tessera::nn
