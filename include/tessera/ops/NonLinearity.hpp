/// \file
/// Non-linearities (PopLibs' popnn::nonLinearity) and their input gradients.
///
/// RELU, GELU, SIGMOID and TANH are elementwise maps (one compute set). The
/// softmax family works on the innermost dimension of the tensor: every
/// row of that dimension is normalised on its own.
///
/// How softmax runs on the IPU Model, one of two plans:
///  - rows: one fused vertex per worker-sized group of whole rows, on the
///    tile that holds each row's first output element; one compute set.
///    Needs a row of input and output (and of the gradient) in an eighth of
///    a tile's memory: about 10000 floats on ipu2.
///  - reduce: rows spread over tiles, computed with reductions and maps:
///    SOFTMAX is exp, a sum reduction and a division as written;
///    SOFTMAX_STABLE subtracts a max reduction first; LOG_SOFTMAX is x minus
///    a LOG_ADD reduction (log-sum-exp).
/// By default the cost model picks: rows when they fit and there are enough
/// of them to keep the tiles' workers busy, reduce otherwise. The option
/// "plan" ("auto", "rows" or "reduce") forces one; other option keys are
/// OptionError.
/// The rows plan computes in float; the reduce plan keeps its intermediate
/// tensors in the input's type (the maps compute in float).
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <string_view>

namespace tessera {
namespace ops {

using program::Sequence;

/// The non-linearities of popnn.
enum class NonLinearityType {
  RELU,    ///< max(x, 0)
  GELU,    ///< x * Phi(x) in the tanh approximation
  SIGMOID, ///< 1 / (1 + exp(-x))
  TANH,    ///< tanh(x)
  /// exp(x) / sum(exp(x)) over the innermost dimension, as written: the
  /// exponentials overflow for inputs above ~88.
  SOFTMAX,
  /// Softmax computed as exp(x - max(x)) / sum(exp(x - max(x))): never
  /// overflows.
  SOFTMAX_STABLE,
  /// log(softmax(x)) = x - log(sum(exp(x))), computed stably.
  LOG_SOFTMAX,
};

/// "RELU", "GELU", ... as the enumerator is spelled.
#if TESSERA_CXX17
std::string_view nonLinearityName(NonLinearityType type);
#endif

/// A new tensor holding \p type applied to \p t (FLOAT or HALF, any shape;
/// the softmax family needs rank >= 1), mapped as \p t. Throws TypeError for
/// other element types and ShapeError for a softmax of a scalar or of an
/// empty innermost dimension.
Tensor nonLinearity(Graph &graph, NonLinearityType type, const Tensor &t,
                    Sequence &prog, const DebugContext &dc = {},
                    const OptionFlags &options = {});

/// As nonLinearity, writing the result into \p t.
void nonLinearityInPlace(Graph &graph, NonLinearityType type, const Tensor &t,
                         Sequence &prog, const DebugContext &dc = {},
                         const OptionFlags &options = {});

/// The gradient with respect to the non-linearity's input, given its output
/// \p out (the activations) and the gradient \p outGradient with respect to
/// that output, g below (popnn::nonLinearityInputGradient):
///  - RELU: g * (out > 0); SIGMOID: g * out * (1 - out); TANH: g * (1 -
///    out^2);
///  - SOFTMAX and SOFTMAX_STABLE: out * (g - sum(g * out)) per row;
///  - LOG_SOFTMAX: g - exp(out) * sum(g) per row;
///  - GELU cannot be computed from its output: \p out must then be
///    the non-linearity's INPUT (or use the overload taking both).
/// The result is mapped as \p outGradient. Throws ShapeError when the two
/// shapes differ and TypeError when their types differ or are not FLOAT or
/// HALF.
Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type,
                                 const Tensor &out, const Tensor &outGradient,
                                 Sequence &prog, const DebugContext &dc = {},
                                 const OptionFlags &options = {});

/// As above, with the forward input \p in given as well: GELU uses \p in,
/// every other type \p out.
Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type,
                                 const Tensor &in, const Tensor &out,
                                 const Tensor &outGradient, Sequence &prog,
                                 const DebugContext &dc = {},
                                 const OptionFlags &options = {});

} // namespace ops
} // namespace tessera
