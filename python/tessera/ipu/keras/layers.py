"""Layers of tensorflow.python.ipu.keras and the tensor-inspection seed's
outfeed layer for Tessera."""

from ... import _tessera
from ...keras import layers as _layers

__all__ = ["Outfeed"]


class Outfeed(_layers.Layer):
    """The identity that sends its input to `outfeed_queue` (an
    ipu.ipu_outfeed_queue.IPUOutfeedQueue) on every training step, as the
    tensor-inspection seed's outfeed_layers.Outfeed does; read it with
    outfeed_queue.dequeue()."""

    def __init__(self, outfeed_queue, name=None, **kwargs):
        from ..ipu_outfeed_queue import IPUOutfeedQueue
        if not isinstance(outfeed_queue, IPUOutfeedQueue):
            raise TypeError("Outfeed: expected an IPUOutfeedQueue, got %s"
                            % type(outfeed_queue).__name__)
        super().__init__(_tessera.OutfeedLayer(
            outfeed_queue._core, _layers._name(name)), **kwargs)
        outfeed_queue._attach()
        self.outfeed_queue = outfeed_queue
