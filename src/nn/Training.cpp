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

// \p labels: the element's components of sparse labels, each with the
// classes of its output. No labels to check: the dataset as it is.
data::Dataset
withLabelCheck(const data::Dataset &dataset,
               std::vector<std::pair<std::size_t, std::size_t>> labels,
               std::uint64_t perPass, const char *what) {
  if (labels.empty())
    return dataset;
  auto batches = std::make_shared<std::uint64_t>(0);
  return dataset.map([=](data::Element e) {
    const std::uint64_t n = (*batches)++;
    const std::uint64_t batch = perPass ? n % perPass : n;
    for (const auto &[component, classes] : labels) {
      const data::HostTensor &y = e[component];
      if (y.type() == INT)
        checkLabelValues(y.values<std::int32_t>(), classes, batch, what);
      else if (y.type() == UNSIGNED_INT)
        checkLabelValues(y.values<std::uint32_t>(), classes, batch, what);
    }
    return e;
  });
}

// "x", "x1", ... for \p n inputs (kind 'x') or labels ('y').
std::vector<std::string> feedNames(char kind, std::size_t n) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i)
    names.push_back(detail::feedName(kind, i));
  return names;
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
  const std::vector<const Input *> ins = inputLayers();
  const std::size_t outs = outputIndices().size();
  const std::size_t want = ins.size() + (needLabels ? outs : 0);
  if (spec.size() != want) {
    const std::string needs =
        ins.size() == 1 && outs == 1
            ? (needLabels ? "2: (inputs, labels)" : "1: (inputs)")
            : std::to_string(want) + ": " + std::to_string(ins.size()) +
                  " inputs" +
                  (needLabels ? ", then labels for each of its " +
                                    std::to_string(outs) + " outputs"
                              : "");
    throw ShapeError(std::string(what) + ": the dataset's elements have " +
                     std::to_string(spec.size()) + " components " +
                     spec.toString() + " but the model needs " + needs);
  }
  for (std::size_t i = 0; i < spec.size(); ++i)
    if (!spec[i].shape.empty() && spec[i].shape[0] == data::anyDim)
      throw ShapeError(std::string(what) + ": batches of " + spec.describe(i) +
                       " vary in size (" + data::shapeString(spec[i].shape) +
                       "); batch the dataset with dropRemainder = true so "
                       "every step has the same shape");
  for (std::size_t k = 0; k < ins.size(); ++k)
    checkInput(spec, k, *ins[k], what);
  const data::ComponentSpec &x = spec[0];
  for (std::size_t k = 1; k < spec.size(); ++k)
    if (spec[k].shape.empty() || spec[k].shape[0] != x.shape[0])
      throw ShapeError(std::string(what) + ": " +
                       (k < ins.size() ? "the inputs (" : "the labels (") +
                       spec.describe(k) + ") have shape " +
                       data::shapeString(spec[k].shape) +
                       " but the batch has " + std::to_string(x.shape[0]) +
                       " examples; batch inputs and labels together");
}

void Model::checkInput(const data::ElementSpec &spec, std::size_t k,
                       const Input &in, const char *what) const {
  const data::ComponentSpec &x = spec[k];
  Shape expected{x.shape.empty() ? 0 : x.shape[0]};
  expected.insert(expected.end(), in.shape().begin(), in.shape().end());
  if (x.shape != expected)
    throw ShapeError(std::string(what) + ": the dataset's inputs (" +
                     spec.describe(k) + ") have shape " +
                     data::shapeString(x.shape) + " but the model's Input \"" +
                     in.name() + "\" takes " + kerasShape(expected) +
                     "; batch the dataset, reshape it with map() or change "
                     "the Input shape");
  if (x.type != in.dtype())
    throw TypeError(std::string(what) + ": the dataset's inputs (" +
                    spec.describe(k) + ") are " + describeSpec(x) +
                    " but the model's Input \"" + in.name() + "\" takes " +
                    std::string(typeName(in.dtype())) +
                    "; convert them with Dataset::cast(" + std::to_string(k) +
                    ", " + std::string(typeName(in.dtype())) + ")");
}

