"""The TF1 names (tf.compat.v1, and TF 1.x's top level) over Tessera's
graph: tessera.tf.compat.v1 and tessera.tf export these."""

import contextlib
import types

import numpy as np

from . import _layers, _ops, _train
from ._graph import (Operation, Tensor, get_default_graph,
                     reset_default_graph)
from ._session import FailedPreconditionError, InvalidArgumentError, Session

_OPS = ["add", "subtract", "multiply", "divide", "negative", "pow",
        "maximum", "minimum", "exp", "log", "sqrt", "rsqrt", "tanh",
        "sigmoid", "square", "abs", "add_n", "matmul", "reduce_sum",
        "reduce_mean", "reduce_max", "reshape", "transpose", "cast",
        "argmax", "concat", "identity", "equal", "not_equal", "less",
        "less_equal", "greater", "greater_equal", "one_hot", "placeholder",
        "get_variable",
        "variable_scope", "get_variable_scope", "assign", "assign_add",
        "Variable", "group", "no_op", "py_func", "numpy_function",
        "constant_initializer", "zeros_initializer", "ones_initializer",
        "random_uniform_initializer", "random_normal_initializer",
        "truncated_normal_initializer", "glorot_uniform_initializer",
        "glorot_normal_initializer", "VariableScope"]

NAMES = {n: getattr(_ops, n) for n in _OPS}
NAMES.update(
    Tensor=Tensor, Operation=Operation, Session=Session,
    get_default_graph=get_default_graph,
    reset_default_graph=reset_default_graph,
    float16=np.float16, float32=np.float32, float64=np.float64,
    int8=np.int8, int16=np.int16, int32=np.int32, int64=np.int64,
    uint8=np.uint8, uint32=np.uint32, bool=np.bool_)
NAMES["div"] = _ops.divide
NAMES["mul"] = _ops.multiply
NAMES["sub"] = _ops.subtract


def constant(value, dtype=None, shape=None, name=None):
    """A constant: a NumPy array here, which every op takes."""
    arr = np.asarray(value, dtype=dtype)
    if shape is not None:
        arr = np.broadcast_to(arr, tuple(shape)).copy()
    return arr


@contextlib.contextmanager
def device(name):
    """tf.device("cpu") places ops on the host; an IPU name on the IPU."""
    where = "ipu" if "IPU" in str(name).upper() else "cpu"
    with get_default_graph().placement(device=where):
        yield


def global_variables_initializer():
    return Operation("init_vars", ())


def variables_initializer(var_list, name="init"):
    return Operation("init_vars", list(var_list))


def global_variables():
    return list(get_default_graph().variables.values())


def trainable_variables():
    return [v for v in global_variables() if v.attrs["trainable"]]


def set_random_seed(seed):
    """The graph-level seed: initializers without their own seed derive
    theirs from it and the variable's name."""
    get_default_graph().seed = int(seed)


def disable_v2_behavior():
    """Graph mode is the only mode of tessera.tf.compat.v1."""


disable_eager_execution = disable_v2_behavior

nn = types.SimpleNamespace(
    relu=_ops.relu, softmax=_ops.softmax, log_softmax=_ops.log_softmax,
    sigmoid=_ops.sigmoid, tanh=_ops.tanh, bias_add=_ops.bias_add,
    conv2d=_ops.conv2d, max_pool=_ops.max_pool, max_pool2d=_ops.max_pool,
    avg_pool=_ops.avg_pool,
    softmax_cross_entropy_with_logits=_ops.softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2=(
        _ops.softmax_cross_entropy_with_logits_v2),
    sparse_softmax_cross_entropy_with_logits=(
        _ops.sparse_softmax_cross_entropy_with_logits))

train = types.SimpleNamespace(
    Optimizer=_train.Optimizer,
    GradientDescentOptimizer=_train.GradientDescentOptimizer,
    MomentumOptimizer=_train.MomentumOptimizer,
    AdamOptimizer=_train.AdamOptimizer,
    get_or_create_global_step=_train.get_or_create_global_step,
    get_global_step=_train.get_global_step)

layers = types.SimpleNamespace(dense=_layers.dense, conv2d=_layers.conv2d,
                               max_pooling2d=_layers.max_pooling2d,
                               flatten=_layers.flatten)

errors = types.SimpleNamespace(InvalidArgumentError=InvalidArgumentError,
                               FailedPreconditionError=FailedPreconditionError)

initializers = types.SimpleNamespace(
    constant=_ops.constant_initializer, zeros=_ops.zeros_initializer,
    ones=_ops.ones_initializer,
    random_uniform=_ops.random_uniform_initializer,
    random_normal=_ops.random_normal_initializer,
    truncated_normal=_ops.truncated_normal_initializer,
    glorot_uniform=_ops.glorot_uniform_initializer,
    global_variables=global_variables_initializer)

math = types.SimpleNamespace(**{n: NAMES[n] for n in (
    "add", "subtract", "multiply", "divide", "negative", "pow", "maximum",
    "minimum", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "square",
    "abs", "add_n", "reduce_sum", "reduce_mean", "reduce_max", "argmax",
    "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal")})

NAMES.update(
    constant=constant, device=device,
    global_variables_initializer=global_variables_initializer,
    variables_initializer=variables_initializer,
    global_variables=global_variables,
    trainable_variables=trainable_variables,
    disable_v2_behavior=disable_v2_behavior, set_random_seed=set_random_seed,
    disable_eager_execution=disable_eager_execution,
    nn=nn, train=train, layers=layers, errors=errors,
    initializers=initializers, math=math)
