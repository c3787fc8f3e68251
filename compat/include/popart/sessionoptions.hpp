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
  /// Accepted; pipelining ONNX models is not implemented yet (an error
  /// when set).
  bool enablePipelining = false;
  /// Cache compiled executables in cachePath.
  bool enableEngineCaching = false;
  std::string cachePath = "session_cache";
};

} // namespace popart
