// Shared by the lowering driver (Lowering.cpp) and the per-kind lowering
// (LoweringOps.cpp): what one operation's lowering gets to work with.
#pragma once

#include "tessera/ir/Lowering.hpp"

#include <optional>
#include <vector>

namespace tessera::ir::detail {

struct LowerContext {
  /// The graph of the op's IPU (a virtual graph when sharded).
  Graph &graph;
  program::Sequence &prog;
  const Op &op;
  /// Operand tensors, on the op's IPU; invalid where splat[i] is set.
  std::vector<Tensor> in;
  /// Scalar constants to use as expression constants instead of tensors
  /// (elementwise kinds only).
  std::vector<std::optional<double>> splat;
  std::vector<ValueType> inTypes, outTypes;
  DebugContext dc;
  const LoweringOptions &options;
};

using Results = std::vector<Tensor>;

/// \p base with the op's "partialsType" attribute (kPartialsType) as the
/// ops library's option, when the op has one.
inline OptionFlags withPartials(const OptionFlags &base, const Op &op) {
  if (!op.attrs.has(kPartialsType))
    return base;
  OptionFlags o = base;
  o.set(kPartialsType, op.attrs.getString(kPartialsType));
  return o;
}

/// The result tensors of one operation.
Results lowerOp(LowerContext &c);

/// The families of LoweringNn.cpp; lowerOp (LoweringOps.cpp) picks one per
/// kind.
Results convOp(LowerContext &c);
Results poolOp(LowerContext &c);
/// softmax, logSoftmax and their gradients.
Results softmaxOp(LowerContext &c);
Results dropoutOp(LowerContext &c);
Results normOp(LowerContext &c);
Results normGradOp(LowerContext &c);
/// sparseSoftmaxCrossEntropy and its gradient.
Results sparseCrossEntropyOp(LowerContext &c);
/// categoricalCrossEntropy, meanSquaredError.
Results rowLossOp(LowerContext &c);
Results argmaxOp(LowerContext &c);
Results accuracyOp(LowerContext &c);

/// A new tensor for operand \p operand of \p op (of type \p t) laid out as
/// the op's ops-library call prefers, or an invalid tensor when it has no
/// preference.
Tensor preferredLayout(Graph &graph, const Op &op, unsigned operand,
                       const std::vector<ValueType> &operandTypes,
                       const LoweringOptions &options, const DebugContext &dc);

/// Sets the initial value of \p t (of type \p type) to \p values.
void setInitialValues(Graph &graph, const Tensor &t,
                      const std::vector<double> &values);
/// Sets \p t's initial value to \p init's for \p shape; a constant
/// initialiser fills \p t without a list of its values.
void setInitialValues(Graph &graph, const Tensor &t, const Initialiser &init,
                      const std::vector<std::size_t> &shape);

/// Maps the tensors given to it linearly over a graph's tiles
/// (mapTensorLinearly's grains and minimum per tile), each starting on the
/// tile after the last one the one before used, wrapping round. Mapped
/// from tile 0 every time, a model's small tensors (biases, norm
/// parameters, their optimizer state, scalars) all share the first tiles,
/// and so does a vertex of every op on them.
class TileSpreader {
public:
  void map(Graph &graph, const Tensor &t);

private:
  unsigned next_ = 0;
};

/// A constant tensor holding \p values (one per element, or one for all),
/// mapped linearly from tile 0, or by \p spreader when given.
Tensor addConstantTensor(Graph &graph, const ValueType &t,
                         const std::vector<double> &values,
                         const DebugContext &dc,
                         TileSpreader *spreader = nullptr);

} // namespace tessera::ir::detail
