"""tensorflow.python.ipu.ipu_outfeed_queue for Tessera: tensors sent from
the training loop on the device to the host.

    acts = ipu.ipu_outfeed_queue.IPUOutfeedQueue()
    x = keras.layers.Dense(128, activation="relu", name="Dense_128")(x)
    x = ipu.keras.layers.Outfeed(acts, name="Dense_128_acts")(x)
    ...
    model.fit(...)
    acts.dequeue()     # {"Dense_128_acts": array (steps, batch, 128)}

On TensorFlow a custom Keras layer calls `queue.enqueue({name: x})` in its
call(); Tessera's layers run in C++, so the layer that enqueues its input is
given: ipu.keras.layers.Outfeed(queue, name=...) (the seed's
outfeed_layers.Outfeed), or `x = queue.enqueue(x)` while building a
functional model. Every training step of fit() enqueues; evaluate() and
predict() do not.

In a TF1 graph, `queue.enqueue({...})` inside ipu_compiler.compile (a
loops.repeat body) is an op, and `queue.dequeue()` an op that
sess.run(...) turns into the values enqueued since the last dequeue; a
thread may run it while the loop still runs.
"""

import enum
import threading

import numpy as np

from .. import _tessera


def _is_tf1(tensors):
    from ..tf._graph import Tensor
    values = tensors.values() if isinstance(tensors, dict) else \
        tensors if isinstance(tensors, (list, tuple)) else [tensors]
    return any(isinstance(v, Tensor) for v in values)

__all__ = ["IPUOutfeedMode", "IPUOutfeedQueue"]


class IPUOutfeedMode(enum.Enum):
    """ALL keeps every step's values; LAST only the latest step's."""
    ALL = 1
    LAST = 2


class IPUOutfeedQueue:
    """A queue of the values Outfeed layers send, one entry per training
    step, read on the host with dequeue()."""

    def __init__(self, outfeed_mode=None, device_ordinal=None,
                 buffer_depth=None, **unused):
        mode = IPUOutfeedMode.ALL if outfeed_mode is None else outfeed_mode
        if not isinstance(mode, IPUOutfeedMode):
            raise ValueError("IPUOutfeedQueue: outfeed_mode must be "
                             "IPUOutfeedMode.ALL or IPUOutfeedMode.LAST, "
                             "got %r" % (outfeed_mode,))
        if device_ordinal not in (None, 0):
            raise ValueError("IPUOutfeedQueue: Tessera runs one device; "
                             "device_ordinal must be 0, got %r"
                             % (device_ordinal,))
        self._mode = mode
        self._core = _tessera.OutfeedQueue(mode is IPUOutfeedMode.LAST)
        # Set when the only way in was enqueue(tensor): dequeue() then
        # returns the array itself, as TensorFlow returns what was enqueued.
        self._bare = False
        self._layers = 0
        # A TF1 graph's enqueue: the names it enqueues (a dict's keys, a
        # list's length, or None for one tensor) and the steps received.
        self._tf1 = None
        self._tf1_used = False
        self._tf1_steps = []
        self._tf1_lock = threading.Lock()
        # Programs whose steps enqueue here: drained on dequeue, so a
        # thread can read the queue while a loop runs.
        self._tf1_sources = []

    @property
    def outfeed_mode(self):
        return self._mode

    def enqueue(self, tensors):
        """Sends `tensors` (a KerasTensor, or a dict of one name to a
        KerasTensor) to this queue on every training step. Returns the
        tensor to build the rest of the model on: the outfeed must be on
        the path from the model's input to its output."""
        from ..keras import layers as keras_layers
        from .keras.layers import Outfeed
        if _is_tf1(tensors):
            return self._tf1_enqueue(tensors)
        if isinstance(tensors, dict):
            if len(tensors) != 1:
                raise ValueError(
                    "IPUOutfeedQueue.enqueue: give one tensor per call (one "
                    "Outfeed layer each), got a dict of %d" % len(tensors))
            (name, tensor), = tensors.items()
            bare = False
        else:
            name, tensor, bare = None, tensors, True
        if not isinstance(tensor, keras_layers.KerasTensor):
            raise TypeError("IPUOutfeedQueue.enqueue: expected the output of "
                            "a layer of a functional model, got %s"
                            % type(tensor).__name__)
        out = Outfeed(self, name=name)(tensor)
        self._bare = bare and self._layers == 1
        return out

    def _attach(self):
        """An Outfeed layer was made for this queue."""
        self._layers += 1
        self._bare = False

    def dequeue(self):
        """Removes and returns what was enqueued: a dict of layer name to
        NumPy array, stacked over the training steps (steps, batch, ...) in
        ALL mode or the latest step's (batch, ...) in LAST mode. An empty
        dict when nothing was enqueued (the array alone, or None, when the
        queue was fed by a single enqueue(tensor))."""
        if self._tf1_used:
            return self._tf1_dequeue_op()
        values = dict(self._core.dequeue())
        if self._bare:
            return next(iter(values.values()), None)
        return values

    def __len__(self):
        """Steps queued now."""
        if self._tf1_used:
            return len(self._tf1_steps)
        return self._core.size()

    # -- TF1 graphs (ipu_compiler.compile, loops.repeat) -------------------

    def _tf1_enqueue(self, tensors):
        """An op sending `tensors` (a dict, list or one tensor of a
        compiled function) on every step of its loop."""
        from ..tf._graph import Operation
        if isinstance(tensors, dict):
            names, values = list(tensors), list(tensors.values())
        elif isinstance(tensors, (list, tuple)):
            names, values = len(tensors), list(tensors)
        else:
            names, values = None, [tensors]
        if self._tf1_used and self._tf1 != names:
            raise ValueError("IPUOutfeedQueue.enqueue: every enqueue of a "
                             "queue must send the same structure")
        self._tf1, self._tf1_used = names, True
        self._tf1_specs = [(tuple(v.shape), v.dtype) for v in values]
        return Operation("outfeed_enqueue", values,
                         {"queue": self, "names": names})

    def _tf1_dequeue_op(self):
        from ..tf._graph import Operation, get_default_graph
        g = get_default_graph()
        with g.placement(device="cpu"):
            return Operation("outfeed_dequeue", (), {"queue": self})

    def _tf1_put(self, names, steps):
        """Called by the session with each step's arrays."""
        with self._tf1_lock:
            if self._mode is IPUOutfeedMode.LAST:
                self._tf1_steps = steps[-1:]
            else:
                self._tf1_steps.extend(steps)

    def _tf1_dequeue(self):
        """What sess.run(queue.dequeue()) returns: per name, the steps
        stacked (ALL; none gives arrays of 0 steps) or the last step
        (LAST; None before the first); removes them."""
        for drain in self._tf1_sources:
            drain()
        with self._tf1_lock:
            steps, self._tf1_steps = self._tf1_steps, []
        if not steps and self._mode is IPUOutfeedMode.LAST:
            return None
        k = len(self._tf1_specs)
        if not steps:  # ALL with nothing queued: no steps of each
            cols = [np.zeros((0,) + shape, dtype)
                    for shape, dtype in self._tf1_specs]
        elif self._mode is IPUOutfeedMode.LAST:
            cols = [steps[-1][i] for i in range(k)]
        else:
            cols = [np.stack([s[i] for s in steps]) for i in range(k)]
        if isinstance(self._tf1, list):
            return dict(zip(self._tf1, cols))
        if self._tf1 is None:
            return cols[0]
        return cols
