"""poptorch.Options: how a wrapped model is compiled and run."""

import enum
import os


class OutputMode(enum.Enum):
    """Which steps' outputs a call returns (PopART's AnchorReturnType).

    Default is Final for training models and All for inference models.
    """
    All = "ALL"
    Final = "FINAL"
    EveryN = "EVERYN"
    Sum = "SUM"
    Default = "DEFAULT"


# PopTorch's older name for the same setting.
AnchorMode = OutputMode


class AutoStage(enum.Enum):
    """How PipelinedExecution makes stages of blocks no poptorch.Stage
    names: SameAsIpu (the default) puts the blocks of one IPU in one
    stage, AutoIncrement makes each block its own stage, in the order
    the model runs them."""
    SameAsIpu = 0
    AutoIncrement = 1


class ShardedExecution:
    """Each block runs on its IPU, one micro-batch at a time, one block
    after the other. stages: poptorch.Stage objects that map block ids to
    IPUs, or an AutoStage (accepted)."""

    def __init__(self, *stages):
        from ._blocks import Stage
        self.stages = []
        self.auto_stage = AutoStage.SameAsIpu
        for s in stages:
            if isinstance(s, str):
                s = Stage(s)
            if isinstance(s, Stage):
                self.stages.append(s)
            elif isinstance(s, AutoStage):
                self.auto_stage = s
            else:
                raise ValueError(f"{type(self).__name__}({s!r}): give "
                                 "poptorch.Stage objects, block ids or an "
                                 "AutoStage")


class PipelinedExecution(ShardedExecution):
    """The blocks run as the stages of a pipeline (PopTorch's default
    strategy): each stage on its IPU, the gradientAccumulation
    micro-batches of each weight update flowing through the stages, so
    the IPUs work on different micro-batches at once; training results
    are those of the model on one IPU with the same gradient
    accumulation. The stages are the poptorch.Stage objects given (a
    block id "a" is Stage("a")), else the AutoStage's grouping of the
    blocks. A training model needs gradientAccumulation >= the number
    of stages. An inference model runs its blocks sharded (one after the
    other), with the same results."""


class _PopartOptions:
    """PopART session options by name (PopTorch's options._Popart);
    Tessera acts on "pipelineSchedule": "Grouped" (the default),
    "Interleaved" or "Sequential" (Tessera's pipeline schedules)."""

    _KNOWN = {"pipelineSchedule": ("Grouped", "Interleaved", "Sequential")}

    def __init__(self):
        self.options = {}

    def set(self, key, value):
        if key not in self._KNOWN:
            raise ValueError(f"_Popart.set({key!r}): Tessera acts on "
                             f"{sorted(self._KNOWN)}")
        if str(value).capitalize() not in self._KNOWN[key]:
            raise ValueError(f"_Popart.set({key!r}, {value!r}): use one of "
                             f"{self._KNOWN[key]}")
        self.options[key] = str(value).capitalize()
        return self


class _TrainingOptions:
    def __init__(self):
        self.gradient_accumulation = 1

    def gradientAccumulation(self, factor):
        """Batches whose gradients are averaged before each weight update;
        the DataLoader's combined batch grows by this factor."""
        factor = int(factor)
        if factor < 1:
            raise ValueError(f"gradientAccumulation({factor}): the factor "
                             "must be at least 1")
        self.gradient_accumulation = factor
        return self


class Options:
    """Compilation and run options, shared by DataLoader and the models.

    Setters return the Options, so they chain::

        opts = poptorch.Options().deviceIterations(10).randomSeed(42)
    """

    def __init__(self):
        self.device_iterations = 1
        self.replication_factor = 1
        self.output_mode = OutputMode.Default
        self.output_return_period = 1
        self.use_ipu_model = True
        self.cache_dir = os.environ.get("POPTORCH_CACHE_DIR") or None
        self.random_seed = None
        self.tiles_per_ipu = 1216
        self.execution_strategy = PipelinedExecution()
        self.Training = _TrainingOptions()
        self._Popart = _PopartOptions()

    def deviceIterations(self, n):
        """Steps (batches per replica) each call of the model runs."""
        n = int(n)
        if n < 1:
            raise ValueError(f"deviceIterations({n}): must be at least 1")
        self.device_iterations = n
        return self

    def replicationFactor(self, n):
        """Copies of the model, each on its own IPU, each taking its own
        part of the batch; their gradients are averaged."""
        n = int(n)
        if n < 1:
            raise ValueError(f"replicationFactor({n}): must be at least 1")
        self.replication_factor = n
        return self

    def outputMode(self, mode, output_return_period=None):
        """OutputMode.All, Final, EveryN (with output_return_period), Sum
        or Default."""
        if not isinstance(mode, OutputMode):
            raise ValueError(f"outputMode({mode!r}): give a "
                             "poptorch.OutputMode")
        if mode == OutputMode.EveryN:
            if not output_return_period or int(output_return_period) < 1:
                raise ValueError("outputMode(OutputMode.EveryN) needs "
                                 "output_return_period >= 1")
            self.output_return_period = int(output_return_period)
        self.output_mode = mode
        return self

    def anchorMode(self, mode, anchor_return_period=None):
        """The older name of outputMode."""
        return self.outputMode(mode, anchor_return_period)

    def useIpuModel(self, use=True):
        """Tessera always runs on its IPU Model; useIpuModel(False) asks for
        hardware, which this machine does not have."""
        if not use:
            raise RuntimeError("useIpuModel(False): Tessera has no IPU "
                               "hardware; models run on the IPU Model")
        self.use_ipu_model = True
        return self

    def enableExecutableCaching(self, path):
        """Keep compiled executables in the folder `path` and reuse them
        when the same model is compiled again (as POPTORCH_CACHE_DIR)."""
        self.cache_dir = str(path) if path else None
        return self

    def randomSeed(self, seed):
        """Seeds PyTorch's generator (used by shuffling DataLoaders) and
        the dropout masks of training models."""
        import torch
        self.random_seed = int(seed)
        torch.manual_seed(self.random_seed)
        return self

    def setExecutionStrategy(self, strategy):
        """How blocks on several IPUs run: poptorch.PipelinedExecution
        (the default) or poptorch.ShardedExecution."""
        if not isinstance(strategy, ShardedExecution):
            raise ValueError(f"setExecutionStrategy({strategy!r}): give a "
                             "poptorch.PipelinedExecution or "
                             "poptorch.ShardedExecution")
        self.execution_strategy = strategy
        return self

    def tilesPerIpu(self, tiles):
        """Tessera's addition: the tiles of each IPU Model (default 1216);
        fewer compile faster."""
        tiles = int(tiles)
        if tiles < 1:
            raise ValueError(f"tilesPerIpu({tiles}): must be at least 1")
        self.tiles_per_ipu = tiles
        return self

    @property
    def combined_batch_factor(self):
        """Micro-batches in one call: device iterations x replicas x
        gradient accumulation."""
        return (self.device_iterations * self.replication_factor *
                self.Training.gradient_accumulation)

    def __repr__(self):
        return (f"poptorch.Options(deviceIterations={self.device_iterations}"
                f", replicationFactor={self.replication_factor}, "
                f"gradientAccumulation="
                f"{self.Training.gradient_accumulation}, "
                f"outputMode={self.output_mode.name})")
