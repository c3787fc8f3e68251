"""tf.keras.layers' names over tessera::nn's layers.

Each layer holds a C++ layer (its configuration); models copy it in.
Images are channels-last (NHWC) as in Keras. Layers take Keras' arguments;
`input_shape=` on the first layer of a Sequential gives the model its
input, as in Keras.
"""

import itertools

import numpy as np

from .. import _tessera

__all__ = ["Layer", "InputLayer", "Input", "KerasTensor", "Dense", "Conv2D",
           "MaxPooling2D", "MaxPool2D", "AveragePooling2D", "AvgPool2D",
           "GlobalAveragePooling2D", "GlobalAvgPool2D", "Flatten", "Dropout",
           "BatchNormalization", "LayerNormalization", "Activation", "Add",
           "Concatenate", "Embedding", "ReLU", "Softmax", "ZeroPadding2D"]

_seeds = itertools.count(1000)


def _name(name):
    return "" if name is None else str(name)


def _activation(a):
    """The C++ name of a Keras activation (a name, None or a function)."""
    if a is None:
        return ""
    if callable(a):
        a = getattr(a, "__name__", str(a))
    return str(a)


def _pair(v, what):
    if isinstance(v, (int, np.integer)):
        return [int(v), int(v)]
    v = [int(x) for x in v]
    if len(v) != 2:
        raise ValueError("%s takes one number or two (height, width), got %r"
                         % (what, v))
    return v


def _initializer(init, default):
    """The C++ initialiser for a Keras initializer (name or object); None
    for the layer's default, which the model seeds."""
    if init is None or (isinstance(init, str) and init == default):
        return None
    from . import initializers
    return initializers.get(init)._core()


def _dtype_name(dtype):
    return np.dtype(dtype if dtype is not None else "float32").name


def _is_policy(dtype):
    from .mixed_precision import Policy
    if isinstance(dtype, (Policy, str)) and str(getattr(dtype, "name", dtype)) \
            in ("float32", "float16", "mixed_float16"):
        return True
    try:
        return np.dtype(dtype).kind == "f"
    except TypeError:
        return isinstance(dtype, str)  # an unknown name: Policy says so


# The pipeline stages of the ipu.keras.PipelineStage scopes open now (the
# innermost last); layers called inside one are on its stage.
_stage_scopes = []


class KerasTensor:
    """A symbolic tensor of a functional model: what Input() and a layer
    applied to tensors return."""

    def __init__(self, core, input_layer=None, parents=()):
        self._t = core
        self._input_layer = input_layer
        # What the layer was applied to, and the stage it was called in
        # (None outside a PipelineStage): Model(inputs, outputs) lists its
        # layers in the C++ model's order from these.
        self._parents = tuple(parents)
        self._stage = _stage_scopes[-1] if _stage_scopes else None

    def __repr__(self):
        return "<KerasTensor from layer %r>" % self._t.layer_name


class Layer:
    """Base of tessera.keras layers: a C++ layer and Keras' input_shape."""

    def __init__(self, core, input_shape=None, input_dim=None,
                 dtype=None, **kwargs):
        for key in ("trainable", "batch_size", "batch_input_shape"):
            kwargs.pop(key, None)
        if kwargs:
            raise TypeError("%s: unknown arguments %s" %
                            (type(self).__name__, sorted(kwargs)))
        self._core = core
        if input_dim is not None:
            input_shape = (int(input_dim),)
        self._input_shape = (None if input_shape is None
                             else tuple(int(d) for d in input_shape))
        # A float dtype or a policy is the layer's mixed-precision policy;
        # another (int32 ids) is what a Sequential's implicit Input takes.
        self._dtype = dtype
        if dtype is not None and _is_policy(dtype):
            self._dtype = None
            self.dtype_policy = dtype

    @property
    def name(self):
        return self._core.name

    @property
    def dtype_policy(self):
        """The layer's mixed-precision Policy (the global one when it was
        made, unless dtype= or this setter gave another)."""
        from .mixed_precision import Policy
        return Policy(self._core.dtype_policy)

    @dtype_policy.setter
    def dtype_policy(self, policy):
        from .mixed_precision import Policy
        if not isinstance(policy, (Policy, str)):
            policy = np.dtype(policy).name
        self._core.dtype_policy = Policy(policy).name

    @property
    def compute_dtype(self):
        return self.dtype_policy.compute_dtype

    @property
    def dtype(self):
        """The dtype of the layer's variables, as Keras' layer.dtype."""
        return self.dtype_policy.variable_dtype

    def __call__(self, inputs):
        """Applies the layer to a KerasTensor (or a list of them)."""
        if isinstance(inputs, (list, tuple)):
            return KerasTensor(self._core([t._t for t in inputs]),
                               parents=inputs)
        if not isinstance(inputs, KerasTensor):
            raise TypeError("%s: call a layer on the output of keras.Input() "
                            "or of another layer, not %s"
                            % (type(self).__name__, type(inputs).__name__))
        return KerasTensor(self._core(inputs._t), parents=(inputs,))

    def __repr__(self):
        return "<%s name=%r>" % (type(self).__name__, self.name)


