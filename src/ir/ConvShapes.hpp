// The ops library's parameter structs that the convolution and pooling
// attribute records (OpAttrs.hpp) make, shared by the interpreter and
// lowering.
#pragma once

#include "tessera/ir/OpAttrs.hpp"
#include "tessera/ops/Conv.hpp"
#include "tessera/ops/Pooling.hpp"

#include <array>

namespace tessera::ir::detail {

/// The ops library's description of conv2d of x [N, Cin, H, W] with IR
/// weights w [Cout, Cin / groups, kH, kW] (which are the ops library's
/// [G, Cout / G, Cin / G, kH, kW] in the same memory order).
ops::ConvParams convParams(const Conv2dOptions &a, const Shape &x,
                           const Shape &w, Type type);
/// The ops library's weights shape for IR weights \p w.
Shape opsWeightsShape(const Conv2dOptions &a, const Shape &w);
ops::PoolParams poolParams(const PoolOptions &a, ops::PoolingType type,
                           const Shape &x, Type dtype);

} // namespace tessera::ir::detail
