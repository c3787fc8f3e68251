// Sequential models: naming layers, building the forward, training,
// evaluation and prediction modules, summary() and compile().
#include "ModelInternal.hpp"
#include "NnInternal.hpp"

#include "tessera/passes/TrainingPasses.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <ostream>
#include <sstream>

namespace tessera::nn {

using detail::describeLayer;
using detail::kerasShape;

double logValue(const Logs &logs, const std::string &name) {
  std::string names;
  for (const auto &[n, v] : logs) {
    if (n == name)
      return v;
    names += (names.empty() ? "" : ", ") + n;
  }
  throw OptionError("no log named \"" + name + "\"; the logs hold " + names);
}

double FitStats::ipuSecondsPerStep() const {
  if (clockHz <= 0 || stepsPerExecution == 0)
    return 0;
  return double(estimatedCyclesPerRun) / clockHz / stepsPerExecution;
}

double FitStats::hostInclusiveSecondsPerStep() const {
  if (clockHz <= 0 || stepsPerExecution == 0)
    return 0;
  return double(estimatedHostInclusiveCyclesPerRun) / clockHz /
         stepsPerExecution;
}

std::size_t detail::largestDivisorAtMost(std::size_t steps, std::size_t limit) {
  for (std::size_t d = std::min(steps, std::max<std::size_t>(limit, 1)); d > 1;
       --d)
    if (steps % d == 0)
      return d;
  return 1;
}

Model::Model(std::string name, std::uint64_t seed, bool listInput)
    : name_(std::move(name)), seed_(seed), listInput_(listInput) {}

Model::~Model() = default;
Model::Model(Model &&) noexcept = default;
Model &Model::operator=(Model &&) noexcept = default;

void Model::append(LayerRef layer, std::vector<std::size_t> inputs) {
  if (compiled_)
    throw ModelError("model \"" + name_ +
                     "\": add layers before compile(), not after");
  const bool isInput = dynamic_cast<const Input *>(layer.get().get());
  // A model of several inputs lists them all first.
  const bool onlyInputs =
      std::all_of(layers_.begin(), layers_.end(), [](const LayerRef &l) {
        return dynamic_cast<const Input *>(l.get().get()) != nullptr;
      });
  if (isInput && !(onlyInputs && (layers_.empty() || !inputs_.empty())))
    throw ModelError("model \"" + name_ +
                     "\": an Input must be the first "
                     "layer, but the model already has " +
                     std::to_string(layers_.size()) + " layers");
  if (layer->name().empty()) {
    // Keras' names: dense, dense_1, dense_2, ...
    const std::string base = layer->defaultName();
    std::size_t n = 0;
    for (const LayerRef &l : layers_)
      n += l->defaultName() == base;
    layer->setName(n == 0 ? base : base + "_" + std::to_string(n));
  }
  for (const LayerRef &l : layers_)
    if (l->name() == layer->name())
      throw ModelError("model \"" + name_ + "\": two layers are named \"" +
                       layer->name() + "\"; give each layer its own name");
  layers_.push_back(std::move(layer));
  inputsOf_.push_back(std::move(inputs));
}

Sequential::Sequential(std::vector<LayerRef> layers, std::string name,
                       std::uint64_t seed)
    : Model(std::move(name), seed, false) {
  for (LayerRef &l : layers)
    add(std::move(l));
}

void Sequential::add(LayerRef layer) {
  std::vector<std::size_t> inputs;
  if (!layers_.empty())
    inputs.push_back(layers_.size() - 1);
  append(std::move(layer), std::move(inputs));
}

const Input &Model::input() const {
  const Input *in =
      layers_.empty() ? nullptr : dynamic_cast<const Input *>(&*layers_[0]);
  if (!in)
    throw ModelError("model \"" + name_ +
                     "\" has no Input; start its layers with an "
                     "nn::Input such as nn::Input({28, 28, 1})");
  return *in;
}

std::vector<std::size_t> Model::inputIndices() const {
  if (!inputs_.empty())
    return inputs_;
  (void)input();
  return {0};
}

std::vector<std::size_t> Model::outputIndices() const {
  if (!outputs_.empty())
    return outputs_;
  (void)input();
  return {layers_.size() - 1};
}

std::vector<const Input *> Model::inputLayers() const {
  std::vector<const Input *> ins;
  for (std::size_t i : inputIndices())
    ins.push_back(static_cast<const Input *>(&*layers_[i]));
  return ins;
}

std::vector<std::string> Model::outputNames() const {
  std::vector<std::string> names;
  for (std::size_t i : outputIndices())
    names.push_back(layers_[i]->name());
  return names;
}

std::string detail::feedName(char kind, std::size_t i) {
  return i == 0 ? std::string(1, kind) : kind + std::to_string(i);
}

namespace {

bool isNumber(const std::string &text) {
  char *end = nullptr;
  (void)std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

// A value made once on the device and never fed (TF_POPLAR_FLAGS'
// --use_synthetic_data): a non-trainable variable "synthetic/<name>" filled
// by \p rule (CompileOptions::syntheticDataInitializer). Integers are
// float values in [0, upper) truncated, so they are valid class ids.
ir::Value syntheticValue(ir::Builder &b, const std::string &name, Type dtype,
                         const Shape &shape, const std::string &rule,
                         std::size_t upper, std::uint64_t seed) {
  const bool integer = dtype != FLOAT && dtype != HALF;
  const double top = double(upper) - 0.5; // truncates to upper - 1 at most
  ir::Initialiser init = ir::init::zeros();
  if (rule == "random" || rule == "uniform" || rule == "normal") {
    init = integer            ? ir::init::uniform(0, top, seed)
           : rule == "normal" ? ir::init::normal(0, 1, seed)
                              : ir::init::uniform(0, 1, seed);
  } else if (!rule.empty()) {
    double c = std::strtod(rule.c_str(), nullptr);
    if (integer)
      c = std::clamp(std::floor(c), 0.0, double(upper - 1));
    init = ir::init::constant(c);
  }
  ir::Value v = b.variable("synthetic/" + name, shape, init, FLOAT,
                           /*trainable=*/false);
  return integer ? ir::cast(v, dtype) : v;
}

// \p a in \p compute when it is floating point (Keras' autocasting of a
// layer's inputs); integer values (token ids) stay as they are.
Activations autocast(const Activations &a, Type compute) {
  const Type t = a.value.dtype();
  if (t == compute || (t != FLOAT && t != HALF))
    return a;
  return {ir::cast(a.value, compute), a.channelsFirst};
}

} // namespace

std::optional<Type> Model::partialsOf(const Layer &layer) const {
  const Type compute = layer.dtypePolicy().computeDtype();
  if (const std::optional<Type> &p = layer.partialsType()) {
    if (*p == HALF && compute != HALF)
      throw TypeError(detail::describeLayer(layer) +
                      ": half partials need half inputs, but the layer's "
                      "dtype policy \"" +
                      layer.dtypePolicy().name() +
                      "\" computes in float; give it the \"mixed_float16\" "
                      "or \"float16\" policy, or keep float partials");
    return p;
  }
  // The model's partials type is for the layers that compute in half: the
  // ops accumulate float inputs in float only.
  if (compiled_ && compiled_->options.partialsType && compute == HALF)
    return compiled_->options.partialsType;
  return std::nullopt;
}

Model::Forward Model::buildForward(ir::Module &m, BuildMode mode,
                                   std::size_t batch,
                                   const std::string *synthetic,
                                   bool staged) const {
  const std::vector<const Input *> ins = inputLayers();
  ir::Builder b(m);
  BuildContext ctx(b, mode, seed_);
  Forward f;
  std::vector<Activations> values;
  for (std::size_t k = 0; k < ins.size(); ++k) {
    const Input &in = *ins[k];
    Shape xShape{batch};
    xShape.insert(xShape.end(), in.shape().begin(), in.shape().end());
    const std::string name = detail::feedName('x', k);
    f.xs.push_back(synthetic
                       ? syntheticValue(b, name, in.dtype(), xShape, *synthetic,
                                        2, detail::mixSeed(seed_, 0x5e7a + k))
                       : b.input(name, in.dtype(), xShape));
    values.push_back(autocast(Activations{f.xs.back(), false},
                              in.dtypePolicy().computeDtype()));
    f.shapes.push_back(xShape);
    f.params.emplace_back(0, 0);
  }
  // Left open after the loop: the output's layout change and the loss
  // belong to the last stage.
  std::optional<ir::StageScope> stage;
  for (std::size_t i = ins.size(); i < layers_.size(); ++i) {
    if (staged) {
      stage.reset();
      stage.emplace(b, stages_[i - 1]);
    }
    const Layer &layer = *layers_[i];
    ctx.beginLayer(i, layer.name());
    const Policy &policy = layer.dtypePolicy();
    ctx.setPrecision(policy.computeDtype(), policy.variableDtype(),
                     partialsOf(layer));
    // The layer's ops are named after it ("dense_1/matmul"), so profiles
    // and the IR text show which layer made each.
    ir::NameScope scope(b, layer.name());
    std::vector<Activations> ins;
    for (std::size_t j : inputsOf_[i])
      ins.push_back(autocast(values[j], policy.computeDtype()));
    values.push_back(layers_[i]->callMany(ctx, ins));
    f.shapes.push_back(values.back().logicalShape());
    f.params.push_back(ctx.paramCounts(i));
  }
  // Losses, metrics and predictions are float whatever the layers compute
  // in (Keras casts a half model output for its loss likewise).
  for (std::size_t i : outputIndices()) {
    const ir::Value out = ctx.channelsLast(values[i]).value;
    const std::optional<ir::Value> logits = ctx.logitsOf(out);
    f.outputs.push_back(out.dtype() == HALF ? ir::cast(out, FLOAT) : out);
    f.logits.push_back(logits && logits->dtype() == HALF
                           ? std::optional(ir::cast(*logits, FLOAT))
                           : logits);
  }
  f.updates = ctx.updates();
  return f;
}

namespace {

struct LossValues {
  ir::Value loss;
  std::optional<ir::Value> accuracy;
};

void checkLabels(const data::ComponentSpec &y, const Shape &out, bool integer,
                 const char *loss) {
  const std::string got =
      std::string(typeName(y.type)) + " " + data::shapeString(y.shape);
  if (integer) {
    if (y.type != INT && y.type != UNSIGNED_INT)
      throw TypeError(std::string(loss) +
                      ": labels must be int class ids but "
                      "they are " +
                      got + "; cast them with Dataset::cast(1, INT)");
    if (out.size() != 2 || y.shape.empty() || y.shape[0] != out[0] ||
        ir::numElements(y.shape) != out[0])
      throw ShapeError(std::string(loss) + ": labels are " + got +
                       " but the model's outputs are " + kerasShape(out) +
                       "; give one class id per example ([batch] or "
                       "[batch, 1]) and end the model with Dense(classes)");
    return;
  }
  if (y.type != FLOAT)
    throw TypeError(std::string(loss) +
                    ": targets must be float but they "
                    "are " +
                    got + "; cast them with Dataset::cast(1, FLOAT)");
  if (y.shape != out)
    throw ShapeError(std::string(loss) + ": targets are " + got +
                     " but the model's outputs are " + data::shapeString(out) +
                     "; they must match");
}

LossValues lossValues(LossKind kind, bool fromLogits, bool wantAccuracy,
                      const ir::Value &out, std::optional<ir::Value> logits,
                      ir::Value y) {
  LossValues r;
  const Shape &s = out.shape();
  if (kind == LossKind::SparseCategorical) {
    ir::Value labels = y.rank() == 1 ? y : ir::reshape(y, {s[0]});
    // softmax(log p) = p for probabilities, so one stable op serves both;
    // clipping at 1e-7 is Keras' epsilon.
    ir::Value z = logits       ? *logits
                  : fromLogits ? out
                               : ir::log(ir::max(out, 1e-7));
    r.loss = ir::reduceMean(ir::sparseSoftmaxCrossEntropy(z, labels));
    if (wantAccuracy)
      r.accuracy = ir::accuracy(out, labels);
  } else if (kind == LossKind::Categorical) {
    if (logits || fromLogits) {
      ir::Value z = logits ? *logits : out;
      r.loss = ir::reduceMean(ir::reduceSum(-(y * ir::logSoftmax(z)), {1}));
    } else {
      r.loss =
          ir::reduceMean(ir::categoricalCrossEntropy(ir::max(out, 1e-7), y));
    }
    if (wantAccuracy)
      r.accuracy = ir::accuracy(out, ir::argmax(y));
  } else {
    r.loss = ir::reduceMean(ir::meanSquaredError(out, y));
  }
  return r;
}

// What the loss of a model with its outputs needs from compile().
struct LossPlan {
  std::vector<LossKind> kinds;
  std::vector<double> weights;
  std::vector<std::string> lossNames, outputNames;
  bool fromLogits = false;
  bool accuracy = false;
};

// The labels inputs ("y", "y1", ...: spec[first + i] for output i), each
// output's loss and metric and their outputs: "loss" (which autodiff reads)
// and "accuracy", and with several outputs "<output>_loss" and
// "<output>_accuracy" too, the loss being their weighted sum. Shared by the
// training and evaluation modules.
void addLosses(ir::Builder &b, const std::vector<ir::Value> &outs,
               const std::vector<std::optional<ir::Value>> &logits,
               const data::ElementSpec &spec, std::size_t first,
               const LossPlan &plan, const std::string *synthetic = nullptr,
               std::uint64_t seed = 0) {
  const bool several = outs.size() > 1;
  std::optional<ir::Value> total;
  std::vector<std::pair<std::string, ir::Value>> named;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const data::ComponentSpec &labels = spec[first + i];
    const LossKind kind = plan.kinds[i];
    const std::string what =
        several ? plan.lossNames[i] + " (output \"" + plan.outputNames[i] +
                      "\", labels component " + std::to_string(first + i) + ")"
                : plan.lossNames[i];
    checkLabels(labels, outs[i].shape(), kind == LossKind::SparseCategorical,
                what.c_str());
    const std::string yName = detail::feedName('y', i);
    ir::Value y =
        synthetic ? syntheticValue(b, yName, labels.type, labels.shape,
                                   *synthetic, outs[i].shape().back(), seed + i)
                  : b.input(yName, labels.type, labels.shape);
    LossValues l;
    {
      ir::NameScope scope(b, several ? plan.outputNames[i] + "_loss" : "loss");
      l = lossValues(kind, plan.fromLogits,
                     plan.accuracy && kind != LossKind::MeanSquared, outs[i],
                     logits[i], y);
    }
    const std::string prefix = several ? plan.outputNames[i] + "_" : "";
    if (several)
      named.emplace_back(prefix + "loss", l.loss);
    if (l.accuracy)
      named.emplace_back(prefix + "accuracy", *l.accuracy);
    const ir::Value weighted =
        plan.weights[i] == 1.0 ? l.loss : l.loss * plan.weights[i];
    total = total ? *total + weighted : weighted;
  }
  b.output("loss", *total);
  // Keras' order: every output's loss, then every output's metrics.
  std::stable_partition(named.begin(), named.end(), [](const auto &p) {
    return p.first.ends_with("_loss");
  });
  for (const auto &[name, value] : named)
    b.output(name, value);
}

} // namespace

ir::Module Model::trainingModule(std::size_t batchSize,
                                 const data::ComponentSpec &labels) const {
  if (outputIndices().size() != 1)
    throw ModelError("trainingModule: model \"" + name_ + "\" has " +
                     std::to_string(outputIndices().size()) +
                     " outputs; give the spec of a whole element");
  std::vector<data::ComponentSpec> spec;
  for (const Input *in : inputLayers()) {
    Shape shape{batchSize};
    shape.insert(shape.end(), in->shape().begin(), in->shape().end());
    spec.push_back({in->name(), in->dtype(), shape});
  }
  spec.push_back(labels);
  return trainingModule(data::ElementSpec(std::move(spec)));
}

namespace {

LossPlan lossPlan(const std::vector<LossKind> &kinds,
                  const std::vector<double> &weights,
                  const CompileOptions &options, bool accuracy,
                  std::vector<std::string> outputNames) {
  LossPlan plan{
      kinds, weights, {}, std::move(outputNames), options.fromLogits, accuracy};
  for (std::size_t i = 0; i < kinds.size(); ++i)
    plan.lossNames.push_back(options.losses.empty() ? options.loss
                                                    : options.losses[i]);
  return plan;
}

} // namespace

ir::Module Model::trainingModule(const data::ElementSpec &spec) const {
  if (!compiled_)
    throw ModelError("model \"" + name_ +
                     "\": call compile() before building its training module");
  ir::Module m(name_ + "_train");
  ir::Builder b(m);
  const Compiled &c = *compiled_;
  const std::string *synthetic = c.options.config.syntheticData
                                     ? &c.options.syntheticDataInitializer
                                     : nullptr;
  const auto [accumulation, stages] = trainingLayout(c.options);
  const std::size_t batchSize = spec[0].shape[0];
  Forward f =
      buildForward(m, BuildMode::Training, batchSize, synthetic, stages > 0);
  {
    std::optional<ir::StageScope> last;
    if (stages > 0)
      last.emplace(b, stages - 1);
    // addLosses names the loss as the output "loss", which autodiff reads.
    addLosses(
        b, f.outputs, f.logits, spec, f.xs.size(),
        lossPlan(c.losses, c.lossWeights, c.options, c.accuracy, outputNames()),
        synthetic, detail::mixSeed(seed_, 0x5e7b));
  }
  passes::TrainingPassOptions o;
  o.accumulation = accumulation;
  o.recompute = stages > 0 && pipelining_->recompute;
  o.training.optimizer = c.options.optimizer;
  setLossScaling(o.training, c.options);
  // Replicas average their gradients before the update, so they take the
  // same step and stay identical (data parallelism).
  o.training.crossReplicaMean = c.options.config.replicationFactor > 1;
  {
    ir::NameScope scope(b, "optimizer");
    passes::runTrainingPasses(m, o);
  }
  for (const auto &[var, next] : f.updates)
    b.update(var, next);
  detail::addOutfeeds(m, detail::planOutfeeds(m, layers_,
                                              c.options.gradientOutfeed,
                                              accumulation.count, true));
  return m;
}

ir::Module Model::evaluationModule(const data::ElementSpec &spec) const {
  ir::Module m(name_ + "_eval");
  ir::Builder b(m);
  Forward f = buildForward(m, BuildMode::Inference, spec[0].shape[0]);
  const Compiled &c = *compiled_;
  addLosses(
      b, f.outputs, f.logits, spec, f.xs.size(),
      lossPlan(c.losses, c.lossWeights, c.options, c.accuracy, outputNames()));
  return m;
}

ir::Module Model::predictionModule(std::size_t batchSize) const {
  ir::Module m(name_ + "_predict");
  Forward f = buildForward(m, BuildMode::Inference, batchSize);
  ir::Builder b(m);
  for (std::size_t i = 0; i < f.outputs.size(); ++i)
    b.output(i == 0 ? "output" : "output" + std::to_string(i), f.outputs[i]);
  return m;
}

// ---- summary --------------------------------------------------------------

namespace {

// Keras' print_row: each field cut to its column, the column's last
// character always a space once another field follows.
std::string row(const std::vector<std::string> &fields) {
  // A fourth column, the pipeline stage, when the model has one.
  static constexpr std::size_t kPositions[] = {29, 55, 65, 75};
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i > 0)
      line = line.substr(0, line.size() - 1) + " ";
    line += fields[i];
    line = line.substr(0, kPositions[i]);
    line += std::string(kPositions[i] - line.size(), ' ');
  }
  return line;
}

