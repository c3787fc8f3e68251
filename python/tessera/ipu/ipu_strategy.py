"""IPUStrategy: the scope a seed's Keras program builds and trains in."""

import contextlib

__all__ = ["IPUStrategy", "IPUStrategyV1"]


class IPUStrategy:
    """Models built and trained inside scope() run on the configured IPU
    system (tessera.ipu.config); in Tessera every model does, so the scope
    only records that it is active."""

    _active = 0

    @contextlib.contextmanager
    def scope(self):
        IPUStrategy._active += 1
        try:
            yield self
        finally:
            IPUStrategy._active -= 1

    def run(self, fn, args=(), kwargs=None):
        return fn(*args, **(kwargs or {}))

    @property
    def num_replicas_in_sync(self):
        return 1


IPUStrategyV1 = IPUStrategy
