"""PopART's Python API on Tessera's IPU Model.

Build an ONNX model with ``Builder`` (or load one from a file), then run it
with ``InferenceSession`` or train it with ``TrainingSession``::

    import numpy as np
    import popart

    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [4, 2]))
    w = builder.addInitializedInputTensor(np.ones([2, 3], np.float32))
    y = builder.aiOnnx.relu([builder.aiOnnx.matmul([x, w])])
    builder.addOutputTensor(y)

    session = popart.InferenceSession(
        fnModel=builder.getModelProto(),
        dataFlow=popart.DataFlow(1, {y: popart.AnchorReturnType("ALL")}),
        deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.weightsFromHost()
    session.run(popart.PyStepIO({x: np.ones([4, 2], np.float32)}, anchors))

Models are written at ONNX opset 12 (PopART's opset-11 operators plus the
opset-12 losses) and imported by Tessera's ONNX importer; the C++ side is
tessera::onnx (ModelBuilder, ModelSession). Inputs and anchors are laid
out as PopART lays them out: [batchesPerStep, accumulationFactor,
replicatedGraphCount, ...] without the dimensions that are 1.
"""

import contextlib
import enum
import os

import numpy as np

from ._popart import popart_exception  # noqa: F401
from . import _popart

__all__ = [
    "AnchorReturnType", "Builder", "ConstSGD", "DataFlow", "DeviceManager",
    "InferenceSession", "PyStepIO", "SessionOptions", "SGD", "Adam",
    "TensorInfo", "TrainingSession", "ReductionType", "VirtualGraphMode",
    "popart_exception",
]


class TensorInfo:
    """An element type ("FLOAT", "INT32", ...) and a shape."""

    def __init__(self, dtype, shape):
        self.dtype = str(dtype).upper()
        self.shape = [int(d) for d in shape]

    def data_type_lcase(self):
        return self.dtype.lower()


class ReductionType:
    Sum = "sum"
    Mean = "mean"
    NoReduction = "none"


_NUMPY_TYPES = {"FLOAT": "float32", "FLOAT32": "float32", "INT32": "int32",
                "INT64": "int32", "FLOAT16": "float16", "BOOL": "bool"}
_ONNX_TYPES = {"FLOAT": 1, "FLOAT16": 10, "INT32": 6, "INT64": 7, "BOOL": 9}


