"""trainingModel and inferenceModel: a torch.nn.Module run on the IPU Model.

The first call (or compile()) traces the module with torch.onnx.export on
one micro-batch, imports the ONNX model with Tessera's importer (through
the popart package) and compiles it. Each call then feeds one combined
batch (deviceIterations x gradientAccumulation x replicationFactor
micro-batches) and returns the outputs that the OutputMode asks for,
joined along the first dimension.

The weights stay in step with the wrapped module: after a training call
they are copied into its parameters and buffers (batch normalisation's
running statistics too), and before any call parameters changed on the
host (their version counters moved) are copied to the device, so a
training model and an inference model of the same module see each
other's weights.

A training model is traced in train() mode and an inference model in
eval() mode (the module's own mode is left as it was): in training,
Dropout drops and BatchNorm normalises with the batch's statistics and
updates its running statistics, as PyTorch's training does.
"""

import io

import numpy as np
import torch

import popart

from . import optim as _optim
from ._blocks import (block_scopes, initializer_names, place_nodes,
                      recording_blocks)
from ._options import Options, OutputMode


class Error(RuntimeError):
    """A poptorch usage error: the message says what is wrong and how to
    fix it."""


def _flatten(out, what):
    if isinstance(out, torch.Tensor):
        return [out], False
    if isinstance(out, (tuple, list)) and out and all(
            isinstance(o, torch.Tensor) for o in out):
        return list(out), True
    raise Error(f"{what}: forward must return a tensor or a tuple of "
                f"tensors, got {type(out).__name__}")


def _to_numpy(t):
    a = t.detach().cpu().numpy()
    if a.dtype == np.int64:
        return a.astype(np.int32)
    if a.dtype == np.float64:
        return a.astype(np.float32)
    return np.ascontiguousarray(a)


