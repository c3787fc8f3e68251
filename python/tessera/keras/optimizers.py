"""tf.keras.optimizers' names over Tessera's optimizer pass (SGD with
momentum and Nesterov, Adam, AdamW, RMSprop). Semantics follow PyTorch's, as the
C++ pass documents (passes/Optimizer.hpp)."""

from .. import _tessera

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "get"]


class Optimizer:
    """Base: holds the C++ optimizer record."""

    def _core(self):
        raise NotImplementedError

    @property
    def lr(self):
        return self.learning_rate


class SGD(Optimizer):
    """Stochastic gradient descent, with momentum and Nesterov momentum."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False,
                 weight_decay=None, name="SGD", **kwargs):
        self.learning_rate = float(kwargs.pop("lr", learning_rate))
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)
        self.weight_decay = float(weight_decay or 0.0)
        self.name = name

    def _core(self):
        return _tessera.SGD(self.learning_rate, self.momentum, self.nesterov,
                            self.weight_decay)


class Adam(Optimizer):
    """Adam; weight_decay adds to the gradient (L2), as tf.keras."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, weight_decay=None, name="Adam",
                 **kwargs):
        if amsgrad:
            raise NotImplementedError("Adam: amsgrad is not supported")
        self.learning_rate = float(kwargs.pop("lr", learning_rate))
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = float(epsilon)
        self.weight_decay = float(weight_decay or 0.0)
        self.name = name

    def _decoupled(self):
        return False

    def _core(self):
        return _tessera.Adam(self.learning_rate, self.beta_1, self.beta_2,
                             self.epsilon, self.weight_decay,
                             self._decoupled())


class AdamW(Adam):
    """Adam with decoupled weight decay (w -= lr * weight_decay * w)."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-7, name="AdamW", **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon,
                         weight_decay=weight_decay, name=name, **kwargs)

    def _decoupled(self):
        return True


class RMSprop(Optimizer):
    """RMSprop: divides the gradient by a running root mean square of it
    (centered: of its variance); with momentum, accumulates those steps."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0,
                 epsilon=1e-7, centered=False, weight_decay=None,
                 name="RMSprop", **kwargs):
        self.learning_rate = float(kwargs.pop("lr", learning_rate))
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.centered = bool(centered)
        self.weight_decay = float(weight_decay or 0.0)
        self.name = name

    def _core(self):
        return _tessera.RMSprop(self.learning_rate, self.rho, self.momentum,
                                self.epsilon, self.weight_decay,
                                self.centered)


class _Legacy:
    SGD, Adam, RMSprop = SGD, Adam, RMSprop


legacy = _Legacy


def get(identifier):
    """An optimizer from its name ('adam', 'sgd', 'adamw') or itself."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        key = identifier.lower()
        if key == "adam":
            return Adam()
        if key == "sgd":
            return SGD()
        if key == "adamw":
            return AdamW()
        if key == "rmsprop":
            return RMSprop()
        raise ValueError("unknown optimizer %r: Tessera has 'sgd', 'adam', "
                         "'adamw' and 'rmsprop'" % identifier)
    raise TypeError("optimizer must be a name or a tessera.keras.optimizers "
                    "object, got %s" % type(identifier).__name__)
