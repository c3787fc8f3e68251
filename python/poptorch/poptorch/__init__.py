"""PopTorch's Python API on Tessera's IPU Model.

Tessera's own implementation of the names PyTorch programs use to run on
IPUs: wrap a torch.nn.Module with ``trainingModel`` (its forward computes
and returns the loss) or ``inferenceModel``, feed it from a
``poptorch.DataLoader``, and each call runs ``deviceIterations`` steps::

    import torch
    import poptorch

    opts = poptorch.Options().deviceIterations(10)
    loader = poptorch.DataLoader(opts, dataset, batch_size=8, shuffle=True)
    model = poptorch.trainingModel(net_with_loss, opts,
                                   poptorch.optim.SGD(net.parameters(), 0.05))
    for x, y in loader:
        preds, loss = model(x, y)
    model.detachFromDevice()

The module is traced with torch.onnx.export and imported by Tessera's ONNX
importer (the popart package, tessera::onnx), then compiled for and run
on the IPU Model; the optimizer step runs inside the compiled program.
"""

from ._blocks import BeginBlock, Block, Stage
from ._dataloader import DataLoader
from ._model import Error, PoplarExecutor, inferenceModel, trainingModel
from ._options import (AnchorMode, AutoStage, Options, OutputMode,
                       PipelinedExecution, ShardedExecution)
from . import optim

__all__ = ["AnchorMode", "AutoStage", "BeginBlock", "Block", "DataLoader",
           "Error", "Options", "OutputMode", "PipelinedExecution",
           "PoplarExecutor", "ShardedExecution", "Stage", "inferenceModel",
           "optim", "trainingModel"]
