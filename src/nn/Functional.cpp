// Functional models: layers applied to KerasTensors make a graph of nodes;
// Model(input, output) orders it so each layer follows its inputs. Also
// the layers of several inputs (Add, Concatenate).
#include "ModelInternal.hpp"
#include "NnInternal.hpp"

#include <algorithm>
#include <functional>
#include <map>

namespace tessera::nn {

using detail::describeLayer;
using detail::kerasShape;

const Layer &KerasTensor::layer() const { return *node_->layer; }

const std::vector<KerasTensor> &KerasTensor::inputs() const {
  return node_->inputs;
}

KerasTensor Layer::operator()(const KerasTensor &x) const {
  return (*this)(std::vector<KerasTensor>{x});
}

namespace {
// The stage of the PipelineStage scope open on this thread.
thread_local std::optional<unsigned> currentStage;
} // namespace

PipelineStage::PipelineStage(unsigned stage) : stage_(stage) {
  if (currentStage)
    throw OptionError("PipelineStage(" + std::to_string(stage) +
                      "): already inside PipelineStage(" +
                      std::to_string(*currentStage) +
                      "); close that scope first, stages do not nest");
  currentStage = stage;
}

PipelineStage::~PipelineStage() { currentStage.reset(); }

KerasTensor Layer::operator()(const std::vector<KerasTensor> &xs) const {
  auto node = std::make_shared<KerasTensor::Node>();
  node->layer = clone();
  node->inputs = xs;
  node->stage = currentStage;
  return KerasTensor(std::move(node));
}

Activations Layer::callMany(BuildContext &ctx,
                            const std::vector<Activations> &xs) const {
  if (xs.size() != 1)
    throw ShapeError(describeLayer(*this) +
                     ": takes one input but was "
                     "applied to " +
                     std::to_string(xs.size()));
  return call(ctx, xs[0]);
}

Input::operator KerasTensor() const {
  return (*this)(std::vector<KerasTensor>{});
}

// ---- Add, Concatenate -----------------------------------------------------

namespace {

void requireSeveral(const Layer &layer, const std::vector<Activations> &xs) {
  if (xs.size() < 2)
    throw ShapeError(describeLayer(layer) +
                     ": takes at least 2 inputs but "
                     "was applied to " +
                     std::to_string(xs.size()));
}

} // namespace

Activations Add::call(BuildContext &ctx, const Activations &x) const {
  return callMany(ctx, {x});
}

Activations Add::callMany(BuildContext &ctx,
                          const std::vector<Activations> &xs) const {
  requireSeveral(*this, xs);
  const Shape s = xs[0].logicalShape();
  Activations sum = xs[0];
  for (std::size_t i = 1; i < xs.size(); ++i) {
    if (xs[i].logicalShape() != s)
      throw ShapeError(describeLayer(*this) + ": input " + std::to_string(i) +
                       " has shape " + kerasShape(xs[i].logicalShape()) +
                       " but input 0 has " + kerasShape(s) +
                       "; added inputs must have one shape");
    const Activations next =
        sum.channelsFirst ? ctx.channelsFirst(xs[i]) : ctx.channelsLast(xs[i]);
    sum.value = sum.value + next.value;
  }
  return sum;
}

Activations Concatenate::call(BuildContext &ctx, const Activations &x) const {
  return callMany(ctx, {x});
}

Activations Concatenate::callMany(BuildContext &ctx,
                                  const std::vector<Activations> &xs) const {
  requireSeveral(*this, xs);
  std::vector<ir::Value> values;
  const Shape s = xs[0].logicalShape();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Shape si = xs[i].logicalShape();
    if (si.size() != s.size() ||
        !std::equal(s.begin(), s.end() - 1, si.begin()))
      throw ShapeError(describeLayer(*this) + ": input " + std::to_string(i) +
                       " has shape " + kerasShape(si) + " but input 0 has " +
                       kerasShape(s) +
                       "; inputs may differ only in the last axis");
    values.push_back(ctx.channelsLast(xs[i]).value);
  }
  return {ir::concat(values, unsigned(s.size() - 1)), false};
}

// ---- Model(input, output) -------------------------------------------------

