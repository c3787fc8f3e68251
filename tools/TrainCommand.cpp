// `tessera train`: the project's main job. Trains a Keras-style MLP or CNN
// on Fashion-MNIST (Debian's dataset-fashion-mnist), or Keras' ResNet-50 on
// synthetic images, on the IPU Model with nn, then reports test accuracy, host
// time per step and the IPU time the cost model estimates.
#include "Commands.hpp"
#include "TextTable.hpp"
#include "TrainModels.hpp"

#include "tessera/data/Dataset.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/dist/Instances.hpp"
#include "tessera/nn/Model.hpp"
#include "tessera/nn/Policy.hpp"
#include "tessera/session/Progress.hpp"
#include "tessera/support/Error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <ostream>
#include <random>

#include <unistd.h>

namespace tessera::tools {
namespace {

struct TrainOptions {
  std::string model = "mlp";
  std::optional<unsigned> epochs; // unset: the model's default
  std::size_t batchSize = 32;
  unsigned stepsPerExecution = 125;
  std::optional<unsigned> ipus; // unset: the stages, or 1 (or poprun's)
  unsigned pipelineStages = 0;  // 0: not pipelined
  std::string schedule = "grouped";
  std::optional<unsigned> gradientAccumulation; // unset: the stages, or 1
  bool recompute = false;
  bool offloadOptimizerState = true;
  std::optional<unsigned> replicas; // unset: 1, or poprun's total
  std::string saveWeights;
  std::string loadWeights;
  std::optional<double> learningRate; // unset: the model's default
  std::string optimizer = "adam";
  std::optional<double> momentum; // unset: 0.9 for sgd; sgd only
  std::string dtypePolicy = "float32";
  std::uint64_t seed = 1;
  std::string profileDir;
  unsigned tiles = 1472;
  std::string cacheDir;
  bool noCache = false;
  std::size_t trainExamples = 60000;
  std::size_t testExamples = 10000;
  bool syntheticData = false;
  std::optional<unsigned> imageSize; // unset: 224 (resnet50 only)
  // Whether the user gave them: resnet50 and synthetic data have their own
  // defaults.
  bool stepsPerExecutionGiven = false;
  bool trainExamplesGiven = false;
};

// Where executables are cached unless --cache says: next to the codelet
// cache ($TESSERA_CACHE_DIR), else the XDG cache folder.
std::string defaultCacheDir() {
  namespace fs = std::filesystem;
  if (const char *d = std::getenv("TESSERA_CACHE_DIR"); d && *d)
    return (fs::path(d) / "executables").string();
  if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return (fs::path(d) / "tessera" / "executables").string();
  if (const char *h = std::getenv("HOME"); h && *h)
    return (fs::path(h) / ".cache" / "tessera" / "executables").string();
  return (fs::temp_directory_path() / "tessera-executables").string();
}

// Ceilings on the options that size the work, so that a typo fails at once
// with the range instead of allocating or computing for minutes. The model
// needs at least a few tiles and a device run at least one step.
constexpr std::uint64_t kMaxEpochs = 10000;
constexpr std::uint64_t kMaxBatchSize = 65536;
constexpr std::uint64_t kMaxStepsPerExecution = 1000000;

void requireRange(const char *option, std::uint64_t value, std::uint64_t low,
                  std::uint64_t high, const char *hint = "") {
  if (value < low || value > high)
    throw OptionError(fmt::format("{} must be {} to {}, got {}{}", option, low,
                                  high, value, hint));
}

// The pipelining options against each other and the model's layers
// (--gradient-accumulation and --ipus filled in).
void checkPipelineOptions(const TrainOptions &o) {
  const unsigned S = o.pipelineStages, N = *o.gradientAccumulation;
  requireRange("--gradient-accumulation", N, 1, kMaxStepsPerExecution);
  if (o.recompute && S == 0)
    throw OptionError("--recompute recomputes pipeline stages' activations; "
                      "give --pipeline-stages too");
  if (S == 0) {
    if (o.schedule != "grouped")
      throw OptionError("--schedule " + o.schedule +
                        " schedules pipeline stages; give --pipeline-stages "
                        "too");
  } else {
    const std::size_t layers = trainModelLayers(o.model);
    if (S > layers)
      throw OptionError(fmt::format(
          "--pipeline-stages {} is more than the {} layers of model {} (after "
          "its Input); use at most {} stages",
          S, layers, o.model, layers));
    if (o.schedule != "sequential" && N < S)
      throw OptionError(fmt::format(
          "--gradient-accumulation {} is less than the {} pipeline stages, but "
          "the {} schedule needs at least one micro-batch per stage; use "
          "--gradient-accumulation {} or more, or --schedule sequential",
          N, S, o.schedule, S));
    if (*o.ipus < S)
      throw OptionError(fmt::format(
          "--ipus {} is fewer than the {} pipeline stages, each on its own "
          "IPU; use --ipus {} or more (or leave it out)",
          *o.ipus, S, S));
  }
  if (o.stepsPerExecution % N != 0)
    throw OptionError(fmt::format(
        "--steps-per-execution {} is not a multiple of --gradient-"
        "accumulation {}: a device run must end after a weight update; use "
        "--steps-per-execution {}",
        o.stepsPerExecution, N, std::max(N, o.stepsPerExecution / N * N)));
}

// Checks options whose defaults are already filled in, before anything is
// built or read.
void checkOptions(const TrainOptions &o) {
  if (o.model == "resnet50") {
    if (!o.syntheticData)
      throw OptionError("--model resnet50 trains on random 3-channel images; "
                        "give --synthetic-data (Fashion-MNIST's 28x28x1 "
                        "images are too small for it)");
    if (o.pipelineStages > 0)
      throw OptionError("--pipeline-stages splits mlp and cnn only; leave it "
                        "out for resnet50");
    requireRange("--image-size", *o.imageSize, 32, 4096,
                 " (ResNet-50's five stride-2 steps need at least 32x32)");
  } else if (o.imageSize) {
    throw OptionError("--image-size sizes resnet50's images; mlp and cnn take "
                      "28x28 Fashion-MNIST images");
  }
  requireRange("--epochs", *o.epochs, 1, kMaxEpochs,
               " (leave it out for the model's default: 10 for mlp, 3 for "
               "cnn)");
  if (o.momentum && o.optimizer != "sgd")
    throw OptionError("--momentum is SGD's; give --optimizer sgd too (Adam "
                      "keeps its own moments)");
  // Negated so that NaNs fail too.
  if (o.momentum && !(*o.momentum >= 0 && *o.momentum < 1))
    throw OptionError(fmt::format("--momentum must be at least 0 and below 1, "
                                  "got {} (0.9 is usual)",
                                  *o.momentum));
  if (!(*o.learningRate > 0) || !std::isfinite(*o.learningRate))
    throw OptionError(fmt::format(
        "--learning-rate must be a positive finite number, got {} (leave it "
        "out for the model's default: 0.0005 for mlp, 0.001 for cnn)",
        *o.learningRate));
  requireRange("--batch-size", o.batchSize, 1, kMaxBatchSize);
  requireRange("--steps-per-execution", o.stepsPerExecution, 1,
               kMaxStepsPerExecution);
  requireRange("--ipus", *o.ipus, 1, Target::kMaxIPUs);
  requireRange("--replicas", *o.replicas, 1, Target::kMaxIPUs);
  if (std::uint64_t(*o.replicas) * *o.ipus > Target::kMaxIPUs)
    throw OptionError(fmt::format(
        "--replicas {} of --ipus {} is {} IPUs, more than the {} a run may "
        "use; use fewer replicas or IPUs",
        *o.replicas, *o.ipus, std::uint64_t(*o.replicas) * *o.ipus,
        Target::kMaxIPUs));
  requireRange("--tiles", o.tiles, 1, Target::kMaxTilesPerIPU,
               " tiles per IPU (an ipu2 has 1472)");
  const std::uint64_t tiles = std::uint64_t(*o.ipus) * o.tiles;
  if (tiles > Target::kMaxTiles)
    throw OptionError(fmt::format(
        "--ipus {} of --tiles {} is {} tiles, more than the {} a model may "
        "use; use fewer IPUs or tiles",
        *o.ipus, o.tiles, tiles, Target::kMaxTiles));
  checkPipelineOptions(o);
  // Both at most their ceilings, so the product cannot wrap around.
  const std::uint64_t perRun =
      std::uint64_t(o.batchSize) * o.stepsPerExecution * *o.replicas;
  if (o.trainExamples < perRun)
    throw OptionError(fmt::format(
        "--train-examples {} is less than one device run of {} steps of {} "
        "examples{} ({}); give more examples or fewer steps per execution",
        o.trainExamples, o.stepsPerExecution, o.batchSize,
        *o.replicas > 1 ? fmt::format(" on each of {} replicas", *o.replicas)
                        : std::string(),
        perRun));
  if (o.testExamples == 0)
    throw OptionError("--test-examples must be at least 1");
}

// A profile folder that cannot take the profile is found out before the
// training the profile would describe, not after it. (fit() still fails if
// writing fails at the end: a full disk, say.)
void checkProfileDir(const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw OptionError(fmt::format(
        "--profile {}: cannot make the profile folder ({}); give a folder "
        "you can write",
        dir, ec ? ec.message() : "a file of that name is in the way"));
  const std::string probe =
      (fs::path(dir) / fmt::format(".tessera-probe-{}", ::getpid())).string();
  std::FILE *f = std::fopen(probe.c_str(), "wx");
  bool written = f != nullptr && std::fputs("probe\n", f) >= 0;
  if (f != nullptr && std::fclose(f) != 0)
    written = false;
  const int error = errno;
  fs::remove(probe, ec);
  if (!written)
    throw OptionError(fmt::format("--profile {}: cannot write in the folder "
                                  "({}); give a folder you can write",
                                  dir, std::strerror(error)));
}

// The largest divisor of n that is at most limit: an evaluation batch that
// covers every test example.
std::size_t evalBatch(std::size_t n, std::size_t limit) {
  for (std::size_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0)
      return d;
  return 1;
}

std::string seconds(double s) {
  if (s >= 1)
    return fmt::format("{:.2f} s", s);
  if (s >= 1e-3)
    return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} us", s * 1e6);
}

// Adam (or SGD with momentum) and sparse cross-entropy with accuracy, as
// the Keras tutorials.
nn::CompileOptions compileOptions(const TrainOptions &o,
                                  const CommandStreams &streams) {
  nn::CompileOptions c;
  if (o.optimizer == "sgd") {
    passes::SGD sgd;
    sgd.learningRate = *o.learningRate;
    sgd.momentum = o.momentum.value_or(0.9);
    c.optimizer = sgd;
  } else {
    passes::Adam adam;
    adam.learningRate = *o.learningRate;
    c.optimizer = adam;
  }
  c.loss = "sparse_categorical_crossentropy";
  c.metrics = {"accuracy"};
  c.stepsPerExecution = o.stepsPerExecution;
  c.config.autoSelectIpus = *o.ipus;
  c.config.ipuModel.tilesPerIpu = o.tiles;
  c.config.ipuModel.version = "ipu2";
  c.config.pipeline.offloadOptimizerState = o.offloadOptimizerState;
  if (!o.noCache)
    c.config.executableCachePath =
        o.cacheDir.empty() ? defaultCacheDir() : o.cacheDir;
  c.compileProgress = &streams.err;
  return c;
}

// The time to the first step: what the executable cache saves.
struct StartReport : nn::Callback {
  const nn::FitStats *stats = nullptr;
  std::ostream *err = nullptr;
  double launched = 0;
  void onEpochBegin(unsigned epoch) override {
    if (epoch != 0)
      return;
    *err << fmt::format(
        "{} in {:.2f} s; training starts {:.2f} s after launch\n",
        stats->cacheHit ? "Executable cache hit: loaded"
                        : "Compiled the training step",
        stats->compileSeconds, session::nowSeconds() - launched);
  }
};

// Where the estimated cycles go, and how full the tiles are.
void printBreakdown(std::ostream &out, const nn::FitStats &stats) {
  const CycleBreakdown &c = stats.estimatedCyclesByKind;
  const double total = double(std::max<std::uint64_t>(c.total(), 1));
  auto share = [&](std::uint64_t cycles) {
    return fmt::format("{:.1f}%", 100.0 * double(cycles) / total);
  };
  out << fmt::format("Estimated cycles by kind: compute {}, exchange {}, sync "
                     "{}, host streams {}, control {}\n",
                     share(c.compute), share(c.exchange), share(c.sync),
                     share(c.host), share(c.control));
  const MemorySummary &m = stats.memory;
  const double capacity = double(m.bytesPerTile) * double(m.tiles);
  out << fmt::format(
      "Tile memory: {} bytes of {} ({:.1f}%) on {} tiles; busiest tile {} "
      "uses {} of {} bytes\n",
      groupedNumber(m.total.total()), groupedNumber(std::uint64_t(capacity)),
      capacity > 0 ? 100.0 * double(m.total.total()) / capacity : 0.0,
      m.tilesUsed, m.maxTile, groupedNumber(m.maxTileBytes),
      groupedNumber(m.bytesPerTile));
}

void printResults(std::ostream &out, const TrainOptions &o,
                  const nn::FitStats &stats, const nn::Logs *test,
                  std::size_t testExamples) {
  if (test != nullptr)
    out << fmt::format("Test ({} examples): loss {:.4f} - accuracy {:.4f}\n",
                       testExamples, nn::logValue(*test, "loss"),
                       nn::logValue(*test, "accuracy"));
  const double ipuStep = stats.ipuSecondsPerStep();
  out << fmt::format("Host time per step: {}\n",
                     seconds(stats.hostSecondsPerStep));
  out << fmt::format(
      "Estimated IPU time per step: {} ({} cycles per {} steps at {:.2f} "
      "GHz); throughput {} examples/s\n",
      seconds(ipuStep), groupedNumber(stats.estimatedCyclesPerRun),
      stats.stepsPerExecution, stats.clockHz / 1e9,
      ipuStep > 0 ? groupedNumber(std::uint64_t(double(o.batchSize) / ipuStep))
                  : std::string("n/a"));
  // Device time alone hides what each run costs the host: at one step per
  // execution every step pays a round trip.
  const double withHost = stats.hostInclusiveSecondsPerStep();
  const HostCycles &h = stats.estimatedHostCyclesPerRun;
  const auto runTime = [&](std::uint64_t cycles) {
    return seconds(stats.clockHz > 0 ? double(cycles) / stats.clockHz : 0.0);
  };
  out << fmt::format(
      "Estimated time per step with the host side: {} (per run of {} steps: "
      "round trip {}, stream set-ups {}, callbacks {}); throughput {} "
      "examples/s\n",
      seconds(withHost), stats.stepsPerExecution, runTime(h.runs),
      runTime(h.streamSetups), runTime(h.callbacks),
      withHost > 0
          ? groupedNumber(std::uint64_t(double(o.batchSize) / withHost))
          : std::string("n/a"));
  printBreakdown(out, stats);
  if (!o.profileDir.empty())
    out << "Profile written to " << o.profileDir
        << "; render it with `tessera report " << o.profileDir << "`\n";
}

// Under `tessera poprun` the replicas are the launch's; alone, --replicas
// (default 1).
dist::InstanceInfo instanceInfo(TrainOptions &o) {
  dist::InstanceInfo me = dist::instanceFromEnvironment();
  if (!dist::isPopdistEnvSet()) {
    o.replicas = o.replicas.value_or(1);
    o.ipus = o.ipus.value_or(std::max(o.pipelineStages, 1u));
    me.totalReplicas = me.localReplicas = *o.replicas;
    return me;
  }
  if (o.replicas && *o.replicas != me.totalReplicas)
    throw OptionError(fmt::format(
        "--replicas {} disagrees with the {} replicas of the poprun launch; "
        "leave --replicas out under poprun (--num-replicas says it)",
        *o.replicas, me.totalReplicas));
  o.replicas = me.totalReplicas;
  if (o.ipus && *o.ipus != me.ipusPerReplica)
    throw OptionError(fmt::format(
        "--ipus {} disagrees with the {} IPUs per replica of the poprun "
        "launch; leave --ipus out under poprun (--ipus-per-replica says it)",
        *o.ipus, me.ipusPerReplica));
  o.ipus = me.ipusPerReplica;
  return me;
}

// What every instance must agree on: anything that changes the model, the
// data or the steps.
std::vector<std::pair<std::string, std::string>>
sharedOptions(const TrainOptions &o) {
  return {{"--model", o.model},
          {"--epochs", std::to_string(*o.epochs)},
          {"--batch-size", std::to_string(o.batchSize)},
          {"--steps-per-execution", std::to_string(o.stepsPerExecution)},
          {"--replicas", std::to_string(*o.replicas)},
          {"--ipus", std::to_string(*o.ipus)},
          {"--pipeline-stages", std::to_string(o.pipelineStages)},
          {"--schedule", o.schedule},
          {"--gradient-accumulation", std::to_string(*o.gradientAccumulation)},
          {"--recompute", o.recompute ? "on" : "off"},
          {"--offload-optimizer-state", o.offloadOptimizerState ? "on" : "off"},
          {"--tiles", std::to_string(o.tiles)},
          {"--learning-rate", fmt::format("{}", *o.learningRate)},
          {"--optimizer", o.optimizer},
          {"--momentum", fmt::format("{}", o.momentum.value_or(0))},
          {"--dtype-policy", o.dtypePolicy},
          {"--seed", std::to_string(o.seed)},
          {"--train-examples", std::to_string(o.trainExamples)},
          {"--synthetic-data", o.syntheticData ? "on" : "off"},
          {"--image-size", std::to_string(o.imageSize.value_or(0))}};
}

struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};

