// Sequential models: naming layers, building the forward, training,
// evaluation and prediction modules, summary() and compile().
#include "ModelInternal.hpp"
#include "NnInternal.hpp"

#include "tessera/passes/TrainingPasses.hpp"

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
  if (isInput && !layers_.empty())
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

} // namespace

Model::Forward Model::buildForward(ir::Module &m, BuildMode mode,
                                   std::size_t batch,
                                   const std::string *synthetic,
                                   bool staged) const {
  const Input &in = input();
  ir::Builder b(m);
  BuildContext ctx(b, mode, seed_);
  Forward f;
  Shape xShape{batch};
  xShape.insert(xShape.end(), in.shape().begin(), in.shape().end());
  f.x = synthetic ? syntheticValue(b, "x", in.dtype(), xShape, *synthetic, 2,
                                   detail::mixSeed(seed_, 0x5e7a))
                  : b.input("x", in.dtype(), xShape);
  std::vector<Activations> values{Activations{f.x, false}};
  f.shapes.push_back(xShape);
  f.params.emplace_back(0, 0);
  // Left open after the loop: the output's layout change and the loss
  // belong to the last stage.
  std::optional<ir::StageScope> stage;
  for (std::size_t i = 1; i < layers_.size(); ++i) {
    if (staged) {
      stage.reset();
      stage.emplace(b, stages_[i - 1]);
    }
    ctx.beginLayer(i, layers_[i]->name());
    // The layer's ops are named after it ("dense_1/matmul"), so profiles
    // and the IR text show which layer made each.
    ir::NameScope scope(b, layers_[i]->name());
    std::vector<Activations> ins;
    for (std::size_t j : inputsOf_[i])
      ins.push_back(values[j]);
    values.push_back(layers_[i]->callMany(ctx, ins));
    f.shapes.push_back(values.back().logicalShape());
    f.params.push_back(ctx.paramCounts(i));
  }
  const Activations &a = values.back();
  f.output = ctx.channelsLast(a).value;
  f.logits = ctx.logitsOf(f.output);
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

// The labels input "y", the loss and metric and their outputs ("loss",
// "accuracy"), shared by the training and evaluation modules.
LossValues addLoss(ir::Builder &b, const ir::Value &out,
                   const std::optional<ir::Value> &logits,
                   const data::ComponentSpec &labels, LossKind kind,
                   const CompileOptions &options, bool accuracy,
                   const std::string *synthetic = nullptr,
                   std::uint64_t seed = 0) {
  checkLabels(labels, out.shape(), kind == LossKind::SparseCategorical,
              options.loss.c_str());
  ir::Value y = synthetic ? syntheticValue(b, "y", labels.type, labels.shape,
                                           *synthetic, out.shape().back(), seed)
                          : b.input("y", labels.type, labels.shape);
  LossValues l;
  {
    ir::NameScope scope(b, "loss");
    l = lossValues(kind, options.fromLogits, accuracy, out, logits, y);
  }
  b.output("loss", l.loss);
  if (l.accuracy)
    b.output("accuracy", *l.accuracy);
  return l;
}

} // namespace

ir::Module Model::trainingModule(std::size_t batchSize,
                                 const data::ComponentSpec &labels) const {
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
  Forward f =
      buildForward(m, BuildMode::Training, batchSize, synthetic, stages > 0);
  {
    std::optional<ir::StageScope> last;
    if (stages > 0)
      last.emplace(b, stages - 1);
    // addLoss names the loss as the output "loss", which autodiff reads.
    addLoss(b, f.output, f.logits, labels, c.loss, c.options, c.accuracy,
            synthetic, detail::mixSeed(seed_, 0x5e7b));
  }
  passes::TrainingPassOptions o;
  o.accumulation = accumulation;
  o.recompute = stages > 0 && pipelining_->recompute;
  o.training.optimizer = c.options.optimizer;
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

ir::Module Model::evaluationModule(std::size_t batchSize,
                                   const data::ComponentSpec &labels) const {
  ir::Module m(name_ + "_eval");
  ir::Builder b(m);
  Forward f = buildForward(m, BuildMode::Inference, batchSize);
  const Compiled &c = *compiled_;
  addLoss(b, f.output, f.logits, labels, c.loss, c.options, c.accuracy);
  return m;
}

ir::Module Model::predictionModule(std::size_t batchSize) const {
  ir::Module m(name_ + "_predict");
  Forward f = buildForward(m, BuildMode::Inference, batchSize);
  ir::Builder(m).output("output", f.output);
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
    const std::string shape =
        i == 0 ? "[" + kerasShape(f.shapes[i]) + "]" : kerasShape(f.shapes[i]);
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

Shape Model::outputShape() const {
  ir::Module m(name_ + "_shape");
  const Shape s = buildForward(m, BuildMode::Inference, 1).output.shape();
  return Shape(s.begin() + 1, s.end());
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

void Model::compile(CompileOptions options) {
  auto c = std::make_unique<Compiled>();
  c->loss = lossKind(options.loss);
  for (const std::string &metric : options.metrics) {
    if (metric != "accuracy" && metric != "acc")
      throw OptionError("compile: unknown metric \"" + metric +
                        "\"; the metric there is is \"accuracy\"");
    if (c->loss == LossKind::MeanSquared)
      throw OptionError("compile: the accuracy metric needs a "
                        "cross-entropy loss, not \"" +
                        options.loss + "\"");
    c->accuracy = true;
  }
  if (options.stepsPerExecution == 0)
    throw OptionError("compile: stepsPerExecution must be at least 1");
  const std::string &rule = options.syntheticDataInitializer;
  if (!rule.empty() && rule != "random" && rule != "uniform" &&
      rule != "normal" && !isNumber(rule))
    throw OptionError("compile: unknown synthetic data initializer \"" + rule +
                      "\"; use random, uniform, normal or a number such as "
                      "0.5 (TF_POPLAR_FLAGS=--synthetic_data_initializer=...)");
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

} // namespace tessera::nn
