/// \file
/// Keras-shaped layers for nn::Sequential and functional nn::Model
/// (Model.hpp).
///
/// \code
///   nn::Sequential model({
///       nn::Input({28, 28, 1}),
///       nn::Conv2D(32, {3, 3}, "relu"),
///       nn::MaxPool2D({2, 2}),
///       nn::Flatten(),
///       nn::Dense(10, "softmax"),
///   });
/// \endcode
///
/// In a file inside namespace tessera, write nn::Input: tessera::Input is
/// also the name of a vertex field.
///
/// Layers follow Keras' conventions for the user: images are channels-last
/// (NHWC: height, width, channels), kernels default to Glorot uniform and
/// biases to zeros, names default to "dense", "dense_1", ... Internally the
/// IR's convolution and pooling are channels-first (NCHW); a BuildContext
/// carries each activation with its layout and transposes only where a
/// layer needs the other one, so a convolutional stack is transposed once
/// after the input and once more at Flatten.
///
/// A layer holds its configuration only. Its weights are IR variables named
/// "<layer>/<weight>" ("dense/kernel", "conv2d/bias") that live on the
/// device; the model moves them between sessions with checkpoints.
#pragma once

#include "tessera/ir/Builder.hpp"
#include "tessera/nn/Policy.hpp"
#include "tessera/support/Error.hpp"

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::nn {

using Shape = ir::Shape;

/// An activation function, by its Keras name.
enum class Activation { Linear, Relu, Sigmoid, Tanh, Gelu, Softmax };

/// The activation named \p name ("relu", "softmax", "linear", "sigmoid",
/// "tanh", "gelu"; "" is linear). Throws OptionError listing the names.
Activation activationFromName(const std::string &name);
std::string activationName(Activation a);

/// "same" keeps the spatial size (divided by the stride, rounded up);
/// "valid" uses only whole windows.
enum class Padding { Valid, Same };

/// Two numbers: height, width.
using Size2 = std::array<unsigned, 2>;

/// An activation while a model is built: the IR value and its layout. A
/// rank-4 value is either channels-last [N, H, W, C] (what the user sees)
/// or channels-first [N, C, H, W] (what the IR's convolutions take).
struct Activations {
  ir::Value value;
  bool channelsFirst = false;
  /// The shape as the user sees it (channels-last), batch included.
  Shape logicalShape() const;
};

/// What a model is built for: training (dropout on, batch statistics,
/// moving-average updates) or inference.
enum class BuildMode { Training, Inference };

/// Builds one layer's part of a module: creates its variables (with the
/// model's seeds), records parameter counts for summary(), converts
/// layouts and collects non-gradient updates (batch-norm moving averages,
/// the dropout seed).
class BuildContext {
public:
  BuildContext(ir::Builder &builder, BuildMode mode, std::uint64_t seed);

  ir::Builder &builder() { return builder_; }
  bool training() const { return mode_ == BuildMode::Training; }

  /// Starts layer \p index named \p name: later variables belong to it.
  void beginLayer(std::size_t index, const std::string &name);
  /// The current layer computes in \p compute, keeps its variables in
  /// \p variables and accumulates its matmuls and convolutions in
  /// \p partials (unset: the ops' default).
  void setPrecision(Type compute, Type variables,
                    std::optional<Type> partials = std::nullopt);
  Type computeDtype() const { return compute_; }
  /// \p v, a variable, as the layer computes with it: cast to the compute
  /// type when the variables are of another (mixed precision).
  ir::Value read(ir::Value v);
  /// \p r, the result of a matmul or conv2d just built, accumulating in
  /// the layer's partials type.
  ir::Value withPartials(ir::Value r);
  /// A variable "<layer>/<name>" of the layer's variable type, initialised
  /// by \p init, or by \p fallback seeded from the model seed, the layer
  /// and the variable.
  ir::Value variable(const std::string &name, const Shape &shape,
                     const std::optional<ir::Initialiser> &init,
                     ir::Initialiser fallback, bool trainable = true);
  /// A seed for \p fallback-style random initialisers of this layer.
  std::uint64_t seedFor(const std::string &name) const;
  /// \p variable takes \p next after each training step.
  void addUpdate(ir::Value variable, ir::Value next);
  const std::vector<std::pair<ir::Value, ir::Value>> &updates() const {
    return updates_;
  }
  /// The UNSIGNED_INT[2] dropout seed, a variable advanced every step so
  /// each step draws new masks.
  ir::Value dropoutSeed();

  /// \p a as channels-first (or channels-last) rank-4 values.
  Activations channelsFirst(const Activations &a);
  Activations channelsLast(const Activations &a);

  /// Notes that \p probs = softmax(\p logits), so a cross-entropy loss on
  /// the model's output can use the logits (stable, as Keras does).
  void noteSoftmax(ir::Value logits, ir::Value probs);
  /// The logits of \p probs when noteSoftmax recorded them.
  std::optional<ir::Value> logitsOf(ir::Value probs) const;

  /// Parameters created so far by layer \p index: (trainable, other).
  std::pair<std::size_t, std::size_t> paramCounts(std::size_t index) const;

private:
  ir::Builder &builder_;
  BuildMode mode_;
  std::uint64_t seed_;
  Type compute_ = FLOAT, variables_ = FLOAT;
  std::optional<Type> partials_;
  std::size_t layer_ = 0;
  std::string layerName_;
  std::vector<std::pair<std::size_t, std::size_t>> params_;
  std::vector<std::pair<ir::Value, ir::Value>> updates_;
  std::vector<std::pair<ir::Value, ir::Value>> softmaxes_;
  std::optional<ir::Value> dropoutSeed_;
};

class Layer;

/// A symbolic tensor of a functional model (Keras' KerasTensor): the
/// output of a layer applied to other symbolic tensors, starting from an
/// Input. Build a model with Model(input, output).
///
/// \code
///   nn::KerasTensor x = nn::Input({784});
///   nn::KerasTensor h = nn::Dense(128, "relu")(x);
///   nn::KerasTensor y = nn::Dense(10)(nn::Add()({h, nn::Dense(128)(x)}));
///   nn::Model model(x, y, "residual");
/// \endcode
class KerasTensor {
public:
  /// The layer that made it (a copy owned by the tensor).
  const Layer &layer() const;
  /// The tensors the layer was applied to.
  const std::vector<KerasTensor> &inputs() const;
  /// Same node of the graph.
  bool operator==(const KerasTensor &o) const { return node_ == o.node_; }

private:
  friend class Layer;
  friend class Model;
  struct Node {
    std::shared_ptr<Layer> layer;
    std::vector<KerasTensor> inputs;
    /// The PipelineStage scope the layer was applied in, if any.
    std::optional<unsigned> stage;
  };
  explicit KerasTensor(std::shared_ptr<const Node> node)
      : node_(std::move(node)) {}
  std::shared_ptr<const Node> node_;
};

/// TensorFlow for the IPU's Keras PipelineStage scope, for functional
/// models: the layers applied while it lives (on this thread) are on
/// pipeline stage \p stage. Model(inputs, outputs) makes the stages its
/// stage assignment (Model::setPipelineStageAssignment), ordering the
/// layers by stage; every layer but the Inputs must then be applied in a
/// scope, and a layer may only take tensors of its own or earlier stages.
///
/// \code
///   nn::KerasTensor input = nn::Input({784}), h = input, y = input;
///   {
///     nn::PipelineStage stage(0);
///     h = nn::Dense(256, "relu")(input);
///   }
///   {
///     nn::PipelineStage stage(1);
///     y = nn::Dense(10, "softmax")(h);
///   }
///   nn::Model model(input, y);   // stages {0, 1}
/// \endcode
class PipelineStage {
public:
  /// Throws OptionError inside another PipelineStage (they do not nest).
  explicit PipelineStage(unsigned stage);
  ~PipelineStage();
  PipelineStage(const PipelineStage &) = delete;
  PipelineStage &operator=(const PipelineStage &) = delete;
  unsigned stage() const { return stage_; }

private:
  unsigned stage_;
};

/// Base of every layer.
class Layer {
public:
  /// The layer takes the global dtype policy (Policy.hpp).
  explicit Layer(std::string name = "");
  virtual ~Layer() = default;

  /// A copy of this layer (of its dynamic type).
  virtual std::shared_ptr<Layer> clone() const = 0;
  /// Applies a copy of this layer to \p x: a new node of a functional
  /// model.
  KerasTensor operator()(const KerasTensor &x) const;
  /// As above for layers of several inputs (Add, Concatenate).
  KerasTensor operator()(const std::vector<KerasTensor> &xs) const;
  /// Appends the layer's operations for several inputs; the default takes
  /// exactly one and calls call(). Throws ShapeError for another count.
  virtual Activations callMany(BuildContext &ctx,
                               const std::vector<Activations> &xs) const;

  /// The class name summary() prints ("Dense").
  virtual std::string typeName() const = 0;
  /// The name Keras gives an unnamed layer of this type ("dense").
  virtual std::string defaultName() const = 0;
  /// Appends the layer's operations to \p x's module. Throws ShapeError or
  /// TypeError, naming the layer, for inputs it cannot take.
  virtual Activations call(BuildContext &ctx, const Activations &x) const = 0;

  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  /// Keras' dtype_policy: the types the layer computes in and keeps its
  /// variables in (Policy.hpp).
  const Policy &dtypePolicy() const { return policy_; }
  /// Throws TypeError for a half policy on a layer that is not float (an
  /// Input of integer ids).
  virtual void setDtypePolicy(const Policy &policy);
  void setDtypePolicy(const std::string &name) { setDtypePolicy(Policy(name)); }
  /// The partials (accumulation) type of the layer's matmuls and
  /// convolutions, given to the ops' "partialsType" option: FLOAT or HALF
  /// (half needs a half-computing policy; building a model with it on a
  /// float layer throws TypeError). Unset: the model's
  /// (CompileOptions::partialsType), else float. TypeError for other types.
  void setPartialsType(Type type);
  const std::optional<Type> &partialsType() const { return partials_; }

protected:
  /// Throws ShapeError unless \p x has logical rank \p rank (batch
  /// included), saying what the layer needs in Keras' terms.
  void requireRank(const Activations &x, std::size_t rank,
                   const char *what) const;
  void requireFloat(const Activations &x) const;

private:
  std::string name_;
  Policy policy_;
  std::optional<Type> partials_;
};

/// A layer held by a model: any Layer, copied in.
class LayerRef {
public:
  template <std::derived_from<Layer> L>
  LayerRef(L layer) : layer_(std::make_shared<L>(std::move(layer))) {}
  explicit LayerRef(std::shared_ptr<Layer> layer) : layer_(std::move(layer)) {}
  Layer &operator*() const { return *layer_; }
  Layer *operator->() const { return layer_.get(); }
  const std::shared_ptr<Layer> &get() const { return layer_; }

private:
  std::shared_ptr<Layer> layer_;
};

/// The model's input: the shape of one example (no batch dimension) and
/// its element type (INT for token ids feeding an Embedding).
class Input : public Layer {
public:
  /// An Input keeps \p dtype whatever the global policy: the first layers
  /// cast float inputs to their compute type. A half policy given with
  /// setDtypePolicy casts float inputs to half here instead.
  explicit Input(Shape shape, Type dtype = FLOAT, std::string name = "");
  void setDtypePolicy(const Policy &policy) override;
  using Layer::setDtypePolicy;
  std::string typeName() const override { return "InputLayer"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<Input>(*this);
  }
  std::string defaultName() const override { return "input"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;
  const Shape &shape() const { return shape_; }
  Type dtype() const { return dtype_; }
  /// The input tensor of a functional model.
  operator KerasTensor() const;

private:
  Shape shape_;
  Type dtype_;
};

struct DenseOptions {
  Activation activation = Activation::Linear;
  bool useBias = true;
  /// Default: Glorot uniform (kernel), zeros (bias).
  std::optional<ir::Initialiser> kernelInitializer, biasInitializer;
  std::string name;
};
/// x W + b on the last axis, then the activation.
class Dense : public Layer {
public:
  explicit Dense(unsigned units, DenseOptions options = {});
  Dense(unsigned units, const std::string &activation);
  std::string typeName() const override { return "Dense"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<Dense>(*this);
  }
  std::string defaultName() const override { return "dense"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;

private:
  unsigned units_;
  DenseOptions options_;
};

struct Conv2DOptions {
  Size2 strides{1, 1};
  Padding padding = Padding::Valid;
  Activation activation = Activation::Linear;
  bool useBias = true;
  std::optional<ir::Initialiser> kernelInitializer, biasInitializer;
  std::string name;
};
/// 2-D convolution of channels-last images [N, H, W, C]; the kernel is
/// stored as the IR takes it, [filters, C, kH, kW].
class Conv2D : public Layer {
public:
  Conv2D(unsigned filters, Size2 kernel, Conv2DOptions options = {});
  Conv2D(unsigned filters, Size2 kernel, const std::string &activation);
  std::string typeName() const override { return "Conv2D"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<Conv2D>(*this);
  }
  std::string defaultName() const override { return "conv2d"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;

private:
  unsigned filters_;
  Size2 kernel_;
  Conv2DOptions options_;
};

struct PoolOptions {
  /// Default: the pool size.
  std::optional<Size2> strides;
  Padding padding = Padding::Valid;
  std::string name;
};
/// Max pooling of channels-last images.
class MaxPool2D : public Layer {
public:
  explicit MaxPool2D(Size2 pool = {2, 2}, PoolOptions options = {});
  std::string typeName() const override { return "MaxPooling2D"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<MaxPool2D>(*this);
  }
  std::string defaultName() const override { return "max_pooling2d"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;

private:
  Size2 pool_;
  PoolOptions options_;
};
/// Average pooling of channels-last images (padding not counted).
class AvgPool2D : public Layer {
public:
  explicit AvgPool2D(Size2 pool = {2, 2}, PoolOptions options = {});
  std::string typeName() const override { return "AveragePooling2D"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<AvgPool2D>(*this);
  }
  std::string defaultName() const override { return "average_pooling2d"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;

private:
  Size2 pool_;
  PoolOptions options_;
};
/// Zeros around images: [N, H, W, C] -> [N, top + H + bottom,
/// left + W + right, C] (Keras' ZeroPadding2D, ResNet50's conv1_pad).
class ZeroPadding2D : public Layer {
public:
  /// \p padding: {{top, bottom}, {left, right}}.
  explicit ZeroPadding2D(std::array<Size2, 2> padding = {{{1, 1}, {1, 1}}},
                         std::string name = "");
  std::string typeName() const override { return "ZeroPadding2D"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<ZeroPadding2D>(*this);
  }
  std::string defaultName() const override { return "zero_padding2d"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;

private:
  std::array<Size2, 2> padding_;
};
/// The mean over height and width: [N, H, W, C] -> [N, C].
class GlobalAvgPool2D : public Layer {
public:
  explicit GlobalAvgPool2D(std::string name = "") : Layer(std::move(name)) {}
  std::string typeName() const override { return "GlobalAveragePooling2D"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<GlobalAvgPool2D>(*this);
  }
  std::string defaultName() const override {
    return "global_average_pooling2d";
  }
  Activations call(BuildContext &ctx, const Activations &x) const override;
};

/// [N, d1, d2, ...] -> [N, d1 * d2 * ...], in channels-last order.
class Flatten : public Layer {
public:
  explicit Flatten(std::string name = "") : Layer(std::move(name)) {}
  std::string typeName() const override { return "Flatten"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<Flatten>(*this);
  }
  std::string defaultName() const override { return "flatten"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;
};

/// Zeroes a fraction \p rate of the elements in training and scales the
/// rest by 1 / (1 - rate); the identity in inference. Each step draws new
/// masks.
class Dropout : public Layer {
public:
  explicit Dropout(double rate, std::string name = "");
  std::string typeName() const override { return "Dropout"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<Dropout>(*this);
  }
  std::string defaultName() const override { return "dropout"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;

private:
  double rate_;
};

/// An activation function as a layer.
class ActivationLayer : public Layer {
public:
  explicit ActivationLayer(Activation a, std::string name = "");
  explicit ActivationLayer(const std::string &activation,
                           std::string name = "");
  std::string typeName() const override { return "Activation"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<ActivationLayer>(*this);
  }
  std::string defaultName() const override { return "activation"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;

private:
  Activation activation_;
};

struct BatchNormOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  std::string name;
};
/// Batch normalisation over the channels (the last axis, as Keras'
/// default): batch statistics in training, moving averages in inference.
/// gamma and beta are trained; moving_mean and moving_variance are not.
class BatchNorm : public Layer {
public:
  explicit BatchNorm(BatchNormOptions options = {});
  std::string typeName() const override { return "BatchNormalization"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<BatchNorm>(*this);
  }
  std::string defaultName() const override { return "batch_normalization"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;

private:
  BatchNormOptions options_;
};

/// Layer normalisation over the last axis.
class LayerNorm : public Layer {
public:
  explicit LayerNorm(double epsilon = 1e-3, std::string name = "");
  std::string typeName() const override { return "LayerNormalization"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<LayerNorm>(*this);
  }
  std::string defaultName() const override { return "layer_normalization"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;

private:
  double epsilon_;
};

/// Token ids (INT) [N, ...] -> vectors [N, ..., outputDim] from a
/// [inputDim, outputDim] table (uniform in +-0.05 by default, as Keras).
/// Ids outside [0, inputDim) give zero vectors.
class Embedding : public Layer {
public:
  Embedding(unsigned inputDim, unsigned outputDim,
            std::optional<ir::Initialiser> init = std::nullopt,
            std::string name = "");
  std::string typeName() const override { return "Embedding"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<Embedding>(*this);
  }
  std::string defaultName() const override { return "embedding"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;

private:
  unsigned inputDim_, outputDim_;
  std::optional<ir::Initialiser> init_;
};

/// The elementwise sum of inputs of one shape (a residual connection).
class Add : public Layer {
public:
  explicit Add(std::string name = "") : Layer(std::move(name)) {}
  std::string typeName() const override { return "Add"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<Add>(*this);
  }
  std::string defaultName() const override { return "add"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;
  Activations callMany(BuildContext &ctx,
                       const std::vector<Activations> &xs) const override;
};

/// Inputs joined along the last (channels) axis.
class Concatenate : public Layer {
public:
  explicit Concatenate(std::string name = "") : Layer(std::move(name)) {}
  std::string typeName() const override { return "Concatenate"; }
  std::shared_ptr<Layer> clone() const override {
    return std::make_shared<Concatenate>(*this);
  }
  std::string defaultName() const override { return "concatenate"; }
  Activations call(BuildContext &ctx, const Activations &x) const override;
  Activations callMany(BuildContext &ctx,
                       const std::vector<Activations> &xs) const override;
};

/// Applies \p a to \p x (converting to channels-last for softmax) and notes
/// softmax logits in \p ctx.
Activations applyActivation(BuildContext &ctx, const Activations &x,
                            Activation a);

} // namespace tessera::nn
