// Helpers shared by the interpreter's files: value construction, row-major
// index arithmetic and broadcasting.
#pragma once

#include "tessera/ir/Interpreter.hpp"

#include <vector>

namespace tessera::ir::detail {

using Operands = std::vector<const HostValue *>;
using Results = std::vector<HostValue>;

/// A zero-filled value of type \p t.
inline HostValue zeros(const ValueType &t) {
  return {t.dtype, t.shape, std::vector<double>(t.numElements(), 0.0)};
}

/// Row-major strides of \p shape.
std::vector<std::size_t> stridesOf(const Shape &shape);

/// For each element of \p out (row-major), the index of the element of a
/// value of shape \p in broadcast (NumPy) to \p out.
std::vector<std::size_t> broadcastIndices(const Shape &in, const Shape &out);

/// Rounds \p v as storing it in \p type does for integer and bool types;
/// float and half values are kept in double.
void roundToType(HostValue &v);

/// Splits a shape [..., n] into (rows, n).
inline std::pair<std::size_t, std::size_t> rowsOf(const Shape &s) {
  const std::size_t n = s.empty() ? 1 : s.back();
  return {n ? numElements(s) / n : 0, n};
}

/// The families of InterpreterNn.cpp; interpretOp (Interpreter.cpp) picks
/// one per kind. \p t: the (first) result's type.
Results interpretConv(OpKind kind, const Attributes &attrs, const Operands &in,
                      const ValueType &t);
Results interpretPool(OpKind kind, const Attributes &attrs, const Operands &in,
                      const ValueType &t);
Results interpretSoftmax(OpKind kind, const Operands &in, const ValueType &t);
Results interpretSoftmaxGrad(OpKind kind, const Operands &in,
                             const ValueType &t);
Results interpretDropout(const Attributes &attrs, const Operands &in,
                         const ValueType &t);
Results interpretNorm(OpKind kind, const Attributes &attrs, const Operands &in,
                      const std::vector<ValueType> &types);
Results interpretNormGrad(OpKind kind, const Operands &in,
                          const std::vector<ValueType> &types);
/// Logits and labels: sparse cross-entropy, its gradient, accuracy.
Results interpretLabelled(OpKind kind, const Operands &in, const ValueType &t);
/// categoricalCrossEntropy, meanSquaredError.
Results interpretRowLoss(OpKind kind, const Operands &in, const ValueType &t);
Results interpretArgmax(const Operands &in, const ValueType &t);
Results interpretElementwiseGrad(OpKind kind, const Attributes &attrs,
                                 const Operands &in,
                                 const std::vector<ValueType> &types);

} // namespace tessera::ir::detail
