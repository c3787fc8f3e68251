/// \file
/// Keras-shaped models trained on the IPU Model:
///
/// \code
///   nn::Sequential model({nn::Input({784}), nn::Dense(128, "relu"),
///                         nn::Dense(10, "softmax")});
///   model.summary(std::cout);
///   nn::CompileOptions c;                  // Adam, sparse cross-entropy
///   c.metrics = {"accuracy"};
///   c.stepsPerExecution = 125;
///   model.compile(c);
///   model.fit(train.batch(32, true));     // Epoch 1/1 ...
///   nn::Logs logs = model.evaluate(testSet.batch(100, true));
/// \endcode
///
/// fit() builds the training module (forward pass, loss, autodiff and the
/// optimizer, passes/Optimizer.hpp) for the dataset's batch shape, compiles
/// it with a session::Session (or takes it from the executable cache) and
/// runs stepsPerExecution steps per device run, fed by an Infeed and
/// reporting loss and metrics through an Outfeed. evaluate() and predict()
/// build forward-only modules, compiled once per batch shape, and copy the
/// current weights into them through a checkpoint.
#pragma once

#include "tessera/data/Dataset.hpp"
#include "tessera/nn/Layers.hpp"
#include "tessera/nn/Outfeed.hpp"
#include "tessera/passes/GradientAccumulation.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/session/Checkpoint.hpp"
#include "tessera/session/Progress.hpp"
#include "tessera/session/Session.hpp"

#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::nn {

/// A model used out of order: fit, evaluate or predict before compile, or
/// a model without an Input.
class ModelError : public Error {
public:
  using Error::Error;
};

/// Named values, in order: ("loss", 0.52), ("accuracy", 0.81).
using Logs = session::Metrics;
/// The value named \p name in \p logs; OptionError listing the names.
double logValue(const Logs &logs, const std::string &name);

/// Loss scaling (Keras' LossScaleOptimizer): the loss is multiplied by a
/// scale before the backward pass and the gradients divided by it, so
/// small half gradients do not flush to zero.
struct LossScaleOptions {
  /// Dynamic: start at initialScale, halve and skip the step when a
  /// gradient overflows, double after growthSteps finite steps
  /// (passes::DynamicLossScaling, all on the device). Static: initialScale
  /// is a fixed factor (1: no scaling).
  bool dynamic = true;
  double initialScale = 32768;
  unsigned growthSteps = 2000;
};

struct CompileOptions {
  passes::Optimizer optimizer = passes::Adam{};
  /// Unset: dynamic loss scaling with Keras' defaults when some layer
  /// computes in half (a "mixed_float16" or "float16" policy, Policy.hpp),
  /// as Keras' compile wraps the optimizer in a LossScaleOptimizer then;
  /// none otherwise. compile() throws OptionError for a scale that is not
  /// positive and finite or growthSteps 0.
  std::optional<LossScaleOptions> lossScale;
  /// The partials (accumulation) type, FLOAT or HALF, of the matmuls and
  /// convolutions of the layers that compute in half and set none of
  /// their own (Layer::setPartialsType); unset: float. compile() throws
  /// TypeError for another type.
  std::optional<Type> partialsType;
  /// "sparse_categorical_crossentropy" (integer labels [N] or [N, 1]),
  /// "categorical_crossentropy" (one-hot targets [N, classes]) or
  /// "mean_squared_error" ("mse").
  std::string loss = "sparse_categorical_crossentropy";
  /// One loss per output of a model with several (Keras' list of losses);
  /// empty: \ref loss for every output.
  std::vector<std::string> losses;
  /// The weight of each output's loss in the loss trained on (Keras'
  /// loss_weights); empty: 1 for each.
  std::vector<double> lossWeights;
  /// The model's outputs are logits, not probabilities. (With a final
  /// softmax the loss uses the logits before it either way.)
  bool fromLogits = false;
  /// "accuracy" (for the cross-entropy losses; with several outputs, for
  /// each output trained with one).
  std::vector<std::string> metrics;
  /// Training steps per device run (TensorFlow-for-IPU's
  /// steps_per_execution); an epoch's steps must be a multiple of it.
  unsigned stepsPerExecution = 1;
  /// The IPU system (IPUConfig).
  session::Config config;
  /// With config.syntheticData (TF_POPLAR_FLAGS' --use_synthetic_data),
  /// fit() trains on inputs and labels made once on the device instead of
  /// the dataset's (which still gives their shapes), filled by
  /// --synthetic_data_initializer's rule: "" (zeros), "random" or
  /// "uniform" (float inputs uniform in [0, 1)), "normal" (float inputs
  /// standard normal) or a number (that constant). Integer labels of a
  /// sparse loss are class ids (uniform over the classes for the random
  /// rules, the number's class clamped to them); integer inputs are 0 or 1
  /// for the random rules. Nothing comes back from the device: the logs
  /// are NaN and outfeed layers get nothing. evaluate() and predict() still
  /// read their data. compile() throws OptionError for another rule.
  std::string syntheticDataInitializer;
  /// Where compile bars go (null: nowhere).
  std::ostream *compileProgress = nullptr;
  /// The optimizer's gradients sent to a queue during fit() (the
  /// tensor-inspection tutorial's OutfeedOptimizer), nn/Outfeed.hpp.
  GradientOutfeed gradientOutfeed;
};

