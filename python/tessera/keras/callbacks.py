"""tf.keras.callbacks' names. fit() calls them between device runs (never
inside one): on_train_batch_end after each run of steps_per_execution steps,
with the epoch's running means. An exception a callback raises stops
training and reaches fit()'s caller unchanged."""

import csv
import math
import os

import numpy as np

__all__ = ["Callback", "History", "EarlyStopping", "ModelCheckpoint",
           "CSVLogger", "LambdaCallback", "LearningRateScheduler",
           "ReduceLROnPlateau", "CallbackList"]


class Callback:
    """Subclass and override the on_* methods you need."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_train_batch_begin(self, batch, logs=None):
        pass

    def on_train_batch_end(self, batch, logs=None):
        pass


class History(Callback):
    """Records each epoch's logs: history.history["loss"] is a list."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


def _mode_better(mode, monitor):
    if mode == "auto":
        mode = "max" if ("acc" in monitor and "loss" not in monitor) else "min"
    if mode not in ("min", "max"):
        raise ValueError("mode must be 'auto', 'min' or 'max', got %r" % mode)
    return mode


class EarlyStopping(Callback):
    """Stops training when `monitor` has not improved by `min_delta` for
    `patience` epochs; restore_best_weights puts the best epoch's back."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0,
                 mode="auto", baseline=None, restore_best_weights=False):
        super().__init__()
        self.monitor, self.patience = monitor, int(patience)
        self.min_delta = abs(float(min_delta))
        self.mode = _mode_better(mode, monitor)
        self.baseline, self.verbose = baseline, verbose
        self.restore_best_weights = restore_best_weights
        self.stopped_epoch = 0

    def _improved(self, value, best):
        if self.mode == "min":
            return value < best - self.min_delta
        return value > best + self.min_delta

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best_weights = 0, 0, None
        self.best = (self.baseline if self.baseline is not None else
                     (math.inf if self.mode == "min" else -math.inf))

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.monitor not in logs:
            raise KeyError("EarlyStopping monitors %r, which the logs do not "
                           "hold (they hold %s)"
                           % (self.monitor, ", ".join(logs)))
        value = logs[self.monitor]
        if self._improved(value, self.best):
            self.best, self.wait = value, 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)
            if self.verbose:
                print("Epoch %d: early stopping" % (epoch + 1))


class ModelCheckpoint(Callback):
    """Saves the weights after each epoch to `filepath`, which may name
    the epoch and logs ("ckpt-{epoch:02d}-{val_loss:.2f}"). Files are
    written atomically: an interrupted save leaves the previous one."""

    def __init__(self, filepath, monitor="val_loss", verbose=0,
                 save_best_only=False, save_weights_only=False, mode="auto",
                 save_freq="epoch", **unused):
        super().__init__()
        if save_freq != "epoch":
            raise ValueError("ModelCheckpoint: only save_freq='epoch' is "
                             "supported")
        self.filepath, self.monitor = os.fspath(filepath), monitor
        self.save_best_only, self.verbose = save_best_only, verbose
        self.mode = _mode_better(mode, monitor)
        self.best = math.inf if self.mode == "min" else -math.inf

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            value = logs.get(self.monitor)
            if value is None:
                raise KeyError("ModelCheckpoint monitors %r, which the logs "
                               "do not hold" % self.monitor)
            better = (value < self.best if self.mode == "min"
                      else value > self.best)
            if not better:
                return
            self.best = value
        self.model.save_weights(path)
        if self.verbose:
            print("Epoch %d: saving model to %s" % (epoch + 1, path))


def _optimizer_of(model, what):
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "learning_rate"):
        raise ValueError("%s: the model has no optimizer with a "
                         "learning_rate; compile it first" % what)
    return optimizer


class LearningRateScheduler(Callback):
    """Sets the learning rate at the start of each epoch to
    schedule(epoch, lr) (or schedule(epoch), Keras' older form), epochs
    counted from 0. The compiled model takes it without recompiling. Adds
    the rate to the epoch's logs as "lr"."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = _optimizer_of(self.model, "LearningRateScheduler")
        lr = float(optimizer.learning_rate)
        try:
            new = self.schedule(epoch, lr)
        except TypeError:  # schedule(epoch), Keras' older signature
            new = self.schedule(epoch)
        if not isinstance(new, (float, int, np.floating, np.integer)):
            raise ValueError("LearningRateScheduler: the schedule must "
                             "return a number, got %s for epoch %d"
                             % (type(new).__name__, epoch))
        optimizer.learning_rate = float(new)
        if self.verbose:
            print("\nEpoch %05d: LearningRateScheduler setting learning "
                  "rate to %s." % (epoch + 1, float(new)))

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = float(self.model.optimizer.learning_rate)


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by `factor` (not below `min_lr`) when
    `monitor` has not improved by more than `min_delta` for `patience`
    epochs, then waits `cooldown` epochs before counting again, as Keras
    does. The compiled model takes the new rate without recompiling. Adds
    the rate to the epoch's logs as "lr"."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10,
                 verbose=0, mode="auto", min_delta=1e-4, cooldown=0,
                 min_lr=0, **kwargs):
        super().__init__()
        if "epsilon" in kwargs:  # Keras' old name for min_delta
            min_delta = kwargs.pop("epsilon")
        if kwargs:
            raise TypeError("ReduceLROnPlateau: unknown arguments %s"
                            % sorted(kwargs))
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau: factor must be below 1 to "
                             "reduce the learning rate, got %r" % factor)
        self.monitor, self.factor = monitor, float(factor)
        self.patience, self.cooldown = int(patience), int(cooldown)
        self.min_delta, self.min_lr = float(min_delta), float(min_lr)
        self.verbose = verbose
        self.mode = _mode_better(mode, monitor)
        self._reset()

    def _reset(self):
        self.best = math.inf if self.mode == "min" else -math.inf
        self.wait = self.cooldown_counter = 0

    def _improved(self, value):
        if self.mode == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        optimizer = _optimizer_of(self.model, "ReduceLROnPlateau")
        logs["lr"] = float(optimizer.learning_rate)
        if self.monitor not in logs:
            raise KeyError("ReduceLROnPlateau monitors %r, which the logs "
                           "do not hold (they hold %s)"
                           % (self.monitor, ", ".join(logs)))
        value = logs[self.monitor]
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(value):
            self.best, self.wait = value, 0
            return
        if self.cooldown_counter > 0:
            return
        self.wait += 1
        if self.wait < self.patience:
            return
        old = float(optimizer.learning_rate)
        if old > np.float32(self.min_lr):
            new = max(old * self.factor, self.min_lr)
            optimizer.learning_rate = new
            if self.verbose:
                print("\nEpoch %05d: ReduceLROnPlateau reducing learning "
                      "rate to %s." % (epoch + 1, new))
            self.cooldown_counter, self.wait = self.cooldown, 0


