"""tf.keras.utils: to_categorical."""

import numpy as np

__all__ = ["to_categorical"]


def to_categorical(y, num_classes=None, dtype="float32"):
    """One-hot rows for the class ids in `y` (shape (n,) or (n, 1))."""
    y = np.asarray(y, dtype="int64")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.reshape(-1)
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError("to_categorical: class ids must be in [0, %d), got "
                         "%d..%d" % (num_classes, y.min(), y.max()))
    out = np.zeros((y.size, num_classes), dtype=dtype)
    out[np.arange(y.size), y] = 1
    return out.reshape(shape + (num_classes,))