void printMpiTime(std::ostream &out, const dist::MpiStats &mpi,
                  const nn::FitStats &stats) {
  if (stats.steps == 0)
    return;
  const double perStep = mpi.seconds / double(stats.steps);
  const double share = stats.hostSecondsPerStep > 0
                           ? 100.0 * perStep / stats.hostSecondsPerStep
                           : 0.0;
  const std::string waiting =
      mpi.waitSeconds > 0
          ? fmt::format("; {} of it waiting for the other instances",
                        seconds(mpi.waitSeconds / double(stats.steps)))
          : std::string();
  out << fmt::format("MPI time per step: {} ({:.1f}% of the host time per "
                     "step{}), {} calls and {} bytes received per step\n",
                     seconds(perStep), share, waiting, mpi.calls / stats.steps,
                     mpi.bytes / stats.steps);
}

nn::FitOptions fitOptions(const TrainOptions &o, std::ostream &out,
                          std::ostream &err, const nn::FitStats &stats,
                          double launched) {
  nn::FitOptions fit;
  fit.epochs = *o.epochs;
  fit.out = &out;
  fit.verbose = ::isatty(STDOUT_FILENO) ? nn::Verbosity::ProgressBar
                                        : nn::Verbosity::LinePerEpoch;
  auto firstRun = std::make_shared<StartReport>();
  firstRun->stats = &stats;
  firstRun->err = &err;
  firstRun->launched = launched;
  fit.callbacks.push_back(firstRun);
  return fit;
}

