"""The TensorFlow names Keras programs touch, over Tessera, so that a
TensorFlow 2 Keras program for the IPU runs after changing its imports:

    import tensorflow as tf                  ->  import tessera.tf as tf
    from tensorflow import keras             ->  from tessera.tf import keras
    from tensorflow.keras.layers import *    ->  from tessera.tf.keras.layers import *
    from tensorflow.python import ipu        ->  from tessera import ipu

Tensors are NumPy arrays here: tf.cast converts an array, and tf.data map
functions take and return arrays.
"""

import contextlib
import sys

import numpy as np

from .. import data, ipu, keras

# tf.keras and its submodules are tessera.keras's, under tessera.tf's name,
# so `from tessera.tf.keras.layers import *` imports.
for _name in ("callbacks", "datasets", "initializers", "layers", "losses",
              "metrics", "models", "optimizers", "utils", "backend"):
    sys.modules[__name__ + ".keras." + _name] = getattr(keras, _name)
sys.modules[__name__ + ".keras"] = keras
sys.modules[__name__ + ".data"] = data

__version__ = "2.6.3"  # the TensorFlow API these names follow

optimizers = keras.optimizers
losses = keras.losses
metrics = keras.metrics

float16, float32, float64 = np.float16, np.float32, np.float64
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, bool_ = np.uint8, np.bool_
newaxis = None


def cast(x, dtype, name=None):
    """x (an array) converted to dtype."""
    return np.asarray(x).astype(dtype, copy=False)


def convert_to_tensor(value, dtype=None, name=None):
    return np.asarray(value, dtype=dtype)


constant = convert_to_tensor


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
           "distribute"]
