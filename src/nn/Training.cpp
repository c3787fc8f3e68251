// fit, evaluate and predict: sessions built per batch shape, fed by
// infeeds, reporting through outfeeds, with weights carried between them by
// checkpoints.
#include "ModelInternal.hpp"
#include "NnInternal.hpp"

#include "tessera/session/Feeds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <span>

namespace tessera::nn {
namespace {

using detail::kerasShape;

std::string describeSpec(const data::ComponentSpec &c) {
  return std::string(typeName(c.type)) + " " + data::shapeString(c.shape);
}

// Replaces the values of \p into's variables by those of \p from with the
// same name, type and shape: a training checkpoint (with optimizer state)
// loads into an evaluation session and weights alone into a training one.
void merge(session::Checkpoint &into, const session::Checkpoint &from) {
  for (auto &[name, t] : into.variables)
    for (const auto &[n, v] : from.variables)
      if (n == name && v.type() == t.type() && v.shape() == t.shape()) {
        t = v;
        break;
      }
}

// The mean of each named value over every step of \p steps; NaN when no
// step reported (synthetic data sends nothing back).
struct RunningMeans {
  std::vector<std::string> names;
  std::vector<double> sums;
  std::size_t count = 0;

  explicit RunningMeans(std::vector<std::string> n)
      : names(std::move(n)), sums(names.size(), 0.0) {}
  void add(const std::vector<data::Element> &steps) {
    for (const data::Element &e : steps) {
      for (std::size_t i = 0; i < names.size(); ++i)
        sums[i] += e[i].values<float>()[0];
      ++count;
    }
  }
  Logs logs() const {
    Logs l;
    for (std::size_t i = 0; i < names.size(); ++i)
      l.emplace_back(names[i], count
                                   ? sums[i] / double(count)
                                   : std::numeric_limits<double>::quiet_NaN());
    return l;
  }
};

// Sparse labels index the model's classes, and the device cannot say when
// one does not: its cross-entropy and accuracy read no class for it and
// train on "loss 0". So the host checks each batch's labels on their way to
// the infeed (a few dozen integers per step), naming the first bad one.
// Batches are counted from the start of the fit or evaluation; \p perPass
// (the dataset's batches, 0 when unknown) turns that into the batch of the
// dataset.
template <typename T>
void checkLabelValues(std::span<const T> labels, std::size_t classes,
                      std::uint64_t batch, const char *what) {
  for (std::size_t row = 0; row < labels.size(); ++row) {
    const T v = labels[row];
    if (v >= 0 && static_cast<std::uint64_t>(v) < classes)
      continue;
    throw ShapeError(fmt::format(
        "{}: label {} at row {} of batch {} (example {} of the dataset) is "
        "not a class id: the model has {} classes, so sparse labels must be "
        "0 to {}; fix the labels, or end the model with one unit per class",
        what, v, row, batch, batch * labels.size() + row, classes,
        classes - 1));
  }
}

data::Dataset withLabelCheck(const data::Dataset &dataset, std::size_t classes,
                             std::uint64_t perPass, const char *what) {
  auto batches = std::make_shared<std::uint64_t>(0);
  return dataset.map([=](data::Element e) {
    const std::uint64_t n = (*batches)++;
    const std::uint64_t batch = perPass ? n % perPass : n;
    const data::HostTensor &y = e[1];
    if (y.type() == INT)
      checkLabelValues(y.values<std::int32_t>(), classes, batch, what);
    else if (y.type() == UNSIGNED_INT)
      checkLabelValues(y.values<std::uint32_t>(), classes, batch, what);
    return e;
  });
}

std::vector<std::string> outfeedNames(bool accuracy) {
  if (accuracy)
    return {"loss", "accuracy"};
  return {"loss"};
}

// The steps of each epoch of a fit; OptionError for options fit() cannot
// follow.
std::size_t stepsPerEpoch(const data::Cardinality &card,
                          const FitOptions &options, unsigned spe,
                          unsigned localReplicas) {
  if (!options.stepsPerEpoch && !card.isFinite())
    throw OptionError("fit: the dataset has " + card.toString() +
                      " elements; give FitOptions::stepsPerEpoch");
  // Each step takes one element for each replica this process runs.
  const std::size_t steps = options.stepsPerEpoch
                                ? *options.stepsPerEpoch
                                : card.count() / localReplicas;
  if (steps == 0 || steps % spe != 0)
    throw OptionError(
        "fit: an epoch of " + std::to_string(steps) +
        " steps is not a whole number of device runs of stepsPerExecution = " +
        std::to_string(spe) + "; pick stepsPerExecution dividing " +
        std::to_string(steps) + " (such as " +
        std::to_string(detail::largestDivisorAtMost(steps, spe)) + ")");
  if (options.initialEpoch >= options.epochs)
    throw OptionError(
        "fit: initial_epoch " + std::to_string(options.initialEpoch) +
        " leaves no epoch to run: epochs (" + std::to_string(options.epochs) +
        ") is the epoch to stop before, so it must be larger");
  return steps;
}

// Per IPU of the first replica: the fullest tile and the always-live bytes.
std::vector<FitStats::IpuMemory> memoryPerIpu(const Executable &exe) {
  std::vector<FitStats::IpuMemory> ipus(exe.numIPUs);
  for (std::size_t t = 0; t < exe.numTiles() && t < exe.tileMemory.size();
       ++t) {
    FitStats::IpuMemory &m = ipus[t / exe.tilesPerIPU];
    const TileMemory &tile = exe.tileMemory[t];
    if (tile.total() > m.peakTileBytes) {
      m.peakTileBytes = tile.total();
      m.peakTile = t;
    }
    m.alwaysLiveBytes += tile.alwaysLive;
  }
  return ipus;
}

} // namespace

void Model::checkElements(const data::ElementSpec &spec, bool needLabels,
                          const char *what) const {
  const Input &in = input();
  const std::size_t want = needLabels ? 2 : 1;
  if (spec.size() != want)
    throw ShapeError(std::string(what) + ": the dataset's elements have " +
                     std::to_string(spec.size()) + " components " +
                     spec.toString() + " but the model needs " +
                     (needLabels ? "2: (inputs, labels)" : "1: (inputs)"));
  const data::ComponentSpec &x = spec[0];
  for (std::size_t i = 0; i < spec.size(); ++i)
    if (!spec[i].shape.empty() && spec[i].shape[0] == data::anyDim)
      throw ShapeError(std::string(what) + ": batches of " + spec.describe(i) +
                       " vary in size (" + data::shapeString(spec[i].shape) +
                       "); batch the dataset with dropRemainder = true so "
                       "every step has the same shape");
  Shape expected{x.shape.empty() ? 0 : x.shape[0]};
  expected.insert(expected.end(), in.shape().begin(), in.shape().end());
  if (x.shape != expected)
    throw ShapeError(std::string(what) + ": the dataset's inputs (" +
                     spec.describe(0) + ") have shape " +
                     data::shapeString(x.shape) + " but the model's Input \"" +
                     in.name() + "\" takes " + kerasShape(expected) +
                     "; batch the dataset, reshape it with map() or change "
                     "the Input shape");
  if (x.type != in.dtype())
    throw TypeError(std::string(what) + ": the dataset's inputs (" +
                    spec.describe(0) + ") are " + describeSpec(x) +
                    " but the model's Input \"" + in.name() + "\" takes " +
                    std::string(typeName(in.dtype())) +
                    "; convert them with Dataset::cast(0, " +
                    std::string(typeName(in.dtype())) + ")");
  if (needLabels && (spec[1].shape.empty() || spec[1].shape[0] != x.shape[0]))
    throw ShapeError(std::string(what) + ": the labels (" + spec.describe(1) +
                     ") have shape " + data::shapeString(spec[1].shape) +
                     " but the batch has " + std::to_string(x.shape[0]) +
                     " examples; batch inputs and labels together");
}

Model::Compiled &Model::compiled(const char *what) {
  if (!compiled_)
    throw ModelError(std::string(what) + ": model \"" + name_ +
                     "\" is not compiled; call compile() with its optimizer, "
                     "loss and metrics first");
  return *compiled_;
}

namespace {

// Types and shapes alike: component names do not change the executable.
bool sameShapes(const data::ElementSpec &a, const data::ElementSpec &b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].type != b[i].type || a[i].shape != b[i].shape)
      return false;
  return true;
}

} // namespace

