/// \file
/// PopART's SessionOptions: the fields Tessera acts on.
#pragma once

#include <string>

namespace popart {

enum class VirtualGraphMode { Off, Manual, Auto };

struct SessionOptions {
  /// Average the gradients of accumulationFactor batches per weight update.
  bool enableGradientAccumulation = false;
  int accumulationFactor = 1;
  /// Run replicatedGraphCount copies of the model, each on its own batches.
  bool enableReplicatedGraphs = false;
  int replicatedGraphCount = 1;
  /// Manual: nodes run on the IPU their virtualGraph attribute names.
  VirtualGraphMode virtualGraphMode = VirtualGraphMode::Off;
  /// Training runs the nodes' pipelineStage attributes as pipeline
  /// stages, each on the IPU its nodes' virtualGraph names (one IPU per
  /// stage), the accumulationFactor batches of each weight update flowing
  /// through them; needs enableGradientAccumulation with accumulationFactor
  /// at least the number of stages. Inference runs the nodes sharded.
  /// Unset: pipelineStage attributes are ignored.
  bool enablePipelining = false;
  /// Cache compiled executables in cachePath.
  bool enableEngineCaching = false;
  std::string cachePath = "session_cache";
};

} // namespace popart
