"""tensorflow.python.ipu.keras's extras. Pipelining and gradient
accumulation are not in tessera.keras yet: PipelineStage raises.
layers.Outfeed sends a layer's input to an IPUOutfeedQueue."""

from ...keras import Model, Sequential
from . import layers

__all__ = ["Model", "Sequential", "PipelineStage", "layers"]


class PipelineStage:
    def __init__(self, stage):
        raise NotImplementedError("ipu.keras.PipelineStage: pipelining is "
                                  "not in tessera.keras yet")
