"""Tessera's Python front door: Keras-shaped models on the IPU Model.

The core is C++ (the compiled ``tessera._tessera`` extension); this package
converts NumPy arrays and Python callables at the boundary and calls it.

Modules:
  tessera.keras  -- tf.keras's names: Sequential, Model, Input, layers,
                    optimizers, losses, metrics, callbacks, datasets
  tessera.data   -- tf.data-shaped input pipelines (C++ underneath)
  tessera.ipu    -- TensorFlow-for-IPU's IPUConfig and IPUStrategy
  tessera.tf     -- the TensorFlow names Keras programs touch, so that
                    ``import tessera.tf as tf`` runs a seed's program

Use Debian's interpreter, /usr/bin/python3 (it has NumPy).
POPLAR_ENGINE_OPTIONS, POPLAR_LOG_LEVEL and POPLAR_LOG_DEST are honoured
(as TESSERA_ENGINE_OPTIONS, TESSERA_LOG_LEVEL, TESSERA_LOG_DEST).
"""

import os as _os

# Poplar's environment variables, as a seed's user sets them, under the
# names the C++ core reads (Tessera's own names win when both are set).
for _poplar, _tessera_name in (("POPLAR_ENGINE_OPTIONS", "TESSERA_ENGINE_OPTIONS"),
                               ("POPLAR_LOG_LEVEL", "TESSERA_LOG_LEVEL"),
                               ("POPLAR_LOG_DEST", "TESSERA_LOG_DEST")):
    if _poplar in _os.environ and _tessera_name not in _os.environ:
        _os.environ[_tessera_name] = _os.environ[_poplar]

from . import _tessera  # noqa: E402
from ._tessera import (IrError, ModelError, OptionError, SerializationError,
                       ShapeError, TesseraError, UnsupportedError)
from ._tessera import TypeError as TesseraTypeError

__version__ = "0.1.0"

from . import data, ipu, keras  # noqa: E402  (they import _tessera first)

__all__ = ["data", "ipu", "keras", "TesseraError", "ShapeError",
           "TesseraTypeError", "OptionError", "SerializationError",
           "UnsupportedError", "ModelError", "IrError"]