class InputLayer(Layer):
    """The model's input: the shape of one example, without the batch."""

    def __init__(self, input_shape=None, dtype="float32", name=None,
                 shape=None, batch_size=None, **kwargs):
        shape = shape if shape is not None else input_shape
        if shape is None:
            raise ValueError("InputLayer needs shape=(...) of one example")
        if isinstance(shape, int):
            shape = (shape,)
        if any(d is None for d in shape):
            raise ValueError("Input shape %r has an unknown dimension; the "
                             "IPU needs static shapes" % (tuple(shape),))
        core = _tessera.Input([int(d) for d in shape], _dtype_name(dtype),
                              _name(name))
        super().__init__(core, **kwargs)
        self._input_shape = tuple(int(d) for d in shape)


def Input(shape=None, batch_size=None, name=None, dtype="float32", **kwargs):
    """A symbolic input tensor: `shape` of one example (no batch)."""
    layer = InputLayer(shape=shape, dtype=dtype, name=name, **kwargs)
    return KerasTensor(layer._core.tensor(), layer)


class Dense(Layer):
    """activation(x W + b) over the last axis."""

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 name=None, **kwargs):
        super().__init__(_tessera.Dense(
            int(units), _activation(activation), bool(use_bias),
            _initializer(kernel_initializer, "glorot_uniform"),
            _initializer(bias_initializer, "zeros"), _name(name)), **kwargs)