Model::Model(const KerasTensor &input, const KerasTensor &output,
             std::string name, std::uint64_t seed)
    : Model(std::vector<KerasTensor>{input}, std::vector<KerasTensor>{output},
            std::move(name), seed) {}

Model::Model(const std::vector<KerasTensor> &inputs,
             const std::vector<KerasTensor> &outputs, std::string name,
             std::uint64_t seed)
    : Model(std::move(name), seed, true) {
  if (inputs.empty() || outputs.empty())
    throw ModelError("model \"" + name_ + "\": give at least one input and " +
                     "one output, got " + std::to_string(inputs.size()) +
                     " and " + std::to_string(outputs.size()));
  // The Inputs come first, in the order given (the order of the dataset's
  // components); then depth-first from each output: a node is appended
  // after its inputs, so the order is topological.
  std::map<const Layer *, std::size_t> index;
  for (const KerasTensor &in : inputs) {
    if (!dynamic_cast<const Input *>(&in.layer()))
      throw ModelError("model \"" + name_ + "\": input " +
                       std::to_string(inputs_.size()) + " is made by " +
                       describeLayer(in.layer()) +
                       "; pass the tensors of nn::Inputs");
    if (index.contains(&in.layer()))
      throw ModelError("model \"" + name_ + "\": input " +
                       std::to_string(inputs_.size()) +
                       " is given twice; list each Input once");
    inputs_.push_back(layers_.size());
    index[&in.layer()] = layers_.size();
    append(LayerRef(in.layer().clone()), {});
  }
  // Depth-first from each output: a node follows its inputs, so the order
  // is topological.
  std::vector<KerasTensor> order;
  std::map<const Layer *, bool> seen;
  std::function<void(const KerasTensor &)> visit = [&](const KerasTensor &t) {
    if (index.contains(&t.layer()) || seen[&t.layer()])
      return;
    if (dynamic_cast<const Input *>(&t.layer()))
      throw ModelError("model \"" + name_ + "\": an output depends on " +
                       describeLayer(t.layer()) +
                       ", an Input other than the model's; list it in its "
                       "inputs");
    for (const KerasTensor &in : t.inputs())
      visit(in);
    seen[&t.layer()] = true;
    order.push_back(t);
  };
  for (const KerasTensor &out : outputs)
    visit(out);
  const std::vector<unsigned> stages = stagesOf(order);
  for (const KerasTensor &t : order) {
    std::vector<std::size_t> ins;
    for (const KerasTensor &in : t.inputs())
      ins.push_back(index.at(&in.layer()));
    append(LayerRef(t.layer().clone()), std::move(ins));
    index[&t.layer()] = layers_.size() - 1;
  }
  for (const KerasTensor &out : outputs)
    outputs_.push_back(index.at(&out.layer()));
  if (!stages.empty())
    setPipelineStageAssignment(stages);
}

std::vector<unsigned> Model::stagesOf(std::vector<KerasTensor> &order) const {
  const auto staged = [](const KerasTensor &t) {
    return t.node_->stage.has_value();
  };
  if (std::none_of(order.begin(), order.end(), staged))
    return {};
  for (const KerasTensor &t : order) {
    if (!staged(t))
      throw ModelError("model \"" + name_ + "\": " + describeLayer(t.layer()) +
                       " was applied outside any PipelineStage while other "
                       "layers were applied in one; apply every layer in a "
                       "PipelineStage scope");
    for (const KerasTensor &in : t.inputs())
      if (staged(in) && *in.node_->stage > *t.node_->stage)
        throw ModelError(
            "model \"" + name_ + "\": " + describeLayer(t.layer()) +
            " on pipeline stage " + std::to_string(*t.node_->stage) +
            " takes the output of " + describeLayer(in.layer()) +
            " on the later stage " + std::to_string(*in.node_->stage) +
            "; a stage may only read its own or earlier stages");
  }
  // A stable sort by stage keeps the order topological: along every edge
  // the stage does not fall, and equal stages keep their order.
  std::stable_sort(order.begin(), order.end(),
                   [](const KerasTensor &a, const KerasTensor &b) {
                     return *a.node_->stage < *b.node_->stage;
                   });
  std::vector<unsigned> stages;
  for (const KerasTensor &t : order)
    stages.push_back(*t.node_->stage);
  return stages;
}

} // namespace tessera::nn
