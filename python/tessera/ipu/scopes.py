"""tensorflow.python.ipu.scopes: where TF1 graph ops run."""

import contextlib

from ..tf._graph import get_default_graph

__all__ = ["ipu_scope", "ipu_shard"]


@contextlib.contextmanager
def ipu_scope(device):
    """Ops made inside are placed on the IPU ("/device:IPU:0"); compile
    them with ipu_compiler.compile to run them there (others run on the
    host's interpreter)."""
    if "IPU" not in str(device).upper():
        raise ValueError("ipu_scope: expected an IPU device such as "
                         "\"/device:IPU:0\", got %r" % (device,))
    with get_default_graph().placement(device="ipu"):
        yield


@contextlib.contextmanager
def ipu_shard(index):
    """Ops made inside run on IPU `index` of the configured IPUs."""
    if int(index) < 0:
        raise ValueError("ipu_shard: the index must be >= 0, got %r" % index)
    with get_default_graph().placement(shard=int(index)):
        yield