/// How a model with a pipeline stage assignment trains (TensorFlow for the
/// IPU's Keras set_pipelining_options): the stages' layers run on their
/// IPUs, the N micro-batches of each weight update flowing through them
/// (session/Pipeline.hpp).
struct PipeliningOptions {
  /// N (gradient_accumulation_steps_per_replica): micro-batches (fit()
  /// steps) per weight update; at least the number of stages for the
  /// Grouped and Interleaved schedules, and stepsPerExecution must be a
  /// multiple of it.
  passes::GradientAccumulationOptions accumulation{.count = 1};
  session::PipelineSchedule schedule = session::PipelineSchedule::Grouped;
  /// The IPU of each stage (empty: stage i on IPU i); the model must be
  /// compiled for at least the largest IPU named + 1 (autoSelectIpus).
  std::vector<unsigned> deviceMapping;
  /// Recompute every stage's activations but the last's in the backward
  /// pass instead of keeping them (passes/Recompute.hpp).
  bool recompute = false;
};

/// Hooks into fit(). Logs hold the running means of the epoch so far.
class Callback {
public:
  virtual ~Callback() = default;
  virtual void onEpochBegin(unsigned /*epoch*/) {}
  /// After each device run: \p step steps of the epoch done.
  virtual void onRunEnd(std::size_t /*step*/, const Logs & /*logs*/) {}
  virtual void onEpochEnd(unsigned /*epoch*/, const Logs & /*logs*/) {}
  /// Set to stop fit() after the current epoch (EarlyStopping does).
  bool stopTraining = false;
};

/// A callback from functions.
struct LambdaCallback : Callback {
  std::function<void(unsigned, const Logs &)> epochEnd;
  std::function<void(std::size_t, const Logs &)> runEnd;
  void onEpochEnd(unsigned e, const Logs &l) override {
    if (epochEnd)
      epochEnd(e, l);
  }
  void onRunEnd(std::size_t s, const Logs &l) override {
    if (runEnd)
      runEnd(s, l);
  }
};

/// How much fit() and evaluate() print: nothing, a progress bar redrawn
/// with '\r' (Keras' verbose=1) or one line per epoch (verbose=2).
enum class Verbosity { Silent, ProgressBar, LinePerEpoch };

struct FitOptions {
  /// The epoch to end before (Keras' epochs): fit() runs epochs
  /// initialEpoch .. epochs - 1 and numbers them so ("Epoch 3/5").
  unsigned epochs = 1;
  /// The first epoch's index (Keras' initial_epoch), to resume a fit; an
  /// OptionError when it is not below epochs.
  unsigned initialEpoch = 0;
  /// Steps per epoch; default: the dataset's cardinality (it must then be
  /// finite) divided by the replicas this process runs, as each step takes
  /// one element per replica.
  std::optional<std::size_t> stepsPerEpoch;
  /// As Keras' default (verbose=1): a bar redrawn on standard output.
  Verbosity verbose = Verbosity::ProgressBar;
  std::ostream *out = &std::cout;
  std::vector<std::shared_ptr<Callback>> callbacks;
  /// Evaluated after each epoch (Keras' validation_data): its loss and
  /// metrics join the epoch's logs as "val_loss", "val_accuracy", ..., on
  /// the progress line, in the History and in what callbacks get.
  std::optional<data::Dataset> validationData;
};

