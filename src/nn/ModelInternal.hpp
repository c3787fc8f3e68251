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
  LossKind loss = LossKind::SparseCategorical;
  bool accuracy = false;
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
  ir::Value x;
  /// The model's output, channels-last.
  ir::Value output;
  /// The logits of a final softmax, when there is one.
  std::optional<ir::Value> logits;
  /// Per layer: logical output shape (batch included) and parameters.
  std::vector<Shape> shapes;
  std::vector<std::pair<std::size_t, std::size_t>> params;
  std::vector<std::pair<ir::Value, ir::Value>> updates;
};

namespace detail {
/// The largest divisor of \p steps that is at most \p limit (at least 1).
std::size_t largestDivisorAtMost(std::size_t steps, std::size_t limit);
} // namespace detail

} // namespace tessera::nn