class _AiOnnx:
    """The ONNX operators as PopART's aiOnnx opset has them: a list of
    input tensor ids, then attributes, then an optional debugPrefix."""

    def __init__(self, b):
        self._b = b

    def _op(self, op, args, attrs=None, num_outputs=1, name=""):
        outs = self._b.addNode(op, list(args), attrs or {}, num_outputs, name)
        return outs[0] if num_outputs == 1 else outs

    def __getattr__(self, name):
        simple = {
            "add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div",
            "pow": "Pow", "relu": "Relu", "sigmoid": "Sigmoid",
            "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
            "neg": "Neg", "abs": "Abs", "identity": "Identity",
            "matmul": "MatMul", "globalaveragepool": "GlobalAveragePool",
            "globalmaxpool": "GlobalMaxPool", "reshape": "Reshape",
            "shape": "Shape", "clip": "Clip", "slice": "Slice", "sum": "Sum",
            "max": "Max", "min": "Min"}
        if name in simple:
            return lambda args, debugPrefix="": self._op(
                simple[name], args, name=debugPrefix)
        raise AttributeError(f"aiOnnx has no operator {name!r}")

    def gemm(self, args, alpha=1.0, beta=1.0, transA=0, transB=0,
             debugPrefix=""):
        return self._op("Gemm", args, {"alpha": float(alpha),
                                       "beta": float(beta),
                                       "transA": transA, "transB": transB},
                        name=debugPrefix)

    def conv(self, args, dilations=(), group=1, kernel_shape=(), pads=(),
             strides=(), debugPrefix=""):
        attrs = {"group": group}
        for k, v in (("dilations", dilations), ("kernel_shape", kernel_shape),
                     ("pads", pads), ("strides", strides)):
            if len(v):
                attrs[k] = list(v)
        return self._op("Conv", args, attrs, name=debugPrefix)

    def maxpool(self, args, num_outputs=1, kernel_shape=(), ceil_mode=0,
                dilations=(), pads=(), storage_order=0, strides=(),
                debugPrefix=""):
        attrs = {"kernel_shape": list(kernel_shape), "ceil_mode": ceil_mode,
                 "storage_order": storage_order}
        for k, v in (("dilations", dilations), ("pads", pads),
                     ("strides", strides)):
            if len(v):
                attrs[k] = list(v)
        outs = self._b.addNode("MaxPool", list(args), attrs, num_outputs,
                               debugPrefix)
        return outs

    def averagepool(self, args, kernel_shape=(), ceil_mode=0,
                    count_include_pad=0, pads=(), strides=(), debugPrefix=""):
        attrs = {"kernel_shape": list(kernel_shape), "ceil_mode": ceil_mode,
                 "count_include_pad": count_include_pad}
        for k, v in (("pads", pads), ("strides", strides)):
            if len(v):
                attrs[k] = list(v)
        return self._op("AveragePool", args, attrs, name=debugPrefix)

    def batchnormalization(self, args, num_outputs=1, epsilon=1e-5,
                           momentum=0.9, debugPrefix=""):
        return self._b.addNode("BatchNormalization", list(args),
                               {"epsilon": float(epsilon),
                                "momentum": float(momentum)},
                               num_outputs, debugPrefix)

    def flatten(self, args, axis=1, debugPrefix=""):
        return self._op("Flatten", args, {"axis": axis}, name=debugPrefix)

    def transpose(self, args, perm=(), debugPrefix=""):
        attrs = {"perm": list(perm)} if len(perm) else {}
        return self._op("Transpose", args, attrs, name=debugPrefix)

    def concat(self, args, axis=0, debugPrefix=""):
        return self._op("Concat", args, {"axis": axis}, name=debugPrefix)

    def gather(self, args, axis=0, debugPrefix=""):
        return self._op("Gather", args, {"axis": axis}, name=debugPrefix)

    def squeeze(self, args, axes=(), debugPrefix=""):
        attrs = {"axes": list(axes)} if len(axes) else {}
        return self._op("Squeeze", args, attrs, name=debugPrefix)

    def unsqueeze(self, args, axes, debugPrefix=""):
        return self._op("Unsqueeze", args, {"axes": list(axes)},
                        name=debugPrefix)

    def _reduce(self, op, args, axes, keepdims, name):
        attrs = {"keepdims": keepdims}
        if axes is not None:
            attrs["axes"] = list(axes)
        return self._op(op, args, attrs, name=name)

    def reducemean(self, args, axes=None, keepdims=1, debugPrefix=""):
        return self._reduce("ReduceMean", args, axes, keepdims, debugPrefix)

    def reducesum(self, args, axes=None, keepdims=1, debugPrefix=""):
        return self._reduce("ReduceSum", args, axes, keepdims, debugPrefix)

    def softmax(self, args, axis=1, debugPrefix=""):
        return self._op("Softmax", args, {"axis": axis}, name=debugPrefix)

    def logsoftmax(self, args, axis=1, debugPrefix=""):
        return self._op("LogSoftmax", args, {"axis": axis}, name=debugPrefix)

    def dropout(self, args, num_outputs=1, ratio=0.5, debugPrefix=""):
        """Drops in a TrainingSession, the identity in an
        InferenceSession (written as opset 12 has it: the ratio and
        training_mode true as inputs)."""
        r = self._b.addConstant(np.array(ratio, np.float32), False, "")
        one = self._b.addConstant(np.array(1, np.int32), True, "")
        mode = self._b.addNode("Cast", [one], {"to": _ONNX_TYPES["BOOL"]},
                               1, "")[0]
        outs = self._b.addNode("Dropout", list(args) + [r, mode], {},
                               num_outputs, debugPrefix)
        return outs

    def cast(self, args, to, debugPrefix=""):
        return self._op("Cast", args, {"to": _ONNX_TYPES[str(to).upper()]},
                        name=debugPrefix)

    def pad(self, args, mode="constant", debugPrefix=""):
        return self._op("Pad", args, {"mode": mode}, name=debugPrefix)

    def constant(self, value, is_value_const=True, debugPrefix=""):
        value = np.asarray(value)
        return self._b.addConstant(value, value.dtype.kind in "iu",
                                   debugPrefix)

    def negativeloglikelihoodloss(self, args, reduction="mean",
                                  debugPrefix=""):
        return self._op("NegativeLogLikelihoodLoss", args,
                        {"reduction": reduction}, name=debugPrefix)

    def softmaxcrossentropyloss(self, args, reduction="mean",
                                debugPrefix=""):
        return self._op("SoftmaxCrossEntropyLoss", args,
                        {"reduction": reduction}, name=debugPrefix)


