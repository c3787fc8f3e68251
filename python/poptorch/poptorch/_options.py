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
    """How blocks without a stage are grouped (accepted; with sharded
    execution each block runs on its own IPU either way)."""
    SameAsIpu = 0
    AutoIncrement = 1


class ShardedExecution:
    """Each block runs on its IPU, one after the other (what Tessera does
    with blocks on several IPUs). stages: poptorch.Stage objects that map
    block ids to IPUs, or an AutoStage."""

    def __init__(self, *stages):
        from ._blocks import Stage
        self.stages = [s for s in stages if isinstance(s, Stage)]
        for s in stages:
            if not isinstance(s, (Stage, AutoStage)):
                raise ValueError(f"ShardedExecution({s!r}): give "
                                 "poptorch.Stage objects or an AutoStage")


class PipelinedExecution(ShardedExecution):
    """Blocks as stages of a pipeline (not available in Tessera's poptorch
    yet: setExecutionStrategy refuses it)."""


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
        self.execution_strategy = ShardedExecution()
        self.Training = _TrainingOptions()

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
        """How blocks on several IPUs run: poptorch.ShardedExecution (the
        default). Pipelined execution is not available yet."""
        if isinstance(strategy, PipelinedExecution):
            raise NotImplementedError(
                "setExecutionStrategy(PipelinedExecution(...)): pipelined "
                "execution is not available in Tessera's poptorch yet; use "
                "poptorch.ShardedExecution(...), which runs each block on "
                "its IPU in turn and gives the same results")
        if not isinstance(strategy, ShardedExecution):
            raise ValueError(f"setExecutionStrategy({strategy!r}): give a "
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
