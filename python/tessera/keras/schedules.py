"""tf.keras.optimizers.schedules: learning rates that change with the
training step, given as an optimizer's learning_rate.

The host evaluates the schedule and writes the rate to the device between
device runs, without recompiling: a run of steps_per_execution steps that
starts at step i trains all its steps with schedule(i). With
steps_per_execution=1 (the default) that is Keras' per-step schedule;
larger values hold the rate for the run. The step counts training steps
(batches) since the optimizer was created (optimizer.iterations)."""

import math

__all__ = ["LearningRateSchedule", "ExponentialDecay",
           "PiecewiseConstantDecay", "InverseTimeDecay", "PolynomialDecay"]


class LearningRateSchedule:
    """Subclass and define __call__(step) -> learning rate."""

    def __call__(self, step):
        raise NotImplementedError

    def get_config(self):
        return dict(self._config)


def _positive(value, what, schedule):
    value = float(value)
    if not value > 0:
        raise ValueError("%s: %s must be positive, got %r"
                         % (schedule, what, value))
    return value


class _TimeDecay(LearningRateSchedule):
    """A decay of initial_learning_rate by decay_rate as the steps pass
    in units of decay_steps (whole units when staircase)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate,
                 staircase=False, name=None):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = _positive(decay_steps, "decay_steps",
                                     type(self).__name__)
        self.decay_rate = float(decay_rate)
        self.staircase = bool(staircase)
        self._config = {"initial_learning_rate": self.initial_learning_rate,
                        "decay_steps": self.decay_steps,
                        "decay_rate": self.decay_rate,
                        "staircase": self.staircase, "name": name}

    def _units(self, step):
        p = float(step) / self.decay_steps
        return math.floor(p) if self.staircase else p


class ExponentialDecay(_TimeDecay):
    """initial_learning_rate * decay_rate ** (step / decay_steps), the
    exponent floored when staircase."""

    def __call__(self, step):
        return (self.initial_learning_rate
                * self.decay_rate ** self._units(step))


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] up to and including step boundaries[0], values[1] after
    it up to boundaries[1], ..., values[-1] after boundaries[-1]."""

    def __init__(self, boundaries, values, name=None):
        self.boundaries = [float(b) for b in boundaries]
        self.values = [float(v) for v in values]
        if len(self.values) != len(self.boundaries) + 1:
            raise ValueError(
                "PiecewiseConstantDecay: %d boundaries need %d values, got "
                "%d" % (len(self.boundaries), len(self.boundaries) + 1,
                        len(self.values)))
        if sorted(self.boundaries) != self.boundaries:
            raise ValueError("PiecewiseConstantDecay: boundaries must rise, "
                             "got %r" % (self.boundaries,))
        self._config = {"boundaries": self.boundaries,
                        "values": self.values, "name": name}

    def __call__(self, step):
        for boundary, value in zip(self.boundaries, self.values):
            if step <= boundary:
                return value
        return self.values[-1]


class InverseTimeDecay(_TimeDecay):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps), the
    quotient floored when staircase."""

    def __call__(self, step):
        return self.initial_learning_rate / (
            1 + self.decay_rate * self._units(step))


class PolynomialDecay(LearningRateSchedule):
    """From initial_learning_rate to end_learning_rate over decay_steps
    along (1 - step / decay_steps) ** power, then end_learning_rate (with
    cycle, decay_steps grows to the next multiple past step instead)."""

    def __init__(self, initial_learning_rate, decay_steps,
                 end_learning_rate=0.0001, power=1.0, cycle=False,
                 name=None):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = _positive(decay_steps, "decay_steps",
                                     "PolynomialDecay")
        self.end_learning_rate = float(end_learning_rate)
        self.power, self.cycle = float(power), bool(cycle)
        self._config = {"initial_learning_rate": self.initial_learning_rate,
                        "decay_steps": self.decay_steps,
                        "end_learning_rate": self.end_learning_rate,
                        "power": self.power, "cycle": self.cycle,
                        "name": name}

    def __call__(self, step):
        step, steps = float(step), self.decay_steps
        if self.cycle:
            steps *= max(1.0, math.ceil(step / steps))
        else:
            step = min(step, steps)
        frac = (1 - step / steps) ** self.power
        return ((self.initial_learning_rate - self.end_learning_rate) * frac
                + self.end_learning_rate)
