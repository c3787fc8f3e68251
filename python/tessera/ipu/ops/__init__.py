"""tensorflow.python.ipu.ops for Tessera: pipelining_ops (the same module as
tessera.ipu.pipelining_ops)."""

from . import pipelining_ops

__all__ = ["pipelining_ops"]
