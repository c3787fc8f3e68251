"""TF1's ops over the graph of tessera.tf._graph: each makes one Tensor
per IR op, its shape inferred here as the IR infers it (the IR checks again
when the graph is lowered)."""

import contextlib
import zlib

import numpy as np

from .. import _tessera
from ._graph import (IR_TYPES, Operation, Tensor, convert, dtype_of,
                     get_default_graph)

_UNARY = {"negative": "neg", "relu": "relu", "exp": "exp", "log": "log",
          "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
          "sigmoid": "sigmoid", "square": "square", "abs": "abs",
          "softmax": "softmax", "log_softmax": "logSoftmax"}
_BINARY = {"add": "add", "subtract": "sub", "multiply": "mul",
           "divide": "div", "pow": "pow", "maximum": "max",
           "minimum": "min"}
_COMPARE = {"equal": "eq", "not_equal": "neq", "less": "lt",
            "less_equal": "lteq", "greater": "gt", "greater_equal": "gteq"}
_OTHER = ["slice", "matmul", "reduceSum", "reduceMean", "reduceMax", "reshape",
          "transpose", "cast", "conv2d", "maxPool", "avgPool",
          "sparseSoftmaxCrossEntropy", "argmax", "crossReplicaSum",
          "crossReplicaMean", "concat"]


def supported_in_compile():
    """The op names a compiled function may hold."""
    return sorted(set(_UNARY.values()) | set(_BINARY.values()) |
                  set(_COMPARE.values()) | set(_OTHER) |
                  {"variable", "constant", "assign", "minimize",
                   "outfeed enqueue"})


def _broadcast(a, b):
    r = max(len(a), len(b))
    a = (1,) * (r - len(a)) + tuple(a)
    b = (1,) * (r - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise ValueError("Dimensions must be equal, but are %d and %d "
                             "for shapes %s and %s" % (x, y, a, b))
        out.append(y if x == 1 else x)
    return tuple(out)


def _binary(name, a, b):
    if not isinstance(a, Tensor) and isinstance(b, Tensor):
        a = convert(a, b.dtype)
    a = convert(a)
    b = convert(b, a.dtype)
    if a.dtype != b.dtype:
        raise TypeError("%s: operands of different dtypes %s and %s; cast "
                        "one with tf.cast" % (name, a.dtype, b.dtype))
    return Tensor(_BINARY[name], (a, b), {}, a.dtype,
                  _broadcast(a.shape, b.shape), name=name)


def _compare(name, a, b):
    t = _binary("subtract", a, b)  # the checks and the broadcast shape
    return Tensor(_COMPARE[name], t.inputs, {}, np.bool_, t.shape,
                  name=name)


def equal(x, y, name=None):
    return _compare("equal", x, y)


def not_equal(x, y, name=None):
    return _compare("not_equal", x, y)


def less(x, y, name=None):
    return _compare("less", x, y)


def less_equal(x, y, name=None):
    return _compare("less_equal", x, y)


def greater(x, y, name=None):
    return _compare("greater", x, y)


def greater_equal(x, y, name=None):
    return _compare("greater_equal", x, y)


def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype=np.float32,
            name=None):
    """indices [n] -> [n, depth]: on_value where the column is the index."""
    indices = convert(indices)
    if indices.dtype != np.int32:
        indices = cast(indices, np.int32)
    hot = equal(reshape(indices, list(indices.shape) + [1]),
                np.arange(int(depth), dtype=np.int32))
    return add(multiply(cast(hot, dtype), on_value - off_value), off_value)


def _unary(name, x):
    x = convert(x)
    return Tensor(_UNARY[name], (x,), {}, x.dtype, x.shape, name=name)


# One function per elementwise op, TF's name over the IR's op.

def add(x, y, name=None):
    return _binary("add", x, y)


def subtract(x, y, name=None):
    return _binary("subtract", x, y)


def multiply(x, y, name=None):
    return _binary("multiply", x, y)