std::string withCommas(std::size_t n) {
  std::string s = std::to_string(n);
  for (int i = int(s.size()) - 3; i > 0; i -= 3)
    s.insert(std::size_t(i), ",");
  return s;
}

} // namespace

std::string Model::summary() const {
  ir::Module m(name_ + "_summary");
  const Forward f = buildForward(m, BuildMode::Inference, 1);
  std::ostringstream out;
  // An assignment made before layers were added shows only once it fits.
  const bool staged = !stages_.empty() && stages_.size() + 1 == layers_.size();
  const std::size_t width = staged ? 75 : 65;
  const std::string rule(width, '_'), doubleRule(width, '=');
  out << "Model: \"" << name_ << "\"\n" << rule << '\n';
  std::vector<std::string> header{"Layer (type)", "Output Shape", "Param #"};
  if (staged)
    header.push_back("Stage");
  out << row(header) << '\n' << doubleRule << '\n';
  std::size_t trainable = 0, other = 0;
  for (std::size_t i = listInput_ ? 0 : 1; i < layers_.size(); ++i) {
    const auto [t, o] = f.params[i];
    trainable += t;
    other += o;
    // Keras prints an InputLayer's shape as a list of shapes.
    const bool isInput = dynamic_cast<const Input *>(&*layers_[i]) != nullptr;
    const std::string shape =
        isInput ? "[" + kerasShape(f.shapes[i]) + "]" : kerasShape(f.shapes[i]);
    std::vector<std::string> fields{describeLayer(*layers_[i]), shape,
                                    std::to_string(t + o)};
    if (staged)
      fields.push_back(i == 0 ? "0" : std::to_string(stages_[i - 1]));
    out << row(fields) << '\n'
        << (i + 1 == layers_.size() ? doubleRule : rule) << '\n';
  }
  if (layers_.size() <= 1 && !listInput_)
    out << doubleRule << '\n';
  out << "Total params: " << withCommas(trainable + other) << '\n'
      << "Trainable params: " << withCommas(trainable) << '\n'
      << "Non-trainable params: " << withCommas(other) << '\n'
      << rule << '\n';
  return out.str();
}