std::vector<std::pair<std::size_t, std::size_t>> Model::sparseLabels() const {
  const Compiled &c = *compiled_;
  const std::size_t first = inputIndices().size();
  const std::vector<Shape> shapes = outputShapes();
  std::vector<std::pair<std::size_t, std::size_t>> labels;
  for (std::size_t i = 0; i < c.losses.size(); ++i)
    if (c.losses[i] == LossKind::SparseCategorical)
      labels.emplace_back(first + i, shapes[i].back());
  return labels;
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
  ir::Module m = trainingModule(spec);
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
  std::vector<std::string> outfeeds = c.logNames;
  std::vector<detail::OutfeedTap> taps = detail::planOutfeeds(
      m, layers_, c.options.gradientOutfeed, accumulation.count, false);
  for (std::string &o : detail::streamedOutputs(taps))
    outfeeds.push_back(std::move(o));
  auto s = std::make_unique<session::Session>(
      std::move(m), std::move(config),
      session::RunSpec{c.options.config.syntheticData
                           ? std::vector<std::string>{}
                           : elementFeeds(),
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
  if (fitting_)
    throw ModelError("model \"" + name_ +
                     "\": fit() called while fit() runs (from a callback); "
                     "call it after fit() returns");
  fitting_ = true;
  struct Done {
    bool &flag;
    ~Done() { flag = false; }
  } done{fitting_};
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
    feed = withLabelCheck(feed, sparseLabels(),
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
    RunningMeans means(c.logNames);
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
  stats_.estimatedHostCyclesPerRun = s.estimatedHostCyclesPerRun();
  stats_.estimatedHostInclusiveCyclesPerRun =
      s.estimatedHostInclusiveCyclesPerRun();
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
  // Moved, not listed in braces: an initializer_list would copy them.
  std::vector<data::HostTensor> xs, ys;
  xs.push_back(std::move(x));
  ys.push_back(std::move(y));
  return fit(std::move(xs), std::move(ys), batchSize, options, shuffle);
}

History Model::fit(std::vector<data::HostTensor> xs,
                   std::vector<data::HostTensor> ys, std::size_t batchSize,
                   const FitOptions &options, bool shuffle) {
  compiled("fit");
  const std::size_t n = xs.empty() || xs[0].rank() == 0 ? 0 : xs[0].dim(0);
  if (batchSize == 0 || n < batchSize)
    throw OptionError("fit: batchSize must be between 1 and the number of "
                      "examples (" +
                      std::to_string(n) + "), got " +
                      std::to_string(batchSize));
  std::vector<data::HostTensor> tensors = std::move(xs);
  for (data::HostTensor &y : ys)
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
  ir::Module m = evaluationModule(spec);
  session::Session &s =
      inferenceSession(key, std::move(m), elementFeeds(), c.logNames, spe);
  session::Infeed in(
      withLabelCheck(dataset, sparseLabels(), steps, "evaluate"));
  session::Outfeed out;
  s.connect(in, out);
  RunningMeans means(c.logNames);
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

std::vector<std::string> Model::elementFeeds(bool labels) const {
  std::vector<std::string> names = feedNames('x', inputIndices().size());
  if (labels)
    for (const std::string &y : feedNames('y', outputIndices().size()))
      names.push_back(y);
  return names;
}

data::HostTensor Model::predict(const data::HostTensor &x,
                                std::size_t batchSize) {
  if (outputIndices().size() != 1)
    throw ModelError("predict: model \"" + name_ + "\" has " +
                     std::to_string(outputIndices().size()) +
                     " outputs; call the predict() that returns one tensor "
                     "per output");
  return std::move(predictPointers({&x}, batchSize)[0]);
}

std::vector<data::HostTensor>
Model::predict(const std::vector<data::HostTensor> &xs, std::size_t batchSize) {
  std::vector<const data::HostTensor *> pointers;
  for (const data::HostTensor &x : xs)
    pointers.push_back(&x);
  return predictPointers(pointers, batchSize);
}

void Model::checkPredictInput(const data::HostTensor &x, const Input &in,
                              std::size_t k) const {
  const std::string which =
      inputIndices().size() == 1 ? "the inputs" : "input " + std::to_string(k);
  Shape perExample(x.shape().begin() + (x.rank() ? 1 : 0), x.shape().end());
  if (x.rank() == 0 || perExample != in.shape()) {
    Shape expected{0};
    expected.insert(expected.end(), in.shape().begin(), in.shape().end());
    throw ShapeError("predict: " + which + " have shape " +
                     data::shapeString(x.shape()) +
                     " but the model's Input \"" + in.name() + "\" takes " +
                     kerasShape(expected) +
                     "; give one example per row of the first dimension");
  }
  if (x.type() != in.dtype())
    throw TypeError("predict: " + which + " are " +
                    std::string(typeName(x.type())) +
                    " but the model's Input \"" + in.name() + "\" takes " +
                    std::string(typeName(in.dtype())) + "; cast them first");
}

// Pointers, so that predict(x) does not copy x into a vector.
std::vector<data::HostTensor>
Model::predictPointers(const std::vector<const data::HostTensor *> &xs,
                       std::size_t batchSize) {
  Compiled &c = compiled("predict");
  const std::vector<const Input *> ins = inputLayers();
  if (batchSize == 0)
    throw OptionError("predict: batchSize must be at least 1");
  if (xs.size() != ins.size())
    throw ShapeError("predict: model \"" + name_ + "\" has " +
                     std::to_string(ins.size()) + " inputs but " +
                     std::to_string(xs.size()) +
                     " tensors were given; give one per input");
  for (std::size_t k = 0; k < xs.size(); ++k)
    checkPredictInput(*xs[k], *ins[k], k);
  const std::size_t n = xs[0]->dim(0),
                    batches = (n + batchSize - 1) / batchSize;
  std::vector<data::HostTensor> padded;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    if (xs[k]->dim(0) != n)
      throw ShapeError("predict: input " + std::to_string(k) + " has " +
                       std::to_string(xs[k]->dim(0)) +
                       " examples but input 0 " + "has " + std::to_string(n) +
                       "; give each input alike");
    Shape shape{batches, batchSize};
    shape.insert(shape.end(), ins[k]->shape().begin(), ins[k]->shape().end());
    padded.emplace_back(xs[k]->type(), shape); // zeros past the last example
    if (n)
      std::memcpy(padded.back().data(), xs[k]->data(), xs[k]->numBytes());
  }
  const auto spe = static_cast<unsigned>(
      detail::largestDivisorAtMost(batches, c.options.stepsPerExecution));
  const std::string key =
      "predict " + std::to_string(batchSize) + " x" + std::to_string(spe);
  session::Session &s =
      inferenceSession(key, predictionModule(batchSize), elementFeeds(false),
                       predictionOutputs(), spe);
  session::Infeed feed(data::Dataset::fromTensors(std::move(padded)));
  session::Outfeed out;
  s.connect(feed, out);
  std::vector<data::HostTensor> results;
  std::vector<std::size_t> outBytes;
  for (const Shape &perOut : outputShapes()) {
    Shape outShape{n};
    outShape.insert(outShape.end(), perOut.begin(), perOut.end());
    results.emplace_back(FLOAT, outShape);
    outBytes.push_back(ir::numElements(perOut) * sizeof(float));
  }
  std::size_t written = 0;
  for (std::size_t done = 0; done < batches; done += spe) {
    s.run();
    for (const data::Element &e : out.dequeueAll()) {
      const std::size_t take = std::min(batchSize, n - written);
      for (std::size_t i = 0; i < results.size(); ++i)
        std::memcpy(static_cast<std::byte *>(results[i].data()) +
                        written * outBytes[i],
                    e[i].data(), take * outBytes[i]);
      written += take;
    }
  }
  return results;
}

std::vector<std::string> Model::predictionOutputs() const {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < outputIndices().size(); ++i)
    names.push_back(i == 0 ? "output" : "output" + std::to_string(i));
  return names;
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
      inferenceSession("predict 1 x1", std::move(m), elementFeeds(false),
                       predictionOutputs(), 1);
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
