"""tensorflow.python.ipu.utils' old spelling of the configuration."""

from .config import IPUConfig, configure_ipu_system, reset_ipu_configuration

__all__ = ["IPUConfig", "configure_ipu_system", "reset_ipu_configuration"]
