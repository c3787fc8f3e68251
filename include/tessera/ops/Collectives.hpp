/// \file
/// Collectives across the replicas of a replicated graph (Graphcore's GCL:
/// gcl::allReduceCrossReplica and friends; popops::replicatedAllReduce).
///
/// A graph with replication factor R describes one replica; the engine runs
/// R copies, each with its own values. These ops combine the values that
/// one tensor holds on every replica:
///  - allReduce: every replica gets op(x_0, ..., x_{R-1}), elementwise;
///  - reduceScatter: the flattened tensor is cut into R equal chunks (the
///    last padded with zeros when R does not divide the size) and replica r
///    gets the reduction of chunk r only;
///  - allGather: every replica gets [x_0, ..., x_{R-1}], a new leading
///    dimension of size R.
/// With one replica (an unreplicated graph) each is the identity: allReduce
/// copies, reduceScatter gives the flattened tensor, allGather adds a
/// leading dimension of size 1 (GCL's behaviour on one replica).
///
/// How they run: as GCL does, a ring over the IPU-links, built from
/// CrossReplicaCopy programs (replica r sends to replica r + 1 mod R) and
/// elementwise ops, so the engine computes exact results and the cost model
/// charges every byte the ring moves at the IPU-link bandwidth.
///  1. Each replica rotates its chunks so that chunk j of the rotated copy
///     is chunk (r + j) mod R of its own (a dynamicSlice by the replica's
///     index, which a few tiny CrossReplicaCopy steps set up: ceil(log2 R)
///     of them, each telling the replicas with one bit of their index set).
///  2. Reduce-scatter: R - 1 steps, each sending one chunk to the next
///     replica, which combines it into its own copy of that chunk. After
///     them, rotated chunk 0 of replica r is the full reduction of chunk r.
///  3. All-gather (allReduce and allGather): R - 1 steps forwarding the
///     finished chunks around the ring, then the inverse rotation.
/// Each replica sends 2 (R - 1) / R of the tensor for an allReduce and
/// (R - 1) / R for a reduceScatter, the bandwidth-optimal amounts. Every
/// chunk is reduced once, in a fixed order around the ring, and then
/// copied: all replicas get bit-identical results.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <string_view>

namespace tessera {
namespace ops {

using program::Sequence;

/// How a collective combines the replicas' values (gcl::CollectiveOperator).
enum class CollectiveOperator {
  ADD,         ///< sum
  MEAN,        ///< sum / R (FLOAT and HALF only)
  MUL,         ///< product
  MIN,         ///< minimum
  MAX,         ///< maximum
  LOGICAL_AND, ///< BOOL only
  LOGICAL_OR,  ///< BOOL only
  SQUARE_ADD,  ///< sum of the squares
  LOCAL,       ///< no combination: each replica keeps its own values
};

/// "ADD", "MEAN", ... as the enumerator is spelled.
#if TESSERA_CXX17
std::string_view collectiveOperatorName(CollectiveOperator op);
#endif

/// A new tensor of \p data's shape, type and tile mapping holding \p op of
/// \p data over every replica. Types: FLOAT, HALF, INT and UNSIGNED_INT
/// for the arithmetic operators (MEAN: FLOAT and HALF; integer results
/// must fit the type), BOOL for the logical ones (LOCAL takes any of them).
/// Float and half values are combined in their own type, one replica at a
/// time around the ring, so a sum rounds once per replica. Throws TypeError
/// for an operator the type does not take, ShapeError for a tensor with no
/// elements, OptionError for an unknown option (with a did-you-mean hint).
/// Options, here and in every collective below: none of Tessera's own.
/// Accepted and ignored (GCL's choice of algorithm, logged once per
/// process): "useReplicatedImplementation" ("true" or "false"), "method"
/// ("auto", "clockwise_ring", "anticlockwise_ring",
/// "bidirectional_ring_pair", "meet_in_middle_ring",
/// "quad_directional_ring": Tessera runs one ring whatever is chosen).
Tensor allReduce(Graph &graph, const Tensor &data, CollectiveOperator op,
                 Sequence &prog, const DebugContext &dc = {},
                 const OptionFlags &options = {});

/// As allReduce, writing the result into \p data.
void allReduceInPlace(Graph &graph, const Tensor &data, CollectiveOperator op,
                      Sequence &prog, const DebugContext &dc = {},
                      const OptionFlags &options = {});

/// As allReduce, writing the result into \p out (\p data's shape and type).
void allReduceWithOutput(Graph &graph, const Tensor &data, const Tensor &out,
                         CollectiveOperator op, Sequence &prog,
                         const DebugContext &dc = {},
                         const OptionFlags &options = {});

/// Replica r's chunk of the reduction: \p data flattened (n elements) and
/// padded with zeros to R * ceil(n / R) elements, reduced as allReduce
/// reduces, elements [r * c, (r + 1) * c) with c = ceil(n / R): a new 1-D
/// tensor of c elements, spread over the tiles. The padding elements of
/// the last replicas' chunks hold op applied to zeros (0, false). Same
/// types and errors as allReduce.
Tensor reduceScatter(Graph &graph, const Tensor &data, CollectiveOperator op,
                     Sequence &prog, const DebugContext &dc = {},
                     const OptionFlags &options = {});

/// Every replica's \p data: a new tensor [R, data's shape...] whose element
/// [s, ...] is replica s's value, the same on every replica. Types: FLOAT,
/// HALF, INT, UNSIGNED_INT and BOOL (TypeError for others); ShapeError for
/// a tensor with no elements.
Tensor allGather(Graph &graph, const Tensor &data, Sequence &prog,
                 const DebugContext &dc = {}, const OptionFlags &options = {});

} // namespace ops
} // namespace tessera
