// What Model.cpp (building modules, summary, compile) and Training.cpp
// (fit, evaluate, predict) share: the compiled state and the forward pass.
#pragma once

#include "Inspection.hpp"

#include "tessera/nn/Model.hpp"

#include <map>
#include <memory>
#include <optional>

namespace tessera::nn {

enum class LossKind { SparseCategorical, Categorical, MeanSquared };

struct Model::Compiled {
  CompileOptions options;
  /// The loss of each output and its weight.
  std::vector<LossKind> losses;
  std::vector<double> lossWeights;
  bool accuracy = false;
  /// What the training and evaluation steps report, in order: "loss", then
  /// the metrics ("accuracy"; per output with several: "dense_loss",
  /// "dense_accuracy", ...).
  std::vector<std::string> logNames;
  /// The training session and the element spec it was built for.
  std::unique_ptr<session::Session> train;
  data::ElementSpec trainSpec;
  /// What it sends to outfeed queues (Inspection.hpp).
  std::vector<detail::OutfeedTap> outfeedTaps;
  /// Forward-only sessions by batch shape and loop length.
  std::map<std::string, std::unique_ptr<session::Session>> inference;
  /// Weights set by setWeights() before any training session existed.
  std::optional<session::Checkpoint> pending;
  std::uint64_t stepsTaken = 0;
};

struct Model::Forward {
  /// The model's inputs, in order.
  std::vector<ir::Value> xs;
  /// The model's outputs, channels-last.
  std::vector<ir::Value> outputs;
  /// The logits of each output's final softmax, when it has one.
  std::vector<std::optional<ir::Value>> logits;
  /// Per layer: logical output shape (batch included) and parameters.
  std::vector<Shape> shapes;
  std::vector<std::pair<std::size_t, std::size_t>> params;
  std::vector<std::pair<ir::Value, ir::Value>> updates;
};

namespace detail {
/// The module's name for input (\p kind 'x') or label ('y') \p i: "x",
/// "x1", "x2", ... so a model of one input and output feeds "x" and "y".
std::string feedName(char kind, std::size_t i);
/// The largest divisor of \p steps that is at most \p limit (at least 1).
std::size_t largestDivisorAtMost(std::size_t steps, std::size_t limit);
} // namespace detail

} // namespace tessera::nn
