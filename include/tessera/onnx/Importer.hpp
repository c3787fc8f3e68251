/// \file
/// ONNX import: an ONNX model (a serialised ModelProto, as PyTorch's
/// torch.onnx.export or PopART's Builder write it) becomes an IR module, as
/// PopART's importer does:
///
///     onnx::ImportedModel im = onnx::importModelFile("resnet18.onnx");
///     session::Session s(std::move(im.module), config,
///                        {.feeds = im.inputs, .outfeeds = im.outputs});
///
/// Graph inputs that are not initializers become module inputs (fed by the
/// host: streams); float initializers become variables holding their
/// values, trainable except batch normalisation's running statistics; other
/// initializers, Constant nodes and whatever is computed from them and from
/// static shapes (Shape, Gather, Concat, ...) are folded at import, so shape
/// arithmetic never reaches the device.
///
/// The file is not trusted: protobuf parses it (SerializationError when it
/// is not ONNX or is truncated), and every tensor's dimensions and data
/// size are checked against each other and against
/// ImportOptions::maxElements before anything is allocated, as is every
/// node's result (attributes such as pads size them). Nodes with PopART's
/// "__ipu_number" attribute get IR shard annotations; with
/// ImportOptions::pipelining, "__pipeline_stage" becomes the IR stage
/// annotation instead (ImportedModel::stageIpus). An operator
/// without a converter is an UnsupportedError naming the node, its op
/// type and the opset, with the list supportedOperators() gives.
#pragma once

#include "tessera/ir/Module.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::onnx {

struct ImportOptions {
  /// Sizes for symbolic dimensions (an exported dynamic batch axis, say)
  /// by their dim_param name; a symbolic dimension not named here is a
  /// ShapeError.
  std::map<std::string, std::size_t, std::less<>> dimensions;
  /// The largest element count one tensor of the file may have.
  std::size_t maxElements = std::size_t{1} << 28;
  /// Whether float initializers become trainable variables.
  bool trainableInitializers = true;
  /// Float initializers that become non-trainable variables (PyTorch's
  /// parameters with requires_grad=False); a name that is no float
  /// initializer is an OptionError.
  std::set<std::string, std::less<>> frozen;
  /// Import training-mode operators as training runs them (a
  /// TrainingSession does): a BatchNormalization in training mode
  /// (training_mode=1 from opset 14, its running-statistics outputs
  /// before) normalises with the batch's mean and biased variance and
  /// updates its running mean and variance initializers each step, with
  /// its momentum attribute and, as PyTorch (which writes these nodes),
  /// the unbiased batch variance (n / (n - 1)); a Dropout in training
  /// mode (training_mode true from opset 12, always before and for a node
  /// with a ratio attribute, as PopART's builders write) zeroes each
  /// element with probability ratio and scales the rest by 1 / (1 -
  /// ratio). Unset: both are their inference forms (running statistics;
  /// the identity), whatever mode the file says.
  bool training = false;
  /// Seeds the dropout masks (ImportedModel::stateUpdates advances them
  /// each step).
  std::uint64_t seed = 0;
  /// PopART's enablePipelining: a node's "__pipeline_stage" attribute
  /// becomes its IR pipeline stage (ir::StageScope) and its
  /// "__ipu_number" the stage's IPU (ImportedModel::stageIpus); when no
  /// node has a stage, each node's IPU is its stage, as PopART derives
  /// stages from virtual graphs. A stage whose nodes name two IPUs, or
  /// a stage that has no node while a later one has, is an OptionError.
  /// Unset: stage attributes are ignored and "__ipu_number" shards.
  bool pipelining = false;
  /// The module's name (empty: the ONNX graph's name).
  std::string moduleName;
};

/// An imported model: the module, and its inputs and outputs by name in
/// the graph's order (the ONNX names, which the module keeps).
struct ImportedModel {
  ir::Module module;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  /// The default domain's opset the model was written for.
  std::int64_t opset = 0;
  /// The module value of every ONNX tensor computed on the device (those
  /// folded at import have none), by ONNX name.
  std::map<std::string, ir::ValueId, std::less<>> tensors;
  /// With ImportOptions::training: (variable, its value after a step) of
  /// the state training-mode operators keep (running statistics, the
  /// dropout seed "tessera/dropout_seed"). They are not recorded on the
  /// module: the caller records them (ir::Builder::update) once its
  /// training step is built, after gradient accumulation, so they move on
  /// every micro-batch as in PyTorch.
  std::vector<std::pair<ir::ValueId, ir::ValueId>> stateUpdates;
  /// With ImportOptions::pipelining: the IPU of each pipeline stage
  /// (session::PipelineConfig::deviceMapping), from the staged nodes'
  /// "__ipu_number"; empty when the model has no stages or its staged
  /// nodes name no IPU (stage s then runs on IPU s).
  std::vector<unsigned> stageIpus;
  /// With ImportOptions::pipelining: the number of pipeline stages (0:
  /// the model has none).
  unsigned stages = 0;
};

/// Imports a serialised ModelProto held in \p bytes; \p source names it in
/// messages.
ImportedModel importModel(std::string_view bytes,
                          const ImportOptions &options = {},
                          const std::string &source = "the ONNX model");
/// Reads and imports the ONNX file at \p path (SerializationError when it
/// cannot be read).
ImportedModel importModelFile(const std::string &path,
                              const ImportOptions &options = {});

/// The ONNX operator types (default domain) the importer converts, sorted.
std::vector<std::string> supportedOperators();
/// The default-domain opsets the importer accepts: [first, last].
inline constexpr std::int64_t minOpset = 9;
inline constexpr std::int64_t maxOpset = 18;

} // namespace tessera::onnx