/// Per-epoch logs of a fit.
struct History {
  std::vector<Logs> epochs;
};

struct EvaluateOptions {
  Verbosity verbose = Verbosity::Silent;
  std::ostream *out = nullptr;
};

/// Facts about the latest fit, for reports and benchmarks.
struct FitStats {
  bool cacheHit = false;
  double compileSeconds = 0;
  /// Host wall time of the device runs, per step.
  double hostSecondsPerStep = 0;
  /// The executable's estimate of one run (stepsPerExecution steps), and
  /// the same by kind of step (compute, exchange, sync, host streams,
  /// control).
  std::uint64_t estimatedCyclesPerRun = 0;
  CycleBreakdown estimatedCyclesByKind;
  /// The host side of one run, which the device estimate above leaves
  /// out: its round trip, stream set-ups and callbacks (HostCost.hpp).
  HostCycles estimatedHostCyclesPerRun;
  /// estimatedCyclesPerRun plus estimatedHostCyclesPerRun.total().
  std::uint64_t estimatedHostInclusiveCyclesPerRun = 0;
  /// The training program's tile memory.
  MemorySummary memory;
  /// The same per IPU (of the first replica): its fullest tile, by
  /// TileMemory::total(), and the bytes always live on its tiles.
  struct IpuMemory {
    std::size_t peakTile = 0;
    std::uint64_t peakTileBytes = 0;
    std::uint64_t alwaysLiveBytes = 0;
  };
  std::vector<IpuMemory> memoryPerIpu;
  double clockHz = 0;
  unsigned stepsPerExecution = 1;
  std::size_t batchSize = 0;
  std::size_t steps = 0;
  /// Estimated IPU seconds per step: device time only.
  double ipuSecondsPerStep() const;
  /// Estimated seconds per step with the host side of the runs: at
  /// stepsPerExecution = 1 every step pays a run's round trip.
  double hostInclusiveSecondsPerStep() const;
};

/// A model: layers in an order where each comes after its inputs, the
/// first an Input, the last the output. Build one as a Sequential or from
/// KerasTensors (Layers.hpp).
class Model {
public:
  /// The functional model computing \p output from \p input (the tensor
  /// of an nn::Input). Throws ModelError when \p output depends on another
  /// Input. Each application of a layer is its own copy with its own
  /// weights (weight sharing is not supported). \p seed seeds every
  /// default initialiser and dropout. Layers applied in PipelineStage
  /// scopes (Layers.hpp) give the model its stage assignment.
  Model(const KerasTensor &input, const KerasTensor &output,
        std::string name = "model", std::uint64_t seed = 1);
  /// A functional model of several inputs and outputs. Its dataset
  /// elements are (x0, ..., xN-1, y0, ..., yM-1): the inputs in \p inputs'
  /// order, then one label per output. With several outputs the logs hold
  /// "loss" (the weighted sum), then "<output layer>_loss" and
  /// "<output layer>_accuracy" for each, as Keras names them. Models of
  /// several inputs cannot be pipelined.
  Model(const std::vector<KerasTensor> &inputs,
        const std::vector<KerasTensor> &outputs, std::string name = "model",
        std::uint64_t seed = 1);
  virtual ~Model();
  Model(Model &&) noexcept;
  Model &operator=(Model &&) noexcept;

  const std::vector<LayerRef> &layers() const { return layers_; }
  const std::string &name() const { return name_; }

  /// Keras' table of layers, output shapes and parameter counts. Throws
  /// ShapeError / TypeError for layers that do not fit together.
  std::string summary() const;
  void summary(std::ostream &out) const;
  /// (trainable, non-trainable) parameter counts.
  std::pair<std::size_t, std::size_t> countParams() const;
  /// The output shape of one example (no batch dimension); of the first
  /// output of a model with several.
  Shape outputShape() const;
  /// The shape of one example of each output.
  std::vector<Shape> outputShapes() const;
  /// The model's Inputs, in the order its elements give them.
  std::vector<const Input *> inputLayers() const;
  /// The names of the layers making the outputs.
  std::vector<std::string> outputNames() const;