class Conv2D(Layer):
    """2-D convolution of channels-last images."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 name=None, data_format=None, **kwargs):
        if data_format not in (None, "channels_last"):
            raise ValueError("Conv2D: only data_format='channels_last' is "
                             "supported, got %r" % (data_format,))
        super().__init__(_tessera.Conv2D(
            int(filters), _pair(kernel_size, "kernel_size"),
            _pair(strides, "strides"), str(padding).lower(),
            _activation(activation), bool(use_bias),
            _initializer(kernel_initializer, "glorot_uniform"),
            _initializer(bias_initializer, "zeros"), _name(name)), **kwargs)


class MaxPooling2D(Layer):
    """Max pooling of channels-last images."""

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid",
                 name=None, **kwargs):
        super().__init__(_tessera.MaxPooling2D(
            _pair(pool_size, "pool_size"),
            None if strides is None else _pair(strides, "strides"),
            str(padding).lower(), _name(name)), **kwargs)


class AveragePooling2D(Layer):
    """Average pooling of channels-last images."""

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid",
                 name=None, **kwargs):
        super().__init__(_tessera.AveragePooling2D(
            _pair(pool_size, "pool_size"),
            None if strides is None else _pair(strides, "strides"),
            str(padding).lower(), _name(name)), **kwargs)


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D


class ZeroPadding2D(Layer):
    """Zeros around channels-last images. padding: an int (all sides), a
    pair (rows, columns: symmetric) or ((top, bottom), (left, right))."""

    def __init__(self, padding=(1, 1), data_format=None, name=None,
                 **kwargs):
        if data_format not in (None, "channels_last"):
            raise ValueError("ZeroPadding2D: only channels_last images are "
                             "supported, got data_format=%r" % data_format)
        if isinstance(padding, int):
            rows = cols = (padding, padding)
        else:
            rows, cols = padding
            rows = (rows, rows) if isinstance(rows, int) else tuple(rows)
            cols = (cols, cols) if isinstance(cols, int) else tuple(cols)
        super().__init__(_tessera.ZeroPadding2D(
            [int(r) for r in rows], [int(c) for c in cols], _name(name)),
            **kwargs)


class GlobalAveragePooling2D(Layer):
    """The mean over height and width: (N, H, W, C) -> (N, C)."""

    def __init__(self, name=None, **kwargs):
        super().__init__(_tessera.GlobalAveragePooling2D(_name(name)),
                         **kwargs)


GlobalAvgPool2D = GlobalAveragePooling2D


class Flatten(Layer):
    """(N, d1, d2, ...) -> (N, d1 * d2 * ...)."""

    def __init__(self, name=None, **kwargs):
        super().__init__(_tessera.Flatten(_name(name)), **kwargs)


class Dropout(Layer):
    """Zeroes a fraction `rate` of the elements in training."""

    def __init__(self, rate, name=None, **kwargs):
        super().__init__(_tessera.Dropout(float(rate), _name(name)), **kwargs)


class BatchNormalization(Layer):
    """Batch normalisation over the channels (the last axis)."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=0.001, name=None,
                 **kwargs):
        if axis not in (-1, 3):
            raise ValueError("BatchNormalization: only the last axis "
                             "(axis=-1) is supported, got %r" % (axis,))
        super().__init__(_tessera.BatchNormalization(
            float(momentum), float(epsilon), _name(name)), **kwargs)


class LayerNormalization(Layer):
    """Layer normalisation over the last axis."""

    def __init__(self, axis=-1, epsilon=0.001, name=None, **kwargs):
        if axis != -1:
            raise ValueError("LayerNormalization: only axis=-1 is supported")
        super().__init__(_tessera.LayerNormalization(float(epsilon),
                                                     _name(name)), **kwargs)


class Activation(Layer):
    """An activation function ('relu', 'softmax', ...) as a layer."""

    def __init__(self, activation, name=None, **kwargs):
        super().__init__(_tessera.Activation(_activation(activation),
                                             _name(name)), **kwargs)


class ReLU(Layer):
    """max(x, 0)."""

    def __init__(self, name=None, **kwargs):
        super().__init__(_tessera.NamedActivation("relu", "ReLU", "re_lu",
                                                  _name(name)), **kwargs)


class Softmax(Layer):
    """Softmax over the last axis."""

    def __init__(self, axis=-1, name=None, **kwargs):
        if axis != -1:
            raise ValueError("Softmax: only axis=-1 is supported")
        super().__init__(_tessera.NamedActivation("softmax", "Softmax",
                                                  "softmax", _name(name)),
                         **kwargs)


class Embedding(Layer):
    """Token ids -> vectors from an (input_dim, output_dim) table."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 name=None, input_length=None, **kwargs):
        init = None
        if embeddings_initializer not in (None, "uniform"):
            init = _initializer(embeddings_initializer, "uniform")
        if input_length is not None and "input_shape" not in kwargs:
            kwargs["input_shape"] = (int(input_length),)
        kwargs.setdefault("dtype", "int32")
        super().__init__(_tessera.Embedding(int(input_dim), int(output_dim),
                                            init, _name(name)), **kwargs)


class Add(Layer):
    """The elementwise sum of its inputs."""

    def __init__(self, name=None, **kwargs):
        super().__init__(_tessera.Add(_name(name)), **kwargs)


class Concatenate(Layer):
    """Its inputs joined along the last axis."""

    def __init__(self, axis=-1, name=None, **kwargs):
        if axis != -1:
            raise ValueError("Concatenate: only axis=-1 is supported")
        super().__init__(_tessera.Concatenate(_name(name)), **kwargs)
