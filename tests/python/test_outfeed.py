"""ipu.ipu_outfeed_queue.IPUOutfeedQueue with the tensor-inspection seed's
outfeed layer: fit() enqueues a layer's input on every training step;
dequeue() returns it stacked (ALL) or the latest step's (LAST)."""

import numpy as np
import pytest

from tessera import ipu, keras
from tessera.keras import layers

from conftest import clusters


def test_seed_style_sequential_outfeeds_every_steps_activations():
    # As tf2-pipelining-tensor-inspection's create_sequential_model, with
    # its outfeed_layers.Outfeed given by ipu.keras.layers.Outfeed.
    x, y = clusters(256)
    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        acts = ipu.ipu_outfeed_queue.IPUOutfeedQueue()
        model = keras.Sequential([
            layers.Dense(8, activation="relu", name="Dense_8",
                         input_shape=(8,)),
            ipu.keras.layers.Outfeed(acts, name="Dense_8_acts"),
            layers.Dense(2, activation="softmax", name="Dense_2")])
        model.compile(loss=keras.losses.SparseCategoricalCrossentropy(),
                      optimizer=keras.optimizers.SGD(), steps_per_execution=4)
        before = model.get_weights()
        model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    assert acts.outfeed_mode is ipu.ipu_outfeed_queue.IPUOutfeedMode.ALL
    assert len(acts) == 2 * 256 // 16
    got = acts.dequeue()
    assert list(got) == ["Dense_8_acts"]
    values = got["Dense_8_acts"]
    assert values.shape == (32, 16, 8) and values.dtype == np.float32
    # The first step's values are the first batch through the first weights.
    kernel, bias = before[0], before[1]
    np.testing.assert_allclose(values[0],
                               np.maximum(x[:16] @ kernel + bias, 0),
                               rtol=1e-4, atol=1e-5)
    assert acts.dequeue() == {}
    # The Outfeed layer is the identity: the summary lists it, no weights.
    assert "Dense_8_acts" in [l.name for l in model.layers]
    assert len(model.get_weights()) == 4


def test_last_mode_and_enqueue_in_a_functional_model():
    x, y = clusters(128)
    queue = ipu.ipu_outfeed_queue.IPUOutfeedQueue(
        outfeed_mode=ipu.ipu_outfeed_queue.IPUOutfeedMode.LAST)
    inputs = keras.Input(shape=(8,))
    h = layers.Dense(4, activation="relu")(inputs)
    h = queue.enqueue(h)
    model = keras.Model(inputs, layers.Dense(2, activation="softmax")(h))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  steps_per_execution=2)
    model.predict(x)
    assert len(queue) == 0          # inference does not enqueue
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert len(queue) == 1
    last = queue.dequeue()          # enqueue(tensor): the array itself
    assert isinstance(last, np.ndarray) and last.shape == (16, 4)
    assert (last >= 0).all()
    assert queue.dequeue() is None


def test_a_callback_dequeues_each_epoch():
    # The seed's OutfeedCallback: dequeue at the end of every epoch.
    x, y = clusters(128)
    queue = ipu.ipu_outfeed_queue.IPUOutfeedQueue()
    shapes = []

    class OutfeedCallback(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            data = queue.dequeue()
            shapes.append({k: v.shape for k, v in data.items()})

    inputs = keras.Input(shape=(8,))
    h = queue.enqueue({"inputs": inputs})
    h = layers.Dense(4, activation="relu", name="hidden")(h)
    h = ipu.keras.layers.Outfeed(queue, name="hidden_acts")(h)
    model = keras.Model(inputs, layers.Dense(2, activation="softmax")(h))
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                  steps_per_execution=8)
    model.fit(x, y, batch_size=16, epochs=3, verbose=0,
              callbacks=[OutfeedCallback()])
    assert shapes == [{"inputs": (8, 16, 8), "hidden_acts": (8, 16, 4)}] * 3


def test_bad_queue_arguments_are_errors():
    with pytest.raises(TypeError, match="IPUOutfeedQueue"):
        ipu.keras.layers.Outfeed("not a queue")
    with pytest.raises(ValueError, match="IPUOutfeedMode.ALL"):
        ipu.ipu_outfeed_queue.IPUOutfeedQueue(outfeed_mode="all")
    queue = ipu.ipu_outfeed_queue.IPUOutfeedQueue()
    with pytest.raises(TypeError, match="output of a layer"):
        queue.enqueue(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="one tensor per call"):
        t = keras.Input(shape=(2,))
        queue.enqueue({"a": t, "b": t})