void Model::prepareTraining(const data::ElementSpec &spec) {
  compiled("prepareTraining");
  checkElements(spec, true, "prepareTraining");
  trainingSession(spec);
}

session::Session &Model::trainingSession(const data::ElementSpec &spec) {
  Compiled &c = *compiled_;
  if (c.train && sameShapes(c.trainSpec, spec))
    return *c.train;
  std::optional<session::Checkpoint> carried = c.pending;
  if (c.train)
    carried = c.train->readVariables();
  ir::Module m = trainingModule(spec[0].shape[0], spec[1]);
  session::Config config = c.options.config;
  const unsigned spe = c.options.stepsPerExecution;
  const auto [accumulation, stages] = trainingLayout(c.options);
  // The session finds this too, for pipelines only; a device run that ends
  // between weight updates would carry half-accumulated gradients over.
  if (spe % accumulation.count != 0)
    throw OptionError(fmt::format(
        "fit: {} steps per execution is not a whole number of weight updates "
        "of {} micro-batches (the gradient accumulation count); make it a "
        "multiple of {}",
        spe, accumulation.count, accumulation.count));
  if (stages > 0) {
    config.pipeline.schedule = pipelining_->schedule;
    config.pipeline.deviceMapping.assign(pipelining_->deviceMapping.begin(),
                                         pipelining_->deviceMapping.end());
  }
  std::vector<std::string> outfeeds = outfeedNames(c.accuracy);
  std::vector<detail::OutfeedTap> taps = detail::planOutfeeds(
      m, layers_, c.options.gradientOutfeed, accumulation.count, false);
  for (std::string &o : detail::streamedOutputs(taps))
    outfeeds.push_back(std::move(o));
  auto s = std::make_unique<session::Session>(
      std::move(m), std::move(config),
      session::RunSpec{c.options.config.syntheticData
                           ? std::vector<std::string>{}
                           : std::vector<std::string>{"x", "y"},
                       std::move(outfeeds), spe});
  const double start = session::nowSeconds();
  stats_.cacheHit = s->compile(c.options.compileProgress);
  stats_.compileSeconds = session::nowSeconds() - start;
  c.train = std::move(s);
  c.trainSpec = spec;
  c.outfeedTaps = std::move(taps);
  c.pending.reset();
  if (carried) {
    session::Checkpoint now = c.train->readVariables();
    merge(now, *carried);
    c.train->writeVariables(now, "the previous session's weights");
  }
  return *c.train;
}

