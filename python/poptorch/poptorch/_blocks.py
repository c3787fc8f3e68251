"""BeginBlock and Block: placing a model's layers on IPUs.

A traced model's ONNX nodes are named after the module that made them
("/layer2/conv/Conv"), so the nodes of a placed module and everything
after it, until the next placed module, take its IPU: the
"__ipu_number" node attribute Tessera's ONNX importer places them by,
and, under PipelinedExecution, the "__pipeline_stage" attribute of the
block's stage.
BeginBlock marks a module; a Block is a context manager in forward whose
IPU the modules called inside it take (found by a forward pre-hook while
the model is traced). The model is edited through protobuf with a schema
of just the fields touched (model.graph.node[].name and .attribute[]);
every other field is kept as an unknown field and written back unchanged.
"""

import contextlib

import torch
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "tessera_poptorch_onnx_subset"


def _check_ipu(what, ipu_id):
    if ipu_id is None or int(ipu_id) < 0:
        raise ValueError(f"{what}: ipu_id {ipu_id!r} must be an IPU "
                         "number (0, 1, ...)")
    return int(ipu_id)


def BeginBlock(module, user_id=None, ipu_id=None):
    """Marks module: it and the layers that run after it (until the next
    BeginBlock) are placed on IPU ipu_id. Returns the module itself, so
    ``model.layer2 = poptorch.BeginBlock(model.layer2, ipu_id=1)``
    keeps the parameter names."""
    module._poptorch_ipu_id = _check_ipu("BeginBlock", ipu_id)
    module._poptorch_user_id = user_id
    return module


class Block(contextlib.ContextDecorator):
    """The layers called inside ``with poptorch.Block(ipu_id=1):`` in a
    model's forward run on IPU ipu_id, and so do the operations after
    them until the next block. Without an ipu_id a block runs on the IPU
    of the block before it (IPU 0 for the first), or, after
    ``Block.useAutoId()``, on the IPU numbered as its automatic id
    (0, 1, 2, ... in the order the blocks are entered). user_id names the
    block for a poptorch.Stage. Outside a model traced for the IPU Model
    (a plain PyTorch run) a block does nothing."""

    _active = []
    _auto_id = None
    _last_ipu = 0

    def __init__(self, user_id=None, ipu_id=None):
        self.user_id = user_id
        self.ipu_id = None if ipu_id is None else _check_ipu("Block",
                                                             ipu_id)

    @staticmethod
    def useAutoId():
        """Numbers the blocks entered from now on 0, 1, 2, ...: their
        user_id when they have none, and their IPU when they have no
        ipu_id. Call it at the start of forward."""
        Block._auto_id = 0

    def __enter__(self):
        ipu = self.ipu_id
        if Block._auto_id is not None:
            if self.user_id is None:
                self.user_id = str(Block._auto_id)
            if ipu is None:
                ipu = Block._auto_id
            Block._auto_id += 1
        if ipu is None:
            ipu = Block._last_ipu
        Block._last_ipu = ipu
        Block._active.append((self.user_id, ipu))
        return self

    def __exit__(self, *exc):
        Block._active.pop()
        return False


class Stage:
    """Blocks (by user_id) that run together; ``.ipu(n)`` puts them on
    IPU n, whatever their own ipu_id says."""

    def __init__(self, *block_ids):
        self.block_ids = [str(b) for b in block_ids]
        self.ipu_id = None

    def ipu(self, ipu_id):
        self.ipu_id = _check_ipu("Stage.ipu", ipu_id)
        return self


def _stage_ipus(strategy):
    """{block user_id: IPU} of the strategy's stages with an IPU."""
    ipus = {}
    for stage in getattr(strategy, "stages", ()):
        if stage.ipu_id is not None:
            for b in stage.block_ids:
                ipus[b] = stage.ipu_id
    return ipus


class _StageKeys:
    """The pipeline stage key of each block under a PipelinedExecution
    (None under sharded execution): the index of the poptorch.Stage
    naming the block's user_id, else the block's IPU (AutoStage.SameAsIpu)
    or its order from 1 (AutoIncrement); the nodes before the first block
    (on IPU 0) have key 0. place_nodes numbers the keys the nodes use 0,
    1, 2, ... in order."""

    def __init__(self, strategy):
        from ._options import AutoStage, PipelinedExecution
        self.pipelined = isinstance(strategy, PipelinedExecution)
        self.named = {}
        for i, stage in enumerate(getattr(strategy, "stages", ())):
            for b in stage.block_ids:
                self.named[b] = i
        self.increment = (getattr(strategy, "auto_stage", None)
                          == AutoStage.AutoIncrement)
        self.order = 0

    def __call__(self, user_id, ipu):
        if not self.pipelined:
            return None
        self.order += 1
        if self.named:
            if str(user_id) not in self.named:
                raise ValueError(
                    f"PipelinedExecution: block {user_id!r} is in none of "
                    f"its poptorch.Stage objects (they name blocks "
                    f"{sorted(self.named)}); add it to a stage")
            return self.named[str(user_id)]
        return self.order if self.increment else ipu


