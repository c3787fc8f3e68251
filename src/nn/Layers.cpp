// The build context and the layers that are not convolutional or
// normalising: Input, Dense, Flatten, Dropout, Activation, Embedding.
#include "tessera/nn/Layers.hpp"

#include "NnInternal.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

namespace tessera::nn {
namespace detail {

std::string kerasShape(const Shape &withBatch) {
  std::string s = "(None";
  for (std::size_t d = 1; d < withBatch.size(); ++d)
    s += ", " + std::to_string(withBatch[d]);
  return s + (withBatch.size() == 2 ? ")" : ")");
}

std::uint64_t mixSeed(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a * 0x9e3779b97f4a7c15ULL + b + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t hashString(const std::string &s) {
  std::uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a: stable across builds
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::string describeLayer(const Layer &layer) {
  return layer.name() + " (" + layer.typeName() + ")";
}

std::pair<unsigned, unsigned> samePadding(std::size_t in, unsigned k,
                                          unsigned s) {
  const std::size_t out = (in + s - 1) / s;
  const std::size_t needed = (out - 1) * s + k;
  const std::size_t total = needed > in ? needed - in : 0;
  return {unsigned(total / 2), unsigned(total - total / 2)};
}

} // namespace detail

using detail::describeLayer;
using detail::kerasShape;

namespace {
// Each activation with its Keras name: the one table both directions read.
constexpr std::pair<Activation, std::string_view> kActivationNames[] = {
    {Activation::Linear, "linear"},   {Activation::Relu, "relu"},
    {Activation::Sigmoid, "sigmoid"}, {Activation::Tanh, "tanh"},
    {Activation::Gelu, "gelu"},       {Activation::Softmax, "softmax"}};
} // namespace

Activation activationFromName(const std::string &name) {
  if (name.empty())
    return Activation::Linear;
  std::string known;
  for (const auto &[a, n] : kActivationNames) {
    if (name == n)
      return a;
    known += (known.empty() ? "" : ", ") + std::string(n);
  }
  throw OptionError("unknown activation \"" + name + "\"; use one of " + known);
}

std::string activationName(Activation a) {
  for (const auto &[x, n] : kActivationNames)
    if (x == a)
      return std::string(n);
  return "linear";
}

Shape Activations::logicalShape() const {
  Shape s = value.shape();
  if (channelsFirst && s.size() == 4)
    return {s[0], s[2], s[3], s[1]};
  return s;
}

// ---- BuildContext ---------------------------------------------------------

BuildContext::BuildContext(ir::Builder &builder, BuildMode mode,
                           std::uint64_t seed)
    : builder_(builder), mode_(mode), seed_(seed) {}

void BuildContext::beginLayer(std::size_t index, const std::string &name) {
  layer_ = index;
  layerName_ = name;
  if (params_.size() <= index)
    params_.resize(index + 1);
}

void BuildContext::setPrecision(Type compute, Type variables,
                                std::optional<Type> partials) {
  compute_ = compute;
  variables_ = variables;
  partials_ = partials;
}

ir::Value BuildContext::read(ir::Value v) {
  return v.dtype() == compute_ || !isFloatingPoint(v.dtype())
             ? v
             : ir::cast(v, compute_);
}

ir::Value BuildContext::withPartials(ir::Value r) {
  if (partials_)
    builder_.module()
        .mutableOps()[builder_.module().value(r.id()).def]
        .attrs.set(ir::kPartialsType, *partials_ == HALF ? "half" : "float");
  return r;
}

std::uint64_t BuildContext::seedFor(const std::string &name) const {
  return detail::mixSeed(seed_, detail::hashString(layerName_ + "/" + name));
}

ir::Value BuildContext::variable(const std::string &name, const Shape &shape,
                                 const std::optional<ir::Initialiser> &init,
                                 ir::Initialiser fallback, bool trainable) {
  if (fallback.isRandom())
    fallback.seed = seedFor(name);
  ir::Value v =
      builder_.variable(layerName_ + "/" + name, shape, init ? *init : fallback,
                        variables_, trainable);
  auto &[tr, other] = params_[layer_];
  (trainable ? tr : other) += v.type().numElements();
  return v;
}

void BuildContext::addUpdate(ir::Value variable, ir::Value next) {
  updates_.emplace_back(variable, next);
}

ir::Value BuildContext::dropoutSeed() {
  if (!dropoutSeed_) {
    const std::uint64_t s = detail::mixSeed(seed_, 0xd509);
    ir::Value seed = builder_.variable(
        "dropout/seed", {2}, ir::init::values({double(s & 0x7fffffff), 0.0}),
        UNSIGNED_INT,
        /*trainable=*/false);
    // A new counter each step gives each step its own masks.
    addUpdate(seed, seed + builder_.constant({0, 1}, {2}, UNSIGNED_INT));
    dropoutSeed_ = seed;
  }
  return *dropoutSeed_;
}

Activations BuildContext::channelsFirst(const Activations &a) {
  if (a.channelsFirst || a.value.rank() != 4)
    return a;
  return {ir::transpose(a.value, {0, 3, 1, 2}), true};
}

Activations BuildContext::channelsLast(const Activations &a) {
  if (!a.channelsFirst || a.value.rank() != 4)
    return {a.value, false};
  return {ir::transpose(a.value, {0, 2, 3, 1}), false};
}

void BuildContext::noteSoftmax(ir::Value logits, ir::Value probs) {
  softmaxes_.emplace_back(logits, probs);
}

std::optional<ir::Value> BuildContext::logitsOf(ir::Value probs) const {
  for (const auto &[logits, p] : softmaxes_)
    if (p == probs)
      return logits;
  return std::nullopt;
}

std::pair<std::size_t, std::size_t>
BuildContext::paramCounts(std::size_t index) const {
  return index < params_.size() ? params_[index]
                                : std::pair<std::size_t, std::size_t>{0, 0};
}

// ---- Layer ----------------------------------------------------------------

Layer::Layer(std::string name)
    : name_(std::move(name)), policy_(globalPolicy()) {}

void Layer::setDtypePolicy(const Policy &policy) { policy_ = policy; }

void Layer::setPartialsType(Type type) {
  if (type != FLOAT && type != HALF)
    throw TypeError(describeLayer(*this) + ": the partials type must be " +
                    "float or half, not " + std::string(ir::dtypeName(type)));
  partials_ = type;
}

void Layer::requireRank(const Activations &x, std::size_t rank,
                        const char *what) const {
  const Shape s = x.logicalShape();
  if (s.size() != rank)
    throw ShapeError(describeLayer(*this) + ": expects inputs of rank " +
                     std::to_string(rank) + " " + what + " but got shape " +
                     kerasShape(s) + " (rank " + std::to_string(s.size()) +
                     "); change the Input shape or add a Flatten");
}

void Layer::requireFloat(const Activations &x) const {
  if (x.value.dtype() != FLOAT && x.value.dtype() != HALF)
    throw TypeError(describeLayer(*this) + ": expects float inputs but got " +
                    std::string(ir::dtypeName(x.value.dtype())) + " " +
                    kerasShape(x.logicalShape()) +
                    "; only an Embedding takes integer token ids");
}

Activations applyActivation(BuildContext &ctx, const Activations &x,
                            Activation a) {
  switch (a) {
  case Activation::Linear:
    return x;
  case Activation::Relu:
    return {ir::relu(x.value), x.channelsFirst};
  case Activation::Sigmoid:
    return {ir::sigmoid(x.value), x.channelsFirst};
  case Activation::Tanh:
    return {ir::tanh(x.value), x.channelsFirst};
  case Activation::Gelu:
    return {ir::gelu(x.value), x.channelsFirst};
  case Activation::Softmax: {
    const Activations last = ctx.channelsLast(x);
    ir::Value p = ir::softmax(last.value);
    ctx.noteSoftmax(last.value, p);
    return {p, false};
  }
  }
  return x;
}

// ---- Input ----------------------------------------------------------------

Input::Input(Shape shape, Type dtype, std::string name)
    : Layer(std::move(name)), shape_(std::move(shape)), dtype_(dtype) {
  Layer::setDtypePolicy(Policy("float32"));
  if (shape_.empty() ||
      std::find(shape_.begin(), shape_.end(), 0u) != shape_.end())
    throw ShapeError("Input: the shape of one example must have at least "
                     "one dimension and no zero dimension, got " +
                     ir::shapeToString(shape_));
}

void Input::setDtypePolicy(const Policy &policy) {
  if (policy.computeDtype() != FLOAT && !isFloatingPoint(dtype_))
    throw TypeError(describeLayer(*this) + ": the Input takes " +
                    std::string(ir::dtypeName(dtype_)) + " values, which a \"" +
                    policy.name() +
                    "\" policy cannot make half; give half policies to the "
                    "float layers after it (an Embedding of its ids, say)");
  Layer::setDtypePolicy(policy);
}

Activations Input::call(BuildContext &, const Activations &x) const {
  return x;
}

// ---- Dense ----------------------------------------------------------------

Dense::Dense(unsigned units, DenseOptions options)
    : Layer(options.name), units_(units), options_(std::move(options)) {
  if (units_ == 0)
    throw ShapeError("Dense: units must be at least 1");
}

Dense::Dense(unsigned units, const std::string &activation)
    : Dense(units, detail::withActivation<DenseOptions>(activation)) {}

Activations Dense::call(BuildContext &ctx, const Activations &in) const {
  requireFloat(in);
  const Activations x = ctx.channelsLast(in);
  const Shape s = x.value.shape();
  if (s.size() < 2)
    throw ShapeError(describeLayer(*this) +
                     ": expects inputs of rank 2 or more (batch, features) "
                     "but got shape " +
                     kerasShape(s));
  const std::size_t features = s.back();
  ir::Value kernel = ctx.read(ctx.variable("kernel", {features, units_},
                                           options_.kernelInitializer,
                                           ir::init::glorotUniform(0)));
  // Keras applies Dense to the last axis: fold the others into rows.
  const std::size_t rows = ir::numElements(s) / features;
  ir::Value y = ctx.withPartials(ir::matmul(
      s.size() == 2 ? x.value : ir::reshape(x.value, {rows, features}),
      kernel));
  if (options_.useBias)
    y = ir::biasAdd(
        y, ctx.read(ctx.variable("bias", {units_}, options_.biasInitializer,
                                 ir::init::zeros())));
  if (s.size() > 2) {
    Shape out = s;
    out.back() = units_;
    y = ir::reshape(y, out);
  }
  return applyActivation(ctx, {y, false}, options_.activation);
}

// ---- Flatten, Dropout, Activation -----------------------------------------

Activations Flatten::call(BuildContext &ctx, const Activations &in) const {
  const Activations x = ctx.channelsLast(in);
  if (x.value.rank() < 2)
    throw ShapeError(describeLayer(*this) +
                     ": expects inputs with a batch dimension, got shape " +
                     ir::shapeToString(x.value.shape()));
  if (x.value.rank() == 2)
    return x;
  return {ir::flatten(x.value), false};
}

Dropout::Dropout(double rate, std::string name)
    : Layer(std::move(name)), rate_(rate) {
  if (!(rate >= 0 && rate < 1))
    throw OptionError("Dropout: rate must be in [0, 1), got " +
                      std::to_string(rate));
}

Activations Dropout::call(BuildContext &ctx, const Activations &x) const {
  requireFloat(x);
  if (!ctx.training() || rate_ == 0)
    return x;
  // The layer's name picks its stream of masks, so two dropout layers of
  // the same shape do not drop the same elements.
  const auto modifier =
      static_cast<std::uint32_t>(detail::hashString(name()) & 0xffffffffu);
  return {ir::dropout(x.value, rate_, ctx.dropoutSeed(), modifier),
          x.channelsFirst};
}

ActivationLayer::ActivationLayer(Activation a, std::string name)
    : Layer(std::move(name)), activation_(a) {}

ActivationLayer::ActivationLayer(const std::string &activation,
                                 std::string name)
    : ActivationLayer(activationFromName(activation), std::move(name)) {}

Activations ActivationLayer::call(BuildContext &ctx,
                                  const Activations &x) const {
  requireFloat(x);
  return applyActivation(ctx, x, activation_);
}

// ---- Embedding ------------------------------------------------------------

Embedding::Embedding(unsigned inputDim, unsigned outputDim,
                     std::optional<ir::Initialiser> init, std::string name)
    : Layer(std::move(name)), inputDim_(inputDim), outputDim_(outputDim),
      init_(std::move(init)) {
  if (inputDim_ == 0 || outputDim_ == 0)
    throw ShapeError("Embedding: inputDim and outputDim must be at least 1, "
                     "got " +
                     std::to_string(inputDim) + " and " +
                     std::to_string(outputDim));
}

Activations Embedding::call(BuildContext &ctx, const Activations &x) const {
  const Type t = x.value.dtype();
  if (t != INT && t != UNSIGNED_INT)
    throw TypeError(
        describeLayer(*this) + ": expects integer token ids but got " +
        std::string(ir::dtypeName(t)) + " " + kerasShape(x.logicalShape()) +
        "; declare the Input with dtype INT");
  ir::Value table =
      ctx.read(ctx.variable("embeddings", {inputDim_, outputDim_}, init_,
                            ir::init::uniform(-0.05, 0.05, 0)));
  return {ir::gather(table, x.value), false};
}

} // namespace tessera::nn
