"""tensorflow.python.ipu.optimizers: wrappers of TF1 optimizers for
replicated graphs and gradient accumulation (tessera.passes underneath)."""

__all__ = ["CrossReplicaOptimizer", "GradientAccumulationOptimizerV2",
           "GradientAccumulationOptimizer"]


class _Wrapper:
    def __init__(self, opt):
        self._opt = opt

    def __getattr__(self, name):
        return getattr(self._opt, name)

    def minimize(self, loss, global_step=None, var_list=None, name=None):
        from ..tf._graph import Operation, convert
        return Operation("train", (convert(loss),),
                         {"optimizer": self, "global_step": global_step})


class CrossReplicaOptimizer(_Wrapper):
    """Averages each gradient over the replicas before the update."""

    _cross_replica = True

    @property
    def _accumulation(self):
        return self._opt._accumulation


class GradientAccumulationOptimizerV2(_Wrapper):
    """Accumulates the gradients of num_mini_batches steps (their mean) and
    applies the optimizer once every num_mini_batches-th step; use it in a
    loops.repeat loop."""

    def __init__(self, opt, num_mini_batches, **unused):
        super().__init__(opt)
        if int(num_mini_batches) < 1:
            raise ValueError("num_mini_batches must be >= 1, got %r"
                             % (num_mini_batches,))
        self._accumulation = int(num_mini_batches)

    @property
    def _cross_replica(self):
        return self._opt._cross_replica


GradientAccumulationOptimizer = GradientAccumulationOptimizerV2