def divide(x, y, name=None):
    return _binary("divide", x, y)


def pow(x, y, name=None):
    return _binary("pow", x, y)


def maximum(x, y, name=None):
    return _binary("maximum", x, y)


def minimum(x, y, name=None):
    return _binary("minimum", x, y)


def negative(x, name=None):
    return _unary("negative", x)


def relu(x, name=None):
    return _unary("relu", x)


def exp(x, name=None):
    return _unary("exp", x)


def log(x, name=None):
    return _unary("log", x)


def sqrt(x, name=None):
    return _unary("sqrt", x)


def rsqrt(x, name=None):
    return _unary("rsqrt", x)


def tanh(x, name=None):
    return _unary("tanh", x)


def sigmoid(x, name=None):
    return _unary("sigmoid", x)


def square(x, name=None):
    return _unary("square", x)


def abs(x, name=None):
    return _unary("abs", x)


def softmax(x, name=None):
    return _unary("softmax", x)


def log_softmax(x, name=None):
    return _unary("log_softmax", x)



def add_n(inputs, name=None):
    out = inputs[0]
    for x in inputs[1:]:
        out = add(out, x)
    return out


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    a, b = convert(a), convert(b)
    if transpose_a:
        a = transpose(a)
    if transpose_b:
        b = transpose(b)
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise ValueError("matmul: shapes %s and %s do not multiply "
                         "([m, k] x [k, n])" % (a.shape, b.shape))
    return Tensor("matmul", (a, b), {}, a.dtype, (a.shape[0], b.shape[1]),
                  name=name or "MatMul")


def _axes(axis, rank):
    if axis is None:
        return []
    axes = [axis] if np.isscalar(axis) else list(axis)
    return sorted(int(a) % rank for a in axes)


def _reduce(kind, x, axis, keepdims):
    x = convert(x)
    axes = _axes(axis, len(x.shape))
    keep = bool(keepdims)
    shape = [1 if (i in axes or not axes) else d
             for i, d in enumerate(x.shape)] if keep else \
        [d for i, d in enumerate(x.shape) if axes and i not in axes]
    return Tensor(kind, (x,), _tessera.reduce_attributes(axes, keep),
                  x.dtype, shape, name=kind)


def reduce_sum(x, axis=None, keepdims=False, name=None, keep_dims=None):
    return _reduce("reduceSum", x, axis, keepdims or keep_dims)


def reduce_mean(x, axis=None, keepdims=False, name=None, keep_dims=None):
    return _reduce("reduceMean", x, axis, keepdims or keep_dims)


def reduce_max(x, axis=None, keepdims=False, name=None, keep_dims=None):
    return _reduce("reduceMax", x, axis, keepdims or keep_dims)


def reshape(x, shape, name=None):
    x = convert(x)
    shape = [int(d) for d in shape]
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = int(np.prod(x.shape)) // max(known, 1)
    if int(np.prod(shape)) != int(np.prod(x.shape)):
        raise ValueError("Cannot reshape a tensor with %d elements to shape "
                         "%s" % (int(np.prod(x.shape)), shape))
    return Tensor("reshape", (x,), {"shape": shape}, x.dtype, shape,
                  name="Reshape")


def transpose(x, perm=None, name=None):
    x = convert(x)
    perm = list(range(len(x.shape)))[::-1] if perm is None else list(perm)
    return Tensor("transpose", (x,), {"perm": perm}, x.dtype,
                  [x.shape[p] for p in perm], name="transpose")


def cast(x, dtype, name=None):
    if not isinstance(x, Tensor):
        return np.asarray(x).astype(dtype, copy=False)
    d = dtype_of(dtype)
    if d == x.dtype:
        return x
    return Tensor("cast", (x,), {"dtype": IR_TYPES[d]}, d, x.shape,
                  name="Cast")


