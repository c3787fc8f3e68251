"""Fashion-MNIST from Debian's dataset-fashion-mnist package."""

from ... import _tessera
from . import _local


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 images (60000, 28, 28)
    and (10000, 28, 28), uint8 labels 0..9, as tf.keras returns them. Read
    from /usr/share/datasets/fashion-mnist (TESSERA_FASHION_MNIST_DIR
    overrides it)."""
    folder = _tessera.fashion_mnist_directory()
    data = _local.read_idx_set(folder)
    if data is None:
        raise FileNotFoundError(
            "fashion_mnist.load_data: the files are not in %s; install "
            "Debian's dataset-fashion-mnist (scripts/deps.sh does) or set "
            "TESSERA_FASHION_MNIST_DIR" % folder)
    return data
