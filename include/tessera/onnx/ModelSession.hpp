/// \file
/// Running an ONNX model on the IPU Model in inference or training, with
/// PopART's data flow: each run() takes batchesPerStep batches (times the
/// gradient accumulation factor and the replication factor) of every input
/// and returns the anchored tensors as their AnchorMode asks.
///
///     onnx::ModelSession s(bytes, {.batchesPerStep = 10,
///                                  .anchors = {{"loss", {AnchorMode::ALL}}}},
///                          {.training = onnx::TrainingSpec{"loss",
///                                                          passes::SGD{}}});
///     s.prepareDevice();
///     auto anchors = s.run({{"x", xs}, {"labels", ys}});
///     s.modelToHost("trained.onnx");
///
/// Inputs and anchors are laid out as PopART lays them out: [batchesPerStep,
/// accumulationFactor, replicationFactor, ...tensor shape], leaving out the
/// first three dimensions where they are 1. Training differentiates the
/// named loss (a scalar) with respect to every float initializer and
/// applies the optimizer each step (passes/Optimizer.hpp), accumulating
/// gradients over accumulationFactor batches first when it is above 1.
/// A training session imports with ImportOptions::training: dropout and
/// batch normalisation nodes in training mode (as PyTorch exports a model
/// in train() mode) drop and use the batch's statistics, and the running
/// statistics are updated every batch; an inference session runs them in
/// their inference forms.
///
/// With ModelSessionOptions::pipelining (PopART's enablePipelining), a
/// training session imports the nodes' "__pipeline_stage" attributes as
/// pipeline stages (ImportOptions::pipelining) and trains pipelined
/// (session/Pipeline.hpp): each stage on the IPU its nodes'
/// "__ipu_number" names, the accumulationFactor batches of each weight
/// update flowing through the stages. An inference session ignores the
/// stages and runs the nodes on their IPUs one after the other (sharded),
/// which gives the same results.
#pragma once

#include "tessera/data/HostTensor.hpp"
#include "tessera/onnx/Importer.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/session/Session.hpp"

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace tessera::onnx {

/// What run() returns of an anchored tensor (PopART's AnchorReturnType).
enum class AnchorMode {
  ALL,     ///< every batch's value: [batchesPerStep, ...]
  FINAL,   ///< the last batch's value
  EVERY_N, ///< the value of every period-th batch: [batchesPerStep / N, ...]
  SUM      ///< the sum over the batches
};

struct Anchor {
  AnchorMode mode = AnchorMode::ALL;
  /// N of EVERY_N; must divide batchesPerStep.
  unsigned period = 1;
};

struct DataFlow {
  unsigned batchesPerStep = 1;
  /// The tensors run() returns, by ONNX name.
  std::map<std::string, Anchor> anchors;
};

struct TrainingSpec {
  /// The scalar tensor to minimise.
  std::string loss;
  passes::Optimizer optimizer = passes::SGD{};
  /// Batches whose gradients are averaged before each optimizer step.
  unsigned accumulationFactor = 1;
};

struct ModelSessionOptions {
  /// The IPU Model, replication factor, executable cache and so on.
  session::Config config;
  /// Set: a training session.
  std::optional<TrainingSpec> training;
  /// PopART's enablePipelining (the file comment says what it does). A
  /// training session of a model with S > 1 stages needs
  /// accumulationFactor >= S, as PopART requires (OptionError otherwise);
  /// config.pipeline.deviceMapping is set from the model.
  bool pipelining = false;
  ImportOptions import;
};

class ModelSession {
public:
  /// Imports \p modelProto (a serialised ModelProto) and checks the data
  /// flow: OptionError for an anchor that names no tensor, an EVERY_N
  /// period that does not divide batchesPerStep, a SUM of a non-float
  /// tensor, or a loss that is not a scalar float.
  ModelSession(const std::string &modelProto, DataFlow dataFlow,
               ModelSessionOptions options = {});
  ~ModelSession();

  /// Compiles (or takes from the executable cache) and loads the model.
  void prepareDevice(std::ostream *progress = nullptr);
  /// Copies the host's weights (the model's initializers, or what
  /// writeWeights set) to the device.
  void weightsFromHost();
  /// One step: the inputs by name, each [batchesPerStep, accumulation,
  /// replicas, ...] as the file comment says; returns the anchors by name.
  /// StreamError for a missing input or one of the wrong type or size.
  std::map<std::string, data::HostTensor>
  run(const std::map<std::string, data::HostTensor> &inputs);
  /// Sets host weights by initializer name (weightsFromHost copies them).
  void writeWeights(const std::map<std::string, data::HostTensor> &weights);
  /// The device's weights by initializer name.
  std::map<std::string, data::HostTensor> readWeights();
  /// Every variable on the device by name: the weights and what else
  /// training keeps (optimizer state, the accumulators, running
  /// statistics, the dropout seed), but for the learning rate and
  /// momentum, which updateOptimizer sets.
  std::map<std::string, data::HostTensor> readState();
  /// Sets the device's variables that \p state holds with the same type
  /// and shape (readState of another session of the model, say one with
  /// other optimizer hyper-parameters), leaving the others; returns how
  /// many it set.
  std::size_t writeState(const std::map<std::string, data::HostTensor> &state);
  /// PopART's updateOptimizerFromHost: trains the runs that follow with
  /// \p optimizer's learning rate (and momentum), written to the device
  /// without recompiling. OptionError for an inference session, or an
  /// optimizer that differs in a setting compiled in (another kind,
  /// betas, weight decay, ...: passes::sameProgram), naming it; before
  /// prepareDevice() too.
  void updateOptimizer(const passes::Optimizer &optimizer);
  /// Restarts the dropout masks from \p seed (as ImportOptions::seed);
  /// nothing for a model without training-mode dropout.
  void setRandomSeed(std::uint64_t seed);
  /// Writes the model with the device's current weights as an ONNX file.
  void modelToHost(const std::string &path);
  /// The serialised model with the device's current weights.
  std::string modelWithWeights();

  /// The graph's inputs, in order, with their per-batch types.
  const std::vector<std::string> &inputs() const;
  ir::ValueType inputType(const std::string &name) const;
  /// The shape run() gives anchor \p name.
  ir::Shape anchorShape(const std::string &name) const;
  const ir::Module &module() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tessera::onnx