// Every instance starts from instance 0's weights (its initialisers' or
// the checkpoint's, which every instance reads).
void startFromFirstInstance(nn::Model &model, const TrainOptions &o,
                            const dist::Instances &instances) {
  session::Checkpoint initial = o.loadWeights.empty()
                                    ? model.getWeights()
                                    : session::loadCheckpoint(o.loadWeights);
  instances.broadcastFromFirst(initial);
  model.setWeights(initial);
}

// This instance's batches of an epoch, and the steps they make: whole
// device runs, each step taking a batch per replica (the batches left over
// are skipped), in the single-process order, of which each instance takes
// the blocks its replicas take.
std::pair<data::Dataset, std::size_t>
trainingBatches(const data::Dataset &trainSet, const TrainOptions &o,
                const dist::InstanceInfo &me) {
  const std::size_t nTrain = trainSet.cardinality().count();
  const std::size_t steps = nTrain / o.batchSize / *o.replicas /
                            o.stepsPerExecution * o.stepsPerExecution;
  if (steps == 0)
    throw OptionError(fmt::format(
        "{} training examples make no device run of {} steps of {} on {} "
        "replica(s)",
        nTrain, o.stepsPerExecution, o.batchSize, *o.replicas));
  return {trainSet.shuffle(nTrain, o.seed)
              .batch(o.batchSize, true)
              .take(steps * *o.replicas)
              .shard(me.numInstances, me.instanceIndex, me.localReplicas),
          steps};
}