class _AiGraphcore:
    """PopART's own losses, written as ONNX operators."""

    def __init__(self, b):
        self._b = b

    def _reduce(self, x, reduction):
        if reduction == ReductionType.NoReduction:
            return x
        op = "ReduceSum" if reduction == ReductionType.Sum else "ReduceMean"
        return self._b.addNode(op, [x], {"keepdims": 0}, 1, "")[0]

    def l1loss(self, args, lambd, reduction=ReductionType.Mean,
               debugPrefix=""):
        a = self._b.addNode("Abs", [args[0]], {}, 1, "")[0]
        scale = self._b.addConstant(np.array(lambd, np.float32), False, "")
        return self._b.addNode("Mul", [self._reduce(a, reduction), scale],
                               {}, 1, debugPrefix)[0]

    def nllloss(self, args, reduction=ReductionType.Mean, debugPrefix=""):
        logp = self._b.addNode("Log", [args[0]], {}, 1, "")[0]
        return self._b.addNode("NegativeLogLikelihoodLoss", [logp, args[1]],
                               {"reduction": reduction}, 1, debugPrefix)[0]

    def identityloss(self, args, reduction=ReductionType.Mean,
                     debugPrefix=""):
        return self._reduce(args[0], reduction)


class Builder:
    """Writes an ONNX model a node at a time (PopART's Builder)."""

    def __init__(self):
        self._b = _popart.ModelBuilder(12)
        self.aiOnnx = _AiOnnx(self._b)
        self.aiGraphcore = _AiGraphcore(self._b)

    def addInputTensor(self, info, debugPrefix=""):
        return self._b.addInput(_NUMPY_TYPES[info.dtype], info.shape,
                                debugPrefix)

    def addInitializedInputTensor(self, array, debugPrefix=""):
        """A weight holding ``array`` (float32): trained by a
        TrainingSession."""
        return self._b.addInitializer(np.asarray(array, np.float32),
                                      debugPrefix)

    def addOutputTensor(self, tensor):
        self._b.addOutput(tensor)

    def getModelProto(self):
        """The serialised ONNX ModelProto (bytes)."""
        return self._b.modelProto()

    def getTensorShape(self, tensor):
        return list(self._b.tensorShape(tensor))

    def virtualGraph(self, *args):
        """virtualGraph(tensor, ipu) places the node making tensor on
        IPU ipu; ``with builder.virtualGraph(ipu):`` places the nodes
        added inside the block."""
        if len(args) == 2:
            self._b.setTensorIpu(args[0], int(args[1]))
            return None
        return self._scope("ipu", self._b.setIpu, int(args[0]))

    def pipelineStage(self, *args):
        """pipelineStage(tensor, stage) puts the node making tensor in
        pipeline stage stage; ``with builder.pipelineStage(stage):`` the
        nodes added inside the block (SessionOptions.enablePipelining
        runs the stages as a pipeline)."""
        if len(args) == 2:
            self._b.setTensorPipelineStage(args[0], int(args[1]))
            return None
        return self._scope("stage", self._b.setPipelineStage, int(args[0]))

    @contextlib.contextmanager
    def _scope(self, kind, setter, value):
        scopes = self.__dict__.setdefault("_scopes", {})
        before = scopes.get(kind)
        scopes[kind] = value
        setter(value)
        try:
            yield
        finally:
            scopes[kind] = before
            setter(before)


class AnchorReturnType:
    """ALL, FINAL, EVERYN (with a period) or SUM."""

    def __init__(self, kind="ALL", period=1):
        self.kind = str(kind).upper()
        self.period = int(period)
        if self.kind not in ("ALL", "FINAL", "EVERYN", "SUM"):
            raise ValueError(f"AnchorReturnType {kind!r}: use ALL, FINAL, "
                             "EVERYN or SUM")