  /// Sets the loss, optimizer, metrics and device loop. Throws OptionError
  /// for an unknown loss or metric and ShapeError when the model does not
  /// fit together.
  void compile(CompileOptions options);

  /// Trains on \p dataset, elements (x [batch, input shape...], y). Throws
  /// ModelError before compile, ShapeError / TypeError for elements the
  /// model cannot take (a sparse label that is no class id: below 0 or at
  /// least the number of outputs), OptionError when an epoch is not a
  /// whole number of device runs. With autoReport engine options, writes
  /// the profile after the last run, and throws Error when it cannot.
  History fit(const data::Dataset &dataset, const FitOptions &options = {});
  /// Keras' fit(x, y, batch_size): trains on examples \p x [n, ...] with
  /// labels \p y [n, ...], reshuffled each epoch (seeded by the model's
  /// seed), in batches of \p batchSize; the last n % batchSize examples of
  /// each shuffle are left out, as the IPU needs one batch shape. Without
  /// \p shuffle the examples go in their order. \p x and \p y are moved
  /// into the dataset, not copied, when the caller moves them in.
  History fit(data::HostTensor x, data::HostTensor y, std::size_t batchSize,
              const FitOptions &options = {}, bool shuffle = true);
  /// As above for a model of several inputs or outputs: one tensor per
  /// input in \p xs and one per output in \p ys, each [n, ...].
  History fit(std::vector<data::HostTensor> xs,
              std::vector<data::HostTensor> ys, std::size_t batchSize,
              const FitOptions &options = {}, bool shuffle = true);
  /// Compiles (or loads from the executable cache) the training step for
  /// elements of \p spec, so that a later fit() on such a dataset starts at
  /// once; a program can load its data meanwhile. Errors as fit().
  void prepareTraining(const data::ElementSpec &spec);
  /// The loss and metrics over every element of \p dataset (batched, with
  /// dropRemainder so every batch has the same shape), with the current
  /// weights. Errors as fit(); evaluate and predict need compile() too (for
  /// the IPU config), as on TensorFlow-for-IPU.
  Logs evaluate(const data::Dataset &dataset,
                const EvaluateOptions &options = {});
  /// The model's outputs for \p x [n, input shape...], in batches of
  /// \p batchSize (the last one padded): [n, output shape...].
  data::HostTensor predict(const data::HostTensor &x,
                           std::size_t batchSize = 32);
  /// As above for a model of several inputs or outputs: one tensor per
  /// input in \p xs, one result per output.
  std::vector<data::HostTensor> predict(const std::vector<data::HostTensor> &xs,
                                        std::size_t batchSize = 32);

  /// The weights (and optimizer state) as they are now.
  session::Checkpoint getWeights();
  /// The weights and optimizer state of one training replica (of those
  /// config.replicationFactor makes), as the device holds them now.
  /// ModelError before the model has trained.
  session::Checkpoint getReplicaWeights(unsigned replica);
  /// Replaces the weights; SerializationError when \p ckpt is of another
  /// model.
  void setWeights(const session::Checkpoint &ckpt);

  /// The optimizer's learning rate (Keras' model.optimizer.learning_rate):
  /// compile()'s, or the last setLearningRate(). ModelError before
  /// compile().
  double learningRate() const;
  /// Trains the steps that follow with learning rate \p lr, between fit()
  /// calls or from a callback during one, without recompiling: the
  /// training session's learning-rate variable is written from the host
  /// (Session::setHyperParameter). Throws OptionError for a rate that is
  /// not positive and finite, ModelError before compile(). Checkpoints
  /// (getWeights) leave the rate out, so setWeights and recompiling keep
  /// the model's own, as Keras' set_weights leaves the optimizer alone.
  void setLearningRate(double lr);