void Model::summary(std::ostream &out) const { out << summary(); }

std::pair<std::size_t, std::size_t> Model::countParams() const {
  ir::Module m(name_ + "_count");
  const Forward f = buildForward(m, BuildMode::Inference, 1);
  std::pair<std::size_t, std::size_t> total{0, 0};
  for (const auto &[t, o] : f.params) {
    total.first += t;
    total.second += o;
  }
  return total;
}

Shape Model::outputShape() const { return outputShapes()[0]; }

std::vector<Shape> Model::outputShapes() const {
  ir::Module m(name_ + "_shape");
  std::vector<Shape> shapes;
  for (const ir::Value &out :
       buildForward(m, BuildMode::Inference, 1).outputs) {
    const Shape &s = out.shape();
    shapes.emplace_back(s.begin() + 1, s.end());
  }
  return shapes;
}

// ---- compile --------------------------------------------------------------

namespace {

LossKind lossKind(const std::string &name) {
  if (name == "sparse_categorical_crossentropy")
    return LossKind::SparseCategorical;
  if (name == "categorical_crossentropy")
    return LossKind::Categorical;
  if (name == "mean_squared_error" || name == "mse")
    return LossKind::MeanSquared;
  throw OptionError("compile: unknown loss \"" + name +
                    "\"; use sparse_categorical_crossentropy, "
                    "categorical_crossentropy or mean_squared_error");
}

} // namespace

