"""The TensorFlow names Keras programs touch, over Tessera, so that a
TensorFlow 2 Keras program for the IPU runs after changing its imports:

    import tensorflow as tf                  ->  import tessera.tf as tf
    from tensorflow import keras             ->  from tessera.tf import keras
    from tensorflow.keras.layers import *    ->  from tessera.tf.keras.layers import *
    from tensorflow.python import ipu        ->  from tessera import ipu

Tensors are NumPy arrays here: tf.cast converts an array, and tf.data map
functions take and return arrays.

TensorFlow 1 graph programs (tf.placeholder, tf.Session, ipu_compiler.compile)
use the same names: tessera.tf.compat.v1 holds them all, and the ones TF 1.x
had at its top level are here too (tf.constant stays a NumPy array, which
every graph op takes).
"""

import contextlib
import sys

import numpy as np

from .. import data, ipu, keras
from . import compat
from ._v1 import NAMES as _V1

# tf.keras and its submodules are tessera.keras's, under tessera.tf's name,
# so `from tessera.tf.keras.layers import *` imports.
for _name in ("callbacks", "datasets", "initializers", "layers", "losses",
              "metrics", "models", "optimizers", "utils", "backend",
              "applications"):
    sys.modules[__name__ + ".keras." + _name] = getattr(keras, _name)
sys.modules[__name__ + ".keras"] = keras
sys.modules[__name__ + ".keras.optimizers.schedules"] = \
    keras.optimizers.schedules
sys.modules[__name__ + ".data"] = data

__version__ = "2.6.3"  # the TensorFlow API these names follow

optimizers = keras.optimizers
losses = keras.losses
metrics = keras.metrics

float16, float32, float64 = np.float16, np.float32, np.float64
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, bool_ = np.uint8, np.bool_
newaxis = None


cast = _V1["cast"]  # an array converted now; a graph tensor, an op


def convert_to_tensor(value, dtype=None, name=None):
    return np.asarray(value, dtype=dtype)


constant = _V1["constant"]

# TF 1.x's top-level graph names (the rest are under tf.compat.v1).
for _name in ("placeholder", "get_variable", "variable_scope",
              "get_variable_scope", "device", "Session",
              "global_variables_initializer", "variables_initializer",
              "train", "nn", "layers", "errors", "initializers", "math",
              "add", "subtract", "multiply", "divide", "matmul", "reduce_sum",
              "reduce_mean", "reduce_max", "reshape", "transpose", "argmax",
              "concat", "identity", "equal", "one_hot", "Variable", "assign",
              "assign_add",
              "group", "no_op", "py_func", "numpy_function",
              "constant_initializer", "zeros_initializer", "ones_initializer",
              "random_uniform_initializer", "random_normal_initializer",
              "truncated_normal_initializer", "glorot_uniform_initializer",
              "reset_default_graph", "get_default_graph",
              "disable_v2_behavior", "disable_eager_execution"):
    globals()[_name] = _V1[_name]


class _Random:
    @staticmethod
    def set_seed(seed):
        """Seeds NumPy's generator, which tessera.data's shuffles draw on."""
        np.random.seed(seed)


random = _Random()


class _DefaultStrategy:
    def scope(self):
        return contextlib.nullcontext(self)


class _Distribute:
    @staticmethod
    def get_strategy():
        return _DefaultStrategy()


distribute = _Distribute()

__all__ = ["keras", "data", "ipu", "optimizers", "losses", "metrics", "cast",
           "convert_to_tensor", "constant", "float16", "float32", "float64",
           "int8", "int16", "int32", "int64", "uint8", "newaxis", "random",
           "distribute", "compat"] + [n for n in sorted(_V1) if n in globals()]