void Model::loadCurrentWeights(session::Session &s) {
  Compiled &c = *compiled_;
  if (!c.train && !c.pending)
    return; // both start at the initialisers' values
  session::Checkpoint now = s.readVariables();
  merge(now, c.train ? c.train->readVariables() : *c.pending);
  s.writeVariables(now, "the model's current weights");
}

session::Session &Model::inferenceSession(const std::string &key,
                                          ir::Module module,
                                          std::vector<std::string> feeds,
                                          std::vector<std::string> outfeeds,
                                          unsigned steps) {
  Compiled &c = *compiled_;
  auto &slot = c.inference[key];
  if (!slot) {
    // Synthetic data stands in for training data only: evaluation and
    // prediction read what they are given.
    session::Config config = c.options.config;
    config.syntheticData = false;
    // Every instance evaluates and predicts on its own, with one replica:
    // replicas hold the same weights after each training step.
    config.replicationFactor = 1;
    config.instances = {};
    slot = std::make_unique<session::Session>(
        std::move(module), std::move(config),
        session::RunSpec{std::move(feeds), std::move(outfeeds), steps});
    slot->compile(c.options.compileProgress);
  }
  loadCurrentWeights(*slot);
  return *slot;
}

History Model::fit(const data::Dataset &dataset, const FitOptions &options) {
  Compiled &c = compiled("fit");
  const data::ElementSpec &spec = dataset.spec();
  checkElements(spec, true, "fit");
  const data::Cardinality card = dataset.cardinality();
  const unsigned spe = c.options.stepsPerExecution;
  const session::Config &config = c.options.config;
  const std::size_t steps = stepsPerEpoch(
      card, options, spe, config.replicationFactor / config.instances.count);
  session::Session &s = trainingSession(spec);
  // With synthetic data nothing crosses to or from the host: no infeed
  // (the dataset only gave the shapes) and no outfeed.
  std::optional<session::Infeed> in;
  session::Outfeed out;
  if (!c.options.config.syntheticData) {
    data::Dataset feed = card.isFinite() ? dataset.repeat() : dataset;
    if (c.loss == LossKind::SparseCategorical)
      feed = withLabelCheck(feed, outputShape().back(),
                            card.isFinite() ? card.count() : 0, "fit");
    in.emplace(std::move(feed));
    s.connect(*in, out);
  }

  History history;
  double runSeconds = 0;
  std::ostream *os =
      options.verbose == Verbosity::Silent ? nullptr : options.out;
  for (unsigned epoch = options.initialEpoch; epoch < options.epochs; ++epoch) {
    for (const auto &cb : options.callbacks)
      cb->onEpochBegin(epoch);
    if (os)
      *os << "Epoch " << epoch + 1 << "/" << options.epochs << '\n'
          << std::flush;
    RunningMeans means(outfeedNames(c.accuracy));
    const double start = session::nowSeconds();
    for (std::size_t done = 0; done < steps; done += spe) {
      const double t0 = session::nowSeconds();
      s.run();
      runSeconds += session::nowSeconds() - t0;
      std::vector<data::Element> ran = out.dequeueAll();
      means.add(ran);
      detail::deliverOutfeeds(c.outfeedTaps, ran, means.names.size(),
                              config.replicationFactor / config.instances.count,
                              s);
      c.stepsTaken += spe;
      for (const auto &cb : options.callbacks)
        cb->onRunEnd(done + spe, means.logs());
      if (os && options.verbose == Verbosity::ProgressBar)
        *os << '\r'
            << session::kerasProgressLine(done + spe, steps,
                                          session::nowSeconds() - start,
                                          means.logs())
            << std::flush;
    }
    Logs logs = means.logs();
    const double epochSeconds = session::nowSeconds() - start;
    if (options.validationData) {
      const Logs val = evaluate(*options.validationData);
      for (const auto &[name, value] : val)
        logs.emplace_back("val_" + name, value);
      if (os && options.verbose == Verbosity::ProgressBar)
        *os << '\r'
            << session::kerasProgressLine(steps, steps, epochSeconds, logs);
    }
    if (os && options.verbose == Verbosity::LinePerEpoch)
      *os << session::kerasProgressLine(steps, steps, epochSeconds, logs);
    if (os)
      *os << '\n' << std::flush;
    history.epochs.push_back(logs);
    bool stop = false;
    for (const auto &cb : options.callbacks) {
      cb->onEpochEnd(epoch, logs);
      stop = stop || cb->stopTraining;
    }
    if (stop)
      break;
  }
  // Now, not when the session goes: a profile the user asked for and that
  // cannot be written fails the fit instead of vanishing.
  s.engine().writePendingReport();
  const std::size_t totalSteps = history.epochs.size() * steps;
  stats_.hostSecondsPerStep = totalSteps ? runSeconds / double(totalSteps) : 0;
  stats_.estimatedCyclesPerRun = s.estimatedCyclesPerRun();
  stats_.estimatedCyclesByKind = s.estimatedCyclesByKindPerRun();
  stats_.memory = s.memorySummary();
  stats_.memoryPerIpu = memoryPerIpu(s.engine().getExecutable());
  stats_.clockHz = s.clockHz();
  stats_.stepsPerExecution = spe;
  stats_.batchSize = spec[0].shape[0];
  stats_.steps = totalSteps;
  return history;
}

