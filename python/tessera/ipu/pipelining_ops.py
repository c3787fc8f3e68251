"""tensorflow.python.ipu.pipelining_ops: pipelined training of a TF1
graph, inside ipu_compiler.compile.

    def stage1(x, y):
        with tf.variable_scope("s1", use_resource=True):
            h = tf.layers.dense(x, 16, activation=tf.nn.relu)
        return h, y

    def stage2(h, y):
        with tf.variable_scope("s2", use_resource=True):
            logits = tf.layers.dense(h, 10)
        return tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                           logits=logits))

    def optimizer_function(loss):
        return pipelining_ops.OptimizerFunctionOutput(
            tf.train.GradientDescentOptimizer(0.01), loss)

    def net():
        return pipelining_ops.pipeline(
            [stage1, stage2], gradient_accumulation_count=4,
            infeed_queue=infeed, outfeed_queue=outfeed,
            optimizer_function=optimizer_function)

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        train = ipu.ipu_compiler.compile(net, [])

Each stage function's ops are one pipeline stage (@stage(i) in the IR),
run on IPU device_mapping[i]; the outputs of stage i are the arguments of
stage i + 1 (a tuple or list as positional arguments, a dict as keyword
arguments). The first stage takes `inputs` followed by the infeed's
element. One element of the infeed is one micro-batch; the gradients of
gradient_accumulation_count micro-batches are accumulated (their mean)
and the optimizer applied once after them, so a session run of the
returned op runs repeat_count * gradient_accumulation_count micro-batches
and repeat_count weight updates. The outfeed receives what the last stage
returns, once per micro-batch.

A list of stage functions in place of one is a set of concurrent stages:
each takes the same arguments and the next stage takes their outputs
concatenated; they must share no variables. Their device_mapping entry is
a list with an IPU per function, and each runs on its own IPU, side by
side with the others in the same pipeline pass:

    pipelining_ops.pipeline(
        [stage0, [stage1a, stage1b], stage2, stage3],
        device_mapping=[0, [1, 2], 2, 3], ...)

(In the IR, stage 1's ops carry @stage(1) and @ipu(j), j the index of
their function: its concurrent sub-stage, which the session places on
IPU device_mapping[1][j].) A list naming one IPU for all of them runs
them as one stage on that IPU. Concurrent stages take the infeed's
element only through an earlier stage: a pipeline feeds each input to
one IPU. Without a device_mapping, the stages and concurrent stages take
IPUs 0, 1, 2, ... in order.
"""

import enum

import numpy as np

from ..tf._graph import Operation, convert, get_default_graph

__all__ = ["PipelineSchedule", "RecomputationMode", "OptimizerFunctionOutput",
           "pipeline"]


class PipelineSchedule(enum.Enum):
    """How the stages' passes are ordered (session/Pipeline.hpp has the
    tick tables): Grouped runs every stage's forward passes together, then
    their backward passes; Interleaved alternates forward and backward
    passes on each IPU (fewer stashed activations); Sequential runs one
    micro-batch at a time through every stage, as a sharded model runs."""
    Grouped = "grouped"
    Interleaved = "interleaved"
    Sequential = "sequential"


class RecomputationMode(enum.Enum):
    """When IPUConfig.allow_recompute is set, the forward activations of
    every stage but the last are recomputed in the backward pass instead of
    being stashed (every mode does the same in Tessera)."""
    Auto = 1
    RecomputeThenBackpropagate = 2
    RecomputeAndBackpropagateInterleaved = 3


class OptimizerFunctionOutput:
    """What an optimizer_function returns: the optimizer to minimize `loss`
    with (a tf.train optimizer, or one wrapped in CrossReplicaOptimizer)."""

    def __init__(self, opt, loss, compute_gradients_args=(),
                 compute_gradients_kwargs=None, apply_gradients_args=(),
                 apply_gradients_kwargs=None, variables=None):
        if not hasattr(opt, "_core"):
            raise TypeError("OptimizerFunctionOutput: expected an optimizer "
                            "(tf.train.GradientDescentOptimizer, ...), got %s"
                            % type(opt).__name__)
        self.opt = opt
        self.loss = loss