class CSVLogger(Callback):
    """Writes one row per epoch: epoch and each log."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename, self.sep, self.append = filename, separator, append
        self._file = self._writer = None

    def on_train_begin(self, logs=None):
        exists = self.append and os.path.exists(self.filename)
        self._file = open(self.filename, "a" if self.append else "w",
                          newline="")
        self._header = exists
        self._writer = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._writer is None:
            self._writer = csv.writer(self._file, delimiter=self.sep)
            if not self._header:
                self._writer.writerow(["epoch"] + list(logs))
        self._writer.writerow([epoch] + [logs[k] for k in logs])
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file:
            self._file.close()
            self._file = None


class LambdaCallback(Callback):
    """A callback from functions: on_epoch_end=lambda epoch, logs: ..."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None,
                 on_train_begin=None, on_train_end=None,
                 on_train_batch_end=None, **unused):
        super().__init__()
        for name, fn in (("on_epoch_begin", on_epoch_begin),
                         ("on_epoch_end", on_epoch_end),
                         ("on_train_begin", on_train_begin),
                         ("on_train_end", on_train_end),
                         ("on_train_batch_end", on_train_batch_end)):
            if fn is not None:
                setattr(self, name, fn)


class CallbackList:
    """What the C++ fit loop calls (once per device run at most): forwards
    to each callback, renaming logs to the metric names the user gave."""

    def __init__(self, callbacks, model, rename, steps_per_execution):
        self.callbacks = list(callbacks)
        self.model, self.rename = model, rename
        self.spe = steps_per_execution
        for c in self.callbacks:
            c.set_model(model)

    def logs(self, logs):
        return {self.rename.get(k, k): float(v) for k, v in logs.items()}

    def on_train_begin(self):
        for c in self.callbacks:
            c.on_train_begin({})

    def on_train_end(self, logs):
        for c in self.callbacks:
            c.on_train_end(logs)

    def on_epoch_begin(self, epoch):
        self._step = 0
        for c in self.callbacks:
            c.on_epoch_begin(epoch, {})

    def on_run_end(self, step, logs):
        # A learning-rate schedule moves on before the callbacks see the
        # run, so the next run trains with the rate of its first step.
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            optimizer._advance(step - self._step)
        self._step = step
        logs = self.logs(logs)
        for c in self.callbacks:
            c.on_train_batch_end(step - 1, logs)

    def on_epoch_end(self, epoch, logs):
        logs = self.logs(logs)
        self.model.stop_training = False
        for c in self.callbacks:
            c.on_epoch_end(epoch, logs)
        return bool(self.model.stop_training)
