"""Callbacks: Python subclasses called between device runs; exceptions and
Ctrl-C stop training and reach the caller; checkpoints stay whole."""

import csv
import os
import signal
import threading
import traceback

import numpy as np
import pytest

from tessera import keras
from tessera.keras import callbacks, layers


def compiled_mlp(spe=4):
    m = keras.Sequential([layers.Dense(16, activation="relu",
                                       input_shape=(8,)),
                          layers.Dense(2, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(0.05),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"],
              steps_per_execution=spe)
    return m


class Recorder(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.events = []

    def on_train_begin(self, logs=None):
        self.events.append(("train_begin",))

    def on_epoch_begin(self, epoch, logs=None):
        self.events.append(("epoch_begin", epoch))

    def on_train_batch_end(self, batch, logs=None):
        self.events.append(("batch_end", batch, sorted(logs)))

    def on_epoch_end(self, epoch, logs=None):
        self.events.append(("epoch_end", epoch, sorted(logs)))

    def on_train_end(self, logs=None):
        self.events.append(("train_end",))


def test_a_subclass_sees_each_device_run_and_epoch(cluster_data):
    x, y = cluster_data
    r = Recorder()
    compiled_mlp(spe=8).fit(x, y, batch_size=16, epochs=2, callbacks=[r],
                            verbose=0)
    keys = ["accuracy", "loss"]
    assert r.events == [
        ("train_begin",),
        ("epoch_begin", 0), ("batch_end", 7, keys), ("batch_end", 15, keys),
        ("epoch_end", 0, keys),
        ("epoch_begin", 1), ("batch_end", 7, keys), ("batch_end", 15, keys),
        ("epoch_end", 1, keys),
        ("train_end",)]
    assert r.model is not None


def failing_callback_hook(epoch, logs):
    if epoch == 1:
        raise ValueError("callback failed at epoch %d" % epoch)


def test_a_raising_callback_stops_training_and_keeps_its_traceback(
        cluster_data):
    x, y = cluster_data
    m = compiled_mlp()
    seen = []
    cb = callbacks.LambdaCallback(
        on_epoch_begin=lambda e, logs: seen.append(e),
        on_epoch_end=failing_callback_hook)
    with pytest.raises(ValueError, match="callback failed at epoch 1") as e:
        m.fit(x, y, batch_size=16, epochs=5, callbacks=[cb], verbose=0)
    assert seen == [0, 1]  # no epoch after the failing one began
    tb = "".join(traceback.format_tb(e.value.__traceback__))
    assert "failing_callback_hook" in tb
    # The model (and its device) are free for more training.
    h = m.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert len(h.history["loss"]) == 1


def test_compile_from_a_callback_during_fit_is_an_error(cluster_data):
    x, y = cluster_data
    m = compiled_mlp()
    cb = callbacks.LambdaCallback(
        on_epoch_end=lambda e, logs: m.compile(optimizer="sgd", loss="mse"))
    with pytest.raises(RuntimeError, match="compile was called from a "
                                           "callback"):
        m.fit(x, y, batch_size=16, epochs=2, callbacks=[cb], verbose=0)
    # Neither compiled nor broken: it trains on with its first settings.
    assert isinstance(m.optimizer, keras.optimizers.Adam)
    h = m.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert len(h.history["loss"]) == 1


def test_ctrl_c_during_fit_raises_keyboard_interrupt(cluster_data, tmp_path):
    x, y = cluster_data
    m = compiled_mlp(spe=1)
    m.fit(x, y, batch_size=16, epochs=1, verbose=0)  # compile first
    path = str(tmp_path / "ckpt")
    epochs = []
    # A shell that starts the tests in the background ignores SIGINT for
    # them; Ctrl-C is what this test is about, so take Python's handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            m.fit(x, y, batch_size=16, epochs=100000, verbose=0, callbacks=[
                callbacks.ModelCheckpoint(path, save_best_only=False),
                callbacks.LambdaCallback(
                    on_epoch_end=lambda e, logs: epochs.append(e))])
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert 0 < len(epochs) < 100000
    # The checkpoint written before the interrupt is whole, and the model
    # trains on afterwards.
    fresh = compiled_mlp()
    fresh.load_weights(path)
    m.fit(x, y, batch_size=16, epochs=1, verbose=0)


def test_early_stopping_stops_and_restores(cluster_data):
    x, y = cluster_data
    m = compiled_mlp()
    stop = callbacks.EarlyStopping(monitor="loss", min_delta=100.0,
                                   patience=2, restore_best_weights=True)
    h = m.fit(x, y, batch_size=16, epochs=20, callbacks=[stop], verbose=0)
    assert len(h.history["loss"]) == 3
    assert stop.stopped_epoch == 2
    with pytest.raises(KeyError, match="val_loss"):
        m.fit(x, y, batch_size=16, epochs=1, verbose=0,
              callbacks=[callbacks.EarlyStopping()])


def test_model_checkpoint_and_csv_logger_write_files(cluster_data, tmp_path):
    x, y = cluster_data
    m = compiled_mlp()
    pattern = str(tmp_path / "w-{epoch:02d}-{loss:.2f}")
    log = str(tmp_path / "log.csv")
    m.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[
        callbacks.ModelCheckpoint(pattern, monitor="loss"),
        callbacks.CSVLogger(log)])
    names = sorted(os.listdir(tmp_path))
    assert [n[:5] for n in names if n.startswith("w-")] == ["w-01-", "w-02-"]
    with open(log) as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["epoch", "loss", "accuracy"]
    assert [r[0] for r in rows[1:]] == ["0", "1"]
    restored = compiled_mlp()
    restored.load_weights(str(tmp_path / [n for n in names
                                          if n.startswith("w-02")][0]))
    np.testing.assert_array_equal(restored.predict(x), m.predict(x))