  /// The loss scale the next training step runs with: the dynamic scale
  /// as the device holds it now (its initial value before training), the
  /// static factor, or 1 without loss scaling. ModelError before
  /// compile(). Checkpoints (getWeights) carry the dynamic scale and its
  /// count of finite steps with the optimizer state, as Keras' do, so a
  /// restored model trains on with the scale it had learnt.
  double lossScale();

  /// The names of the model's weights ("dense/kernel", "dense/bias",
  /// "batch_normalization/moving_mean", ...) in layer order: what Keras'
  /// get_weights() lists, without optimizer state or dropout seeds.
  std::vector<std::string> weightNames() const;

  const FitStats &lastFitStats() const { return stats_; }

  /// TensorFlow for the IPU's Keras set_pipeline_stage_assignment: the
  /// pipeline stage of each layer after the Input, in layer order,
  /// starting at 0 and rising by at most 1 from one layer to the next (the
  /// loss joins the last stage). fit() then needs setPipeliningOptions.
  /// Throws OptionError for the wrong number of stages or a decreasing or
  /// skipping assignment; an empty list removes the assignment.
  void setPipelineStageAssignment(std::vector<unsigned> stages);
  /// The stage of each layer after the Input (empty: none assigned).
  const std::vector<unsigned> &pipelineStageAssignment() const {
    return stages_;
  }
  /// How the staged model trains; unset: fit() throws ModelError for a
  /// model with a stage assignment.
  void setPipeliningOptions(PipeliningOptions options);
  /// Gradient accumulation for a model without pipeline stages (Keras'
  /// set_gradient_accumulation_options): the optimizer runs once per
  /// accumulation.count steps, on their mean (or sum) gradient;
  /// stepsPerExecution must be a multiple of the count.
  void setGradientAccumulationOptions(passes::GradientAccumulationOptions o);

  /// The training module fit() would run for batches of \p batchSize, for
  /// inspection and tests.
  ir::Module trainingModule(std::size_t batchSize,
                            const data::ComponentSpec &labels) const;

protected:
  Model(std::string name, std::uint64_t seed, bool listInput);
  /// Names \p layer (Keras' names when it has none) and appends it, fed by
  /// the layers at \p inputs. Throws ModelError after compile, for an
  /// Input that is not first and for a name already taken.
  void append(LayerRef layer, std::vector<std::size_t> inputs);

