"""MNIST from a local copy (see tessera.keras.datasets)."""

import os

import numpy as np

from . import _local


def load_data(path="mnist.npz"):
    """((x_train, y_train), (x_test, y_test)) as tf.keras returns them:
    uint8 (60000, 28, 28) and (10000, 28, 28) images, uint8 labels."""
    npz = path if os.path.isabs(path) and os.path.exists(path) \
        else _local.find(path)
    if npz:
        with np.load(npz, allow_pickle=False) as f:
            return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
    folder = _local.find("mnist")
    data = _local.read_idx_set(folder) if folder else None
    if data is None:
        raise _local.missing("mnist", "mnist.npz or mnist/ with the four "
                             "IDX files")
    return data
