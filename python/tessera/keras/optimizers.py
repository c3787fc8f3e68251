"""tf.keras.optimizers' names over Tessera's optimizer pass (SGD with
momentum and Nesterov, Adam, AdamW, RMSprop). Semantics follow PyTorch's, as the
C++ pass documents (passes/Optimizer.hpp).

The learning rate is a runtime input of the compiled model: setting
``model.optimizer.learning_rate`` (or ``lr``, or
``keras.backend.set_value(model.optimizer.learning_rate, x)``) after
compile writes it to the device without recompiling, and the steps that
follow train with it. ``learning_rate`` may also be a
``keras.optimizers.schedules`` schedule (see there for when it is
evaluated)."""

import math
import sys
import weakref

from .. import _tessera
from . import schedules

# keras.optimizers.schedules as a module path too, as Keras has it.
sys.modules[__name__ + ".schedules"] = schedules

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "get",
           "schedules"]


class LearningRate(float):
    """The learning rate as a float that can be assigned, like the
    tf.Variable Keras gives: ``model.optimizer.learning_rate.assign(x)``
    sets the optimizer's rate, ``.numpy()`` reads it."""

    def __new__(cls, value, optimizer):
        self = super().__new__(cls, value)
        self._optimizer = optimizer
        return self

    def assign(self, value):
        self._optimizer.learning_rate = value
        return self._optimizer.learning_rate

    def numpy(self):
        return float(self)


class Optimizer:
    """Base: holds the hyper-parameters, and the model whose compiled
    program takes a new learning rate."""

    _lr = 0.01
    _schedule = None
    _model = None

    def _core(self):
        raise NotImplementedError

    @property
    def learning_rate(self):
        """The current rate (a schedule's value at the current step)."""
        return LearningRate(self._lr, self)

    @learning_rate.setter
    def learning_rate(self, value):
        if isinstance(value, schedules.LearningRateSchedule):
            self._schedule = value
            self._write(value(self.iterations))
            return
        self._schedule = None
        self._write(value)

    lr = learning_rate

    @property
    def iterations(self):
        """Training steps this optimizer has taken (counted per device run
        of steps_per_execution steps)."""
        return self.__dict__.get("_iterations", 0)

    def _write(self, value):
        value = float(value)
        if not (value > 0 and math.isfinite(value)):
            raise ValueError("%s: the learning rate must be positive and "
                             "finite, got %r" % (type(self).__name__, value))
        self._lr = value
        model = self._model() if self._model is not None else None
        if model is not None:
            model._set_learning_rate(value)

    def _bind(self, model):
        """model.compile(optimizer=self): later rates go to model."""
        self._model = weakref.ref(model)

    def _advance(self, steps):
        """After a device run of `steps` steps: moves a schedule on."""
        self._iterations = self.iterations + int(steps)
        if self._schedule is not None:
            lr = float(self._schedule(self._iterations))
            if lr != self._lr:
                self._write(lr)


class SGD(Optimizer):
    """Stochastic gradient descent, with momentum and Nesterov momentum."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False,
                 weight_decay=None, name="SGD", **kwargs):
        self.learning_rate = kwargs.pop("lr", learning_rate)
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)
        self.weight_decay = float(weight_decay or 0.0)
        self.name = name

    def _core(self):
        return _tessera.SGD(self._lr, self.momentum, self.nesterov,
                            self.weight_decay)


class Adam(Optimizer):
    """Adam; weight_decay adds to the gradient (L2), as tf.keras."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, weight_decay=None, name="Adam",
                 **kwargs):
        if amsgrad:
            raise NotImplementedError("Adam: amsgrad is not supported")
        self.learning_rate = kwargs.pop("lr", learning_rate)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = float(epsilon)
        self.weight_decay = float(weight_decay or 0.0)
        self.name = name

    def _decoupled(self):
        return False

    def _core(self):
        return _tessera.Adam(self._lr, self.beta_1, self.beta_2,
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
        self.learning_rate = kwargs.pop("lr", learning_rate)
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.centered = bool(centered)
        self.weight_decay = float(weight_decay or 0.0)
        self.name = name

    def _core(self):
        return _tessera.RMSprop(self._lr, self.rho, self.momentum,
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
