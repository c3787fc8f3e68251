// Normalisation layers. BatchNorm normalises channels (Keras' axis -1),
// which the IR's batchNorm finds on axis 1: channels-first images already
// have them there, and [N, features] activations do too.
#include "tessera/nn/Layers.hpp"

#include "NnInternal.hpp"

namespace tessera::nn {

using detail::describeLayer;

namespace {

// Normalisation statistics are computed in float whatever the policy, as
// Keras' normalisation layers do under mixed precision: a half variance
// of large activations overflows, and of small ones loses its digits.
ir::Value asFloat(ir::Value v) {
  return v.dtype() == FLOAT ? v : ir::cast(v, FLOAT);
}
ir::Value as(ir::Value v, Type t) {
  return v.dtype() == t ? v : ir::cast(v, t);
}

} // namespace

BatchNorm::BatchNorm(BatchNormOptions options)
    : Layer(options.name), options_(std::move(options)) {
  if (!(options_.momentum >= 0 && options_.momentum < 1) ||
      !(options_.epsilon > 0))
    throw OptionError("BatchNorm: momentum must be in [0, 1) and epsilon "
                      "positive, got momentum " +
                      std::to_string(options_.momentum) + " and epsilon " +
                      std::to_string(options_.epsilon));
}

Activations BatchNorm::call(BuildContext &ctx, const Activations &in) const {
  requireFloat(in);
  const std::size_t rank = in.value.rank();
  if (rank != 2 && rank != 4)
    throw ShapeError(describeLayer(*this) +
                     ": expects (batch, features) or (batch, height, width, "
                     "channels) inputs but got rank " +
                     std::to_string(rank));
  const Activations x = ctx.channelsFirst(in);
  const Type t = x.value.dtype();
  const std::size_t channels = x.value.shape()[1];
  ir::Value gamma =
      ctx.variable("gamma", {channels}, std::nullopt, ir::init::ones());
  ir::Value beta =
      ctx.variable("beta", {channels}, std::nullopt, ir::init::zeros());
  ir::Value movingMean = ctx.variable("moving_mean", {channels}, std::nullopt,
                                      ir::init::zeros(), false);
  ir::Value movingVar = ctx.variable("moving_variance", {channels},
                                     std::nullopt, ir::init::ones(), false);
  if (!ctx.training())
    return {as(ir::batchNormInference(asFloat(x.value), asFloat(gamma),
                                      asFloat(beta), asFloat(movingMean),
                                      asFloat(movingVar), options_.epsilon),
               t),
            x.channelsFirst};
  ir::NormResult r = ir::batchNorm(asFloat(x.value), asFloat(gamma),
                                   asFloat(beta), options_.epsilon);
  // The batch variance from 1 / sqrt(var + eps); moving averages as Keras.
  const double m = options_.momentum;
  ir::Value variance = ir::inv(ir::square(r.invStdDev)) - options_.epsilon;
  const Type vt = movingMean.dtype();
  ctx.addUpdate(movingMean, as(asFloat(movingMean) * m + r.mean * (1 - m), vt));
  ctx.addUpdate(movingVar, as(asFloat(movingVar) * m + variance * (1 - m), vt));
  return {as(r.y, t), x.channelsFirst};
}

LayerNorm::LayerNorm(double epsilon, std::string name)
    : Layer(std::move(name)), epsilon_(epsilon) {
  if (!(epsilon > 0))
    throw OptionError("LayerNorm: epsilon must be positive, got " +
                      std::to_string(epsilon));
}

Activations LayerNorm::call(BuildContext &ctx, const Activations &in) const {
  requireFloat(in);
  // Keras normalises the last axis: the channels of images.
  const Activations x = ctx.channelsLast(in);
  const std::size_t features = x.value.shape().back();
  ir::Value gamma =
      ctx.variable("gamma", {features}, std::nullopt, ir::init::ones());
  ir::Value beta =
      ctx.variable("beta", {features}, std::nullopt, ir::init::zeros());
  return {as(ir::layerNorm(asFloat(x.value), asFloat(gamma), asFloat(beta),
                           epsilon_)
                 .y,
             x.value.dtype()),
          false};
}

} // namespace tessera::nn
