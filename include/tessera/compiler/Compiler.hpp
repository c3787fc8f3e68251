/// \file
/// compileGraph: a graph and its programs become an Executable. The compiler
/// checks the graph (every variable mapped, every field connected), flattens
/// the programs into steps, inserts the exchanges that bring vertex operands
/// to their tile in a contiguous layout, lays out each tile's memory reusing
/// the bytes of values whose lifetimes do not overlap, and estimates every
/// step's cycles. It times each of these phases and records the process's
/// memory after each in Executable::compilePhases, also logged at INFO.
#pragma once

#include "tessera/compiler/Executable.hpp"
#include "tessera/compiler/Options.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace tessera {

/// Called with (phase, fraction done in [0, 1]) as compilation proceeds.
using CompileProgress = std::function<void(const char *phase, double done)>;

/// Times one phase of building an executable from its construction to
/// finish(), which logs it at INFO with the process's memory ("compile
/// phase NAME: 1.234 s, RSS 0.50 GB, peak 0.70 GB").
class CompilePhaseTimer {
public:
  explicit CompilePhaseTimer(std::string name);
  CompilePhase finish() const;

private:
  std::string name_;
  std::chrono::steady_clock::time_point start_;
};

/// Compiles \p graph with \p programs (Engine::run(i) runs programs[i]).
/// Throws GraphError for an invalid graph and MemoryError when a tile's
/// memory overflows (unless the option debug.allowOutOfMemory is true).
Executable compileGraph(const Graph &graph,
                        const std::vector<program::Program> &programs,
                        const OptionFlags &options = {},
                        const CompileProgress &progress = {});

} // namespace tessera
