"""tf.keras.metrics' names for the metric Tessera computes on the device:
classification accuracy (against class ids or one-hot targets)."""

__all__ = ["Accuracy", "SparseCategoricalAccuracy", "CategoricalAccuracy",
           "name_of"]

_ACCURACY_NAMES = ("accuracy", "acc", "sparse_categorical_accuracy",
                   "categorical_accuracy")


class Metric:
    def __init__(self, name):
        self.name = name


class Accuracy(Metric):
    def __init__(self, name="accuracy"):
        super().__init__(name)


class SparseCategoricalAccuracy(Metric):
    def __init__(self, name="sparse_categorical_accuracy"):
        super().__init__(name)


class CategoricalAccuracy(Metric):
    def __init__(self, name="categorical_accuracy"):
        super().__init__(name)


def name_of(metric):
    """The log name of `metric` (a name or a Metric); ValueError for a
    metric Tessera does not compute."""
    name = metric.name if isinstance(metric, Metric) else metric
    if not isinstance(name, str) or name not in _ACCURACY_NAMES:
        raise ValueError("unknown metric %r: Tessera computes 'accuracy' "
                         "(also named 'sparse_categorical_accuracy', "
                         "'categorical_accuracy', 'acc')" % (metric,))
    return name