History Model::fit(data::HostTensor x, data::HostTensor y,
                   std::size_t batchSize, const FitOptions &options,
                   bool shuffle) {
  compiled("fit");
  if (batchSize == 0 || x.rank() == 0 || x.dim(0) < batchSize)
    throw OptionError("fit: batchSize must be between 1 and the number of "
                      "examples (" +
                      std::to_string(x.rank() ? x.dim(0) : 0) + "), got " +
                      std::to_string(batchSize));
  const std::size_t n = x.dim(0);
  // Moved, not listed in braces: an initializer_list would copy them.
  std::vector<data::HostTensor> tensors;
  tensors.push_back(std::move(x));
  tensors.push_back(std::move(y));
  data::Dataset examples = data::Dataset::fromTensors(std::move(tensors));
  if (shuffle)
    examples = examples.shuffle(n, seed_);
  return fit(examples.batch(batchSize, true), options);
}

Logs Model::evaluate(const data::Dataset &dataset,
                     const EvaluateOptions &options) {
  Compiled &c = compiled("evaluate");
  const data::ElementSpec &spec = dataset.spec();
  checkElements(spec, true, "evaluate");
  const data::Cardinality card = dataset.cardinality();
  if (!card.isFinite() || card.count() == 0)
    throw OptionError("evaluate: the dataset has " + card.toString() +
                      " elements; evaluate a finite, non-empty dataset (use "
                      "take())");
  const std::size_t steps = card.count();
  const auto spe = static_cast<unsigned>(
      detail::largestDivisorAtMost(steps, c.options.stepsPerExecution));
  const std::string key =
      "eval " + spec.toString() + " x" + std::to_string(spe);
  ir::Module m = evaluationModule(spec[0].shape[0], spec[1]);
  session::Session &s = inferenceSession(key, std::move(m), {"x", "y"},
                                         outfeedNames(c.accuracy), spe);
  session::Infeed in(
      c.loss == LossKind::SparseCategorical
          ? withLabelCheck(dataset, outputShape().back(), steps, "evaluate")
          : dataset);
  session::Outfeed out;
  s.connect(in, out);
  RunningMeans means(outfeedNames(c.accuracy));
  const double start = session::nowSeconds();
  for (std::size_t done = 0; done < steps; done += spe) {
    s.run();
    means.add(out.dequeueAll());
  }
  s.engine().writePendingReport();
  if (options.out && options.verbose != Verbosity::Silent)
    *options.out << session::kerasProgressLine(steps, steps,
                                               session::nowSeconds() - start,
                                               means.logs())
                 << '\n'
                 << std::flush;
  return means.logs();
}

