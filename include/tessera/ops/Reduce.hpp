/// \file
/// Reductions (PopLibs' popops::reduce) and the index reductions argMax,
/// argMin and topK.
///
/// reduce() combines the elements of a tensor over any set of its
/// dimensions with one Operation, optionally scaling the result and
/// combining it into an existing output ("update"). The result has the
/// input's shape without the reduced dimensions (shape {} when every
/// dimension is reduced; a scaled copy when none is).
///
/// How it runs on the IPU Model, as PopLibs plans it:
///  1. On every tile, vertices reduce the input elements that tile holds,
///     one vertex per worker-sized range of outputs, into float partials
///     (int or bool partials for int and bool inputs).
///  2. Outputs whose partials come from more than one vertex are reduced
///     again on the tile that owns the output element, after the compiler
///     exchanges the partials there. When an output has more than 128
///     partials (one from every tile of a large IPU), intermediate levels
///     first reduce them within groups of about sqrt(count) neighbouring
///     tiles, so no tile receives more than a few dozen per output.
///  3. Scaling, the update and the cast to the output type happen in the
///     last stage's vertices, so an output whose elements all sit on one
///     tile is finished in a single compute set.
/// The order of operations within each stage is fixed, so results are
/// deterministic for a given tile mapping (and independent of the number of
/// host threads); different tile counts group the partial sums differently
/// and so may differ by float rounding.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <cstddef>
#include <iosfwd>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera {
namespace ops {

using program::Sequence;

/// How reduce() combines elements (popops::Operation).
enum class Operation {
  ADD,        ///< sum
  MUL,        ///< product
  MIN,        ///< minimum
  MAX,        ///< maximum
  SQUARE_ADD, ///< sum of squares
  LOG_ADD,    ///< log(sum(exp(x))), computed stably (max-shifted)
  LOGICAL_AND,
  LOGICAL_OR,
};

/// "ADD", "MUL", ... as the enumerator is spelled.
#if TESSERA_CXX17
std::string_view operationName(Operation op);
#endif
std::ostream &operator<<(std::ostream &os, Operation op);

/// What a reduction computes (popops::ReduceParams). Implicitly made from an
/// Operation.
///
/// The result r of reducing with \p op is first scaled: r * scale for the
/// arithmetic operations, r + log(scale) for LOG_ADD (so that the result is
/// log(scale * sum(exp(x))); scale must then be positive); the logical
/// operations take no scale. Int results are scaled in double precision and
/// converted as a cast (toward zero).
///
/// With \p update the scaled result is combined into the output's existing
/// value with the reduction's own combining operation, as if the output were
/// one more partial: out + r for ADD and SQUARE_ADD (the old value is not
/// squared), out * r for MUL, min / max for MIN and MAX, log(exp(out) +
/// exp(r)) for LOG_ADD, and / or for the logical operations.
struct ReduceParams {
  Operation op = Operation::ADD;
  bool update = false;
  float scale = 1.0f;
  ReduceParams() = default;
  ReduceParams(Operation op, bool update = false, // NOLINT: implicit
               float scale = 1.0f)
      : op(op), update(update), scale(scale) {}
};

/// Reduces \p in over the dimensions \p dims with \p params, giving a new
/// tensor of type \p outType (mapped where the last stage runs).
///
/// Types: FLOAT and HALF inputs (accumulated in float) take every operation
/// except the logical ones and give FLOAT or HALF; INT and UNSIGNED_INT
/// inputs take ADD, MUL, MIN, MAX and SQUARE_ADD (wrapping as unsigned
/// arithmetic does) and give their own type; BOOL inputs take LOGICAL_AND
/// and LOGICAL_OR and give BOOL. Reducing over no elements gives the
/// operation's identity (0, 1, +inf / the largest int, -inf / the smallest
/// int, -inf for LOG_ADD, true, false).
///
/// Throws ShapeError for a dimension out of range or listed twice, TypeError
/// for an operation the type does not support, UnsupportedError for a scale
/// the operation cannot take, OptionError for an unknown option. Option:
/// "accumType.interTile" ("float" or "half"; float and half inputs only):
/// the type of the partials exchanged between tiles, float by default.
/// Accepted and ignored (logged once per process): "accumType.inVertex"
/// ("float" or "half"; Tessera's vertices accumulate float). Unknown keys
/// get a did-you-mean hint.
Tensor reduce(Graph &graph, const Tensor &in, Type outType,
              const std::vector<std::size_t> &dims, ReduceParams params,
              Sequence &prog, const DebugContext &dc = {},
              const OptionFlags &options = {});

/// As above, with the output type equal to the input's. params.update
/// needs an existing output: use reduceWithOutput.
Tensor reduce(Graph &graph, const Tensor &in,
              const std::vector<std::size_t> &dims, ReduceParams params,
              Sequence &prog, const DebugContext &dc = {},
              const OptionFlags &options = {});

/// Reduces into \p out, whose shape must be \p in's shape without \p dims
/// and whose type is the output type. With params.update the result is
/// combined into out's values (see ReduceParams). The last stage runs on
/// the tiles \p out is mapped to.
void reduceWithOutput(Graph &graph, const Tensor &in, const Tensor &out,
                      const std::vector<std::size_t> &dims, ReduceParams params,
                      Sequence &prog, const DebugContext &dc = {},
                      const OptionFlags &options = {});

/// PopLibs' compute-set forms of the three above: the reduction's compute
/// sets are appended to \p css, to be run in order (Execute) after
/// whatever fills \p in, so several reductions can share one superstep.
Tensor reduce(Graph &graph, const Tensor &in, Type outType,
              const std::vector<std::size_t> &dims, ReduceParams params,
              std::vector<ComputeSet> &css, const DebugContext &dc = {},
              const OptionFlags &options = {});
Tensor reduce(Graph &graph, const Tensor &in,
              const std::vector<std::size_t> &dims, ReduceParams params,
              std::vector<ComputeSet> &css, const DebugContext &dc = {},
              const OptionFlags &options = {});
void reduceWithOutput(Graph &graph, const Tensor &in, const Tensor &out,
                      const std::vector<std::size_t> &dims, ReduceParams params,
                      std::vector<ComputeSet> &css, const DebugContext &dc = {},
                      const OptionFlags &options = {});

/// The shape reduce() gives: \p shape without \p dims (checked as reduce
/// checks them; \p op names the caller in messages).
std::vector<std::size_t> reducedShape(const char *op,
                                      const std::vector<std::size_t> &shape,
                                      const std::vector<std::size_t> &dims);

/// For each row of the 2-D \p in ([b, n], n >= 1), the index of its largest
/// element (the lowest index among equal ones): an UNSIGNED_INT tensor [b].
/// Types FLOAT, HALF, INT, UNSIGNED_INT. Rows spread over several tiles are
/// reduced in two stages, as reduce() does.
Tensor argMax(Graph &graph, const Tensor &in, Sequence &prog,
              const DebugContext &dc = {}, const OptionFlags &options = {});
/// As argMax, the index of the smallest element.
Tensor argMin(Graph &graph, const Tensor &in, Sequence &prog,
              const DebugContext &dc = {}, const OptionFlags &options = {});

/// For each row of the 2-D \p in ([b, n]), the \p k (1 <= k <= n) largest
/// elements (smallest when !\p largest) and their indices: values [b, k] of
/// in's type and indices [b, k] UNSIGNED_INT. Among equal values the lower
/// index ranks first. With \p sorted the k results of a row are in rank
/// order (best first); otherwise they are in increasing index order.
std::pair<Tensor, Tensor> topK(Graph &graph, const Tensor &in, unsigned k,
                               bool largest, bool sorted, Sequence &prog,
                               const DebugContext &dc = {},
                               const OptionFlags &options = {});
/// topK with largest = true and sorted = true.
std::pair<Tensor, Tensor> topK(Graph &graph, const Tensor &in, unsigned k,
                               Sequence &prog, const DebugContext &dc = {},
                               const OptionFlags &options = {});

} // namespace ops
} // namespace tessera
