"""tensorflow.python.ipu.keras's extras. Pipelining and gradient
accumulation are not in tessera.keras yet: PipelineStage raises."""

from ..keras import Model, Sequential

__all__ = ["Model", "Sequential", "PipelineStage"]


class PipelineStage:
    def __init__(self, stage):
        raise NotImplementedError("ipu.keras.PipelineStage: pipelining is "
                                  "not in tessera.keras yet")
