// What the training module sends to outfeed queues and how fit() hands it
// over. Values reach the host in one of two ways: a device-to-host stream
// per step (ALL queues), or, for LAST queues, a variable the step's value
// is copied into on the device and that the host reads once per device run,
// so the steps before the last never cross the host link.
#include "Inspection.hpp"

#include "NnInternal.hpp"

#include "tessera/ir/Builder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tessera::nn::detail {
namespace {

const std::string kGradientPrefix = "gradient_outfeed/";
const std::string kLastPrefix = "outfeed_last/";

OutfeedTap tapOf(const ir::Module &m, std::shared_ptr<OutfeedQueue> queue,
                 std::string key, std::string output, ir::ValueId value) {
  OutfeedTap t;
  t.queue = std::move(queue);
  t.key = std::move(key);
  t.value = value;
  t.shape = m.value(value).type.shape;
  t.dtype = m.value(value).type.dtype;
  if (t.queue->mode() == session::OutfeedMode::LAST)
    t.variable = kLastPrefix + output;
  t.output = std::move(output);
  return t;
}

// Whether a final MaybeOutfeed layer of the same queue comes at or after
// layer \p i: only such a layer enqueues what layer i collects.
bool enqueuedLater(const std::vector<LayerRef> &layers, std::size_t i,
                   const OutfeedQueue *queue) {
  for (std::size_t j = i; j < layers.size(); ++j) {
    const auto *m =
        dynamic_cast<const MaybeOutfeedLayer *>(layers[j].get().get());
    if (m && m->queue().get() == queue && m->finalOutfeed())
      return true;
  }
  return false;
}

// The value the optimizer applies for \p variable: the gradient itself, or
// with accumulation the accumulator's new value (GradientAccumulation.hpp
// names the accumulator "<variable>/accumulator").
ir::ValueId appliedGradient(const ir::Module &m, ir::ValueId variable,
                            ir::ValueId gradient, unsigned accumulation) {
  if (accumulation <= 1)
    return gradient;
  const auto acc = m.findValue(m.value(variable).name + "/accumulator");
  TESSERA_INTERNAL_ASSERT(acc && m.updateOf(*acc),
                          "accumulated gradient without its accumulator");
  return *m.updateOf(*acc);
}

} // namespace

std::vector<OutfeedTap> planOutfeeds(const ir::Module &module,
                                     const std::vector<LayerRef> &layers,
                                     const GradientOutfeed &gradients,
                                     unsigned accumulation, bool warn) {
  std::vector<OutfeedTap> taps;
  std::map<const MaybeOutfeedQueue *, std::vector<std::string>> offered;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto *o = dynamic_cast<const OutfeedLayer *>(layers[i].get().get());
    if (!o)
      continue;
    const std::string &name = o->name();
    if (const auto *maybe = dynamic_cast<const MaybeOutfeedLayer *>(o)) {
      const MaybeOutfeedQueue &q = maybe->maybeQueue();
      offered[&q].push_back(name);
      if (!q.matches(name))
        continue;
      if (!enqueuedLater(layers, i, &q)) {
        if (warn && q.warnings())
          *q.warnings() << fmt::format(
              "warning: MaybeOutfeed layer \"{}\" comes after the last layer "
              "of its queue with finalOutfeed = true, so nothing enqueues "
              "its tensor; set finalOutfeed on it or on a later layer\n",
              name);
        continue;
      }
    }
    const std::string output = outfeedOutput(name);
    taps.push_back(
        tapOf(module, o->queue(), name, output, module.output(output)));
  }
  if (const auto &q = gradients.queue) {
    std::vector<std::string> &keys = offered[q.get()];
    for (const ir::VariableRecord &g : module.gradients()) {
      const std::string &var = module.value(g.variable).name;
      const std::string key = var + "_grad";
      keys.push_back(key);
      if (!q->matches(key))
        continue;
      const bool applied = gradients.mode == GradientOutfeedMode::Accumulated;
      const ir::ValueId v =
          applied ? appliedGradient(module, g.variable, g.value, accumulation)
                  : g.value;
      OutfeedTap t = tapOf(module, q, key, kGradientPrefix + var, v);
      t.dtype = module.value(g.value).type.dtype;
      // The running accumulator is complete at each update's last
      // micro-batch; a LAST variable holds exactly that after a run.
      if (applied && t.variable.empty())
        t.every = std::max(accumulation, 1u);
      taps.push_back(std::move(t));
    }
  }
  if (warn)
    for (const auto &[q, keys] : offered)
      q->checkFilters(keys, "tensors");
  return taps;
}

