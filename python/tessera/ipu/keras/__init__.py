"""tensorflow.python.ipu.keras's extras: PipelineStage, a scope whose layer
calls (in the functional API) are on one pipeline stage; the models'
set_pipeline_stage_assignment, set_pipelining_options and
set_gradient_accumulation_options are on tessera.keras.Model and
Sequential. layers.Outfeed sends a layer's input to an IPUOutfeedQueue."""

import operator

from ...keras import Model, Sequential
from ...keras import layers as _layers
from . import layers

__all__ = ["Model", "Sequential", "PipelineStage", "layers"]


class PipelineStage:
    """with PipelineStage(n): layers called inside (functional API) are on
    pipeline stage n. Stages start at 0 and a model's layers, in order, rise
    by at most one stage at a time; every layer of a model with stages must
    be called inside one. Model(inputs, outputs) takes the stages; pipelined
    training then needs model.set_pipelining_options(...)."""

    def __init__(self, stage):
        try:
            stage = operator.index(stage)
        except TypeError:
            raise TypeError("PipelineStage: the stage must be an integer, "
                            "got %r" % (stage,)) from None
        if stage < 0:
            raise ValueError("PipelineStage: stages start at 0, got %d"
                             % stage)
        self._stage = stage

    @property
    def stage(self):
        return self._stage

    def __enter__(self):
        if _layers._stage_scopes:
            raise ValueError(
                "PipelineStage(%d): already inside PipelineStage(%d); "
                "pipeline stages do not nest" % (self._stage,
                                                 _layers._stage_scopes[-1]))
        _layers._stage_scopes.append(self._stage)
        return self

    def __exit__(self, *exc):
        _layers._stage_scopes.pop()
        return False
