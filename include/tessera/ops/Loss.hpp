/// \file
/// Losses and accuracy (PopLibs' popnn::calcLoss and calcAccuracy).
///
/// calcLoss takes a batch of model outputs [b, n] and what was expected,
/// either as labels or as target distributions:
///  - labels: an UNSIGNED_INT or INT tensor [b], one class index per row.
///    A label outside [0, n) -- MASKED_LABEL_CODE (~0u, or -1 for INT) among
///    them -- masks its row: loss 0, deltas 0, never counted correct.
///  - targets: a FLOAT or HALF tensor [b, n] of the model outputs' type
///    (one-hot rows, or any distributions).
///
/// For each row with probabilities p and target t (one-hot for a label):
///  - SUM_SQUARED_LOSS: loss = 0.5 * sum((p - t)^2), deltas = p - t, the
///    gradient of the loss with respect to p;
///  - CROSS_ENTROPY_LOSS: p holds probabilities (a softmax's output, as in
///    popnn); loss = -sum(t * log(max(p, 1e-7))), deltas = p - t, which is
///    the gradient of the loss with respect to the softmax's INPUT.
/// A row is correct when the index of its largest output (the lowest among
/// equal ones) equals the label, or the index of the target's largest
/// element. numCorrect is ADDED to, so one counter accumulates over steps.
///
/// How it runs, as softmax does (NonLinearity.hpp): either one fused vertex
/// per worker-sized group of whole rows, on the tile holding the row's
/// first delta, which also counts the group's correct rows (the counts are
/// then summed into numCorrect with ops::reduce); or maps and reductions
/// spread over tiles, counting with ops::argMax. The cost model picks
/// unless the option "plan" ("auto", "rows", "reduce") forces one.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <string_view>

namespace tessera {
namespace ops {

using program::Sequence;

/// The losses of popnn.
enum class LossType { SUM_SQUARED_LOSS, CROSS_ENTROPY_LOSS };

/// "SUM_SQUARED_LOSS" or "CROSS_ENTROPY_LOSS".
#if TESSERA_CXX17
std::string_view lossName(LossType type);
#endif

/// The label that masks a row (popnn::MASKED_LABEL_CODE); -1 as an INT.
TESSERA_INLINE_VAR constexpr unsigned MASKED_LABEL_CODE = ~0u;

/// Writes each row's loss into \p loss ([b], the outputs' type) and
/// dloss / d(outputs) -- or, for cross-entropy, d(loss) / d(softmax input)
/// -- into \p deltas ([b, n], the outputs' type), and adds the number of
/// correct rows to \p numCorrect (an UNSIGNED_INT scalar, shape {} or {1}).
/// \p modelOutputs is FLOAT or HALF [b, n]; \p expected labels [b] or
/// targets [b, n] (see the file comment). Throws TypeError or ShapeError
/// naming the tensor that is wrong.
void calcLoss(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
              const Tensor &loss, const Tensor &deltas,
              const Tensor &numCorrect, LossType type, Sequence &prog,
              const DebugContext &dc = {}, const OptionFlags &options = {});

/// As above, without counting correct rows.
void calcLoss(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
              const Tensor &loss, const Tensor &deltas, LossType type,
              Sequence &prog, const DebugContext &dc = {},
              const OptionFlags &options = {});

/// Adds to \p numCorrect (UNSIGNED_INT scalar) the number of rows of
/// \p modelOutputs ([b, n]: FLOAT, HALF, INT or UNSIGNED_INT) whose largest
/// element's index equals the row's label in \p expected ([b], UNSIGNED_INT
/// or INT). Masked labels never match.
void calcAccuracy(Graph &graph, const Tensor &modelOutputs,
                  const Tensor &expected, const Tensor &numCorrect,
                  Sequence &prog, const DebugContext &dc = {},
                  const OptionFlags &options = {});

} // namespace ops
} // namespace tessera