class _Settings:
    """A traced pipeline's settings, read when the session compiles it."""

    def __init__(self, stages, count, schedule, mapping, recompute,
                 accumulator_type, offload):
        self.stages, self.count = stages, count
        self.schedule, self.mapping = schedule, mapping
        self.recompute = recompute
        self.accumulator_type = accumulator_type
        self.offload = offload

    def configure(self, config, ipus):
        """Fills the session's PipelineConfig; returns the IPUs one replica
        of the pipeline uses (the system's IPUs beyond them replicate it).
        A mapping naming more IPUs than the system has is left for the
        session to refuse, with the numbers."""
        config.schedule = self.schedule.value
        config.device_mapping = list(self.mapping)
        config.offload_optimizer_state = bool(self.offload)
        used = max(max(e) if isinstance(e, list) else e
                   for e in self.mapping) + 1
        return used if used <= ipus else ipus


def _call(fn, args):
    """Calls a stage (or the optimizer function) with what the previous one
    returned."""
    if isinstance(args, dict):
        return fn(**args)
    if isinstance(args, (list, tuple)):
        return fn(*args)
    if args is None:
        return fn()
    return fn(args)


def _concat(outputs):
    """Concurrent stages' outputs as the next stage's arguments."""
    if all(isinstance(o, dict) for o in outputs):
        merged = {}
        for o in outputs:
            merged.update(o)
        return merged
    flat = []
    for o in outputs:
        if isinstance(o, (list, tuple)):
            flat.extend(o)
        elif o is not None:
            flat.append(o)
    return flat


def _mapping(device_mapping, stages):
    """Per stage an IPU, or for concurrent stages on several IPUs a list
    with one per function; None: the stages and concurrent stages on IPUs
    0, 1, 2, ... in order."""
    if device_mapping is None:
        out, next_ipu = [], 0
        for stage in stages:
            n = len(stage) if isinstance(stage, (list, tuple)) else 1
            out.append(next_ipu if n == 1
                       else list(range(next_ipu, next_ipu + n)))
            next_ipu += n
        return out
    mapping = list(device_mapping)
    if len(mapping) != len(stages):
        raise ValueError("pipeline: device_mapping has %d entries for %d "
                         "computational stages; give one IPU per stage"
                         % (len(mapping), len(stages)))
    out = []
    for i, (entry, stage) in enumerate(zip(mapping, stages)):
        ipus = [int(x) for x in entry] \
            if isinstance(entry, (list, tuple)) else [int(entry)]
        if any(ipu < 0 for ipu in ipus):
            raise ValueError("pipeline: device_mapping[%d] is %r; IPU "
                             "indices are >= 0" % (i, entry))
        functions = len(stage) if isinstance(stage, (list, tuple)) else 1
        if len(set(ipus)) == 1:
            out.append(ipus[0])
        elif len(ipus) != functions:
            raise ValueError(
                "pipeline: device_mapping[%d] lists %d IPUs for %d "
                "concurrent stages; give one IPU per stage function"
                % (i, len(ipus), functions))
        else:
            out.append(ipus)
    return out


def _accumulator_type(dtype):
    if dtype is None:
        return ""
    if callable(dtype) and not isinstance(dtype, type):
        raise NotImplementedError(
            "pipeline: gradient_accumulation_dtype as a function of the "
            "variable is not supported; give float32 or float16")
    d = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))
    if d == np.float32:
        return "float"
    if d == np.float16:
        return "half"
    raise TypeError("pipeline: gradient_accumulation_dtype must be float32 "
                    "or float16, got %s" % d)


def _recompute(mode):
    from . import config as ipu_config
    if mode is not None and not isinstance(mode, RecomputationMode):
        raise ValueError("pipeline: recomputation_mode must be a "
                         "RecomputationMode, got %r" % (mode,))
    return bool(ipu_config._allow_recompute)