def argmax(x, axis=None, name=None, output_type=np.int32):
    x = convert(x)
    if axis not in (None, -1, len(x.shape) - 1):
        raise NotImplementedError("argmax: only over the last axis")
    return Tensor("argmax", (x,), {}, np.int32, x.shape[:-1], name="ArgMax")


def concat(values, axis, name=None):
    values = [convert(v) for v in values]
    axis = int(axis) % len(values[0].shape)
    shape = list(values[0].shape)
    shape[axis] = sum(v.shape[axis] for v in values)
    return Tensor("concat", values, {"axis": axis}, values[0].dtype, shape,
                  name="concat")


def getitem(x, key):
    """x[key] for integers and slices of step 1 (an integer drops its
    axis), as the IR's slice and a reshape."""
    key = key if isinstance(key, tuple) else (key,)
    if len(key) > len(x.shape):
        raise IndexError("too many indices for a tensor of shape %s"
                         % (tuple(x.shape),))
    begin, end, shape = [], [], []
    for i, d in enumerate(x.shape):
        k = key[i] if i < len(key) else slice(None)
        if isinstance(k, slice):
            start, stop, step = k.indices(d)
            if step != 1:
                raise NotImplementedError("slices with a step are not "
                                          "supported")
            begin.append(start)
            end.append(max(start, stop))
            shape.append(max(start, stop) - start)
        else:
            j = int(k) + (d if int(k) < 0 else 0)
            if not 0 <= j < d:
                raise IndexError("index %d is out of bounds for axis %d of "
                                 "size %d" % (int(k), i, d))
            begin.append(j)
            end.append(j + 1)
    sliced = Tensor("slice", (x,), {"begin": begin, "end": end}, x.dtype,
                    [e - b for b, e in zip(begin, end)], name="strided_slice")
    return sliced if list(sliced.shape) == shape else reshape(sliced, shape)


def identity(x, name=None):
    return convert(x)


# ---- nn ------------------------------------------------------------------

def softmax_cross_entropy_with_logits_v2(labels=None, logits=None, axis=-1,
                                         name=None):
    """-sum(labels * log_softmax(logits)) over the last axis, per row."""
    logits = convert(logits)
    labels = convert(labels, logits.dtype)
    return negative(reduce_sum(multiply(labels, log_softmax(logits)),
                               axis=-1))


softmax_cross_entropy_with_logits = softmax_cross_entropy_with_logits_v2


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None,
                                             name=None):
    logits = convert(logits)
    labels = convert(labels)
    if labels.dtype != np.int32:
        labels = cast(labels, np.int32)
    if len(logits.shape) != 2 or tuple(labels.shape) != logits.shape[:1]:
        raise ValueError("sparse_softmax_cross_entropy_with_logits: logits "
                         "[batch, classes] and labels [batch], got %s and %s"
                         % (logits.shape, labels.shape))
    return Tensor("sparseSoftmaxCrossEntropy", (logits, labels), {},
                  logits.dtype, logits.shape[:1],
                  name="SparseSoftmaxCrossEntropyWithLogits")


def bias_add(x, bias, name=None):
    return add(x, bias)


def _pads(size, k, s, padding):
    if padding.upper() == "VALID":
        return (size - k) // s + 1, 0, 0
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


def _nchw(x):
    return transpose(x, [0, 3, 1, 2])


def _nhwc(x):
    return transpose(x, [0, 2, 3, 1])


def conv2d(input, filter=None, strides=(1, 1, 1, 1), padding="VALID",
           name=None, filters=None, **unused):
    """NHWC input, HWIO filter, as TF1's tf.nn.conv2d."""
    x, w = convert(input), convert(filter if filter is not None else filters)
    s = [int(v) for v in strides][1:3] if len(strides) == 4 else \
        [int(v) for v in strides]
    n, h, wd, _ = x.shape
    kh, kw, _, cout = w.shape
    oh, pt, pb = _pads(h, kh, s[0], padding)
    ow, pl, pr = _pads(wd, kw, s[1], padding)
    attrs = _tessera.conv2d_attributes(s, [pt, pl], [pb, pr])
    y = Tensor("conv2d", (_nchw(x), transpose(w, [3, 2, 0, 1])), attrs,
               x.dtype, (n, cout, oh, ow), name="Conv2D")
    return _nhwc(y)