dist::MpiStats since(const dist::MpiStats &before, dist::MpiStats now) {
  now.calls -= before.calls;
  now.bytes -= before.bytes;
  now.seconds -= before.seconds;
  now.waitSeconds -= before.waitSeconds;
  return now;
}

// \p n examples of uniform [0, 1) pixels of \p shape and uniform labels of
// 10 classes, seeded by \p seed: data of the right shape without a file.
data::Dataset syntheticSet(const data::Shape &shape, std::size_t n,
                           std::uint64_t seed) {
  data::Shape imagesShape{n};
  imagesShape.insert(imagesShape.end(), shape.begin(), shape.end());
  data::HostTensor images(FLOAT, imagesShape), labels(INT, {n});
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  for (float &v : images.values<float>())
    v = pixel(random);
  std::uniform_int_distribution<std::int32_t> label(0, 9);
  for (std::int32_t &v : labels.values<std::int32_t>())
    v = label(random);
  return data::Dataset::fromTensors({std::move(images), std::move(labels)},
                                    {"image", "label"});
}

data::Shape imageShape(const TrainOptions &o) {
  if (o.model == "resnet50")
    return {*o.imageSize, *o.imageSize, 3};
  return o.model == "cnn" ? data::Shape{28, 28, 1} : data::Shape{784};
}

