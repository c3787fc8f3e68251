// The outfeed layers and their host queues: the layers make their input an
// output of the training module; fit() (Training.cpp, through
// Inspection.cpp) hands each step's values to the queues.
#include "tessera/nn/Outfeed.hpp"

#include "NnInternal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace tessera::nn {

void OutfeedQueue::enqueue(OutfeedStep step) {
  std::lock_guard lock(mutex_);
  if (mode_ == session::OutfeedMode::ALL || steps_.empty()) {
    steps_.push_back(std::move(step));
    return;
  }
  // LAST: one step holding the latest value of every key, so values sent
  // by different enqueues (activations, gradients) all survive.
  OutfeedStep &latest = steps_.front();
  for (auto &[key, value] : step) {
    auto it = std::find_if(latest.begin(), latest.end(),
                           [&](const auto &p) { return p.first == key; });
    if (it == latest.end())
      latest.emplace_back(key, std::move(value));
    else
      it->second = std::move(value);
  }
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
    return std::move(steps.front());
  // Keys in first-seen order; each key's values stack into one
  // [count, ...] tensor (one training module: every value of a key has
  // the same type and shape).
  std::vector<std::pair<std::string, std::vector<const data::HostTensor *>>>
      byKey;
  for (const OutfeedStep &s : steps)
    for (const auto &[key, value] : s) {
      auto it = std::find_if(byKey.begin(), byKey.end(),
                             [&](const auto &p) { return p.first == key; });
      if (it == byKey.end())
        it = byKey.emplace(byKey.end(), key,
                           std::vector<const data::HostTensor *>{});
      it->second.push_back(&value);
    }
  OutfeedStep stacked;
  for (const auto &[key, values] : byKey) {
    const data::HostTensor &first = *values.front();
    Shape shape{values.size()};
    shape.insert(shape.end(), first.shape().begin(), first.shape().end());
    data::HostTensor all(first.type(), shape);
    auto *dst = static_cast<std::byte *>(all.data());
    for (const data::HostTensor *t : values) {
      TESSERA_INTERNAL_ASSERT(t->numBytes() == first.numBytes(),
                              "outfeed values of one key differ in size");
      std::memcpy(dst, t->data(), t->numBytes());
      dst += t->numBytes();
    }
    stacked.emplace_back(key, std::move(all));
  }
  return stacked;
}

bool MaybeOutfeedQueue::matches(const std::string &key) const {
  return filters_.empty() ||
         std::any_of(filters_.begin(), filters_.end(), [&](const auto &f) {
           return key.find(f) != std::string::npos;
         });
}

std::vector<std::string>
MaybeOutfeedQueue::checkFilters(const std::vector<std::string> &offered,
                                const std::string &what) const {
  std::vector<std::string> unmatched;
  for (const std::string &f : filters_)
    if (std::none_of(offered.begin(), offered.end(), [&](const auto &k) {
          return k.find(f) != std::string::npos;
        }))
      unmatched.push_back(f);
  if (warnings_)
    for (const std::string &f : unmatched)
      *warnings_ << fmt::format(
          "warning: MaybeOutfeedQueue filter \"{}\" matches none of the {} "
          "{} offered to it ({}); nothing is sent for it. Use a part of one "
          "of those names\n",
          f, offered.size(), what,
          offered.empty() ? std::string("none")
                          : fmt::format("{}", fmt::join(offered, ", ")));
  return unmatched;
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
  // reader, as on TensorFlow-for-IPU where fit() drives the outfeed. The
  // queue's filters and mode are applied once the whole module is built
  // (Inspection.cpp); an output nothing reads costs no stream.
  if (ctx.training())
    ctx.builder().output(detail::outfeedOutput(name()),
                         ctx.channelsLast(x).value);
  return x;
}

MaybeOutfeedLayer::MaybeOutfeedLayer(std::shared_ptr<MaybeOutfeedQueue> queue,
                                     bool finalOutfeed, std::string name)
    : OutfeedLayer(queue ? std::shared_ptr<OutfeedQueue>(queue)
                         : throw OptionError(
                               "MaybeOutfeedLayer needs a queue; give it a "
                               "std::make_shared<nn::MaybeOutfeedQueue>()"),
                   std::move(name)),
      final_(finalOutfeed) {}

const MaybeOutfeedQueue &MaybeOutfeedLayer::maybeQueue() const {
  return static_cast<const MaybeOutfeedQueue &>(*queue());
}

} // namespace tessera::nn
