#include "ConvShapes.hpp"

namespace tessera::ir::detail {
ops::ConvParams convParams(const Conv2dOptions &a, const Shape &x,
                           const Shape &w, Type type) {
  ops::ConvParams p(type, x[0], {x[2], x[3]}, {w[2], w[3]}, x[1] / a.groups,
                    w[0] / a.groups, a.groups);
  p.stride = a.strides;
  p.kernelDilation = a.dilations;
  p.paddingLower = a.padLower;
  p.paddingUpper = a.padUpper;
  return p;
}

Shape opsWeightsShape(const Conv2dOptions &a, const Shape &w) {
  return {a.groups, w[0] / a.groups, w[1], w[2], w[3]};
}

ops::PoolParams poolParams(const PoolOptions &a, ops::PoolingType type,
                           const Shape &x, Type dtype) {
  return ops::PoolParams(type, {x[2], x[3]}, {a.kernel[0], a.kernel[1]},
                         a.strides, a.padLower, a.padUpper, x[1], x[0], dtype);
}

} // namespace tessera::ir::detail