class DataFlow:
    """Batches per run and the anchored tensors."""

    def __init__(self, batchesPerStep, anchors):
        self.batchesPerStep = int(batchesPerStep)
        self.anchors = {
            k: (v if isinstance(v, AnchorReturnType) else AnchorReturnType(v))
            for k, v in anchors.items()}


class VirtualGraphMode(enum.Enum):
    """How nodes find their IPU: Manual, by the virtualGraph attribute
    (Tessera places by the attribute whatever the mode says)."""
    Off = "Off"
    Manual = "Manual"
    Auto = "Auto"


class SessionOptions:
    """The options Tessera acts on (others are accepted and ignored).

    enablePipelining: a TrainingSession runs the nodes' pipelineStage as
    pipeline stages, each on the IPU of its nodes' virtualGraph (one IPU
    per stage), the accumulationFactor batches of each weight update
    flowing through the stages; it needs enableGradientAccumulation with
    accumulationFactor at least the number of stages. An
    InferenceSession runs the nodes on their IPUs one after the other.
    Without it, pipelineStage attributes are ignored."""

    def __init__(self):
        self.enableGradientAccumulation = False
        self.accumulationFactor = 1
        self.enableReplicatedGraphs = False
        self.replicatedGraphCount = 1
        self.virtualGraphMode = VirtualGraphMode.Off
        self.enablePipelining = False
        # Tessera's addition: the pipeline's schedule, "Grouped" (the
        # default), "Interleaved" or "Sequential" (session/Pipeline.hpp).
        self.pipelineSchedule = "Grouped"
        self.enableEngineCaching = False
        self.cachePath = "session_cache"
        # Tessera's addition: initializers a TrainingSession leaves as they
        # are (PyTorch's parameters with requires_grad=False).
        self.frozenWeights = []


class _Device:
    def __init__(self, ipus, tiles):
        self.numIpus = ipus
        self.tilesPerIpu = tiles

    def attach(self):
        return True

    def detach(self):
        pass


class DeviceManager:
    """IPU Model devices (Tessera has no hardware to acquire)."""

    def createIpuModelDevice(self, options):
        return _Device(int(options.get("numIPUs", 1)),
                       int(options.get("tilesPerIPU", 1216)))

    def createCpuDevice(self):
        return _Device(1, 1216)

    def acquireAvailableDevice(self, numIpus=1):
        return _Device(int(numIpus), 1472)


class ConstSGD:
    def __init__(self, learning_rate, weight_decay=0.0, loss_scaling=1.0):
        self.params = {"optimizer": "sgd", "lr": float(learning_rate),
                       "weightDecay": float(weight_decay)}


class SGD:
    """Takes PopART's {"defaultLearningRate": (value, const), ...}."""

    _KEYS = {"defaultLearningRate": "lr", "defaultMomentum": "momentum",
             "defaultDampening": "dampening",
             "defaultWeightDecay": "weightDecay"}

    def __init__(self, params):
        self.params = {"optimizer": "sgd"}
        for k, v in params.items():
            if k == "lossScaling":
                continue
            if k not in self._KEYS:
                raise ValueError(f"SGD: unknown parameter {k!r}")
            self.params[self._KEYS[k]] = float(v[0] if isinstance(v, tuple)
                                               else v)


class AdamMode(enum.Enum):
    """Adam's variants; Tessera's optimizer pass is Adam with bias
    correction."""
    Adam = "Adam"


class WeightDecayMode(enum.Enum):
    """How Adam applies weight decay: Decay subtracts lr * decay * w from
    the weight (AdamW's decoupled decay), L2Regularization adds decay * w to
    the gradient."""
    Decay = "Decay"
    L2Regularization = "L2Regularization"


class Adam(SGD):
    """Adam; weight decay is decoupled (WeightDecayMode.Decay) unless
    weight_decay_mode says L2Regularization, as in PopART."""

    _KEYS = {"defaultLearningRate": "lr", "defaultBeta1": "beta1",
             "defaultBeta2": "beta2", "defaultEps": "eps",
             "defaultWeightDecay": "weightDecay"}

    def __init__(self, params, mode=None,
                 weight_decay_mode=WeightDecayMode.Decay):
        super().__init__(params)
        if mode not in (None, AdamMode.Adam):
            raise ValueError(f"Adam: mode {mode} is not supported; Tessera "
                             "has AdamMode.Adam")
        self.params["optimizer"] = "adam"
        self.params["decoupled"] = \
            WeightDecayMode(weight_decay_mode) == WeightDecayMode.Decay