void Model::compileLosses(Compiled &c, const CompileOptions &options) const {
  const std::vector<std::string> outs = outputNames();
  const auto count = [](std::size_t n) { return std::to_string(n); };
  if (!options.losses.empty() && options.losses.size() != outs.size())
    throw OptionError("compile: " + count(options.losses.size()) +
                      " losses for the " + count(outs.size()) +
                      " outputs of model \"" + name_ +
                      "\"; give one loss per output, or one for all");
  if (!options.lossWeights.empty() && options.lossWeights.size() != outs.size())
    throw OptionError("compile: " + count(options.lossWeights.size()) +
                      " loss weights for the " + count(outs.size()) +
                      " outputs of model \"" + name_ +
                      "\"; give one weight per output");
  c.logNames = {"loss"};
  std::vector<std::string> metricNames;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const std::string &name =
        options.losses.empty() ? options.loss : options.losses[i];
    c.losses.push_back(lossKind(name));
    c.lossWeights.push_back(
        options.lossWeights.empty() ? 1.0 : options.lossWeights[i]);
    const std::string prefix = outs.size() > 1 ? outs[i] + "_" : "";
    if (outs.size() > 1)
      c.logNames.push_back(prefix + "loss");
    if (!options.metrics.empty() && c.losses[i] != LossKind::MeanSquared)
      metricNames.push_back(prefix + "accuracy");
  }
  for (const std::string &metric : options.metrics) {
    if (metric != "accuracy" && metric != "acc")
      throw OptionError("compile: unknown metric \"" + metric +
                        "\"; the metric there is is \"accuracy\"");
    if (metricNames.empty())
      throw OptionError("compile: the accuracy metric needs a "
                        "cross-entropy loss, not \"" +
                        options.loss + "\"");
    c.accuracy = true;
  }
  c.logNames.insert(c.logNames.end(), metricNames.begin(), metricNames.end());
}