  std::vector<LayerRef> layers_;
  std::vector<std::vector<std::size_t>> inputsOf_;
  /// The indices in layers_ of the model's inputs and outputs; empty: the
  /// first layer and the last (a Sequential).
  std::vector<std::size_t> inputs_, outputs_;

private:
  struct Compiled;
  struct Forward;
  /// The PipelineStage of each node of \p order (a topological order of a
  /// functional model's layers), sorting \p order by stage; empty when no
  /// layer was applied in a PipelineStage. ModelError for a layer outside
  /// any scope among staged ones, or one reading a later stage.
  std::vector<unsigned> stagesOf(std::vector<KerasTensor> &order) const;
  /// With \p synthetic (a syntheticDataInitializer rule), the input "x" is
  /// a device-made value, not a fed input.
  /// With \p staged, each layer's ops are built in its pipeline stage's
  /// scope (the last stage's scope stays open past the last layer).
  Forward buildForward(ir::Module &m, BuildMode mode, std::size_t batch,
                       const std::string *synthetic = nullptr,
                       bool staged = false) const;
  const Input &input() const;
  /// The partials type \p layer's matmuls and convolutions get: its own,
  /// else the model's for a half-computing layer. TypeError for half
  /// partials on a float layer.
  std::optional<Type> partialsOf(const Layer &layer) const;
  /// OptionError / TypeError for compile()'s precision settings.
  void checkPrecision(const CompileOptions &options) const;
  /// The loss scaling \p options give this model (dynamic by default when
  /// a layer computes in half), set on the training passes' options.
  std::optional<LossScaleOptions>
  lossScaleOf(const CompileOptions &options) const;
  void setLossScaling(passes::TrainingOptions &t,
                      const CompileOptions &options) const;
  std::vector<std::size_t> inputIndices() const;
  std::vector<std::size_t> outputIndices() const;
  /// The training module for elements of \p spec (inputs, then labels).
  ir::Module trainingModule(const data::ElementSpec &spec) const;
  ir::Module evaluationModule(const data::ElementSpec &spec) const;
  ir::Module predictionModule(std::size_t batchSize) const;
  void checkElements(const data::ElementSpec &spec, bool needLabels,
                     const char *what) const;
  void checkInput(const data::ElementSpec &spec, std::size_t k, const Input &in,
                  const char *what) const;
  void checkPredictInput(const data::HostTensor &x, const Input &in,
                         std::size_t k) const;
  /// The module's feeds for an element: the inputs, then (with \p labels)
  /// the labels.
  std::vector<std::string> elementFeeds(bool labels = true) const;
  std::vector<data::HostTensor>
  predictPointers(const std::vector<const data::HostTensor *> &xs,
                  std::size_t batchSize);
  /// The prediction module's outputs, one per model output.
  std::vector<std::string> predictionOutputs() const;
  /// The components of sparse labels, each with its output's classes.
  std::vector<std::pair<std::size_t, std::size_t>> sparseLabels() const;
  /// Each output's loss, weight and the names of the logs; OptionError for
  /// lists of the wrong length, unknown losses and metrics.
  void compileLosses(Compiled &c, const CompileOptions &options) const;
  Compiled &compiled(const char *what);
  session::Session &trainingSession(const data::ElementSpec &spec);
  session::Session &inferenceSession(const std::string &key, ir::Module module,
                                     std::vector<std::string> feeds,
                                     std::vector<std::string> outfeeds,
                                     unsigned steps);
  void loadCurrentWeights(session::Session &s);
  /// Forgets the training session (keeping its weights) after an option
  /// that changes the training module.
  void dropTrainingSession();
  /// The accumulation fit() trains with (pipelined or not) and the number
  /// of stages (0 when not pipelined); ModelError / OptionError for options
  /// that do not go together.
  std::pair<passes::GradientAccumulationOptions, unsigned>
  trainingLayout(const CompileOptions &options) const;

  std::string name_;
  std::uint64_t seed_;
  /// summary() lists the Input (functional models, as Keras does).
  bool listInput_;
  std::vector<unsigned> stages_;
  std::optional<PipeliningOptions> pipelining_;
  passes::GradientAccumulationOptions accumulation_;
  std::unique_ptr<Compiled> compiled_;
  FitStats stats_;
  /// fit() is running: recompiling would pull its session away.
  bool fitting_ = false;
};

/// Keras' LearningRateScheduler: at the start of each epoch, sets
/// \p model's learning rate to schedule(epoch, current rate).
class LearningRateScheduler : public Callback {
public:
  LearningRateScheduler(Model &model,
                        std::function<double(unsigned, double)> schedule)
      : model_(model), schedule_(std::move(schedule)) {}
  void onEpochBegin(unsigned epoch) override;

private:
  Model &model_;
  std::function<double(unsigned, double)> schedule_;
};

/// Keras' ReduceLROnPlateau: when the log \p monitor (a loss: lower is
/// better) has not improved by more than \p minDelta for \p patience
/// epochs, multiplies \p model's learning rate by \p factor (not below
/// \p minLr). OptionError for a factor outside (0, 1).
class ReduceLROnPlateau : public Callback {
public:
  ReduceLROnPlateau(Model &model, std::string monitor = "loss",
                    double factor = 0.1, unsigned patience = 10,
                    double minDelta = 1e-4, double minLr = 0);
  void onEpochEnd(unsigned epoch, const Logs &logs) override;

private:
  Model &model_;
  std::string monitor_;
  double factor_, minDelta_, minLr_;
  unsigned patience_, wait_ = 0;
  double best_;
};

/// A stack of layers, each taking the previous one's output.
class Sequential : public Model {
public:
  /// \p layers starts with an Input; names default to Keras' ("dense",
  /// "dense_1", ...). \p seed seeds every default initialiser and dropout.
  explicit Sequential(std::vector<LayerRef> layers = {},
                      std::string name = "sequential", std::uint64_t seed = 1);
  /// Appends a layer (an Input only first). Throws ModelError after
  /// compile or for a name already taken.
  void add(LayerRef layer);
};

} // namespace tessera::nn