data::HostTensor Model::predict(const data::HostTensor &x,
                                std::size_t batchSize) {
  Compiled &c = compiled("predict");
  const Input &in = input();
  if (batchSize == 0)
    throw OptionError("predict: batchSize must be at least 1");
  Shape perExample(x.shape().begin() + (x.rank() ? 1 : 0), x.shape().end());
  if (x.rank() == 0 || perExample != in.shape()) {
    Shape expected{0};
    expected.insert(expected.end(), in.shape().begin(), in.shape().end());
    throw ShapeError("predict: the inputs have shape " +
                     data::shapeString(x.shape()) +
                     " but the model's Input \"" + in.name() + "\" takes " +
                     kerasShape(expected) +
                     "; give one example per row of the first dimension");
  }
  if (x.type() != in.dtype())
    throw TypeError("predict: the inputs are " +
                    std::string(typeName(x.type())) +
                    " but the model's Input \"" + in.name() + "\" takes " +
                    std::string(typeName(in.dtype())) + "; cast them first");
  const std::size_t n = x.dim(0), batches = (n + batchSize - 1) / batchSize;
  const std::size_t exampleBytes = x.numBytes() / std::max<std::size_t>(n, 1);
  Shape padded{batches, batchSize};
  padded.insert(padded.end(), in.shape().begin(), in.shape().end());
  data::HostTensor xs(x.type(), padded); // zeros past the last example
  if (n)
    std::memcpy(xs.data(), x.data(), n * exampleBytes);
  const auto spe = static_cast<unsigned>(
      detail::largestDivisorAtMost(batches, c.options.stepsPerExecution));
  const std::string key =
      "predict " + std::to_string(batchSize) + " x" + std::to_string(spe);
  session::Session &s = inferenceSession(key, predictionModule(batchSize),
                                         {"x"}, {"output"}, spe);
  session::Infeed feed(data::Dataset::fromTensors({std::move(xs)}));
  session::Outfeed out;
  s.connect(feed, out);
  Shape outShape{n};
  const Shape perOut = outputShape();
  outShape.insert(outShape.end(), perOut.begin(), perOut.end());
  data::HostTensor result(FLOAT, outShape);
  auto dst = static_cast<std::byte *>(result.data());
  const std::size_t outBytes = ir::numElements(perOut) * sizeof(float);
  std::size_t written = 0;
  for (std::size_t done = 0; done < batches; done += spe) {
    s.run();
    for (const data::Element &e : out.dequeueAll()) {
      const std::size_t take = std::min(batchSize, n - written);
      std::memcpy(dst + written * outBytes, e[0].data(), take * outBytes);
      written += take;
    }
  }
  return result;
}

