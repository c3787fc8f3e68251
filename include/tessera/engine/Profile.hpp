/// \file
/// Profiles: the graph facts (memory per tile by category, variables,
/// vertices per tile, compute sets) and execution facts (each step's cycles
/// per IPU and per tile, how often it ran) of an executable, as JSON for the
/// report tool and as Poplar-style text (printProfileSummary). Every busy
/// cycle figure is the compiler's estimate (StepEstimate) times the step's
/// run count, so the profile agrees with Engine::getCycleCounts. Time is
/// another figure: IPUs run in parallel and wait for each other at external
/// syncs (the rule is Timeline's), so with several IPUs the elapsed cycles
/// (as Engine::getElapsedCycles gives them) are not the busiest IPU's busy
/// cycles: an IPU waiting for another's data is idle, not busy.
///
/// The JSON (profile.json) has this schema; arrays "per IPU" have numIPUs
/// entries, arrays "per tile" numIPUs x tilesPerIPU (index = tile):
/// \code
/// { "format": "tessera-profile", "version": 1,
///   "target": { "arch", "numIPUs", "tilesPerIPU", "bytesPerTile",
///               "clockHz", "replicationFactor" },
///   "graph": {
///     "memory": {
///       "total": bytes of all tiles,
///       "byCategory": { "alwaysLive", "notAlwaysLive", "constants",
///                       "temporaries", "vertexState", "code" },
///       "perTile": { for each category above and "total", an array with
///                    one entry per tile },
///       "maxTile": the tile using the most bytes (null when none is used),
///       "maxTileBytes" },
///     "variables": [ { "name", "type" ("float", ...), "shape", "bytes",
///                      "tiles", "alwaysLive", "liveBegin", "liveEnd" } ],
///     "verticesPerTile": [ vertices on each tile ],
///     "computeSets": [ { "name", "vertices" } ],
///     "steps": [ { "kind" ("compute", "exchange", "streamIn", "sync",
///                          "repeatEnd", ...: StepKind in camelCase),
///                  "group" ("compute", "exchange", "sync", "host",
///                           "control"),
///                  "name" (debug name), "ipuCycles" (one run, per IPU),
///                  "bytes" (bytes exchanged in one run),
///                  "computeSet", "vertices" (compute steps only),
///                  "scope" (only for steps inside a named Sequence: the
///                           outermost one's name, Executable::stepScopes,
///                           as a pipeline's "stage 1 backward,
///                           micro-batch 3, IPU 1") } ] },
///   "compilation": { "phases": [ { "name", "seconds" (wall),
///                                  "rssBytes" (host RSS at its end),
///                                  "peakRssBytes" (host peak until its
///                                  end) } ] }  (Executable::compilePhases;
///                  empty when the executable was not compiled here),
///   "execution": {            (only when execution counts were given)
///     "runs", "stepsExecuted",
///     "elapsedCycles": cycles from the start of the first run to the end
///                      of the last (elapsedCycles below),
///     "hostCycles": { "runs", "streamSetups", "callbacks", "total" }:
///                   host-side cycles outside the device program
///                   (ExecutionCounts::hostCycles),
///     "hostInclusiveCycles": elapsedCycles + hostCycles.total,
///     "totalCycles": [ per IPU: busy cycles, count x ipuCycles summed ],
///     "cyclesByKind": { "compute", "exchange", "sync", "host",
///                       "control": [ per IPU ] },
///     "steps": [ { "step" (index into graph.steps), "count",
///                  "cycles" (count x ipuCycles, per IPU) } ]
///              (only steps that ran),
///     "traceComplete": whether the trace holds every step executed,
///     "trace": [ { "step", "kind", "name",
///                  "start" (cycle per IPU: when the step starts on
///                           that IPU, the traced steps before it moving
///                           the clocks by the Timeline rule; a step that
///                           syncs starts when the last IPU is ready),
///                  "cycles" (per IPU) } ]
///              (the first steps executed, in order),
///     "computeTileCycles": [ { "step", "name", "count",
///                              "tiles": [ tiles with vertices ],
///                              "cycles": [ one run's cycles on each ] } ]
///              (the 20 costliest compute steps, costliest first) } }
/// \endcode
/// A step's cost in rankings is its run count times its slowest IPU's
/// cycles: the most it can add to the elapsed time.
#pragma once

#include "tessera/compiler/Executable.hpp"
#include "tessera/engine/ExecutionCounts.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>

