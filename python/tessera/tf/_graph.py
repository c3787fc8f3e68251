"""The symbolic graph behind tessera.tf.compat.v1: tensors are nodes that
remember their op, operands, shape, dtype, device ("cpu" or "ipu") and
shard; nothing is computed until Session.run lowers the part it needs to
Tessera's IR (tessera.tf._lower).

Ops are named as the IR names them (add, matmul, reduceSum, ...), so
lowering writes them as they are. A few ops only the host can run
(HOST_ONLY) are refused inside ipu_compiler.compile.
"""

import contextlib

import numpy as np

__all__ = ["Graph", "Tensor", "Operation", "get_default_graph",
           "reset_default_graph", "convert", "dtype_of"]

# IR element types by NumPy dtype (the IPU has no 64-bit types: float64
# and int64 become float32 and int32, as Tessera's data pipeline does).
IR_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float16): "half",
            np.dtype(np.int32): "int", np.dtype(np.uint32): "uint",
            np.dtype(np.bool_): "bool"}

# Ops a compiled function may hold (besides the IR's own ops, which are
# every op not listed in HOST_ONLY or as a leaf/structural op below).
STRUCTURAL = {"arg", "infeed", "variable", "constant", "train", "assign",
              "outfeed_enqueue", "group", "loop_state"}
HOST_ONLY = {"placeholder": "tf.placeholder",
             "py_func": "tf.py_func / tf.numpy_function",
             "init_vars": "tf.global_variables_initializer",
             "infeed_init": "IPUInfeedQueue.initializer",
             "outfeed_dequeue": "IPUOutfeedQueue.dequeue",
             "call_output": "ipu_compiler.compile (nested)",
             "call_run": "ipu_compiler.compile (nested)",
             "print": "tf.print"}


def dtype_of(dtype):
    """The NumPy dtype Tessera computes `dtype` in."""
    d = np.dtype(np.float32 if dtype is None else dtype)
    if d == np.float64:
        d = np.dtype(np.float32)
    elif d in (np.dtype(np.int64), np.dtype(np.int16), np.dtype(np.int8),
               np.dtype(np.uint8), np.dtype(np.uint16)):
        d = np.dtype(np.int32)
    if d not in IR_TYPES:
        raise TypeError("dtype %s is not supported: use float32, float16, "
                        "int32, uint32 or bool" % d)
    return d


class Graph:
    """Names, variables and the scopes new ops take their placement from."""

    def __init__(self):
        self.variables = {}        # name -> Tensor(op="variable")
        self.names = {}
        self.device = "cpu"        # where new ops run: "cpu" or "ipu"
        self.shard = None          # ipu_shard index
        self.stage = None          # pipelining_ops.pipeline's stage
        self.function = None       # the _Function being traced
        self.var_scopes = []       # (name, use_resource)
        self.use_resource = False  # the root variable scope's setting
        self.global_step = None
        self.seed = None

    def unique(self, name):
        base = name
        n = self.names.get(base, 0)
        self.names[base] = n + 1
        return base if n == 0 else "%s_%d" % (base, n)

    def as_default(self):
        return _as_default(self)

    @contextlib.contextmanager
    def placement(self, device=None, shard=None, function=None, stage=None):
        saved = (self.device, self.shard, self.function, self.stage)
        if device is not None:
            self.device = device
        if shard is not None:
            self.shard = shard
        if stage is not None:
            self.stage = stage
        if function is not None:
            self.function = function
        try:
            yield
        finally:
            self.device, self.shard, self.function, self.stage = saved


_graphs = [Graph()]


def get_default_graph():
    return _graphs[-1]


def reset_default_graph():
    _graphs[:] = [Graph()]


@contextlib.contextmanager
def _as_default(g):
    _graphs.append(g)
    try:
        yield g
    finally:
        _graphs.pop()


class TensorShape(tuple):
    def as_list(self):
        return list(self)

    @property
    def ndims(self):
        return len(self)

    @property
    def rank(self):
        return len(self)


class Operation:
    """An op without a value (a train step, an initializer, a group):
    sess.run returns None for it."""

    def __init__(self, op, inputs=(), attrs=None, name=None):
        g = get_default_graph()
        self.graph = g
        self.op = op
        self.inputs = list(inputs)
        self.attrs = dict(attrs or {})
        self.name = g.unique(name or op)
        self.device, self.shard, self.function = g.device, g.shard, g.function
        self.stage = g.stage
        _check_placement(self)
        if self.function is not None and not isinstance(self, Tensor):
            self.function.ops.append(self)

    @property
    def type(self):
        return self.op


class Tensor(Operation):
    """A symbolic value: shape and dtype are known when it is made."""

    __array_ufunc__ = None  # NumPy arrays defer to our operators

    def __init__(self, op, inputs=(), attrs=None, dtype=np.float32,
                 shape=(), name=None):
        self.dtype = dtype_of(dtype)
        self.shape = TensorShape(int(d) for d in shape)
        super().__init__(op, inputs, attrs, name)
        self.name += ":0"

    def get_shape(self):
        return self.shape

    def __repr__(self):
        return "<tf.Tensor '%s' shape=%s dtype=%s>" % (
            self.name, tuple(self.shape), self.dtype.name)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    # Arithmetic builds ops (tessera.tf._ops does the work).
    def __add__(self, o):
        return _ops().add(self, o)

    def __radd__(self, o):
        return _ops().add(o, self)

    def __sub__(self, o):
        return _ops().subtract(self, o)

    def __rsub__(self, o):
        return _ops().subtract(o, self)

    def __mul__(self, o):
        return _ops().multiply(self, o)

    def __rmul__(self, o):
        return _ops().multiply(o, self)

    def __truediv__(self, o):
        return _ops().divide(self, o)

    def __rtruediv__(self, o):
        return _ops().divide(o, self)

    def __matmul__(self, o):
        return _ops().matmul(self, o)

    def __getitem__(self, key):
        return _ops().getitem(self, key)

    def __lt__(self, o):
        return _ops().less(self, o)

    def __le__(self, o):
        return _ops().less_equal(self, o)

    def __gt__(self, o):
        return _ops().greater(self, o)

    def __ge__(self, o):
        return _ops().greater_equal(self, o)

    def __neg__(self):
        return _ops().negative(self)

    def __pow__(self, o):
        return _ops().pow(self, o)


def _ops():
    from . import _ops as ops
    return ops


def _check_placement(op):
    """Inside ipu_compiler.compile only ops the IPU program can hold."""
    fn = op.function
    if fn is None or op.op not in HOST_ONLY:
        return
    from ._ops import supported_in_compile
    raise NotImplementedError(
        "%s (op %r) is not supported inside ipu_compiler.compile: it runs on "
        "the host only. Create it outside the compiled function and pass its "
        "result in through `inputs`. Ops supported inside "
        "ipu_compiler.compile: %s"
        % (HOST_ONLY[op.op], op.op, ", ".join(supported_in_compile())))


def convert(value, dtype=None):
    """A Tensor for `value` (a Tensor, or anything np.asarray takes, which
    becomes a constant)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, Operation):
        raise TypeError("%s is an operation, not a tensor: it has no value"
                        % value.name)
    arr = np.asarray(value)
    if dtype is None and arr.dtype == np.float64:
        dtype = np.float32
    arr = arr.astype(dtype_of(dtype if dtype is not None else arr.dtype))
    return Tensor("constant", (), {"value": arr}, arr.dtype, arr.shape,
                  name="Const")
