/// \file
/// Matrix products (PopLibs' poplin): matMul of [m, k] by [k, n], grouped
/// (batched) products of [g, m, k] by [g, k, n], matMulAcc (C += alpha A B),
/// and the functions that create operands laid out as the planner prefers.
///
/// How a product runs: the planner splits M, N and K (and the groups) over
/// tiles, choosing the split that minimises the cost model's estimate:
/// compute per tile (the AMP unit's MACs per cycle for the types), exchange
/// of the operand blocks (bytes over the exchange bandwidth) and, when K is
/// split, a second exchange and compute set that sum the K-partials. Each
/// tile computes one output block [mb x nb] over one K-slice with a
/// MatMulBlock vertex; a MatMulReduce vertex per tile sums partials.
///
/// Operand layout: createMatMulInputLHS / RHS place each block of A (and B)
/// as pieces on the tiles that use it — block (i, kk) of A is cut by rows
/// into one piece for each of the nSplit tiles that multiply it — so the
/// exchange moves each piece once to each other user, and one user reads it
/// in place. Any other layout works too; its operands are exchanged as the
/// compiler plans, except that an operand whose pieces are shorter than a
/// vector in both its row and its column order (the channels-last flatten
/// of channel-planar activations) is first copied once into the planner's
/// layout, as PopLibs rearranges such an operand.
///
/// Types: FLOAT x FLOAT -> FLOAT (float partials); HALF x HALF -> HALF or
/// FLOAT, with float (default) or half partials.
///
/// Half partials on the host: products are computed in float, and every
/// output's running sum is rounded to half after each 16 products of a
/// tile's K-slice (the AMP consumes K in groups of that order), and the
/// tile's partial block is stored as half. The partials of a K-split are
/// summed in float and rounded once to the output type. With float partials
/// sums stay float throughout and are rounded once to the output type.
///
/// Options (OptionFlags; unknown keys are OptionErrors):
/// - "partialsType": "float" (default) or "half" (half inputs only).
/// - "availableMemoryProportion": the share of each tile's memory the
///   product's temporary data (received operand blocks, partials) may use,
///   in (0, 1]; default 0.6. Plans that need more are not chosen unless
///   none fits, then the plan needing the least memory is used.
/// - Accepted and ignored (PopLibs' plan and vertex tuning; each is logged
///   once per process): "fullyConnectedPass" ("NONE", "INFERENCE_FWD",
///   "TRAINING_FWD", "TRAINING_BWD", "TRAINING_WU"),
///   "inputRHSIsPreArranged", "use128BitConvUnitLoad",
///   "enableMultiStageReduce", "enableFastReduce", "remapOutputTensor",
///   "gatherOutput" ("true" or "false"), "planConstraints" (any JSON).
/// Unknown keys are OptionErrors with a did-you-mean hint.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {
class Target;
} // namespace tessera

