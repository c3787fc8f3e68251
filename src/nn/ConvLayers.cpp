// Convolution and pooling layers. Users give channels-last images; the IR's
// conv2d and pools are channels-first, so these layers ask the context for
// channels-first activations (a no-op after the first) and return them so.
#include "tessera/nn/Layers.hpp"

#include "NnInternal.hpp"

namespace tessera::nn {
namespace {

using detail::describeLayer;
using detail::kerasShape;

// Paddings of a window over the spatial dimensions of channels-first x.
std::pair<ir::Pair, ir::Pair> paddings(const Layer &layer, const Shape &nchw,
                                       Size2 window, Size2 strides,
                                       Padding padding) {
  ir::Pair lower{0, 0}, upper{0, 0};
  for (int d = 0; d < 2; ++d) {
    const std::size_t in = nchw[2 + d];
    if (strides[d] == 0 || window[d] == 0)
      throw ShapeError(describeLayer(layer) +
                       ": kernel sizes and strides must be at least 1");
    if (padding == Padding::Same) {
      const auto [lo, hi] = detail::samePadding(in, window[d], strides[d]);
      lower[d] = lo;
      upper[d] = hi;
    } else if (in < window[d]) {
      throw ShapeError(
          describeLayer(layer) + ": the window is " +
          std::to_string(window[0]) + "x" + std::to_string(window[1]) +
          " but the input is only " + std::to_string(nchw[2]) + "x" +
          std::to_string(nchw[3]) +
          " (height x width); use padding \"same\" or a smaller window");
    }
  }
  return {lower, upper};
}

void requireImages(const Layer &layer, const Activations &x) {
  const Shape s = x.logicalShape();
  if (s.size() != 4)
    throw ShapeError(describeLayer(layer) +
                     ": expects images of rank 4 (batch, height, width, "
                     "channels) but got shape " +
                     kerasShape(s) +
                     "; give the Input a shape such as {28, 28, 1}");
  if (x.value.dtype() != FLOAT && x.value.dtype() != HALF)
    throw TypeError(describeLayer(layer) + ": expects float images but got " +
                    std::string(ir::dtypeName(x.value.dtype())));
}

} // namespace

Conv2D::Conv2D(unsigned filters, Size2 kernel, Conv2DOptions options)
    : Layer(options.name), filters_(filters), kernel_(kernel),
      options_(std::move(options)) {
  if (filters_ == 0)
    throw ShapeError("Conv2D: filters must be at least 1");
}

Conv2D::Conv2D(unsigned filters, Size2 kernel, const std::string &activation)
    : Conv2D(filters, kernel,
             detail::withActivation<Conv2DOptions>(activation)) {}

Activations Conv2D::call(BuildContext &ctx, const Activations &in) const {
  requireImages(*this, in);
  const Activations x = ctx.channelsFirst(in);
  const Shape s = x.value.shape(); // a copy: adding values moves shapes
  const auto [lower, upper] =
      paddings(*this, s, kernel_, options_.strides, options_.padding);
  ir::Value w = ctx.read(
      ctx.variable("kernel", {filters_, s[1], kernel_[0], kernel_[1]},
                   options_.kernelInitializer, ir::init::glorotUniform(0)));
  ir::Conv2dOptions o;
  o.strides = {options_.strides[0], options_.strides[1]};
  o.padLower = lower;
  o.padUpper = upper;
  ir::Value y = ctx.withPartials(ir::conv2d(x.value, w, o));
  if (options_.useBias)
    y = ir::biasAdd(
        y,
        ctx.read(ctx.variable("bias", {filters_}, options_.biasInitializer,
                              ir::init::zeros())),
        1);
  return applyActivation(ctx, {y, true}, options_.activation);
}

namespace {

Activations pool(BuildContext &ctx, const Layer &layer, const Activations &in,
                 Size2 window, const PoolOptions &options, bool isMax) {
  requireImages(layer, in);
  const Activations x = ctx.channelsFirst(in);
  const Size2 strides = options.strides.value_or(window);
  const auto [lower, upper] =
      paddings(layer, x.value.shape(), window, strides, options.padding);
  ir::PoolOptions o;
  o.kernel = {window[0], window[1]};
  o.strides = {strides[0], strides[1]};
  o.padLower = lower;
  o.padUpper = upper;
  return {isMax ? ir::maxPool(x.value, o) : ir::avgPool(x.value, o), true};
}

} // namespace

MaxPool2D::MaxPool2D(Size2 pool, PoolOptions options)
    : Layer(options.name), pool_(pool), options_(std::move(options)) {}

Activations MaxPool2D::call(BuildContext &ctx, const Activations &x) const {
  return pool(ctx, *this, x, pool_, options_, true);
}

AvgPool2D::AvgPool2D(Size2 pool, PoolOptions options)
    : Layer(options.name), pool_(pool), options_(std::move(options)) {}

Activations AvgPool2D::call(BuildContext &ctx, const Activations &x) const {
  return pool(ctx, *this, x, pool_, options_, false);
}

Activations GlobalAvgPool2D::call(BuildContext &ctx,
                                  const Activations &in) const {
  requireImages(*this, in);
  const Activations x = ctx.channelsFirst(in);
  return {ir::reduceMean(x.value, {2, 3}), false};
}

ZeroPadding2D::ZeroPadding2D(std::array<Size2, 2> padding, std::string name)
    : Layer(std::move(name)), padding_(padding) {}

Activations ZeroPadding2D::call(BuildContext &, const Activations &x) const {
  requireImages(*this, x);
  // Either layout will do: pad the height and width where they are.
  const std::size_t h = x.channelsFirst ? 2 : 1;
  Shape lower(4, 0), upper(4, 0);
  lower[h] = padding_[0][0];
  upper[h] = padding_[0][1];
  lower[h + 1] = padding_[1][0];
  upper[h + 1] = padding_[1][1];
  return {ir::pad(x.value, lower, upper), x.channelsFirst};
}

} // namespace tessera::nn
