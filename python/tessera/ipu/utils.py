"""tensorflow.python.ipu.utils: the configuration, in IPUConfig's form and
in the older functional form (create_ipu_config, auto_select_ipus, ...)."""

from .config import IPUConfig, configure_ipu_system, reset_ipu_configuration

__all__ = ["IPUConfig", "configure_ipu_system", "reset_ipu_configuration",
           "create_ipu_config", "auto_select_ipus", "select_ipus",
           "set_ipu_model_options"]


def create_ipu_config(**unused):
    return IPUConfig()


def auto_select_ipus(opts, num_ipus):
    opts.auto_select_ipus = num_ipus
    return opts


def select_ipus(opts, indices):
    opts.select_ipus = indices
    return opts


def set_ipu_model_options(opts, compile_ipu_code=True, tiles_per_ipu=None,
                          **unused):
    opts.ipu_model.compile_ipu_code = compile_ipu_code
    if tiles_per_ipu:
        opts.ipu_model.tiles_per_ipu = tiles_per_ipu
    return opts
