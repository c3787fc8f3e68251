"""tf.compat.v1.train: optimizers whose minimize() adds a training step
(tessera.passes' autodiff and optimizer passes), and the global step."""

import numpy as np

from .. import _tessera
from ._graph import Operation, convert, get_default_graph

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer",
           "AdamOptimizer", "get_or_create_global_step", "get_global_step"]


def _rate(value, what="learning_rate"):
    """A fixed hyperparameter: a number, or a tensor holding a constant
    (directly, or an argument of ipu_compiler.compile or a pipeline's
    inputs given one, as the seeds pass the learning rate)."""
    from ._graph import Tensor
    t = value
    while isinstance(t, Tensor) and t.op == "arg" and t.function is not None:
        t = t.function.inputs[t.attrs["index"]]
    if isinstance(t, Tensor):
        if t.op != "constant" or t.attrs["value"].size != 1:
            raise TypeError(
                "%s must be a number or a constant, got tensor %s: Tessera's "
                "optimizers take a fixed %s" % (what, value.name, what))
        t = t.attrs["value"].item()
    return float(t)


class Optimizer:
    _cross_replica = False
    _accumulation = 1

    def minimize(self, loss, global_step=None, var_list=None, name=None):
        """An op that takes one step on every trainable variable (var_list
        must be all of them, or None)."""
        loss = convert(loss)
        if not np.issubdtype(loss.dtype, np.floating):
            raise TypeError("minimize: the loss must be float, got %s"
                            % loss.dtype)
        return Operation("train", (loss,),
                         {"optimizer": self, "global_step": global_step})


class GradientDescentOptimizer(Optimizer):
    """w -= learning_rate * g."""

    def __init__(self, learning_rate, use_locking=False, name=None):
        self.learning_rate = _rate(learning_rate)

    def _core(self):
        return _tessera.SGD(self.learning_rate, 0.0, False, 0.0)


class MomentumOptimizer(Optimizer):
    """a = momentum * a + g; w -= learning_rate * a (TF1's form)."""

    def __init__(self, learning_rate, momentum, use_locking=False, name=None,
                 use_nesterov=False):
        self.learning_rate = _rate(learning_rate)
        self.momentum = _rate(momentum, "momentum")
        self.use_nesterov = bool(use_nesterov)

    def _core(self):
        return _tessera.SGD(self.learning_rate, self.momentum,
                            self.use_nesterov, 0.0)


class AdamOptimizer(Optimizer):
    """Adam with bias correction; epsilon is added to the corrected
    sqrt(v) (PyTorch's placement: TF1 adds it before the correction, which
    differs only while epsilon matters)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-08, use_locking=False, name=None):
        self.learning_rate = _rate(learning_rate)
        self.beta1, self.beta2 = float(beta1), float(beta2)
        self.epsilon = float(epsilon)

    def _core(self):
        return _tessera.Adam(self.learning_rate, self.beta1, self.beta2,
                             self.epsilon, 0.0, False)


def get_or_create_global_step(graph=None):
    """An int32 scalar counting training steps; minimize(global_step=...)
    adds the steps each run takes. Make it under tf.device("cpu")."""
    from ._ops import get_variable, zeros_initializer
    g = graph or get_default_graph()
    if g.global_step is None:
        saved = g.var_scopes
        g.var_scopes = []
        try:
            g.global_step = get_variable("global_step", (), np.int32,
                                         zeros_initializer(), trainable=False)
        finally:
            g.var_scopes = saved
    return g.global_step


def get_global_step(graph=None):
    return (graph or get_default_graph()).global_step
