// Private to the compiler: the cost model's entry points (DESIGN.md section
// 6). Every figure it uses comes from the target's cost table.
#pragma once

#include "CompilerState.hpp"
#include "Traffic.hpp"

namespace tessera::compiler {

/// Cycles of an exchange, stream or remote-buffer step from its traffic;
/// touched IPUs get the cost, others nothing.
StepEstimate estimateTraffic(const State &s, const Traffic &t);

} // namespace tessera::compiler