def pipeline(computational_stages, gradient_accumulation_count=None,
             gradient_accumulation_dtype=None, repeat_count=1, inputs=None,
             infeed_queue=None, outfeed_queue=None, optimizer_function=None,
             device_mapping=None, pipeline_schedule=None,
             recomputation_mode=None,
             offload_weight_update_variables=None, outfeed_loss=False,
             accumulate_outfeed=False, outfeed_mask=None, name=None,
             **poplar_options):
    """Traces `computational_stages` as a pipeline of the compiled function
    being traced (the module comment says how); returns the op that runs
    repeat_count pipeline steps. optimizer_function (a function of the
    last stage's outputs returning OptimizerFunctionOutput) is required:
    Tessera pipelines train. gradient_accumulation_count (N) micro-batches
    make one step, and Grouped and Interleaved need N >= the number of
    stages. pipeline_schedule defaults to PipelineSchedule.Grouped and
    device_mapping to the stages (and each concurrent stage) on IPUs 0,
    1, 2, ... in order; offload_weight_update_variables
    (default on) keeps the optimizer state in remote buffers between
    weight updates. The Poplar options TensorFlow takes (per-stage and
    weight-update options, sharding and offloading of activations) are
    accepted and have no effect on the IPU Model."""
    g = get_default_graph()
    fn = g.function
    if fn is None:
        raise ValueError("pipelining_ops.pipeline must be called inside "
                         "ipu_compiler.compile (the pipeline runs on the IPU)")
    if fn.steps != 1 or fn.infeed is not None or fn.pipeline is not None:
        raise NotImplementedError("one loops.repeat or pipelining_ops."
                                  "pipeline per compiled function")
    stages = list(computational_stages)
    if not stages:
        raise ValueError("pipeline: computational_stages is empty")
    if gradient_accumulation_count is None:
        raise ValueError("pipeline: gradient_accumulation_count is required "
                         "(the micro-batches of one pipeline step)")
    count = int(gradient_accumulation_count)
    if count < 1:
        raise ValueError("pipeline: gradient_accumulation_count must be >= 1, "
                         "got %d" % count)
    if int(repeat_count) < 1:
        raise ValueError("pipeline: repeat_count must be >= 1, got %r"
                         % (repeat_count,))
    schedule = PipelineSchedule.Grouped if pipeline_schedule is None \
        else pipeline_schedule
    if not isinstance(schedule, PipelineSchedule):
        raise ValueError("pipeline: pipeline_schedule must be a "
                         "PipelineSchedule, got %r" % (pipeline_schedule,))
    if outfeed_loss or accumulate_outfeed or outfeed_mask is not None:
        raise NotImplementedError("pipeline: outfeed_loss, accumulate_outfeed "
                                  "and outfeed_mask are not supported; the "
                                  "outfeed receives the last stage's outputs")
    if optimizer_function is None:
        raise NotImplementedError(
            "pipeline: inference pipelines (no optimizer_function) are not "
            "supported yet: Tessera's session runs a pipeline as training "
            "steps of gradient_accumulation_count micro-batches; give an "
            "optimizer_function, or run the stages in loops.repeat with "
            "ipu_shard")
    settings = _Settings(
        len(stages), count, schedule, _mapping(device_mapping, stages),
        _recompute(recomputation_mode),
        _accumulator_type(gradient_accumulation_dtype),
        True if offload_weight_update_variables is None
        else bool(offload_weight_update_variables))
    fn.pipeline = settings
    fn.steps = int(repeat_count) * count

    args = [convert(x) for x in (inputs or [])]
    if infeed_queue is not None:
        fn.infeed = infeed_queue
        args += infeed_queue._dequeue()
    for i, stage in enumerate(stages):
        with g.placement(stage=i):
            if not isinstance(stage, (list, tuple)):
                args = _call(stage, args)
                continue
            # Concurrent stages on several IPUs: function j is sub-stage j.
            split = isinstance(settings.mapping[i], list)
            outputs = []
            for j, s in enumerate(stage):
                with g.placement(shard=j if split else None):
                    outputs.append(_call(s, args))
            args = _concat(outputs)
    last = args

    ops = []
    out = _call(optimizer_function, last)
    if not isinstance(out, OptimizerFunctionOutput):
        raise TypeError("pipeline: optimizer_function must return "
                        "pipelining_ops.OptimizerFunctionOutput(opt, "
                        "loss), got %s" % type(out).__name__)
    if getattr(out.opt, "_accumulation", 1) != 1:
        raise ValueError(
            "pipeline: the optimizer accumulates gradients itself; a "
            "pipeline accumulates gradient_accumulation_count "
            "micro-batches already, so use the optimizer it wraps")
    loss = convert(out.loss)
    if not np.issubdtype(loss.dtype, np.floating):
        raise TypeError("pipeline: the loss must be float, got %s"
                        % loss.dtype)
    ops.append(Operation("train", (loss,),
                         {"optimizer": out.opt, "global_step": None,
                          "pipeline": settings}))
    if outfeed_queue is not None:
        if last is None or (isinstance(last, (list, tuple, dict))
                            and not last):
            raise ValueError("pipeline: the last stage returns nothing for "
                             "the outfeed queue")
        ops.append(outfeed_queue.enqueue(last))
    # The group is what compile's function returns, not one of its ops
    # (those are already the function's).
    saved, g.function = g.function, None
    try:
        return Operation("group", ops, name=name or "pipeline")
    finally:
        g.function = saved
