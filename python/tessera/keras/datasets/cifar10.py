"""CIFAR-10 from a local copy (see tessera.keras.datasets)."""

import os
import pickle

import numpy as np

from . import _local


def _batch(path):
    with open(path, "rb") as f:
        d = pickle.load(f, encoding="bytes")
    x = np.asarray(d[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32)
    y = np.asarray(d[b"labels"], dtype=np.uint8).reshape(-1, 1)
    return x.transpose(0, 2, 3, 1), y


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 images (50000, 32, 32,
    3) and (10000, 32, 32, 3), uint8 labels of shape (n, 1), as tf.keras
    returns them."""
    folder = _local.find("cifar-10-batches-py")
    if folder is None:
        raise _local.missing("cifar10", "cifar-10-batches-py/ (CIFAR-10's "
                             "python version, unpacked)")
    parts = [_batch(os.path.join(folder, "data_batch_%d" % i))
             for i in range(1, 6)]
    x_train = np.concatenate([p[0] for p in parts])
    y_train = np.concatenate([p[1] for p in parts])
    return (x_train, y_train), _batch(os.path.join(folder, "test_batch"))
