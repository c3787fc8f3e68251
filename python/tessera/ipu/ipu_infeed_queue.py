"""tensorflow.python.ipu.ipu_infeed_queue: a dataset's elements streamed to
a loops.repeat loop, one element per iteration.

    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset)
    ...
    sess.run(infeed.initializer)
"""

from ..tf._graph import Operation, Tensor, get_default_graph

__all__ = ["IPUInfeedQueue"]


class IPUInfeedQueue:
    def __init__(self, dataset, feed_name=None, device_ordinal=None,
                 prefetch_depth=None, **unused):
        if not hasattr(dataset, "_core"):
            raise TypeError("IPUInfeedQueue: expected a tf.data.Dataset, "
                            "got %s" % type(dataset).__name__)
        self._dataset = dataset
        self._initialized = False
        for name, dtype, shape in dataset.element_spec:
            if any(d is None for d in shape):
                raise ValueError(
                    "IPUInfeedQueue: component %r has shape %s; the IPU "
                    "needs fixed shapes (batch with drop_remainder=True)"
                    % (name, shape))
        g = get_default_graph()
        with g.placement(device="cpu"):
            saved, g.function = g.function, None
            try:
                self._initializer = Operation("infeed_init", (),
                                              {"queue": self})
            finally:
                g.function = saved

    @property
    def initializer(self):
        return self._initializer

    def _dequeue(self):
        """The element's components as tensors of the loop being traced."""
        return [Tensor("infeed", (), {"index": i}, dtype, shape,
                       name="infeed")
                for i, (_, dtype, shape) in
                enumerate(self._dataset.element_spec)]

    def dequeue(self):
        return self._dequeue()