std::unique_ptr<nn::Model> buildModel(const TrainOptions &o) {
  // The policy of the layers made here; the process's global policy is put
  // back, as a Keras script that sets it for one model would.
  const nn::Policy previous = nn::globalPolicy();
  nn::setGlobalPolicy(o.dtypePolicy);
  struct Restore {
    nn::Policy policy;
    ~Restore() { nn::setGlobalPolicy(policy); }
  } restore{previous};
  if (o.model == "resnet50")
    return std::make_unique<nn::Model>(buildResNet50(*o.imageSize, 10, o.seed));
  auto model =
      std::make_unique<nn::Sequential>(buildTrainModel(o.model, o.seed));
  applyPipelining(*model, o.pipelineStages, o.schedule, *o.gradientAccumulation,
                  o.recompute);
  return model;
}

// The defaults that depend on the model and the data. ResNet-50 steps take
// seconds on the host, so it runs 2 steps per execution; synthetic data is
// one device run per epoch unless --train-examples says otherwise.
void fillDefaults(TrainOptions &o) {
  if (!o.epochs)
    o.epochs = o.model == "mlp" ? 10 : o.model == "cnn" ? 3 : 1;
  if (!o.learningRate)
    o.learningRate = o.model == "mlp" ? 0.0005 : 0.001;
  if (!o.gradientAccumulation)
    o.gradientAccumulation = std::max(o.pipelineStages, 1u);
  if (o.model == "resnet50") {
    o.imageSize = o.imageSize.value_or(224);
    if (!o.stepsPerExecutionGiven)
      o.stepsPerExecution = 2;
  }
}