void Model::compile(CompileOptions options) {
  if (fitting_)
    throw ModelError("model \"" + name_ +
                     "\": compile() called while fit() runs (from a "
                     "callback); compile before fit() or after it returns "
                     "(setLearningRate changes the rate during fit)");
  auto c = std::make_unique<Compiled>();
  compileLosses(*c, options);
  if (options.stepsPerExecution == 0)
    throw OptionError("compile: stepsPerExecution must be at least 1");
  const std::string &rule = options.syntheticDataInitializer;
  if (!rule.empty() && rule != "random" && rule != "uniform" &&
      rule != "normal" && !isNumber(rule))
    throw OptionError("compile: unknown synthetic data initializer \"" + rule +
                      "\"; use random, uniform, normal or a number such as "
                      "0.5 (TF_POPLAR_FLAGS=--synthetic_data_initializer=...)");
  checkPrecision(options);
  // Layers that do not fit together fail here, as in Keras, not in fit.
  ir::Module m(name_ + "_check");
  (void)buildForward(m, BuildMode::Training, 1);
  // Recompiling keeps the weights trained so far.
  if (compiled_ && (compiled_->train || compiled_->pending))
    c->pending = compiled_->train ? compiled_->train->readVariables()
                                  : compiled_->pending;
  c->options = std::move(options);
  compiled_ = std::move(c);
}