def _pool(kind, x, ksize, strides, padding):
    x = convert(x)
    k = [int(v) for v in ksize][1:3] if len(ksize) == 4 else list(ksize)
    s = [int(v) for v in strides][1:3] if len(strides) == 4 else \
        list(strides)
    n, h, w, c = x.shape
    oh, pt, pb = _pads(h, k[0], s[0], padding)
    ow, pl, pr = _pads(w, k[1], s[1], padding)
    attrs = _tessera.pool_attributes(k, s, [pt, pl], [pb, pr])
    return _nhwc(Tensor(kind, (_nchw(x),), attrs, x.dtype, (n, c, oh, ow),
                        name=kind))


def max_pool(value, ksize, strides, padding="VALID", name=None, **unused):
    return _pool("maxPool", value, ksize, strides, padding)


def avg_pool(value, ksize, strides, padding="VALID", name=None, **unused):
    return _pool("avgPool", value, ksize, strides, padding)


# ---- variables -----------------------------------------------------------

class _Init:
    """An initializer: the IR initialiser text for a shape."""

    def __init__(self, text_fn):
        self._text = text_fn

    def ir(self, name, shape):
        return self._text(name, shape)

    def __call__(self, shape, dtype=np.float32, **unused):
        raise TypeError("TF1 initializers are given to tf.get_variable")


def _seed(seed, name):
    g = get_default_graph()
    if seed is not None:
        return int(seed)
    base = zlib.crc32(name.encode())
    return base if g.seed is None else (base ^ int(g.seed))


def constant_initializer(value=0, dtype=None, **unused):
    v = np.asarray(value, np.float64)
    if v.ndim == 0:
        return _Init(lambda n, s: "constant(value = %r)" % float(v))
    return _Init(lambda n, s: "values(%s)" % ", ".join(
        repr(float(x)) for x in np.broadcast_to(v, s).ravel()))


def zeros_initializer(dtype=None):
    return _Init(lambda n, s: "zeros")


def ones_initializer(dtype=None):
    return _Init(lambda n, s: "ones")


def random_uniform_initializer(minval=-0.05, maxval=0.05, seed=None,
                               dtype=None):
    return _Init(lambda n, s: "uniform(low = %r, high = %r, seed = %d)"
                 % (float(minval), float(maxval), _seed(seed, n)))


def random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    return _Init(lambda n, s: "normal(mean = %r, stddev = %r, seed = %d)"
                 % (float(mean), float(stddev), _seed(seed, n)))


def truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None,
                                 dtype=None):
    return _Init(lambda n, s: "truncatedNormal(mean = %r, stddev = %r, "
                 "seed = %d)" % (float(mean), float(stddev), _seed(seed, n)))


def glorot_uniform_initializer(seed=None, dtype=None):
    return _Init(lambda n, s: "glorotUniform(seed = %d)" % _seed(seed, n))


def glorot_normal_initializer(seed=None, dtype=None):
    return _Init(lambda n, s: "glorotNormal(seed = %d)" % _seed(seed, n))


class VariableScope:
    def __init__(self, name, use_resource):
        self.name = name
        self._use_resource = use_resource

    def set_use_resource(self, use_resource):
        g = get_default_graph()
        if not self.name:
            g.use_resource = bool(use_resource)
        self._use_resource = bool(use_resource)

    @property
    def use_resource(self):
        return self._use_resource