session::Checkpoint Model::getReplicaWeights(unsigned replica) {
  Compiled &c = compiled("getReplicaWeights");
  if (!c.train)
    throw ModelError("getReplicaWeights: model \"" + name_ +
                     "\" has no training replicas yet; call fit() or "
                     "prepareTraining() first");
  return c.train->readVariables(c.stepsTaken, replica);
}

session::Checkpoint Model::getWeights() {
  Compiled &c = compiled("getWeights");
  if (c.train)
    return c.train->readVariables(c.stepsTaken);
  if (c.pending)
    return *c.pending;
  // Not trained yet: the initial values, as an inference session holds them.
  ir::Module m = predictionModule(1);
  session::Session &s =
      inferenceSession("predict 1 x1", std::move(m), {"x"}, {"output"}, 1);
  session::Checkpoint ckpt = s.readVariables();
  ckpt.model = name_;
  return ckpt;
}

std::vector<std::string> Model::weightNames() const {
  // The inference module holds exactly the weights: no optimizer state, and
  // dropout is the identity there, so no seed.
  const ir::Module m = predictionModule(1);
  std::vector<std::string> names;
  for (const ir::Variable &v : m.variables())
    names.push_back(m.value(v.value).name);
  return names;
}

void Model::setWeights(const session::Checkpoint &ckpt) {
  Compiled &c = compiled("setWeights");
  // Every weight of the model must be there; optimizer state may not be.
  const ir::Module m = predictionModule(1);
  for (const ir::Variable &v : m.variables()) {
    const ir::ValueInfo &info = m.value(v.value);
    bool found = false;
    for (const auto &[name, t] : ckpt.variables)
      found = found || (name == info.name && t.type() == info.type.dtype &&
                        t.shape() == info.type.shape);
    if (!found)
      throw SerializationError(
          "setWeights: the weights (of model \"" + ckpt.model +
          "\") have no variable \"" + info.name + "\" of type " +
          info.type.toString() + ", which model \"" + name_ +
          "\" needs; give weights saved from a model of the same layers");
  }
  if (c.train) {
    session::Checkpoint now = c.train->readVariables();
    merge(now, ckpt);
    c.train->writeVariables(now, "setWeights");
  } else {
    c.pending = ckpt;
  }
}

double Model::learningRate() const {
  if (!compiled_)
    throw ModelError("learningRate: model \"" + name_ +
                     "\" is not compiled; call compile() with its optimizer "
                     "first");
  return std::visit([](const auto &o) { return o.learningRate; },
                    compiled_->options.optimizer);
}

void Model::setLearningRate(double lr) {
  Compiled &c = compiled("setLearningRate");
  if (!(lr > 0) || !std::isfinite(lr))
    throw OptionError(fmt::format(
        "setLearningRate: the learning rate must be positive and finite, "
        "not {}",
        lr));
  std::visit([&](auto &o) { o.learningRate = lr; }, c.options.optimizer);
  // Later training sessions build it in; the current one takes it now.
  if (c.train)
    c.train->setHyperParameter(passes::kLearningRate, lr);
}

} // namespace tessera::nn
