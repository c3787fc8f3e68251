"""fit()'s validation_split and initial_epoch, and TF_POPLAR_FLAGS'
--use_synthetic_data / --synthetic_data_initializer as a seed sets them."""

import math

import numpy as np
import pytest

import tessera
from tessera import ipu, keras
from tessera.keras import layers

from conftest import clusters


def compiled_mlp(spe=1):
    m = keras.Sequential([layers.Dense(16, activation="relu",
                                       input_shape=(8,)),
                          layers.Dense(2, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(0.01),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"],
              steps_per_execution=spe)
    return m


def test_validation_split_holds_out_the_last_examples(capfd):
    x, y = clusters(320)
    m = compiled_mlp()
    h = m.fit(x, y, batch_size=16, epochs=1, validation_split=0.2,
              shuffle=False, verbose=2)
    assert set(h.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    # The last 64 of 320 examples, before any shuffling, as Keras takes them.
    loss, _ = m.evaluate(x[256:], y[256:], batch_size=16, verbose=0)
    assert h.history["val_loss"][-1] == pytest.approx(loss, rel=1e-5)
    assert "- val_loss: " in capfd.readouterr().out
    # 256 examples trained: 16 steps, as a model fit on x[:256] takes.
    stats = m._core.last_fit_stats()
    assert stats["steps"] == 16
    # The estimate per step by kind, and the tile memory, reach Python.
    cycles = stats["estimated_cycles_per_step"]
    assert cycles["compute"] > 0 and cycles["exchange"] > 0
    ipu_cycles = stats["ipu_seconds_per_step"] * 1.33e9
    assert sum(cycles.values()) == pytest.approx(ipu_cycles, rel=1e-3)
    # The host side of the runs comes on top of the device time.
    host = stats["estimated_host_cycles_per_step"]
    assert host["runs"] > 0 and host["stream_setups"] > 0
    with_host = stats["host_inclusive_seconds_per_step"] * 1.33e9
    assert with_host == pytest.approx(ipu_cycles + sum(host.values()),
                                      rel=1e-3)
    assert 0 < stats["memory"]["max_tile_bytes"] <= \
        stats["memory"]["bytes_per_tile"]


def test_validation_data_wins_over_validation_split():
    x, y = clusters(320)
    m = compiled_mlp()
    h = m.fit(x, y, batch_size=16, validation_split=0.5,
              validation_data=(x[:32], y[:32]), verbose=0)
    loss, _ = m.evaluate(x[:32], y[:32], batch_size=16, verbose=0)
    assert h.history["val_loss"][-1] == pytest.approx(loss, rel=1e-5)
    assert m._core.last_fit_stats()["steps"] == 10


def test_bad_validation_splits_are_errors():
    x, y = clusters(64)
    m = compiled_mlp()
    with pytest.raises(ValueError, match="between 0 and 1"):
        m.fit(x, y, validation_split=1.5, verbose=0)
    with pytest.raises(ValueError, match="leaves training empty"):
        m.fit(x, y, validation_split=0.999, verbose=0)
    with pytest.raises(ValueError, match="fewer than one batch"):
        m.fit(x, y, batch_size=32, validation_split=0.1, verbose=0)
    ds = tessera.data.Dataset.from_tensor_slices((x, y)).batch(16)
    with pytest.raises(ValueError, match="validation_data"):
        m.fit(ds, validation_split=0.2, verbose=0)


def test_initial_epoch_resumes_with_keras_numbering(capfd):
    x, y = clusters(128)
    m = compiled_mlp()
    seen = []

    class Record(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append(epoch)

    h = m.fit(x, y, batch_size=16, epochs=5, initial_epoch=3, verbose=1,
              callbacks=[Record()])
    assert seen == [3, 4] and h.epoch == [3, 4]
    assert len(h.history["loss"]) == 2
    out = capfd.readouterr().out
    assert "Epoch 4/5" in out and "Epoch 5/5" in out and "Epoch 1/5" not in out
    with pytest.raises(ValueError, match="initial_epoch"):
        m.fit(x, y, epochs=2, initial_epoch=2, verbose=0)


@pytest.mark.parametrize("flags", [
    "--use_synthetic_data --synthetic_data_initializer=random",
    "--use_synthetic_data --synthetic_data_initializer=uniform",
    "--use_synthetic_data --synthetic_data_initializer=2.5",
    "--use_synthetic_data"])
def test_synthetic_data_trains_without_host_io(small_ipu, monkeypatch, flags):
    # The workshop's TF_POPLAR_FLAGS line: the device trains on data it
    # makes itself, so the losses do not come back (nan), but the weights
    # move and evaluate() still reads its data.
    monkeypatch.setenv("TF_POPLAR_FLAGS", flags)
    small_ipu.configure_ipu_system()
    x, y = clusters(128)
    m = compiled_mlp(spe=4)
    before = m.get_weights()
    h = m.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert math.isnan(h.history["loss"][0])
    after = m.get_weights()
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))
    loss, acc = m.evaluate(x, y, batch_size=16, verbose=0)
    assert not math.isnan(loss)


def test_synthetic_data_initializer_must_be_known(small_ipu, monkeypatch):
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data "
                       "--synthetic_data_initializer=gaussian")
    small_ipu.configure_ipu_system()
    with pytest.raises(tessera.OptionError,
                       match="random, uniform, normal or a number"):
        compiled_mlp()
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--synthetic_data_initializer")
    with pytest.raises(ValueError, match="needs a value"):
        small_ipu.configure_ipu_system()
