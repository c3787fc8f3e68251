"""IPUConfig: the IPU system's options, with TensorFlow-for-IPU's names.

Setting an attribute that does not exist is an AttributeError naming the
closest one, as IPUConfig does.
"""

import difflib
import enum
import os
import shlex

from .. import _tessera

__all__ = ["IPUConfig", "DeviceConnectionType", "configure_ipu_system",
           "reset_ipu_configuration"]


class DeviceConnectionType(enum.Enum):
    """When a device is needed: ALWAYS (default), ON_DEMAND, PRE_COMPILE
    (fill the executable cache only) or NEVER."""
    ALWAYS = 0
    ON_DEMAND = 1
    PRE_COMPILE = 2
    NEVER = 3


class _Options:
    """A fixed set of attributes; unknown ones are errors."""

    _path = "IPUConfig"

    def __init__(self, **defaults):
        object.__setattr__(self, "_names", set(defaults))
        for k, v in defaults.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, name, value):
        if name not in self._names:
            close = difflib.get_close_matches(name, sorted(self._names), 1)
            hint = " (did you mean %r?)" % close[0] if close else ""
            raise AttributeError("%s has no option %r%s; it has %s"
                                 % (self._path, name, hint,
                                    ", ".join(sorted(self._names))))
        object.__setattr__(self, name, value)

    def __repr__(self):
        return "%s(%s)" % (self._path, ", ".join(
            "%s=%r" % (k, getattr(self, k)) for k in sorted(self._names)))


def _group(path, **defaults):
    g = _Options(**defaults)
    object.__setattr__(g, "_path", path)
    return g


class IPUConfig(_Options):
    """The IPU system: how many IPUs, the IPU Model's tiles and version,
    floating-point exception checks, the executable cache."""

    def __init__(self):
        super().__init__(
            auto_select_ipus=[], select_ipus=[],
            ipu_model=_group("IPUConfig.ipu_model", compile_ipu_code=True,
                             tiles_per_ipu=0, version="ipu2"),
            device_connection=_group("IPUConfig.device_connection",
                                     type=DeviceConnectionType.ALWAYS,
                                     version=""),
            floating_point_behaviour=_group(
                "IPUConfig.floating_point_behaviour", inv=False, div0=False,
                oflo=False, nanoo=False, esr=False),
            executable_cache_path="",
            optimizations=_group("IPUConfig.optimizations",
                                 math=_group("IPUConfig.optimizations.math",
                                             fast=False)),
            allow_recompute=False)

    def _to_core(self):
        c = _tessera.Config()
        n = self.auto_select_ipus
        if isinstance(n, (list, tuple)):
            if len(n) > 1:
                raise NotImplementedError(
                    "IPUConfig.auto_select_ipus: one group of IPUs per "
                    "process; got %r" % (n,))
            n = n[0] if n else 1
        selected = self._selected_device()
        if selected is not None:
            if n not in (1, None) and self.auto_select_ipus:
                raise ValueError("IPUConfig: set auto_select_ipus or "
                                 "select_ipus, not both")
            n = len(_tessera.device_ipus(selected))
        c.auto_select_ipus = int(n)
        m = c.ipu_model
        m.compile_ipu_code = bool(self.ipu_model.compile_ipu_code)
        if self.ipu_model.tiles_per_ipu:
            m.tiles_per_ipu = int(self.ipu_model.tiles_per_ipu)
        m.version = str(self.ipu_model.version)
        c.ipu_model = m
        f = c.floating_point_behaviour
        fp = self.floating_point_behaviour
        f.inv, f.div0, f.oflo, f.nanoo = (bool(fp.inv), bool(fp.div0),
                                          bool(fp.oflo), bool(fp.nanoo))
        c.floating_point_behaviour = f
        c.device_connection_type = getattr(
            _tessera.DeviceConnectionType,
            DeviceConnectionType(self.device_connection.type).name)
        flags = _poplar_flags()
        c.executable_cache_path = (self.executable_cache_path or
                                   flags.get("executable_cache_path", ""))
        c.synthetic_data = bool(flags.get("use_synthetic_data", False))
        return c

    def _selected_device(self):
        """The device id select_ipus names (one id; None when unset)."""
        ids = self.select_ipus
        if ids in ([], (), None):
            return None
        if isinstance(ids, (list, tuple)):
            if len(ids) > 1:
                raise NotImplementedError(
                    "IPUConfig.select_ipus: one device per process; got %r"
                    % (ids,))
            ids = ids[0]
        return int(ids)

    @staticmethod
    def _synthetic_initializer():
        """TF_POPLAR_FLAGS' --synthetic_data_initializer: "random",
        "uniform", "normal" or a number ("" when not set)."""
        rule = _poplar_flags().get("synthetic_data_initializer", "")
        if rule is True:
            raise ValueError(
                "TF_POPLAR_FLAGS: --synthetic_data_initializer needs a value: "
                "random, uniform, normal or a number, as "
                "--synthetic_data_initializer=random")
        return str(rule)

    def configure_ipu_system(self, device="cpu"):
        """Makes this the system that models compiled from now on use."""
        global _system, _synthetic, _selected, _allow_recompute
        _system = self._to_core()
        _allow_recompute = bool(self.allow_recompute)
        _synthetic = self._synthetic_initializer()
        _selected = self._selected_device()


def _poplar_flags():
    """TF_POPLAR_FLAGS: --executable_cache_path=..., --use_synthetic_data,
    --synthetic_data_initializer=..."""
    flags = {}
    for word in shlex.split(os.environ.get("TF_POPLAR_FLAGS", "")):
        key, _, value = word.lstrip("-").partition("=")
        flags[key] = value if value else True
    return flags


_system = None
_synthetic = ""
_allow_recompute = False  # IPUConfig.allow_recompute of the system


def configure_ipu_system(config, device="cpu"):
    """As IPUConfig.configure_ipu_system (TF1's spelling)."""
    config.configure_ipu_system()


def reset_ipu_configuration():
    """Back to the default system (one IPU Model of 1472 tiles)."""
    global _system, _synthetic, _selected, _allow_recompute
    _system = None
    _synthetic = ""
    _selected = None
    _allow_recompute = False


_selected = None


def _selected_device():
    """The device id the configured system selected (select_ipus), or
    None to take the first free one of its size."""
    return _selected


def _current_system():
    """The C++ Config models compile with."""
    if _system is not None:
        return _system
    return IPUConfig()._to_core()


def _current_synthetic_initializer():
    """The synthetic data rule models compile with (TF_POPLAR_FLAGS read
    when the system was configured, else now)."""
    if _system is not None:
        return _synthetic
    return IPUConfig._synthetic_initializer()
