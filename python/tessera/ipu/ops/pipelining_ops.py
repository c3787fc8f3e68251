"""tensorflow.python.ipu.ops.pipelining_ops' enums for Tessera, as the Keras
models' set_pipelining_options takes them.

PipelineSchedule: how the stages of a pipelined model run their N
micro-batches per weight update. Grouped (the default) runs every forward
pass, then every backward pass, overlapped across the stages; Interleaved
alternates forward and backward passes, keeping fewer activations;
Sequential runs one micro-batch through every stage at a time, as a sharded
model does (N may then be below the number of stages).

RecomputationMode: giving any of them to set_pipelining_options makes every
stage but the last recompute its activations in the backward pass instead
of keeping them (Tessera has one way of recomputing).
"""

import enum

__all__ = ["PipelineSchedule", "RecomputationMode"]


class PipelineSchedule(enum.IntEnum):
    Grouped = 0
    Interleaved = 1
    Sequential = 2


class RecomputationMode(enum.IntEnum):
    Auto = 0
    RecomputeThenBackpropagate = 1
    RecomputeAndBackpropagateInterleaved = 2
