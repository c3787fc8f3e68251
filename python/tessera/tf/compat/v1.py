"""tensorflow.compat.v1 for Tessera: TF1 graph programs

    import tessera.tf.compat.v1 as tf      # was tensorflow.compat.v1
    from tessera import ipu                # was tensorflow.python.ipu

build a graph (placeholders, variables, ops), compile the IPU's part with
ipu.ipu_compiler.compile inside ipu.scopes.ipu_scope, and run it with
tf.Session().run(fetches, feed_dict). Ops placed on the CPU run on the
host through the IR interpreter; compiled functions, and ops ipu_scope
places on the IPU, run on the IPU Model the configured IPUConfig
describes.
"""

import sys as _sys

from ... import data, ipu, keras  # noqa: F401
from .._v1 import NAMES as _NAMES

globals().update(_NAMES)
__all__ = sorted(_NAMES) + ["data", "ipu", "keras"]
_sys.modules[__name__ + ".errors"] = _NAMES["errors"]
