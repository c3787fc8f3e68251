"""tf.keras.initializers' names over Tessera's initialisers."""

import itertools

from .. import _tessera

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomUniform",
           "RandomNormal", "TruncatedNormal", "GlorotUniform", "GlorotNormal",
           "HeUniform", "HeNormal", "get"]

_seeds = itertools.count(7919)


class Initializer:
    def __init__(self, kind, a=0.0, b=0.0, seed=None):
        self.kind, self.a, self.b = kind, float(a), float(b)
        self.seed = next(_seeds) if seed is None else int(seed)

    def _core(self):
        return _tessera.initialiser(self.kind, self.a, self.b, self.seed)


def _kind(kind, a=0.0, b=0.0):
    class _Init(Initializer):
        def __init__(self, seed=None):
            super().__init__(kind, a, b, seed)
    return _Init


Zeros = _kind("zeros")
Ones = _kind("ones")
GlorotUniform = _kind("glorot_uniform")
GlorotNormal = _kind("glorot_normal")
HeUniform = _kind("he_uniform")
HeNormal = _kind("he_normal")


class Constant(Initializer):
    def __init__(self, value=0.0):
        super().__init__("constant", value)


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__("random_uniform", minval, maxval, seed)


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__("random_normal", mean, stddev, seed)


class TruncatedNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__("truncated_normal", mean, stddev, seed)


_NAMES = {"zeros": Zeros, "ones": Ones, "glorot_uniform": GlorotUniform,
          "glorot_normal": GlorotNormal, "he_uniform": HeUniform,
          "he_normal": HeNormal, "uniform": RandomUniform,
          "random_uniform": RandomUniform, "random_normal": RandomNormal,
          "normal": RandomNormal, "truncated_normal": TruncatedNormal}


def get(identifier):
    if isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, str) and identifier in _NAMES:
        return _NAMES[identifier]()
    raise ValueError("unknown initializer %r; use one of %s"
                     % (identifier, ", ".join(sorted(_NAMES))))
