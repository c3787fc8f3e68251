"""examples/poptorch/mnist.py runs end to end on a slice of Fashion-MNIST
(the full run, 2 epochs, reaches 89% and is not a unit test)."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")

_ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
_DEBIAN = os.environ.get("TESSERA_FASHION_MNIST_DIR",
                         "/usr/share/datasets/fashion-mnist")


@pytest.mark.skipif(not os.path.exists(
    os.path.join(_DEBIAN, "t10k-labels-idx1-ubyte.gz")),
    reason="Debian's dataset-fashion-mnist is not installed")
def test_mnist_example_trains_and_both_evaluations_agree(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run(
        [sys.executable, os.path.join(_ROOT, "examples", "poptorch",
                                      "mnist.py"),
         "--data-dir", str(tmp_path), "--epochs", "2",
         "--train-samples", "1600", "--test-samples", "800",
         "--device-iterations", "10"],
        capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    ipu = re.search(r"Accuracy on test set: ([\d.]+)%", r.stdout)
    host = re.search(r"in PyTorch: ([\d.]+)%", r.stdout)
    assert ipu and host, r.stdout
    # Learned something, and plain PyTorch sees the trained weights.
    assert float(ipu.group(1)) > 50
    assert abs(float(ipu.group(1)) - float(host.group(1))) < 0.2
    assert os.path.exists(tmp_path / "FashionMNIST" / "raw" /
                          "train-images-idx3-ubyte")
