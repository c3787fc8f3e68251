"""Shared fixtures. The package comes from build/python (scripts/test.sh
puts it on PYTHONPATH; this falls back to it for a bare pytest run)."""

import os
import sys

import numpy as np
import pytest

_BUILD = os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")
try:
    import tessera  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.abspath(_BUILD))
    import tessera  # noqa: F401

from tessera import ipu  # noqa: E402


@pytest.fixture(autouse=True)
def small_ipu():
    """Every test compiles for a 16-tile IPU Model: fast to compile."""
    cfg = ipu.config.IPUConfig()
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()
    yield cfg
    ipu.config.reset_ipu_configuration()


def clusters(n=256, features=8, seed=0):
    """Two separable clusters: x float32 (n, features), y int labels (n,)."""
    rng = np.random.default_rng(seed)
    y = (np.arange(n) % 2).astype(np.int64)
    sign = np.where(y == 1, 1.0, -1.0)[:, None]
    x = sign * (0.5 + 0.1 * (np.arange(features) % 3)) \
        + 0.4 * rng.standard_normal((n, features))
    return x.astype(np.float32), y


@pytest.fixture
def cluster_data():
    return clusters()
