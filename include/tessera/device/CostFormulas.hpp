/// \file
/// The cost model's formulas for data movement and synchronisation: the one
/// place that turns a Target's figures into cycles for an exchange, a sync,
/// an IPU-Link transfer or a compute step's worker cycles. The compiler's
/// step estimates and the ops' planners both call these, so an overridden
/// figure moves every estimate that depends on it.
///
/// All results are tile cycles of \p target's clock.
#pragma once

#include "tessera/device/Target.hpp"

#include <cstdint>
#include <vector>

namespace tessera::cost {

/// Cycles to move \p bytes at \p bytesPerCycle, rounded up (0 for 0 bytes).
std::uint64_t transferCycles(std::uint64_t bytes, double bytesPerCycle);

/// Cycles one tile spends sending or receiving \p bytes over the on-chip
/// exchange: bytes / TargetFigures::exchangeBytesPerCycle, rounded up.
std::uint64_t exchangeTransferCycles(const Target &target, std::uint64_t bytes);

/// One sync of the tiles that take part in a superstep:
/// CostFigures::syncCyclesAcrossIpus when it spans IPUs (\p crossIpu),
/// otherwise CostFigures::syncCyclesOnChip.
std::uint64_t syncCycles(const Target &target, bool crossIpu);

/// One exchange superstep whose busiest tile spends \p busiestTileCycles
/// moving data: those cycles, CostFigures::exchangeFixedCycles and the
/// superstep's sync (syncCycles(target, crossIpu)).
std::uint64_t exchangeStepCycles(const Target &target,
                                 std::uint64_t busiestTileCycles,
                                 bool crossIpu = false);

/// An on-chip exchange superstep in which the busiest tile sends or
/// receives \p busiestTileBytes: exchangeStepCycles of their transfer
/// cycles; 0 when no bytes move (no superstep). The planners' figure.
std::uint64_t exchangeCycles(const Target &target,
                             std::uint64_t busiestTileBytes);

/// Cycles an IPU spends moving \p bytes over its IPU-Links:
/// bytes / (TargetFigures::ipuLinkBandwidth / tileClockFrequency), rounded
/// up, plus CostFigures::ipuLinkFixedCycles; 0 for 0 bytes.
std::uint64_t ipuLinkCycles(const Target &target, std::uint64_t bytes);

/// Cycles of a host transfer step that moves \p hostBytes over the host
/// link (one direction: half of TargetFigures::hostLinkBandwidth) and
/// \p remoteBytes to or from streaming memory (at
/// TargetFigures::remoteMemoryBandwidth), plus
/// CostFigures::hostTransferFixedCycles; 0 when no bytes move.
std::uint64_t hostTransferCycles(const Target &target, std::uint64_t hostBytes,
                                 std::uint64_t remoteBytes);

/// Cycles of a copy between replicas on different IPU-Machines whose
/// busier direction carries \p bytes over the GW-Links:
/// bytes / (TargetFigures::gwLinkBandwidth / tileClockFrequency), rounded
/// up, plus CostFigures::gwLinkFixedCycles; 0 for 0 bytes.
std::uint64_t gwLinkCycles(const Target &target, std::uint64_t bytes);

/// Tile cycles of \p vertices vertices whose busiest worker runs
/// \p busiestWorkerCycles: numWorkerContexts x those cycles (a worker issues
/// once every numWorkerContexts tile cycles) plus
/// CostFigures::supervisorCyclesPerVertex for each vertex.
std::uint64_t computeCycles(const Target &target,
                            std::uint64_t busiestWorkerCycles,
                            std::uint64_t vertices);

/// Worker cycles of one MultiVertex whose \p workers workers take the
/// shares of \p shareCycles as separate vertices would be taken (longest
/// first, each to the least loaded worker): the busiest worker's cycles,
/// plus the supervisor's start of every share after the first
/// (CostFigures::supervisorCyclesPerVertex each) counted in worker cycles,
/// a \p workers-th of them rounded up. 0 for no shares.
std::uint64_t multiVertexWorkerCycles(const Target &target,
                                      std::vector<std::uint64_t> shareCycles,
                                      unsigned workers);

} // namespace tessera::cost