def get_variable_scope():
    g = get_default_graph()
    if g.var_scopes:
        return g.var_scopes[-1]
    return VariableScope("", g.use_resource)


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None,
                   use_resource=None, reuse=None, **unused):
    g = get_default_graph()
    outer = get_variable_scope()
    name = name_or_scope.name if isinstance(name_or_scope, VariableScope) \
        else (name_or_scope or default_name)
    full = "%s/%s" % (outer.name, name) if outer.name else name
    resource = outer.use_resource if use_resource is None else use_resource
    scope = VariableScope(full, bool(resource))
    g.var_scopes.append(scope)
    try:
        yield scope
    finally:
        g.var_scopes.pop()


def get_variable(name, shape=None, dtype=np.float32, initializer=None,
                 trainable=True, use_resource=None, **unused):
    """A resource variable (every variable Tessera makes is one)."""
    g = get_default_graph()
    scope = get_variable_scope()
    full = "%s/%s" % (scope.name, name) if scope.name else name
    if full in g.variables:
        return g.variables[full]
    init = initializer
    if init is None:
        init = glorot_uniform_initializer()
    elif not isinstance(init, _Init):
        value = np.asarray(init)
        shape = value.shape if shape is None else shape
        init = constant_initializer(value)
    if shape is None:
        raise ValueError("get_variable %r: give its shape" % full)
    return _new_variable(full, init, dtype, shape, trainable, resource=True)


def _new_variable(full, init, dtype, shape, trainable, resource):
    g = get_default_graph()
    v = Tensor("variable", (), {"init": init.ir(full, tuple(shape)),
                                "trainable": bool(trainable),
                                "resource": resource}, dtype, shape,
               name=full)
    v.name = full + ":0"
    v.var_name = full
    g.variables[full] = v
    return v


def assign(ref, value, name=None, read_value=True):
    return Operation("assign", (ref, convert(value, ref.dtype)))


def assign_add(ref, value, name=None, read_value=True):
    return assign(ref, add(ref, value))


RESOURCE_ADVICE = (
    "Do not add variables using tf.Variable([shape], initializer): it makes "
    "a non-resource variable (VariableV2), which fails to obey operations "
    "such as assign_add and has no IPU kernel. Add variables with "
    "tf.get_variable in a variable scope marked as a resource: `with "
    "tf.variable_scope(\"vs\", use_resource=True): var = "
    "tf.get_variable(name, shape=[...], dtype=tf.float32, "
    "initializer=tf.constant_initializer(0.5))`, or globally with "
    "tf.get_variable_scope().set_use_resource(True)")


def Variable(initial_value=None, trainable=True, name=None, dtype=None,
             **unused):  # noqa: N802 (TF's name)
    """A non-resource variable: the host may use it; the IPU may not (the
    tutorial's advice is the error)."""
    g = get_default_graph()
    if g.device == "ipu" or g.function is not None:
        raise TypeError("tf.Variable %r is placed on the IPU. %s."
                        % (name, RESOURCE_ADVICE))
    value = np.asarray(initial_value)
    d = dtype_of(dtype if dtype is not None else value.dtype)
    full = g.unique(name or "Variable")
    return _new_variable(full, constant_initializer(value), d, value.shape,
                         trainable, resource=False)


def placeholder(dtype, shape=None, name=None):
    if shape is None or any(d is None for d in shape):
        raise ValueError("placeholder %r: give every dimension (the IPU "
                         "compiles for fixed shapes), got shape %s"
                         % (name, shape))
    return Tensor("placeholder", (), {}, dtype, shape, name=name or
                  "Placeholder")


def group(*inputs, name=None):
    flat = []
    for i in inputs:
        flat.extend(i if isinstance(i, (list, tuple)) else [i])
    return Operation("group", flat)


def no_op(name=None):
    return Operation("group", ())


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803
    """Runs `func` on the host with the inputs' values; returns one tensor
    of dtype Tout and the shape of the first input."""
    inp = [convert(i) for i in inp]
    return Tensor("py_func", inp, {"func": func}, Tout,
                  inp[0].shape if inp else (), name="PyFunc")


numpy_function = py_func
