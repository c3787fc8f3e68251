"""tf.compat.v1.layers: dense, conv2d and max_pooling2d over get_variable."""

import numpy as np

from . import _ops
from ._graph import convert, get_default_graph

__all__ = ["dense", "conv2d", "max_pooling2d", "flatten"]

_ACTIVATIONS = {None: lambda x: x, "relu": _ops.relu,
                "softmax": _ops.softmax, "sigmoid": _ops.sigmoid,
                "tanh": _ops.tanh}


def _activation(a):
    return a if callable(a) else _ACTIVATIONS[a]


def _scope(name, default):
    return _ops.variable_scope(name or get_default_graph().unique(default),
                               use_resource=True)


def dense(inputs, units, activation=None, use_bias=True,
          kernel_initializer=None, bias_initializer=None, name=None,
          **unused):
    x = convert(inputs)
    with _scope(name, "dense"):
        w = _ops.get_variable("kernel", (x.shape[-1], int(units)), x.dtype,
                              kernel_initializer)
        y = _ops.matmul(x, w)
        if use_bias:
            b = _ops.get_variable("bias", (int(units),), x.dtype,
                                  bias_initializer or
                                  _ops.zeros_initializer())
            y = _ops.add(y, b)
    return _activation(activation)(y)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           activation=None, use_bias=True, kernel_initializer=None,
           bias_initializer=None, name=None, **unused):
    x = convert(inputs)
    k = (kernel_size,) * 2 if np.isscalar(kernel_size) else kernel_size
    s = (strides,) * 2 if np.isscalar(strides) else strides
    with _scope(name, "conv2d"):
        w = _ops.get_variable("kernel", (k[0], k[1], x.shape[-1],
                                         int(filters)), x.dtype,
                              kernel_initializer)
        y = _ops.conv2d(x, w, (1, s[0], s[1], 1), padding.upper())
        if use_bias:
            b = _ops.get_variable("bias", (int(filters),), x.dtype,
                                  bias_initializer or
                                  _ops.zeros_initializer())
            y = _ops.add(y, b)
    return _activation(activation)(y)


def max_pooling2d(inputs, pool_size, strides, padding="valid", name=None,
                  **unused):
    p = (pool_size,) * 2 if np.isscalar(pool_size) else pool_size
    s = (strides,) * 2 if np.isscalar(strides) else strides
    return _ops.max_pool(inputs, (1, p[0], p[1], 1), (1, s[0], s[1], 1),
                         padding.upper())


def flatten(inputs, name=None):
    x = convert(inputs)
    return _ops.reshape(x, (x.shape[0], int(np.prod(x.shape[1:]))))