def scope_path(name, called=None):
    """The ONNX node name prefix of the module called name in
    named_modules(): PyTorch's exporter names a scope by the module's
    attribute, and a numbered child by its container's name with the
    number ("/features/features.0/Conv"). Only modules that were called
    make scopes: with called (the names of the modules forward ran),
    containers that were not (a ModuleList, a plain Module holding
    layers) are left out ("/layers.0/Gemm")."""
    scopes, parts = [], name.split(".")
    for i, part in enumerate(parts):
        scopes.append(f"{scopes[-1]}.{part}" if part.isdigit() and scopes
                      else part)
    kept = [s for i, s in enumerate(scopes)
            if called is None or ".".join(parts[:i + 1]) in called]
    return "/" + "".join(k + "/" for k in kept)


@contextlib.contextmanager
def recording_blocks(model):
    """While active, records the modules of model called inside a Block
    and the names of all modules called: yields the list of (node name
    prefix, user_id, ipu) it fills and the set of names."""
    names = {id(m): n for n, m in model.named_modules() if n}
    seen, called = set(), set()
    found = []

    def hook(module, _inputs):
        name = names.get(id(module))
        if name is not None:
            called.add(name)
        if Block._active and name is not None and name not in seen:
            seen.add(name)
            user_id, ipu = Block._active[-1]
            found.append((scope_path(name, called), user_id, ipu))

    Block._auto_id, Block._last_ipu = None, 0
    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        yield found, called
    finally:
        handle.remove()
        Block._auto_id, Block._last_ipu = None, 0


def block_scopes(model, recorded=(), strategy=None, called=None):
    """(node name prefix, ipu, stage key) of every BeginBlock in model
    and every module recorded inside a Block (called: the modules forward
    ran, as scope_path takes it); a stage of strategy that names the
    block's user_id sets its IPU. The stage key is None unless strategy
    is a PipelinedExecution (_StageKeys)."""
    stages = _stage_ipus(strategy)
    key = _StageKeys(strategy)
    scopes = []
    for name, m in model.named_modules():
        ipu = getattr(m, "_poptorch_ipu_id", None)
        if ipu is not None:
            user_id = getattr(m, "_poptorch_user_id", None)
            ipu = stages.get(str(user_id), ipu)
            scopes.append((scope_path(name, called) if name else "/", ipu,
                           key(user_id, ipu)))
    for path, user_id, ipu in recorded:
        ipu = stages.get(str(user_id), ipu)
        scopes.append((path, ipu, key(user_id, ipu)))
    return scopes


def _schema():
    f = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(
        name=_PACKAGE + ".proto", package=_PACKAGE, syntax="proto2")

    def message(name, fields):
        m = fd.message_type.add(name=name)
        for field, number, kind, label, type_name in fields:
            d = m.field.add(name=field, number=number, type=kind,
                            label=label)
            if type_name:
                d.type_name = f".{_PACKAGE}.{type_name}"

    one, many = f.LABEL_OPTIONAL, f.LABEL_REPEATED
    # Field numbers as onnx.proto has them.
    message("Attribute", [("name", 1, f.TYPE_STRING, one, None),
                          ("i", 3, f.TYPE_INT64, one, None),
                          ("type", 20, f.TYPE_INT32, one, None)])
    message("Node", [("name", 3, f.TYPE_STRING, one, None),
                     ("attribute", 5, f.TYPE_MESSAGE, many, "Attribute")])
    message("Tensor", [("name", 8, f.TYPE_STRING, one, None)])
    message("Graph", [("node", 1, f.TYPE_MESSAGE, many, "Node"),
                      ("initializer", 5, f.TYPE_MESSAGE, many, "Tensor")])
    message("Model", [("graph", 7, f.TYPE_MESSAGE, one, "Graph")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    descriptor = pool.FindMessageTypeByName(_PACKAGE + ".Model")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


_ATTRIBUTE_INT = 2  # AttributeProto.INT


def initializer_names(proto):
    """The names of the ONNX model's initializers."""
    model = _schema()()
    model.ParseFromString(proto)
    return {t.name for t in model.graph.initializer}


def place_nodes(proto, scopes):
    """proto with every node given the IPU (and the stage, when the
    scopes have stage keys) of the innermost block scope (block_scopes)
    it is in, or else of the node before it (IPU 0 and the first stage
    before the first); also returns the number of IPUs used and the
    number of pipeline stages (0 without stage keys)."""
    if not scopes:
        return proto, 1, 0
    model = _schema()()
    model.ParseFromString(proto)
    pipelined = any(k is not None for _, _, k in scopes)
    placed, ipu, key = [], 0, 0 if pipelined else None
    for node in model.graph.node:
        inside = [(len(p), i, k) for p, i, k in scopes
                  if node.name.startswith(p)]
        if inside:
            _, ipu, key = max(inside, key=lambda t: t[0])
        placed.append((node, ipu, key))
    keys = sorted({k for _, _, k in placed if k is not None})
    number = {k: i for i, k in enumerate(keys)}
    for node, ipu, key in placed:
        a = node.attribute.add()
        a.name, a.i, a.type = "__ipu_number", ipu, _ATTRIBUTE_INT
        if key is not None:
            a = node.attribute.add()
            a.name, a.i, a.type = "__pipeline_stage", number[key], \
                _ATTRIBUTE_INT
    ipus = max(i for _, i, _ in placed) + 1 if placed else 1
    return model.SerializeToString(), ipus, len(keys)
