/// \file
/// GCL's cross-replica collectives (gcl::allReduceCrossReplica and friends)
/// as Tessera's ops::allReduce, reduceScatter and allGather.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/OptionFlags.hpp>
#include <poplar/Program.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Collectives.hpp>

namespace gcl {

using tessera::ops::CollectiveOperator;

/// The reduction of \p data over every replica, in a new tensor.
inline tessera::Tensor
allReduceCrossReplica(tessera::Graph &graph, const tessera::Tensor &data,
                      CollectiveOperator op, tessera::program::Sequence &prog,
                      const tessera::DebugContext &dc = {},
                      const tessera::OptionFlags &options = {}) {
  return tessera::ops::allReduce(graph, data, op, prog, dc, options);
}

/// The reduction of \p data over every replica, written into \p data.
inline void allReduceInPlaceCrossReplica(
    tessera::Graph &graph, const tessera::Tensor &data, CollectiveOperator op,
    tessera::program::Sequence &prog, const tessera::DebugContext &dc = {},
    const tessera::OptionFlags &options = {}) {
  tessera::ops::allReduceInPlace(graph, data, op, prog, dc, options);
}

/// The reduction of \p data over every replica, written into
/// \p destination.
inline void allReduceToDestinationCrossReplica(
    tessera::Graph &graph, const tessera::Tensor &data,
    const tessera::Tensor &destination, CollectiveOperator op,
    tessera::program::Sequence &prog, const tessera::DebugContext &dc = {},
    const tessera::OptionFlags &options = {}) {
  tessera::ops::allReduceWithOutput(graph, data, destination, op, prog, dc,
                                    options);
}

/// This replica's chunk of the reduction of the flattened \p data.
inline tessera::Tensor reduceScatterCrossReplica(
    tessera::Graph &graph, const tessera::Tensor &data, CollectiveOperator op,
    tessera::program::Sequence &prog, const tessera::DebugContext &dc = {},
    const tessera::OptionFlags &options = {}) {
  return tessera::ops::reduceScatter(graph, data, op, prog, dc, options);
}

/// Every replica's \p data, with a new leading dimension of the replicas.
inline tessera::Tensor
allGatherCrossReplica(tessera::Graph &graph, const tessera::Tensor &data,
                      tessera::program::Sequence &prog,
                      const tessera::DebugContext &dc = {},
                      const tessera::OptionFlags &options = {}) {
  return tessera::ops::allGather(graph, data, prog, dc, options);
}

} // namespace gcl