namespace tessera {
namespace ops {

using program::Sequence;

/// The product C[m, n] = A[m, k] B[k, n]. The output has \p outputType and the
/// planner's layout. Throws ShapeError for operands that are not 2-D or
/// whose inner dimensions differ, TypeError for unsupported or mismatched
/// types.
Tensor matMul(Graph &graph, const Tensor &A, const Tensor &B, Sequence &prog,
              Type outputType, const DebugContext &dc = {},
              const OptionFlags &options = {});
/// As above with the output type of A.
Tensor matMul(Graph &graph, const Tensor &A, const Tensor &B, Sequence &prog,
              const DebugContext &dc = {}, const OptionFlags &options = {});

/// Grouped (batched) product: C[g] = A[g] B[g] for A [g, m, k] and
/// B [g, k, n]; the result is [g, m, n].
Tensor matMulGrouped(Graph &graph, const Tensor &A, const Tensor &B,
                     Sequence &prog, Type outputType,
                     const DebugContext &dc = {},
                     const OptionFlags &options = {});
Tensor matMulGrouped(Graph &graph, const Tensor &A, const Tensor &B,
                     Sequence &prog, const DebugContext &dc = {},
                     const OptionFlags &options = {});

/// C += alpha A B for C [m, n] (any layout), A [m, k], B [k, n]; the
/// product is formed in the partials type and added to C in one pass.
void matMulAcc(Graph &graph, const Tensor &C, float alpha, const Tensor &A,
               const Tensor &B, Sequence &prog, const DebugContext &dc = {},
               const OptionFlags &options = {});
/// C[g] += alpha A[g] B[g] for C [g, m, n].
void matMulGroupedAcc(Graph &graph, const Tensor &C, float alpha,
                      const Tensor &A, const Tensor &B, Sequence &prog,
                      const DebugContext &dc = {},
                      const OptionFlags &options = {});

/// A new [m, k] tensor of \p type laid out as matMul of \p aShape by
/// \p bShape with these options prefers. \p outputType defaults to \p type.
Tensor createMatMulInputLHS(Graph &graph, Type type,
                            const std::vector<std::size_t> &aShape,
                            const std::vector<std::size_t> &bShape,
                            const DebugContext &dc = {},
                            const OptionFlags &options = {});
Tensor createMatMulInputLHS(Graph &graph, Type type, Type outputType,
                            const std::vector<std::size_t> &aShape,
                            const std::vector<std::size_t> &bShape,
                            const DebugContext &dc = {},
                            const OptionFlags &options = {});
/// A new [k, n] tensor laid out as matMul prefers its right operand.
Tensor createMatMulInputRHS(Graph &graph, Type type,
                            const std::vector<std::size_t> &aShape,
                            const std::vector<std::size_t> &bShape,
                            const DebugContext &dc = {},
                            const OptionFlags &options = {});
Tensor createMatMulInputRHS(Graph &graph, Type type, Type outputType,
                            const std::vector<std::size_t> &aShape,
                            const std::vector<std::size_t> &bShape,
                            const DebugContext &dc = {},
                            const OptionFlags &options = {});
/// The grouped forms: shapes [g, m, k] and [g, k, n].
Tensor createMatMulGroupedInputLHS(Graph &graph, Type type, Type outputType,
                                   const std::vector<std::size_t> &aShape,
                                   const std::vector<std::size_t> &bShape,
                                   const DebugContext &dc = {},
                                   const OptionFlags &options = {});
Tensor createMatMulGroupedInputRHS(Graph &graph, Type type, Type outputType,
                                   const std::vector<std::size_t> &aShape,
                                   const std::vector<std::size_t> &bShape,
                                   const DebugContext &dc = {},
                                   const OptionFlags &options = {});

/// What the planner chose for a product and what it expects it to cost (in
/// tile cycles of the busiest tile, syncs included), as the compiler's cost
/// model will estimate it for operands laid out by createMatMulInput*.
struct MatMulPlan {
  std::size_t groups = 1, m = 0, k = 0, n = 0;
  Type inputType = FLOAT, partialsType = FLOAT, outputType = FLOAT;
  /// Parts each dimension is cut into; tiles used = their product.
  unsigned groupSplit = 1, mSplit = 1, nSplit = 1, kSplit = 1;
  /// The largest block a tile holds along each dimension.
  std::size_t groupBlock = 1, mBlock = 0, nBlock = 0, kBlock = 0;
  unsigned tilesUsed = 1;
  /// The operand that the two tiles of each exchange-bus pair both need
  /// and so receive at once ('A' or 'B'), or 0 when pairs share none.
  char pairsShare = 0;
  /// Estimated cycles: operand exchange, block compute, partials exchange
  /// and reduction (the last two zero without a K-split or accumulation).
  std::uint64_t exchangeCycles = 0, computeCycles = 0, reduceExchangeCycles = 0,
                reduceCycles = 0;
  /// Temporary bytes on the busiest tile (received blocks and partials).
  std::size_t tempBytesPerTile = 0;
  /// Whether the temporary data fit the available memory proportion.
  bool fitsMemory = true;

  std::uint64_t totalCycles() const {
    return exchangeCycles + computeCycles + reduceExchangeCycles + reduceCycles;
  }
  /// One line: "matMul 1024x1024x1024 half->half (half partials): split g1
  /// m13 n16 k7 on 1456 tiles, blocks 79x148x64, ~26398 cycles (exchange
  /// ..., compute ..., reduce exchange ..., reduce ...), ... temporary bytes
  /// per tile" (sizes m x k x n).
  std::string toString() const;
};

/// The plan matMul (or matMulGrouped, for 3-D shapes) would use on
/// \p target for inputs of \p inputType. Same errors as matMul.
MatMulPlan planMatMul(const Target &target, Type inputType, Type outputType,
                      const std::vector<std::size_t> &aShape,
                      const std::vector<std::size_t> &bShape,
                      const OptionFlags &options = {});

} // namespace ops
} // namespace tessera