void runTrain(TrainOptions o, const CommandStreams &streams) {
  const double launched = session::nowSeconds();
  // Defaults measured to reach the accuracy targets (README): the MLP
  // generalises better at the lower rate over its 10 epochs.
  fillDefaults(o);
  const dist::InstanceInfo me = instanceInfo(o);
  if (o.syntheticData && !o.trainExamplesGiven)
    o.trainExamples = o.batchSize * o.stepsPerExecution * *o.replicas;
  checkOptions(o);
  dist::Instances instances(me);
  instances.checkSameOptions(sharedOptions(o));
  if (!o.profileDir.empty())
    checkProfileDir(o.profileDir);
  const std::unique_ptr<nn::Model> built = buildModel(o);
  nn::Model &model = *built;
  // One report per run: the other instances train silently.
  NullBuffer discard;
  std::ostream quiet(&discard);
  std::ostream &out = instances.writesFiles() ? streams.out : quiet;
  model.summary(out);

  data::FashionMnistOptions images;
  images.imageShape = imageShape(o);
  // Reading and decoding the data takes about half a second: do it while
  // the training step compiles or loads from the cache.
  std::future<std::pair<data::Dataset, data::Dataset>> loading =
      std::async(std::launch::async, [images, &o] {
        // Random labels make no test: the test set is one example, unused.
        if (o.syntheticData)
          return std::pair{
              syntheticSet(images.imageShape, o.trainExamples, o.seed),
              syntheticSet(images.imageShape, 1, o.seed + 1)};
        return std::pair{
            data::fashionMnist(data::Split::Train, images)
                .take(o.trainExamples),
            data::fashionMnist(data::Split::Test, images).take(o.testExamples)};
      });
  data::Shape xShape{o.batchSize};
  xShape.insert(xShape.end(), images.imageShape.begin(),
                images.imageShape.end());
  const data::ElementSpec batchSpec{{"image", FLOAT, xShape},
                                    {"label", INT, {o.batchSize}}};

  nn::CompileOptions evalOptions = compileOptions(o, streams);
  evalOptions.config.replicationFactor = *o.replicas;
  evalOptions.config.instances = instances.sessionInstances();
  if (!instances.writesFiles())
    evalOptions.compileProgress = nullptr;
  nn::CompileOptions c = evalOptions;
  if (!o.profileDir.empty())
    c.config.engineOptions.set(
        {{"autoReport.all", "true"}, {"autoReport.directory", o.profileDir}});
  model.compile(c);
  model.prepareTraining(batchSpec);
  startFromFirstInstance(model, o, instances);
  const auto [trainSet, testSet] = loading.get();
  const std::size_t nTest = testSet.cardinality().count();
  const auto [train, steps] = trainingBatches(trainSet, o, me);
  const std::size_t testBatch = evalBatch(nTest, 100);
  const data::Dataset test = testSet.batch(testBatch, true);

  out << fmt::format(
      "Training on {} {} examples: {} IPU(s) of {} tiles (ipu2 "
      "IPU Model), {} replica(s) in {} instance(s), batch {}, {} steps per "
      "epoch, {} steps per execution, {} lr {}{}{}\n",
      steps * o.batchSize * *o.replicas,
      o.syntheticData
          ? fmt::format("synthetic {}", fmt::join(images.imageShape, "x"))
          : std::string("Fashion-MNIST"),
      *o.ipus, o.tiles, *o.replicas, me.numInstances, o.batchSize, steps,
      o.stepsPerExecution, o.optimizer == "sgd" ? "SGD" : "Adam",
      *o.learningRate,
      o.optimizer == "sgd"
          ? fmt::format(" momentum {}", o.momentum.value_or(0.9))
          : std::string(),
      o.dtypePolicy == "float32" ? std::string()
                                 : ", dtype policy " + o.dtypePolicy);
  if (o.pipelineStages > 0)
    out << fmt::format("Pipelined over {} stages ({} schedule), {} "
                       "micro-batches per weight update{}\n",
                       o.pipelineStages, o.schedule, *o.gradientAccumulation,
                       o.recompute ? ", activations recomputed" : "");
  else if (*o.gradientAccumulation > 1)
    out << fmt::format("Gradient accumulation: {} steps per weight update\n",
                       *o.gradientAccumulation);
  out << std::flush;
  const nn::FitOptions fit =
      fitOptions(o, out, streams.err, model.lastFitStats(), launched);
  const dist::MpiStats before = instances.mpiStats();
  model.fit(train, fit);
  const dist::MpiStats mpi = since(before, instances.mpiStats());
  if (!o.saveWeights.empty() && instances.writesFiles()) {
    session::saveCheckpoint(o.saveWeights, model.getWeights());
    out << "Weights saved to " << o.saveWeights << '\n';
  }

  if (o.syntheticData) {
    printResults(out, o, model.lastFitStats(), nullptr, 0);
  } else {
    // Evaluation without the profile, so it does not replace training's.
    model.compile(evalOptions);
    const nn::Logs logs = model.evaluate(test);
    printResults(out, o, model.lastFitStats(), &logs,
                 nTest / testBatch * testBatch);
  }
  if (me.numInstances > 1)
    printMpiTime(out, mpi, model.lastFitStats());
}

} // namespace

