#include "ConvShapes.hpp"

namespace tessera::ir::detail {
namespace {
std::array<unsigned, 2> pair(const Attributes &attrs, const char *name) {
  const std::vector<std::int64_t> &v = attrs.getInts(name);
  return {static_cast<unsigned>(v.at(0)), static_cast<unsigned>(v.at(1))};
}
} // namespace

ConvAttrs readConvAttrs(const Attributes &attrs) {
  ConvAttrs a;
  a.strides = pair(attrs, "strides");
  a.padLower = pair(attrs, "padLower");
  a.padUpper = pair(attrs, "padUpper");
  a.dilations = pair(attrs, "dilations");
  a.groups = static_cast<unsigned>(attrs.getInt("groups"));
  return a;
}

PoolAttrs readPoolAttrs(const Attributes &attrs) {
  PoolAttrs a;
  a.kernel = pair(attrs, "kernel");
  a.strides = pair(attrs, "strides");
  a.padLower = pair(attrs, "padLower");
  a.padUpper = pair(attrs, "padUpper");
  return a;
}

ops::ConvParams convParams(const ConvAttrs &a, const Shape &x, const Shape &w,
                           Type type) {
  ops::ConvParams p(type, x[0], {x[2], x[3]}, {w[2], w[3]}, x[1] / a.groups,
                    w[0] / a.groups, a.groups);
  p.stride = a.strides;
  p.kernelDilation = a.dilations;
  p.paddingLower = a.padLower;
  p.paddingUpper = a.padUpper;
  return p;
}

Shape opsWeightsShape(const ConvAttrs &a, const Shape &w) {
  return {a.groups, w[0] / a.groups, w[1], w[2], w[3]};
}

ops::PoolParams poolParams(const PoolAttrs &a, ops::PoolingType type,
                           const Shape &x, Type dtype) {
  return ops::PoolParams(type, {x[2], x[3]}, {a.kernel[0], a.kernel[1]},
                         a.strides, a.padLower, a.padUpper, x[1], x[0], dtype);
}

} // namespace tessera::ir::detail
