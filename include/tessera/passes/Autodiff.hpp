/// \file
/// Reverse-mode automatic differentiation of IR modules: autodiff() appends
/// the backward operations that compute the gradient of a loss with
/// respect to chosen values (by default every trainable variable) and
/// returns the gradient values.
///
///     ir::Value loss = reduceMean(sparseSoftmaxCrossEntropy(logits, labels));
///     passes::Gradients g = passes::autodiff(module, loss);
///     ir::Value dw = g[w];   // named "grad/w", of w's shape and type
///
/// Rules: each operation on a path from a wanted value to the loss adds the
/// operations that carry the gradient of its results back to its floating-
/// point operands (integer and bool values carry no gradient); gradients of
/// a value used several times are summed; broadcast operands get their
/// gradient summed back to their shape. Backward operations take the ipu
/// and pipelineStage of the forward operation they differentiate and are
/// marked backward, so a sharded or pipelined model's backward pass runs
/// where its forward pass did. Where primitives would be wasteful the rules
/// use the gradient operations of OpKinds.def (unaryGrad, conv2d backprops,
/// pool gradients, ...), which are not differentiable themselves.
///
/// A loss that is not a scalar is differentiated as the sum of its
/// elements. A wanted value the loss does not depend on gets a zero
/// gradient.
#pragma once

#include "tessera/ir/Builder.hpp"
#include "tessera/passes/Pass.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera::passes {

/// The gradients autodiff made, one per wanted value.
class Gradients {
public:
  /// The gradient of the loss with respect to \p v; IrError when \p v was
  /// not one of the wanted values.
  ir::Value operator[](const ir::Value &v) const;
  /// (wanted value, gradient) in the order they were wanted.
  const std::vector<std::pair<ir::Value, ir::Value>> &entries() const {
    return entries_;
  }
  void add(ir::Value wrt, ir::Value gradient) {
    entries_.emplace_back(wrt, gradient);
  }

private:
  std::vector<std::pair<ir::Value, ir::Value>> entries_;
};

/// Appends to \p module the operations computing d(loss)/d(v) for each v
/// of \p wrt (every trainable variable when empty) and returns them; each
/// gradient that has no name yet is named "grad/<v's name>". Throws
/// TypeError for a loss or wanted value that is not float or half, IrError
/// for values of another module, and UnsupportedError for an operation on
/// the path that has no gradient (naming it and the values it connects).
Gradients autodiff(ir::Module &module, ir::Value loss,
                   std::vector<ir::Value> wrt = {});

struct AutodiffOptions {
  /// The output holding the loss.
  std::string lossOutput = "loss";
  /// The loss is multiplied by this before it is differentiated, so small
  /// half gradients do not flush to zero; the optimizer divides it out.
  double lossScaling = 1;
  /// For dynamic loss scaling: the loss is multiplied by this float scalar
  /// variable (passes::addLossScale) instead of lossScaling.
  std::optional<ir::ValueId> lossScale = std::nullopt;
  /// Also name each gradient as an output "grad/<variable>", which keeps it
  /// computed whether or not anything reads it.
  bool gradientOutputs = false;
};

/// autodiff as a pass: differentiates the loss output (times lossScaling)
/// with respect to every trainable variable and records each gradient on
/// the module (Module::setGradient), where the optimizer pass finds it.
class AutodiffPass : public Pass {
public:
  explicit AutodiffPass(AutodiffOptions options = {})
      : options_(std::move(options)) {}
  std::string_view name() const override { return "autodiff"; }
  bool run(ir::Module &module) override;

private:
  AutodiffOptions options_;
};

} // namespace tessera::passes
