/// \file
/// Typed attribute records of the op families whose kinds share several
/// attributes, and the one place that writes them to and reads them from an
/// operation's Attributes (the text format's names live in OpAttrs.cpp
/// only). The builder takes these records, shape inference, the
/// interpreter, lowering and autodiff read them back with decode*.
#pragma once

#include "tessera/ir/Module.hpp"

#include <array>

namespace tessera::ir {

/// Two numbers: height, width.
using Pair = std::array<unsigned, 2>;

/// The convolution family (conv2d, conv2dBackpropInput,
/// conv2dBackpropFilter): attributes "strides", "padLower", "padUpper",
/// "dilations" (two ints each: height, width) and "groups" (int).
struct Conv2dOptions {
  Pair strides{1, 1};
  Pair padLower{0, 0};
  Pair padUpper{0, 0};
  Pair dilations{1, 1};
  unsigned groups = 1;
};

/// The pooling family (maxPool, avgPool, maxPoolGrad, avgPoolGrad):
/// attributes "kernel", "strides", "padLower", "padUpper" (two ints each).
struct PoolOptions {
  Pair kernel{2, 2};
  Pair strides{2, 2};
  Pair padLower{0, 0};
  Pair padUpper{0, 0};
};

/// The attributes that hold \p options.
Attributes encode(const Conv2dOptions &options);
Attributes encode(const PoolOptions &options);

/// The record held by \p attrs. Throws IrError (naming the attribute) when
/// one is missing, is not a list of two integers, or holds a value below its
/// minimum: 1 for kernel, strides, dilations and groups, 0 for padding.
Conv2dOptions decodeConv2dOptions(const Attributes &attrs);
PoolOptions decodePoolOptions(const Attributes &attrs);

} // namespace tessera::ir
