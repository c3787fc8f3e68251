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

/// Lowers \p module into \p graph as a pipeline of its stages and returns
/// the program of one step: the schedule's ticks over the module's update
/// period of micro-batches (each taking its feeds and giving its outfeeds),
/// then the weight update. Throws OptionError / IrError for a module or
/// configuration the pipeline cannot run, saying what to change.
program::Sequence pipelinedStep(const ir::Module &module, const Config &config,
                                const RunSpec &spec, Graph &graph,
                                ir::LoweredModule &lowered);

} // namespace tessera::session::detail
