"""tf.keras.mixed_precision's names over tessera::nn's dtype policies and
loss scaling (include/tessera/nn/Policy.hpp).

    from tessera import keras
    keras.mixed_precision.set_global_policy("mixed_float16")
    model = keras.Sequential([...])            # layers compute in float16
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD())
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    model.fit(x, y)
    opt.dynamic_scale                            # the device's scale now

Policies: "float32", "mixed_float16" (compute in float16, variables in
float32, cast where a layer reads them) and "float16" (variables in
float16 too). Layers take the global policy when they are made; a layer's
``dtype=`` argument (a name or a Policy) gives it another. Under a half
policy compile() scales the loss dynamically by default, as Keras' compile
wraps the optimizer in a LossScaleOptimizer.
"""

from .. import _tessera
from . import optimizers as _optimizers

__all__ = ["Policy", "set_global_policy", "global_policy",
           "LossScaleOptimizer"]


class Policy:
    """A dtype policy by name; ValueError for an unknown one."""

    def __init__(self, name):
        if isinstance(name, Policy):
            name = name.name
        try:
            compute, variable = _tessera.policy_dtypes(str(name))
        except Exception as e:  # OptionError from C++, with the names
            raise ValueError(str(e)) from None
        self._name = str(name)
        self._compute = compute.name
        self._variable = variable.name

    @property
    def name(self):
        return self._name

    @property
    def compute_dtype(self):
        return self._compute

    @property
    def variable_dtype(self):
        return self._variable

    def __eq__(self, other):
        return isinstance(other, Policy) and other.name == self.name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return '<Policy "%s">' % self._name


def set_global_policy(policy):
    """The policy layers made from now on take (a name or a Policy; None:
    float32)."""
    _tessera.set_global_policy(Policy(policy or "float32").name)


def global_policy():
    return Policy(_tessera.global_policy())


class LossScaleOptimizer(_optimizers.Optimizer):
    """Wraps an optimizer with loss scaling. dynamic: the scale starts at
    initial_scale, halves (skipping the step) when a gradient overflows
    and doubles after dynamic_growth_steps finite steps, on the device.
    Otherwise initial_scale is a fixed factor."""

    def __init__(self, inner_optimizer, dynamic=True, initial_scale=None,
                 dynamic_growth_steps=None, name=None):
        self.inner_optimizer = _optimizers.get(inner_optimizer)
        self.dynamic = bool(dynamic)
        if initial_scale is None:
            if not self.dynamic:
                raise ValueError("LossScaleOptimizer: give initial_scale, "
                                 "the fixed factor, when dynamic=False")
            initial_scale = 2.0 ** 15
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = int(2000 if dynamic_growth_steps is None
                                        else dynamic_growth_steps)
        if self.dynamic_growth_steps < 1:
            raise ValueError("LossScaleOptimizer: dynamic_growth_steps must "
                             "be at least 1, got %d"
                             % self.dynamic_growth_steps)
        self.name = name or "loss_scale_optimizer"

    def _core(self):
        return self.inner_optimizer._core()

    def _loss_scale(self):
        return (self.dynamic, self.initial_scale, self.dynamic_growth_steps)

    def _bind(self, model):
        super()._bind(model)
        self.inner_optimizer._bind(model)

    def _advance(self, steps):
        self.inner_optimizer._advance(steps)

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self.inner_optimizer.learning_rate = value

    lr = learning_rate

    @property
    def iterations(self):
        return self.inner_optimizer.iterations

    @property
    def dynamic_scale(self):
        """The scale the next step trains with (the device's, once
        trained)."""
        model = self._model() if self._model is not None else None
        if model is None or model._core is None or not model._compiled_core:
            return self.initial_scale
        return model._core.loss_scale

    loss_scale = dynamic_scale
