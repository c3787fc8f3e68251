"""tensorflow.python.ipu.loops: loops that run on the device."""

from ..tf._function import repeat

__all__ = ["repeat"]