class PyStepIO:
    """Input arrays and anchor arrays (from initAnchorArrays) by tensor."""

    def __init__(self, inputs, anchors):
        self.inputs = inputs
        self.anchors = anchors


class _Session:
    def __init__(self, fnModel, dataFlow, deviceInfo, userOptions, training):
        model = fnModel
        if isinstance(fnModel, str) and os.path.exists(fnModel):
            with open(fnModel, "rb") as f:
                model = f.read()
        opts = userOptions or SessionOptions()
        replicas = (opts.replicatedGraphCount
                    if opts.enableReplicatedGraphs else 1)
        options = {"ipus": max(1, deviceInfo.numIpus // replicas),
                   "tiles": deviceInfo.tilesPerIpu, "replicas": replicas}
        if opts.enableEngineCaching:
            options["cachePath"] = opts.cachePath
        if opts.enablePipelining:
            options["pipelining"] = True
            options["pipelineSchedule"] = str(opts.pipelineSchedule)
        if training:
            options.update(training)
            options["frozen"] = [str(n) for n in opts.frozenWeights]
            if opts.enableGradientAccumulation:
                options["accumulation"] = opts.accumulationFactor
        anchors = {k: (v.kind, v.period) for k, v in dataFlow.anchors.items()}
        self._s = _popart.ModelSession(model, dataFlow.batchesPerStep,
                                       anchors, options)
        self._anchors = list(anchors)

    def prepareDevice(self):
        self._s.prepareDevice()

    def weightsFromHost(self):
        self._s.weightsFromHost()

    def initAnchorArrays(self):
        return {a: np.zeros(self._s.anchorShape(a), np.float32)
                for a in self._anchors}

    def run(self, stepio):
        out = self._s.run(stepio.inputs)
        for name, value in out.items():
            if name in stepio.anchors:
                stepio.anchors[name][...] = value

    def modelToHost(self, path):
        self._s.modelToHost(path)

    def setRandomSeed(self, seed):
        """Restarts the random numbers of training-mode Dropout from
        seed."""
        self._s.setRandomSeed(int(seed) & (2**64 - 1))

    def opIpus(self):
        """Tessera's addition: the IPUs the model's operations (training's
        too) are placed on, sorted."""
        return list(self._s.opIpus())

    def opStages(self):
        """Tessera's addition: the pipeline stages of the model's
        operations, sorted (none when it is not pipelined)."""
        return list(self._s.opStages())

    def readState(self):
        """Tessera's addition: every variable on the device by name
        (weights, optimizer state, running statistics)."""
        return self._s.readState()

    def writeState(self, state):
        """Tessera's addition: sets the variables readState gave (those
        of this model with the same shapes); returns how many."""
        return self._s.writeState(state)

    def readWeights(self):
        return self._s.readWeights()

    def writeWeights(self, weights):
        self._s.writeWeights(weights)


class InferenceSession(_Session):
    def __init__(self, fnModel, dataFlow, deviceInfo, inputShapeInfo=None,
                 userOptions=None, patterns=None):
        super().__init__(fnModel, dataFlow, deviceInfo, userOptions, None)


class TrainingSession(_Session):
    def __init__(self, fnModel, dataFlow, loss, optimizer, deviceInfo,
                 inputShapeInfo=None, userOptions=None, patterns=None):
        training = dict(optimizer.params)
        training["loss"] = loss
        super().__init__(fnModel, dataFlow, deviceInfo, userOptions, training)

    def updateOptimizerFromHost(self, optimizer):
        """Trains the runs that follow with optimizer's learning rate (and
        SGD's momentum, when the session was built with a nonzero one),
        written to the device without recompiling. The optimizer must
        otherwise match the session's (same kind, betas, epsilon, weight
        decay, dampening, Nesterov, momentum on or off): popart_exception
        names the setting that differs, as those are compiled in. Call it
        after prepareDevice()."""
        self._s.updateOptimizer(dict(optimizer.params))