namespace tessera {

/// Estimated cycles by the kind of step that spends them (the profile's
/// groups: compute sets; exchanges; syncs; host streams, callbacks and
/// remote buffers; control flow).
struct CycleBreakdown {
  std::uint64_t compute = 0, exchange = 0, sync = 0, host = 0, control = 0;
  std::uint64_t total() const {
    return compute + exchange + sync + host + control;
  }
};

/// The busiest IPU's estimated cycles per run of the steps \p counts
/// recorded, by kind, each rounded down (all zero before the first run).
/// Its total is what Engine::getCycleCounts gives for that IPU divided by
/// the runs (exactly, when every run executes the same steps): where that
/// IPU's work goes, not the time a run takes with several IPUs (see
/// elapsedCycles).
CycleBreakdown cyclesPerRun(const Executable &exe,
                            const ExecutionCounts &counts);

/// Estimated cycles from the start of the first run \p counts recorded to
/// the end of the last, as Engine::getElapsedCycles gives them: the latest
/// of counts.ipuClocks (several IPUs) or the sum of count x cycles over the
/// steps (one IPU), plus the gateway cycles. 0 before the first run.
std::uint64_t elapsedCycles(const Executable &exe,
                            const ExecutionCounts &counts);

/// elapsedCycles plus the host-side cycles counts recorded
/// (ExecutionCounts::hostCycles): the runs' time as the host sees it.
std::uint64_t hostInclusiveCycles(const Executable &exe,
                                  const ExecutionCounts &counts);

/// The program's tile memory: every tile's bytes summed by category, and
/// the busiest tile.
struct MemorySummary {
  TileMemory total;
  std::size_t tiles = 0, tilesUsed = 0;
  std::uint64_t bytesPerTile = 0;
  /// The tile using the most bytes, and how many (0 and 0 when none does).
  std::size_t maxTile = 0;
  std::uint64_t maxTileBytes = 0;
};

MemorySummary memorySummary(const Executable &exe);

/// The profile as JSON. \p counts may be null (graph facts only).
nlohmann::json makeProfile(const Executable &exe,
                           const ExecutionCounts *counts);

/// The debug information of a profile, as debug.cbor holds it (CBOR):
/// \code
/// { "format": "tessera-debug-info", "version": 1,
///   "contexts": [ { "id", "path" ("layer1/matmul"), "parent" (the id of
///                   the enclosing context, or null), "computeSets",
///                   "variables", "steps" (how many of each are named at
///                   or under the context) } ] }
/// \endcode
/// Contexts are the levels of the "/"-joined debug names of the compute
/// sets, variables and steps \p profile lists, parents before children.
nlohmann::json makeDebugInfo(const nlohmann::json &profile);

/// Writes makeProfile(...) to DIR/profile.json and makeDebugInfo of it to
/// DIR/debug.cbor, each atomically (a reader sees the old file or the new
/// one), creating DIR when missing. Throws Error naming the folder when it
/// cannot be created or written.
void writeProfile(const std::string &directory, const Executable &exe,
                  const ExecutionCounts *counts);

/// The text summary, in the sections of Poplar's: "Target:" (IPUs, tiles,
/// memory, clock, replicas and what each holds), "Graph:" (variables,
/// vertices, compute sets, steps), "Memory Usage:" (totals by category; the
/// maximum (with its tile), mean and minimum over the tiles used), and
/// "Execution:" (elapsed cycles, host-side and host-inclusive cycles, and
/// total busy cycles per IPU, each with
/// the time at the clock rate,
/// cycles by step kind, the costliest steps with kind, run count, cycles
/// and debug name). Options: Poplar's "showPerIpuMemoryUsage" ("true" ends
/// "Memory Usage" with each IPU's totals by category), "showVarStorage"
/// ("true" adds "Variable Storage:", the bytes of always-live and other
/// variables, and the largest variables) and "showExecutionSteps" ("true"
/// ends "Execution" with every step that ran, in program order); and
/// "maxVariables" (how many variables to list, default 20) and "maxSteps"
/// (how many costliest steps, default 10). An unknown option or bad value
/// throws OptionError (with a "did you mean" hint) before anything is
/// printed.
void printProfileSummary(std::ostream &os, const Executable &exe,
                         const ExecutionCounts &counts,
                         const OptionFlags &options = {});

} // namespace tessera