// ---- Precision --------------------------------------------------------------

void Model::checkPrecision(const CompileOptions &options) const {
  if (options.partialsType && *options.partialsType != FLOAT &&
      *options.partialsType != HALF)
    throw TypeError("compile: the partials type must be float or half, not " +
                    std::string(ir::dtypeName(*options.partialsType)));
  if (const auto &s = options.lossScale) {
    if (!(s->initialScale > 0 && std::isfinite(s->initialScale)))
      throw OptionError(fmt::format(
          "compile: the {} loss scale must be positive and finite, not {}; "
          "Keras starts dynamic scaling at 32768 (2^15), and a power of 2 "
          "scales exactly",
          s->dynamic ? "initial dynamic" : "static", s->initialScale));
    if (s->dynamic && s->growthSteps == 0)
      throw OptionError("compile: dynamic loss scaling needs growthSteps >= "
                        "1 (the finite steps before the scale doubles; "
                        "Keras uses 2000), not 0");
  }
}

std::optional<LossScaleOptions>
Model::lossScaleOf(const CompileOptions &options) const {
  if (options.lossScale)
    return options.lossScale;
  for (const LayerRef &l : layers_)
    if (l->dtypePolicy().computeDtype() == HALF)
      return LossScaleOptions{};
  return std::nullopt;
}

void Model::setLossScaling(passes::TrainingOptions &t,
                           const CompileOptions &options) const {
  const std::optional<LossScaleOptions> s = lossScaleOf(options);
  if (!s)
    return;
  if (s->dynamic)
    t.dynamicLossScaling =
        passes::DynamicLossScaling{s->initialScale, s->growthSteps};
  else
    t.lossScaling = s->initialScale;
}

double Model::lossScale() {
  const Compiled &c = compiled("lossScale");
  const std::optional<LossScaleOptions> s = lossScaleOf(c.options);
  if (!s)
    return 1;
  if (!s->dynamic)
    return s->initialScale;
  if (c.train)
    return c.train->readVariable(passes::kLossScaleVariable).values<float>()[0];
  if (c.pending)
    for (const auto &[name, t] : c.pending->variables)
      if (name == passes::kLossScaleVariable)
        return t.values<float>()[0];
  return s->initialScale;
}

} // namespace tessera::nn