class PoplarExecutor:
    """A torch.nn.Module wrapped for the IPU Model (what trainingModel and
    inferenceModel return). Calling it runs deviceIterations steps."""

    def __init__(self, model, options, training, optimizer=None):
        if not isinstance(model, torch.nn.Module):
            raise TypeError("poptorch: the model must be a torch.nn.Module, "
                            f"got {type(model).__name__}")
        self.__dict__.update(
            _model=model, _options=options or Options(), _training=training,
            _optimizer=optimizer, _session=None, _attached=False,
            _micro=None, _input_shapes=None, _outputs=None, _tuple=False,
            _ranks=None, _ipus=1, _stages=0, _floats=None,
            _weights={}, _versions=None)
        if training:
            if not any(p.requires_grad for p in model.parameters()):
                raise Error("trainingModel: no parameter of the model has "
                            "requires_grad=True, so there is nothing to "
                            "train; use inferenceModel")
            if optimizer is None:
                self.__dict__["_optimizer"] = _optim.SGD(
                    model.parameters(), lr=0.01)
            # Fail early on an optimizer the device cannot run.
            _optim.to_popart(self._optimizer)

    # The wrapper looks like the module it wraps.
    def __getattr__(self, name):
        return getattr(self.__dict__["_model"], name)

    @property
    def model(self):
        return self._model

    @property
    def options(self):
        return self._options

    def isCompiled(self):
        return self._session is not None

    def isAttachedToDevice(self):
        return self._attached

    def compile(self, *args):
        """Traces and compiles the model for batches shaped like args
        (one combined batch) without running it; with executable caching
        on, a later run of the same program loads the executable."""
        if self._session is not None:
            raise Error("compile(): the model is already compiled")
        self._compile(args)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise Error("poptorch models take their inputs as positional "
                        f"arguments; got keywords {sorted(kwargs)}")
        if self._session is None:
            self._compile(args)
        elif not self._attached:
            raise Error(
                "the model was detached from the device with "
                "detachFromDevice(); call attachToDevice() before running "
                "it again")
        inputs = self._feeds(args)
        if self._training:
            self._apply_optimizer()
        if self._host_changed():
            self.copyWeightsToDevice()
        # Integer outputs come back as int32 (the device has no int64).
        out = {n: a if self._floats[n] else a.astype(np.int32)
               for n, a in self._session.initAnchorArrays().items()}
        self._session.run(popart.PyStepIO(inputs, out))
        if self._training:
            self.copyWeightsToHost()
            self._count_batches()
        results = [self._result(out[name], name) for name in self._outputs]
        return tuple(results) if self._tuple else results[0]

    # ---- weights -------------------------------------------------------

    def _host_tensors(self):
        named = dict(self._model.named_parameters())
        named.update(self._model.named_buffers())
        return {k: named[k] for k in self._weights if k in named}

    def _host_changed(self):
        return self._versions != self._host_versions()

    def _host_versions(self):
        return tuple(t._version for t in self._host_tensors().values())

    def _count_batches(self):
        """Moves the num_batches_tracked of the batch norms on as
        PyTorch's training would (one per micro-batch of a replica)."""
        o = self._options
        n = o.device_iterations * o.Training.gradient_accumulation
        with torch.no_grad():
            for m in self._model.modules():
                if (isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
                        and m.track_running_stats
                        and m.num_batches_tracked is not None):
                    m.num_batches_tracked.add_(n)

    def copyWeightsToHost(self):
        """Copies the device's weights into the wrapped module."""
        self._need_session("copyWeightsToHost")
        values = self._session.readWeights()
        with torch.no_grad():
            for name, t in self._host_tensors().items():
                t.copy_(torch.from_numpy(np.asarray(values[name]))
                        .reshape(t.shape))
        self.__dict__["_versions"] = self._host_versions()

    def copyWeightsToDevice(self):
        """Copies the wrapped module's weights to the device."""
        self._need_session("copyWeightsToDevice")
        weights = {k: _to_numpy(t) for k, t in self._host_tensors().items()}
        self._session.writeWeights(weights)
        self._session.weightsFromHost()
        self.__dict__["_versions"] = self._host_versions()

    def detachFromDevice(self):
        """Copies a training model's weights to the host and releases the
        device; run the model again after attachToDevice()."""
        self._need_session("detachFromDevice")
        if not self._attached:
            raise Error("detachFromDevice(): the model is not attached")
        if self._training:
            self.copyWeightsToHost()
        self.__dict__["_attached"] = False

    def attachToDevice(self):
        """Attaches a detached model again and copies the host's weights
        (which may have changed meanwhile) to the device."""
        self._need_session("attachToDevice")
        if self._attached:
            raise Error("attachToDevice(): the model is already attached")
        self.__dict__["_attached"] = True
        self.copyWeightsToDevice()

    def setOptimizer(self, optimizer):
        """Trains with optimizer from the next call (for example the same
        optimizer after changing its learning rate; changes made to the
        optimizer given to trainingModel are also picked up by the next
        call, so torch.optim.lr_scheduler schedules work). A new learning
        rate, or SGD momentum (when the model was compiled with a nonzero
        one), is written to the device without recompiling
        (TrainingSession.updateOptimizerFromHost). Tessera compiles the
        other hyper-parameters into the program, so changing one of those
        recompiles the model (or loads it from the executable cache) and
        carries the weights and the optimizer's state (momentum, Adam's
        moments and step count) over. The optimizer must be of the same
        kind (SGD, Adam or AdamW) as the first."""
        if not self._training:
            raise Error("setOptimizer(): an inference model has no "
                        "optimizer")
        new = _optim.to_popart(optimizer)
        if self._session is not None:
            self._check_same_kind(new.params)
        self.__dict__["_optimizer"] = optimizer
        if self._session is not None and self._attached:
            self._apply_optimizer()

    def _check_same_kind(self, params):
        old = self._optimizer_params
        if (params["optimizer"] != old["optimizer"]
                or bool(params.get("momentum")) != bool(old.get("momentum"))):
            raise Error(
                "setOptimizer(): the model was compiled with "
                f"{type(self._optimizer).__name__} ({old}); the new "
                f"optimizer ({params}) keeps other state, which would be "
                "lost; change the hyper-parameters of the same kind of "
                "optimizer, or wrap the module in a new trainingModel")

    # What the device takes at run time; _check_same_kind has ruled out
    # turning momentum on or off, which changes the program.
    _RUNTIME_PARAMS = frozenset(("lr", "momentum"))

    def _apply_optimizer(self):
        """Writes a new learning rate or momentum to the device; recompiles
        when another hyper-parameter changed since the program was
        compiled."""
        optimizer = _optim.to_popart(self._optimizer)
        params, old = optimizer.params, self._optimizer_params
        if params == old:
            return
        self._check_same_kind(params)
        changed = {k for k in set(params) | set(old)
                   if params.get(k) != old.get(k)}
        if changed <= self._RUNTIME_PARAMS:
            self._session.updateOptimizerFromHost(optimizer)
            self.__dict__["_optimizer_params"] = params
            return
        state = self._session.readState()
        self.__dict__["_session"] = self._make_session(
            self._proto, self._outputs, self._loss)
        self._session.prepareDevice()
        self._session.writeState(state)

    def _need_session(self, what):
        if self._session is None:
            raise Error(f"{what}(): the model is not compiled yet; call it "
                        "or its compile() first")

    # ---- compiling and feeding -----------------------------------------

    def _split(self, args):
        o = self._options
        factor = o.combined_batch_factor
        if not args:
            raise Error("the model needs at least one input tensor")
        for i, a in enumerate(args):
            if not isinstance(a, torch.Tensor):
                raise Error(f"input {i} is a {type(a).__name__}; poptorch "
                            "models take tensors")
            n = a.shape[0] if a.dim() else 0
            if n == 0 or n % factor:
                raise Error(
                    f"input {i} has {n} samples along dimension 0, which is "
                    f"not a multiple of deviceIterations "
                    f"{o.device_iterations} x replicationFactor "
                    f"{o.replication_factor} x gradientAccumulation "
                    f"{o.Training.gradient_accumulation} = {factor}; feed "
                    "it from a poptorch.DataLoader made with the same "
                    "options")
        return args[0].shape[0] // factor

    def _feeds(self, args):
        micro = self._split(args)
        shapes = [tuple(a.shape[1:]) for a in args]
        if micro != self._micro or shapes != self._input_shapes:
            o = self._options
            raise Error(
                f"the batch does not match the compiled model: it has "
                f"{micro} samples per step of shapes {shapes}, the model "
                f"was compiled for {self._micro} of {self._input_shapes} "
                f"(combined batch {self._micro * o.combined_batch_factor} "
                f"= batch x deviceIterations {o.device_iterations} x "
                f"replicationFactor {o.replication_factor} x "
                f"gradientAccumulation {o.Training.gradient_accumulation}); "
                "use a poptorch.DataLoader with the same options and "
                "batch size (it drops incomplete batches)")
        return {f"input{i}": _to_numpy(a) for i, a in enumerate(args)}

    def _mode(self):
        mode = self._options.output_mode
        if mode == OutputMode.Default:
            mode = OutputMode.Final if self._training else OutputMode.All
        return popart.AnchorReturnType(mode.value,
                                       self._options.output_return_period)

    def _find_loss(self, outs):
        losses = [i for i, o in enumerate(outs)
                  if o.dim() == 0 and o.is_floating_point()
                  and o.requires_grad]
        if not losses:
            shapes = [tuple(o.shape) for o in outs]
            raise Error(
                "trainingModel: the model's forward returned no loss (its "
                f"outputs have shapes {shapes}, none a scalar that depends "
                "on the parameters); compute the loss inside forward and "
                "return it, e.g. `return output, loss`")
        return f"output{losses[-1]}"

    def _export(self, example, num_outputs):
        buf = io.BytesIO()
        mode = (torch.onnx.TrainingMode.TRAINING if self._training
                else torch.onnx.TrainingMode.EVAL)
        with torch.no_grad():
            torch.onnx.export(
                self._model, example, buf, opset_version=13,
                input_names=[f"input{i}" for i in range(len(example))],
                output_names=[f"output{i}" for i in range(num_outputs)],
                do_constant_folding=False, training=mode)
        return buf.getvalue()

    def _trace(self, example, what):
        """Runs forward once (for the outputs and the Blocks) and exports
        the model, in the mode it compiles in, leaving the module's mode,
        its buffers (running statistics) and PyTorch's random numbers as
        they were."""
        model = self._model
        was_training = model.training
        saved = [(b, b.detach().clone()) for b in model.buffers()]
        try:
            with torch.random.fork_rng(devices=[]):
                model.train(self._training)
                with recording_blocks(model) as (recorded, called), \
                        torch.set_grad_enabled(self._training):
                    outs, is_tuple = _flatten(model(*example), what)
                proto = self._export(example, len(outs))
        finally:
            model.train(was_training)
            with torch.no_grad():
                for b, value in saved:
                    b.copy_(value)
        scopes = block_scopes(model, recorded,
                              self._options.execution_strategy, called)
        return outs, is_tuple, proto, scopes

    def _compile(self, args):
        micro = self._split(args)
        example = tuple(a[:micro] for a in args)
        what = "trainingModel" if self._training else "inferenceModel"
        outs, is_tuple, proto, scopes = self._trace(example, what)
        loss = self._find_loss(outs) if self._training else None
        proto, ipus, stages = place_nodes(proto, scopes)
        names = [f"output{i}" for i in range(len(outs))]
        self.__dict__.update(_micro=micro, _outputs=names, _tuple=is_tuple,
                             _ranks={n: o.dim() for n, o in zip(names, outs)},
                             _floats={n: o.is_floating_point()
                                      for n, o in zip(names, outs)},
                             _input_shapes=[tuple(a.shape[1:])
                                            for a in args])
        self.__dict__.update(_proto=proto, _loss=loss, _ipus=ipus,
                             _stages=stages)
        self.__dict__["_session"] = self._make_session(proto, names, loss)
        self._session.prepareDevice()
        if self._training:
            seed = self._options.random_seed
            if seed is None:  # from PyTorch's generator, as its dropout
                seed = int(torch.randint(0, 2**62, ()).item())
            self._session.setRandomSeed(seed)
        self.__dict__["_weights"] = self._session.readWeights()
        self.__dict__["_attached"] = True
        self.copyWeightsToDevice()

    def _make_session(self, proto, names, loss):
        o = self._options
        flow = popart.DataFlow(o.device_iterations,
                               {n: self._mode() for n in names})
        device = popart.DeviceManager().createIpuModelDevice(
            {"numIPUs": o.replication_factor * self._ipus,
             "tilesPerIPU": o.tiles_per_ipu})
        so = popart.SessionOptions()
        if o.replication_factor > 1:
            so.enableReplicatedGraphs = True
            so.replicatedGraphCount = o.replication_factor
        if o.Training.gradient_accumulation > 1:
            if not self._training:
                raise Error("gradientAccumulation is for training models; "
                            "an inference model takes deviceIterations")
            so.enableGradientAccumulation = True
            so.accumulationFactor = o.Training.gradient_accumulation
        if o.cache_dir:
            so.enableEngineCaching = True
            so.cachePath = o.cache_dir
        if self._training and self._stages > 1:
            self._pipeline(so)
        if not self._training:
            return popart.InferenceSession(proto, flow, device,
                                           userOptions=so)
        # Parameters with requires_grad=False stay as they are.
        weights = initializer_names(proto)
        so.frozenWeights = [n for n, p in self._model.named_parameters()
                            if not p.requires_grad and n in weights]
        optimizer = _optim.to_popart(self._optimizer)
        self.__dict__["_optimizer_params"] = optimizer.params
        return popart.TrainingSession(
            fnModel=proto, dataFlow=flow, loss=loss, optimizer=optimizer,
            deviceInfo=device, userOptions=so)

    def _pipeline(self, so):
        """Runs the blocks' stages as a pipeline (PipelinedExecution)."""
        n = self._options.Training.gradient_accumulation
        if n < self._stages:
            raise Error(
                "poptorch.Options().Training.gradientAccumulation is "
                f"{n}, but with poptorch.PipelinedExecution it must be "
                "greater than or equal to the number of pipeline stages "
                f"({self._stages}), so that each weight update's "
                "micro-batches fill the pipeline: set it to at least "
                f"{self._stages}, or run the blocks one after the other "
                "with poptorch.ShardedExecution")
        so.enablePipelining = True
        so.pipelineSchedule = self._options._Popart.options.get(
            "pipelineSchedule", "Grouped")

    def _result(self, array, name):
        return _join(torch.from_numpy(np.array(array)), self._ranks[name])

    def __repr__(self):
        kind = "trainingModel" if self._training else "inferenceModel"
        return f"poptorch.{kind}({self._model!r})"


def _join(t, own_rank):
    """Joins the leading [steps, accumulation, replicas] dimensions of an
    anchor with its first own dimension (or into one for a scalar)."""
    lead = t.dim() - own_rank
    if lead == 0:
        return t
    if own_rank == 0:
        return t.reshape(-1)
    return t.reshape((-1,) + tuple(t.shape[lead + 1:]))


def trainingModel(model, options=None, optimizer=None):
    """Wraps model (whose forward returns its loss, alone or as the
    last scalar output) for training on the IPU Model with optimizer
    (poptorch.optim or torch.optim SGD, Adam, AdamW; default SGD lr
    0.01). Parameters with requires_grad=False are not trained and take
    no optimizer state; the model is traced in train() mode."""
    return PoplarExecutor(model, options, True, optimizer)


def inferenceModel(model, options=None):
    """Wraps model for inference on the IPU Model; the model is traced
    in eval() mode (Dropout is the identity, BatchNorm uses its running
    statistics)."""
    return PoplarExecutor(model, options, False)