namespace {

// \p v as \p dtype, or a copy of it with \p copy, made by ops with the
// annotations of its producer (its stage, the backward pass) outside the
// weight update.
ir::Value sentValue(ir::Module &module, ir::ValueId v, Type dtype, bool copy) {
  ir::Value value = ir::Builder(module).value(v);
  const bool cast = value.type().dtype != dtype;
  if (!cast && !copy)
    return value;
  const ir::Annotations saved = module.currentAnnotations();
  if (module.value(v).kind == ir::ValueKind::OpResult)
    module.currentAnnotations() = module.producer(v).annotations;
  module.currentAnnotations().weightUpdate = false;
  value = cast ? ir::cast(value, dtype) : value * 1.0;
  module.currentAnnotations() = saved;
  return value;
}

bool isUpdateValue(const ir::Module &module, ir::ValueId v) {
  return std::any_of(module.updates().begin(), module.updates().end(),
                     [v](const ir::VariableRecord &u) { return u.value == v; });
}

// The weight update's ops must come last (GradientAccumulation.hpp); the
// ops added here read only micro-batch values, so they move before it.
void keepWeightUpdateLast(ir::Module &module) {
  std::vector<ir::Op> &ops = module.mutableOps();
  std::stable_partition(ops.begin(), ops.end(), [](const ir::Op &op) {
    return !op.annotations.weightUpdate;
  });
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (ir::ValueId r : ops[i].results)
      module.mutableValue(r).def = static_cast<std::uint32_t>(i);
}

} // namespace

void addOutfeeds(ir::Module &module, const std::vector<OutfeedTap> &taps) {
  ir::Builder b(module);
  for (const OutfeedTap &t : taps) {
    // A half accumulator is applied converted to the variable's type. A
    // float one is updated in place and reset by the weight update, which
    // a session runs before it streams the step's outputs: send a copy.
    if (t.output.rfind(kGradientPrefix, 0) == 0)
      b.output(t.output, sentValue(module, t.value, t.dtype, t.every > 1));
    if (t.variable.empty())
      continue;
    // A value that already updates a variable (an accumulator) is copied,
    // so that each variable is updated from its own value.
    const ir::ValueId v = module.output(t.output);
    const ir::Value value = sentValue(module, v, module.value(v).type.dtype,
                                      isUpdateValue(module, v));
    const ir::Value var = b.variable(t.variable, value.type().shape,
                                     ir::init::zeros(), value.type().dtype,
                                     /*trainable=*/false);
    b.update(var, value);
  }
  keepWeightUpdateLast(module);
}

std::vector<std::string> streamedOutputs(const std::vector<OutfeedTap> &taps) {
  std::vector<std::string> names;
  for (const OutfeedTap &t : taps)
    if (t.variable.empty())
      names.push_back(t.output);
  return names;
}

namespace {

OutfeedStep &stepOf(std::vector<std::pair<OutfeedQueue *, OutfeedStep>> &s,
                    OutfeedQueue *q) {
  auto it = std::find_if(s.begin(), s.end(),
                         [q](const auto &p) { return p.first == q; });
  if (it == s.end())
    it = s.emplace(s.end(), q, OutfeedStep{});
  return it->second;
}

void enqueueAll(std::vector<std::pair<OutfeedQueue *, OutfeedStep>> &s) {
  for (auto &[q, step] : s)
    if (!step.empty())
      q->enqueue(std::move(step));
}

} // namespace

void deliverOutfeeds(const std::vector<OutfeedTap> &taps,
                     std::vector<data::Element> &steps, std::size_t first,
                     unsigned replicas, session::Session &session) {
  if (taps.empty() || steps.empty())
    return;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::size_t step = i / std::max(replicas, 1u);
    std::vector<std::pair<OutfeedQueue *, OutfeedStep>> byQueue;
    std::size_t c = first;
    for (const OutfeedTap &t : taps) {
      if (!t.variable.empty())
        continue;
      data::HostTensor &value = steps[i][c++];
      if ((step + 1) % t.every != 0)
        continue;
      value.reshape(t.shape);
      stepOf(byQueue, t.queue.get()).emplace_back(t.key, std::move(value));
    }
    enqueueAll(byQueue);
  }
  std::vector<std::pair<OutfeedQueue *, OutfeedStep>> last;
  for (const OutfeedTap &t : taps)
    if (!t.variable.empty())
      stepOf(last, t.queue.get())
          .emplace_back(t.key, session.readVariable(t.variable));
  enqueueAll(last);
}

} // namespace tessera::nn::detail
