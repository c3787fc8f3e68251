"""tensorflow.python.ipu.ops for Tessera: pipelining_ops' enums."""

from . import pipelining_ops

__all__ = ["pipelining_ops"]
