/// \file
/// Typed attribute records of the op families whose kinds take several
/// attributes, and the one place that writes them to and reads them from an
/// operation's Attributes (the text format's names live in OpAttrs.cpp
/// only). The builder takes these records, shape inference, the
/// interpreter, lowering and autodiff read them back with decode*.
#pragma once

#include "tessera/ir/Module.hpp"

#include <array>
#include <cstdint>
#include <vector>

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

/// The reduction family (reduceSum, reduceMean, reduceMax): attributes
/// "axes" (ints in [-rank, rank), each once; none: every axis) and
/// "keepDims" (int 0 or 1).
struct ReduceAttrs {
  std::vector<std::int64_t> axes;
  bool keepDims = false;
  /// Which dimensions of an operand of rank \p rank are reduced; the axes
  /// must be valid for it (shape inference checks them).
  std::vector<bool> reducedDims(std::size_t rank) const;
};

/// dropout: attributes "rate" (float in [0, 1)), "seed" (int: the host
/// seed when the op has no seed operand) and "seedModifier" (int, 32-bit
/// unsigned).
struct DropoutAttrs {
  double rate = 0.5;
  std::uint64_t seed = 0;
  std::uint32_t seedModifier = 0;
};

/// The attributes that hold \p options.
Attributes encode(const Conv2dOptions &options);
Attributes encode(const PoolOptions &options);
Attributes encode(const ReduceAttrs &attrs);
Attributes encode(const DropoutAttrs &attrs);

/// The record held by \p attrs. Throws IrError (naming the attribute) when
/// one is missing, is not a list of two integers, or holds a value below its
/// minimum: 1 for kernel, strides, dilations and groups, 0 for padding.
Conv2dOptions decodeConv2dOptions(const Attributes &attrs);
PoolOptions decodePoolOptions(const Attributes &attrs);
/// Throws IrError for a missing attribute (the axes' range depends on the
/// operand: shape inference checks it).
ReduceAttrs decodeReduceAttrs(const Attributes &attrs);
/// Throws IrError for a missing attribute, a rate outside [0, 1) or a seed
/// modifier that is not a 32-bit unsigned integer.
DropoutAttrs decodeDropoutAttrs(const Attributes &attrs);

} // namespace tessera::ir