void addTrainCommand(CLI::App &app, const CommandStreams &streams) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App *sub = app.add_subcommand(
      "train", "Train a Keras-style model on Fashion-MNIST (or synthetic "
               "data) on the IPU Model");
  sub->footer(
      "Models: mlp (784-256-128-10, relu; 10 epochs, learning rate 0.0005 "
      "by default) and cnn "
      "(Conv2D 32 3x3, MaxPool 2, Conv2D 64 3x3, MaxPool 2, Dense 128, "
      "Dense 10; 3 epochs, learning rate 0.001 by default), trained with Adam "
      "(or --optimizer sgd). "
      "The data comes "
      "from Debian's dataset-fashion-mnist (TESSERA_FASHION_MNIST_DIR "
      "overrides the folder). Executables are cached in --cache (default "
      "$TESSERA_CACHE_DIR/executables or ~/.cache/tessera/executables), so "
      "a second run with the same options skips compilation. resnet50 is "
      "Keras' ResNet50 (v1, 23,608,202 parameters for 10 classes) on "
      "--synthetic-data images of --image-size x --image-size x 3 (1 epoch, "
      "2 steps per execution, learning rate 0.001 by default): it reports "
      "whether the training step fits on the IPU (the out-of-memory error "
      "names the tile and its largest variables) and runs the steps.");
  sub->add_option("--model", o->model, "mlp, cnn or resnet50")
      ->check(CLI::IsMember({"mlp", "cnn", "resnet50"}))
      ->capture_default_str();
  sub->add_option("--epochs", o->epochs,
                  "Epochs, 1 to 10000 (default: 10 for mlp, 3 for cnn, 1 for "
                  "resnet50)");
  sub->add_option("--batch-size", o->batchSize, "Examples per step, 1 to 65536")
      ->capture_default_str();
  CLI::Option *spe =
      sub->add_option("--steps-per-execution", o->stepsPerExecution,
                      "Steps per device run, 1 to 1000000 (2 for resnet50)")
          ->capture_default_str();
  sub->add_option("--ipus", o->ipus,
                  "IPUs to use (auto_select_ipus), 1 to 1024 (default: the "
                  "pipeline stages, else 1)");
  sub->add_option("--pipeline-stages", o->pipelineStages,
                  "Pipeline the model over S stages, stage i on IPU i: layer "
                  "i of the L layers after the Input goes to stage "
                  "floor(i * S / L), so stages are contiguous and differ by "
                  "at most one layer (mlp has 3 layers, cnn 7)");
  sub->add_option("--schedule", o->schedule,
                  "Pipeline schedule: grouped (default), interleaved or "
                  "sequential")
      ->check(CLI::IsMember({"grouped", "interleaved", "sequential"}));
  sub->add_option("--gradient-accumulation", o->gradientAccumulation,
                  "Micro-batches (steps) per weight update; at least the "
                  "stages for grouped and interleaved, and dividing "
                  "--steps-per-execution (default: the pipeline stages, "
                  "else 1)");
  sub->add_flag("--recompute", o->recompute,
                "Recompute pipeline stages' activations in the backward "
                "pass instead of keeping them");
  sub->add_flag("--offload-optimizer-state,!--no-offload-optimizer-state",
                o->offloadOptimizerState,
                "With gradient accumulation (pipelined or not), keep the "
                "optimizer state in remote buffers, streamed onto the tiles "
                "only for the weight update (default: on, as TensorFlow for "
                "the IPU's offload_weight_update_variables)");
  sub->add_option("--replicas", o->replicas,
                  "Data-parallel replicas (replication_factor), each taking "
                  "its own batches and averaging gradients; under `tessera "
                  "poprun` the launch's --num-replicas");
  sub->add_option("--save-weights", o->saveWeights,
                  "Write the trained weights as a checkpoint to PATH (once, "
                  "by instance 0 under poprun)");
  sub->add_option("--load-weights", o->loadWeights,
                  "Start from the checkpoint at PATH (as --save-weights "
                  "writes it)");
  sub->add_option("--learning-rate", o->learningRate,
                  "The optimizer's learning rate, positive and finite "
                  "(default: 0.0005 for mlp, 0.001 for cnn and resnet50)");
  sub->add_option("--optimizer", o->optimizer,
                  "adam (default) or sgd (with --momentum)")
      ->check(CLI::IsMember({"adam", "sgd"}));
  sub->add_option("--momentum", o->momentum,
                  "SGD's momentum, 0 to below 1 (default 0.9)");
  sub->add_option("--dtype-policy", o->dtypePolicy,
                  "Keras mixed-precision policy of every layer: float32 "
                  "(default), mixed_float16 (float16 compute, float32 "
                  "weights, dynamic loss scaling) or float16")
      ->check(CLI::IsMember({"float32", "mixed_float16", "float16"}));
  sub->add_option("--seed", o->seed, "Seed of initialisers and shuffling")
      ->capture_default_str();
  sub->add_option("--profile", o->profileDir,
                  "Write the training profile (autoReport.all) into DIR");
  sub->add_option("--tiles", o->tiles,
                  "Tiles per IPU, 1 to 16384 (and at most 2097152 "
                  "in all)")
      ->capture_default_str();
  CLI::Option *cache =
      sub->add_option("--cache", o->cacheDir, "Executable cache folder");
  sub->add_flag("--no-cache", o->noCache, "Do not use the executable cache")
      ->excludes(cache);
  CLI::Option *examples = sub->add_option("--train-examples", o->trainExamples,
                                          "Train on the first N examples")
                              ->capture_default_str();
  sub->add_option("--test-examples", o->testExamples,
                  "Test on the first N examples")
      ->capture_default_str();
  sub->add_flag("--synthetic-data", o->syntheticData,
                "Train on random images of the model's input shape (uniform "
                "in [0, 1)) and random labels of 10 classes instead of "
                "Fashion-MNIST, one device run per epoch unless "
                "--train-examples says more; no test evaluation");
  sub->add_option("--image-size", o->imageSize,
                  "resnet50's image height and width, 32 to 4096 (default "
                  "224)");
  sub->callback([o, streams, spe, examples] {
    TrainOptions t = *o;
    t.stepsPerExecutionGiven = spe->count() > 0;
    t.trainExamplesGiven = examples->count() > 0;
    runTrain(t, streams);
  });
}

} // namespace tessera::tools
