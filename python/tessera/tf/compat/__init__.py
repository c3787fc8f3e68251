"""tf.compat: TensorFlow 1's names under tf.compat.v1."""

from . import v1

__all__ = ["v1"]
