/// \file
/// Pipelined training: a module whose operations carry @stage(s)
/// annotations runs stage s's forward and backward passes on IPU
/// deviceMapping[s], the N micro-batches of each step (N = the gradient
/// accumulation count) flowing through the stages, and the weight update
/// once after them.
///
/// A schedule is a list of ticks. In a tick every IPU runs at most one
/// stage pass (forward F_s or backward B_s) on one micro-batch; then the
/// values the passes made move to where later passes read them (inter-IPU
/// copies, a global sync: the IPUs wait for the slowest). With S stages and
/// N micro-batches:
///
/// - Grouped (TensorFlow for the IPU's default): step t is a forward tick,
///   F_s on micro-batch t - s for every stage, then a backward tick, B_s on
///   micro-batch t - (2S - 2 - s). N + S - 1 steps hold forward work and as
///   many backward work, so with forward and backward passes of F and B
///   cycles on every stage a step takes (N + S - 1)(F + B) cycles against
///   the steady state's N(F + B): a ramp-up and ramp-down (bubble) fraction
///   of (S - 1) / (N + S - 1). Stage s keeps the activations of
///   2(S - 1 - s) + 1 micro-batches.
/// - Interleaved: tick 2i + s runs F_s on micro-batch i and tick
///   2i + 2S - 1 - s runs B_s on it, so each IPU alternates forward and
///   backward passes: 2(N + S - 1) ticks of max(F, B) cycles, the same
///   bubble fraction when F = B and slower when they differ, but stage s
///   keeps only S - s micro-batches' activations.
/// - Sequential: one micro-batch at a time through F_0 .. F_{S-1},
///   B_{S-1} .. B_0, one pass per tick: the sharded model's time,
///   N times the sum of the passes, with one micro-batch's activations.
///
/// Grouped and Interleaved need N >= S (every stage reaches the steady
/// state).
///
/// A value that several passes of one IPU read crosses the IPU-links once
/// per micro-batch; a tick's transfers wait for the next tick's when that
/// tick reads none of them (Grouped: one sync per step t); and a backward
/// pass's gradient accumulation runs after its tick's transfers. In an
/// execution trace (`tessera report`), each pass's steps are scoped "stage s
/// forward, micro-batch m, IPU i" (or backward; recomputed activations are part
/// of the backward pass), and the weight update's "weight update".
///
/// Concurrent stages: a stage whose ops carry @ipu(j) annotations is split
/// into concurrent sub-stages, j = 0, 1, ..., that take the same inputs and
/// share no values or weights (the next stage reads their outputs); sub-
/// stage j runs on IPU deviceMapping[s].ipus[j]. The stage's passes are
/// one pass of the schedule, each sub-stage's part on its IPU in the same
/// tick, side by side. The gradient of a value several sub-stages read is
/// the sum of theirs, computed in the backward pass of its reader, on the
/// reader's IPU.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::session {

/// TensorFlow for the IPU's PipelineSchedule.
enum class PipelineSchedule { Grouped, Interleaved, Sequential };

std::string_view scheduleName(PipelineSchedule s);
/// "grouped", "interleaved" or "sequential" (any case); nullopt otherwise.
std::optional<PipelineSchedule> parseSchedule(std::string_view name);

/// The IPUs of one pipeline stage: one, or one per concurrent sub-stage.
struct StageIpus {
  std::vector<unsigned> ipus;
  StageIpus(unsigned ipu) : ipus{ipu} {}
  StageIpus(std::initializer_list<unsigned> list) : ipus(list) {}
  bool operator==(const StageIpus &) const = default;
};

/// How a staged module runs.
struct PipelineConfig {
  PipelineSchedule schedule = PipelineSchedule::Grouped;
  /// The IPUs of each stage (within a replica), as {0, {1, 2}, 2, 3};
  /// empty: the stages' sub-stages on IPUs 0, 1, 2, ... in order. Several
  /// stages may share an IPU.
  std::vector<StageIpus> deviceMapping;
  /// TensorFlow for the IPU's offload_weight_update_variables, on by
  /// default: in a module that accumulates gradients (pipelined or not),
  /// the optimizer state (momentum, Adam's moments) lives in remote
  /// buffers and is streamed onto the tiles only for the weight update.
  bool offloadOptimizerState = true;
};

/// One stage pass of a tick.
struct StagePass {
  unsigned stage = 0;
  bool backward = false;
  unsigned microBatch = 0;
  bool operator==(const StagePass &) const = default;
};
using PipelineTick = std::vector<StagePass>;

/// The ticks of \p schedule for \p stages stages and \p microBatches
/// micro-batches, as the file comment defines them. Throws OptionError
/// for 0 stages or micro-batches, or fewer micro-batches than stages for
/// Grouped and Interleaved (saying what to set).
std::vector<PipelineTick> pipelineTicks(PipelineSchedule schedule,
                                        unsigned stages, unsigned microBatches);

} // namespace tessera::session
