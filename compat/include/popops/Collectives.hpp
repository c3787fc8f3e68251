/// \file
/// popops' replicated collectives (popops::replicatedAllReduce and
/// friends, which GCL later took over) as Tessera's ops.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/OptionFlags.hpp>
#include <poplar/Program.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Collectives.hpp>

namespace popops {

using tessera::ops::CollectiveOperator;

inline tessera::Tensor
replicatedAllReduce(tessera::Graph &graph, const tessera::Tensor &data,
                    CollectiveOperator op, tessera::program::Sequence &prog,
                    const tessera::DebugContext &dc = {},
                    const tessera::OptionFlags &options = {}) {
  return tessera::ops::allReduce(graph, data, op, prog, dc, options);
}

inline void replicatedAllReduceWithOutput(
    tessera::Graph &graph, const tessera::Tensor &data,
    const tessera::Tensor &output, CollectiveOperator op,
    tessera::program::Sequence &prog, const tessera::DebugContext &dc = {},
    const tessera::OptionFlags &options = {}) {
  tessera::ops::allReduceWithOutput(graph, data, output, op, prog, dc, options);
}

inline void replicatedAllReduceInPlace(
    tessera::Graph &graph, const tessera::Tensor &data, CollectiveOperator op,
    tessera::program::Sequence &prog, const tessera::DebugContext &dc = {},
    const tessera::OptionFlags &options = {}) {
  tessera::ops::allReduceInPlace(graph, data, op, prog, dc, options);
}

inline tessera::Tensor
replicatedReduceScatter(tessera::Graph &graph, const tessera::Tensor &data,
                        CollectiveOperator op, tessera::program::Sequence &prog,
                        const tessera::DebugContext &dc = {},
                        const tessera::OptionFlags &options = {}) {
  return tessera::ops::reduceScatter(graph, data, op, prog, dc, options);
}

inline tessera::Tensor
replicatedAllGather(tessera::Graph &graph, const tessera::Tensor &data,
                    tessera::program::Sequence &prog,
                    const tessera::DebugContext &dc = {},
                    const tessera::OptionFlags &options = {}) {
  return tessera::ops::allGather(graph, data, prog, dc, options);
}

} // namespace popops
