// The device program of one run of a session's module: one micro-batch
// (Session.cpp), or for a staged module one step of N micro-batches
// through the pipeline (Pipeline.cpp). Internal to the session library.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/ir/Lowering.hpp"
#include "tessera/session/Session.hpp"

namespace tessera::session::detail {

/// Whether any op of \p module carries a pipeline stage.
bool isPipelined(const ir::Module &module);

/// The optimizer-state variables a session keeps in remote buffers
/// (PipelineConfig::offloadOptimizerState): with a weight update, those
/// recorded as state and zero-initialised.
std::vector<ir::ValueId> offloadedState(const ir::Module &module,
                                        const Config &config);
/// The remote buffer of offloaded variable \p name.
std::string remoteHandle(const std::string &name);
/// \p update between loads of the offloaded variables from their remote
/// buffers (made here) and stores back.
program::Sequence withOffloadedState(Graph &graph, const ir::Module &module,
                                     const std::vector<ir::ValueId> &state,
                                     const ir::LoweredModule &lowered,
                                     program::Sequence update);

/// Lowers \p module into \p graph as a pipeline of its stages and returns
/// the program of one step: the schedule's ticks over the module's update
/// period of micro-batches (each taking its feeds and giving its outfeeds),
/// then the weight update. Throws OptionError / IrError for a module or
/// configuration the pipeline cannot run, saying what to change.
program::Sequence pipelinedStep(const ir::Module &module, const Config &config,
                                const RunSpec &spec, Graph &graph,
                                ir::LoweredModule &lowered);

} // namespace tessera::session::detail
