"""tf.keras.losses' names. A loss is a name the C++ model compiles
(sparse_categorical_crossentropy, categorical_crossentropy,
mean_squared_error) and whether the model outputs logits."""

__all__ = ["Loss", "SparseCategoricalCrossentropy", "CategoricalCrossentropy",
           "MeanSquaredError", "sparse_categorical_crossentropy",
           "categorical_crossentropy", "mean_squared_error", "mse", "get"]


class Loss:
    def __init__(self, name, from_logits=False):
        self.name = name
        self.from_logits = bool(from_logits)


class SparseCategoricalCrossentropy(Loss):
    """Cross-entropy against integer class ids."""

    def __init__(self, from_logits=False, **unused):
        super().__init__("sparse_categorical_crossentropy", from_logits)


class CategoricalCrossentropy(Loss):
    """Cross-entropy against one-hot targets."""

    def __init__(self, from_logits=False, **unused):
        super().__init__("categorical_crossentropy", from_logits)


class MeanSquaredError(Loss):
    def __init__(self, **unused):
        super().__init__("mean_squared_error")


def sparse_categorical_crossentropy(*args, **kwargs):
    raise TypeError("Tessera computes losses on the device; pass this "
                    "function to compile(loss=...) rather than calling it")


def categorical_crossentropy(*args, **kwargs):
    sparse_categorical_crossentropy()


def mean_squared_error(*args, **kwargs):
    sparse_categorical_crossentropy()


mse = mean_squared_error

_NAMES = {"sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
          "categorical_crossentropy": CategoricalCrossentropy,
          "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError}


def get(identifier):
    """A Loss from a name, a loss function of this module or a Loss."""
    if isinstance(identifier, Loss):
        return identifier
    if callable(identifier) and getattr(identifier, "__name__", "") in _NAMES:
        identifier = identifier.__name__
    if isinstance(identifier, str) and identifier in _NAMES:
        return _NAMES[identifier]()
    raise ValueError("unknown loss %r: use sparse_categorical_crossentropy, "
                     "categorical_crossentropy or mean_squared_error"
                     % (identifier,))
