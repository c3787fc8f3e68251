"""tensorflow.python.ipu.ipu_compiler: compile a function for the IPU."""

from ..tf._function import compile_function as compile  # noqa: A001

__all__ = ["compile"]
