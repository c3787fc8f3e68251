// The convolution and pooling attributes as numbers, and the ops library's
// parameter structs they make, shared by the interpreter and lowering.
// Attributes are read without checks: shape inference has checked them.
#pragma once

#include "tessera/ir/Module.hpp"
#include "tessera/ops/Conv.hpp"
#include "tessera/ops/Pooling.hpp"

#include <array>

namespace tessera::ir::detail {

struct ConvAttrs {
  std::array<unsigned, 2> strides{1, 1}, padLower{0, 0}, padUpper{0, 0},
      dilations{1, 1};
  unsigned groups = 1;
};

struct PoolAttrs {
  std::array<unsigned, 2> kernel{1, 1}, strides{1, 1}, padLower{0, 0},
      padUpper{0, 0};
};

ConvAttrs readConvAttrs(const Attributes &attrs);
PoolAttrs readPoolAttrs(const Attributes &attrs);

/// The ops library's description of conv2d of x [N, Cin, H, W] with IR
/// weights w [Cout, Cin / groups, kH, kW] (which are the ops library's
/// [G, Cout / G, Cin / G, kH, kW] in the same memory order).
ops::ConvParams convParams(const ConvAttrs &a, const Shape &x, const Shape &w,
                           Type type);
/// The ops library's weights shape for IR weights \p w.
Shape opsWeightsShape(const ConvAttrs &a, const Shape &w);
ops::PoolParams poolParams(const PoolAttrs &a, ops::PoolingType type,
                           const Shape &x, Type dtype);

} // namespace tessera::ir::detail
