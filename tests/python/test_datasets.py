"""tessera.keras.datasets: Fashion-MNIST from Debian, local copies of
MNIST and CIFAR-10, one-line errors when they are missing."""

import os
import pickle

import numpy as np
import pytest

from tessera import _tessera
from tessera.keras import datasets, utils


def test_fashion_mnist_has_keras_shapes_and_dtypes():
    (x, y), (xt, yt) = datasets.fashion_mnist.load_data()
    assert x.shape == (60000, 28, 28) and x.dtype == np.uint8
    assert y.shape == (60000,) and y.dtype == np.uint8
    assert xt.shape == (10000, 28, 28) and yt.shape == (10000,)
    assert set(np.unique(y)) == set(range(10))
    assert x.max() == 255


@pytest.fixture
def empty_places(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_DATASETS_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "data"


@pytest.mark.parametrize("name", ["mnist", "cifar10"])
def test_missing_local_copies_fail_with_one_line(empty_places, name):
    with pytest.raises(FileNotFoundError) as e:
        getattr(datasets, name).load_data()
    msg = str(e.value)
    assert "\n" not in msg
    assert "TESSERA_DATASETS_DIR" in msg and "does not download" in msg


def test_mnist_reads_a_local_npz(empty_places):
    empty_places.mkdir()
    x = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    np.savez(empty_places / "mnist.npz", x_train=x, y_train=np.array(
        [3, 4], np.uint8), x_test=x[:1], y_test=np.array([5], np.uint8))
    (a, b), (c, d) = datasets.mnist.load_data()
    np.testing.assert_array_equal(a, x)
    assert list(b) == [3, 4] and list(d) == [5] and c.shape == (1, 28, 28)


def test_mnist_reads_local_idx_files(empty_places):
    folder = empty_places / "mnist"
    folder.mkdir(parents=True)
    fashion = _tessera.fashion_mnist_directory()
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        os.symlink(os.path.join(fashion, stem + ".gz"),
                   folder / (stem + ".gz"))
    (x, y), (xt, yt) = datasets.mnist.load_data()
    assert x.shape == (60000, 28, 28) and yt.shape == (10000,)


def test_cifar10_reads_the_python_batches(empty_places):
    folder = empty_places / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in ["data_batch_%d" % i for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, size=(3, 3072), dtype=np.uint8)
        with open(folder / name, "wb") as f:
            pickle.dump({b"data": data, b"labels": [1, 2, 3]}, f)
    (x, y), (xt, yt) = datasets.cifar10.load_data()
    assert x.shape == (15, 32, 32, 3) and x.dtype == np.uint8
    assert y.shape == (15, 1) and xt.shape == (3, 32, 32, 3)
    with open(folder / "test_batch", "rb") as f:
        raw = pickle.load(f)[b"data"]
    # Channels last: pixel (0, 1) of image 0 holds red, green and blue.
    assert list(xt[0, 0, 1]) == [raw[0, 1], raw[0, 1024 + 1],
                                 raw[0, 2048 + 1]]


def test_to_categorical():
    got = utils.to_categorical(np.array([[2], [0]]), 3)
    np.testing.assert_array_equal(got, [[0, 0, 1], [1, 0, 0]])
    assert got.dtype == np.float32
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        utils.to_categorical([3], 3)
