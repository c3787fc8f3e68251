"""tessera.keras: models built, trained and inspected from Python."""

import numpy as np
import pytest

import tessera
from tessera import keras
from tessera.keras import layers

from conftest import clusters


def mlp(name=None):
    return keras.Sequential([
        layers.Dense(16, activation="relu", input_shape=(8,)),
        layers.Dense(2, activation="softmax"),
    ], name=name)


def compiled_mlp(spe=4, **kwargs):
    m = mlp()
    m.compile(optimizer=keras.optimizers.Adam(0.05),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"],
              steps_per_execution=spe, **kwargs)
    return m


def test_fit_on_arrays_learns_and_prints_keras_lines(cluster_data, capfd):
    x, y = cluster_data
    m = compiled_mlp()
    h = m.fit(x, y, batch_size=16, epochs=3)
    assert h.epoch == [0, 1, 2]
    assert set(h.history) == {"loss", "accuracy"}
    assert h.history["loss"][2] < 0.5 * h.history["loss"][0]
    assert h.history["accuracy"][2] > 0.9
    out = capfd.readouterr().out
    assert "Epoch 1/3" in out and "Epoch 3/3" in out
    assert "16/16 [==============================]" in out
    assert "- loss: " in out and "- accuracy: " in out


def test_evaluate_and_predict_agree(cluster_data):
    x, y = cluster_data
    m = compiled_mlp()
    m.fit(x, y, batch_size=16, epochs=2, verbose=0)
    loss, acc = m.evaluate(x, y, batch_size=16, verbose=0)
    p = m.predict(x, batch_size=16)
    assert p.shape == (256, 2) and p.dtype == np.float32
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    assert acc == pytest.approx(np.mean(p.argmax(axis=1) == y), abs=1e-6)
    expected = -np.mean(np.log(np.maximum(p[np.arange(256), y], 1e-7)))
    assert loss == pytest.approx(expected, rel=1e-3, abs=1e-6)


def test_predict_hands_over_the_result_without_a_copy(cluster_data):
    x, _ = cluster_data
    m = compiled_mlp()
    p = m.predict(x[:10])
    assert p.shape == (10, 2)
    assert not p.flags["OWNDATA"]  # a view of Tessera's tensor
    assert p.base is not None and "capsule" in type(p.base).__name__.lower()


def test_non_contiguous_and_float64_inputs_train_as_contiguous_ones():
    x, y = clusters()
    wide = np.zeros((256, 16), dtype=np.float64)
    wide[:, ::2] = x
    strided = wide[:, ::2]
    assert not strided.flags["C_CONTIGUOUS"]

    def weights_after(xs):
        m = compiled_mlp()
        m.fit(xs, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        return m.get_weights()
    for a, b in zip(weights_after(x), weights_after(strided)):
        np.testing.assert_array_equal(a, b)


def test_wrong_input_shape_names_the_layer_and_expected_shape(cluster_data):
    x, y = cluster_data
    m = compiled_mlp()
    with pytest.raises(ValueError) as e:
        m.fit(x.reshape(128, 16), y[:128], batch_size=16, verbose=0)
    assert 'Input "input"' in str(e.value)
    assert "(None, 8)" in str(e.value)
    with pytest.raises(ValueError, match=r'Input "input" takes \(None, 8\)'):
        m.predict(np.zeros((4, 9), np.float32))


def test_wrong_dtype_names_the_layer_and_expected_shape(cluster_data):
    _, y = cluster_data
    m = compiled_mlp()
    strings = np.array([["a"] * 8] * 256)
    with pytest.raises(TypeError) as e:
        m.fit(strings, y, verbose=0)
    msg = str(e.value)
    assert 'Input layer "input"' in msg and "(None, 8)" in msg
    assert "not a number type" in msg


def test_fit_before_compile_and_bad_options_are_errors(cluster_data):
    x, y = cluster_data
    with pytest.raises(RuntimeError, match="not compiled"):
        mlp().fit(x, y)
    with pytest.raises(ValueError, match="unknown loss"):
        mlp().compile(loss="hinge")
    with pytest.raises(ValueError, match="unknown metric"):
        mlp().compile(loss="mse", metrics=["auc"])
    m = compiled_mlp(spe=5)  # 16 steps an epoch
    with pytest.raises(tessera.OptionError, match="stepsPerExecution"):
        m.fit(x, y, batch_size=16, verbose=0)


def test_sequential_without_input_shape_is_built_by_fit(cluster_data):
    x, y = cluster_data
    m = keras.Sequential([layers.Dense(4, activation="relu"),
                          layers.Dense(2)])
    with pytest.raises(ValueError, match="not been built"):
        m.summary()
    m.compile(loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), metrics=["sparse_categorical_accuracy"])
    h = m.fit(x, y, verbose=0)
    assert "sparse_categorical_accuracy" in h.history
    assert m.input_shape == (None, 8) and m.output_shape == (None, 2)


def test_validation_data_adds_val_logs(cluster_data, capfd):
    x, y = cluster_data
    m = compiled_mlp()
    h = m.fit(x, y, batch_size=16, epochs=2, validation_data=(x[:64], y[:64]),
              verbose=2)
    assert set(h.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    loss, acc = m.evaluate(x[:64], y[:64], batch_size=16, verbose=0)
    assert h.history["val_loss"][-1] == pytest.approx(loss, rel=1e-5)
    assert "- val_loss: " in capfd.readouterr().out


def test_weights_round_trip_through_arrays_and_files(cluster_data, tmp_path):
    x, y = cluster_data
    a = compiled_mlp()
    a.fit(x, y, batch_size=16, epochs=1, verbose=0)
    w = a.get_weights()
    assert [v.shape for v in w] == [(8, 16), (16,), (16, 2), (2,)]
    b = compiled_mlp()
    b.set_weights(w)
    np.testing.assert_array_equal(a.predict(x), b.predict(x))
    path = str(tmp_path / "weights.ckpt")
    a.save_weights(path)
    c = compiled_mlp()
    c.load_weights(path)
    np.testing.assert_array_equal(a.predict(x), c.predict(x))
    with pytest.raises(ValueError, match="has 4 weights but 1"):
        c.set_weights(w[:1])


def test_functional_model_with_add_and_concatenate(cluster_data):
    x, y = cluster_data
    inp = keras.Input(shape=(8,))
    h = layers.Dense(8, activation="relu")(inp)
    r = layers.Add()([h, layers.Dense(8)(inp)])
    c = layers.Concatenate()([r, layers.LayerNormalization()(h)])
    out = layers.Dense(2, activation="softmax")(layers.ReLU()(c))
    m = keras.Model(inputs=inp, outputs=out, name="branchy")
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
    lines = []
    m.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert 'Model: "branchy"' in text
    assert "re_lu (ReLU)" in text and "add (Add)" in text
    assert "concatenate (Concatenate)" in text
    h = m.fit(x, y, batch_size=16, epochs=6, verbose=0)
    assert h.history["accuracy"][-1] > 0.9


def test_cnn_layers_summary_matches_keras():
    m = keras.Sequential([
        layers.Conv2D(4, 3, padding="same", input_shape=(8, 8, 1)),
        layers.BatchNormalization(),
        layers.Activation("relu"),
        layers.MaxPooling2D(),
        layers.AveragePooling2D(pool_size=(2, 2)),
        layers.Dropout(0.25),
        layers.GlobalAveragePooling2D(),
        layers.Dense(3),
        layers.Softmax(),
    ])
    lines = []
    m.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "conv2d (Conv2D)" in text and "(None, 8, 8, 4)" in text
    assert "(None, 2, 2, 4)" in text and "softmax (Softmax)" in text
    # conv 4*9+4, batch norm 4*4 (8 trainable), dense 4*3+3
    assert m.count_params() == 40 + 16 + 15
    assert "Non-trainable params: 8" in text


def test_embedding_model_takes_int_tokens():
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 10, size=(128, 4)).astype(np.int64)
    labels = (tokens[:, 0] >= 5).astype(np.int32)
    m = keras.Sequential([layers.Embedding(10, 4, input_length=4),
                          layers.Flatten(), layers.Dense(2)])
    m.compile(optimizer=keras.optimizers.SGD(0.5, momentum=0.9,
                                             nesterov=True),
              loss=keras.losses.SparseCategoricalCrossentropy(
                  from_logits=True), metrics=["accuracy"])
    h = m.fit(tokens, labels, batch_size=16, epochs=6, verbose=0)
    assert h.history["accuracy"][-1] > 0.9


def test_adamw_and_categorical_targets(cluster_data):
    x, y = cluster_data
    m = mlp()
    m.compile(optimizer=keras.optimizers.AdamW(0.05, weight_decay=0.01),
              loss="categorical_crossentropy",
              metrics=[keras.metrics.CategoricalAccuracy()])
    h = m.fit(x, keras.utils.to_categorical(y, 2), batch_size=16, epochs=3,
              verbose=0)
    assert h.history["categorical_accuracy"][-1] > 0.9


def test_fit_on_a_dataset_casts_labels(cluster_data):
    x, y = cluster_data
    ds = tessera.data.Dataset.from_tensor_slices(
        (x.astype(np.float64), y.astype(np.float32))).batch(
            32, drop_remainder=True)
    m = compiled_mlp()
    h = m.fit(ds, epochs=2, verbose=0)
    assert h.history["accuracy"][-1] > 0.9
    assert len(m.evaluate(ds, verbose=0)) == 2


def test_fit_releases_the_gil(cluster_data):
    import threading
    x, y = cluster_data
    m = compiled_mlp(spe=16)
    m.fit(x, y, batch_size=16, epochs=1, verbose=0)  # compile first
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(1)
    t = threading.Thread(target=count)
    t.start()
    try:
        m.fit(x, y, batch_size=16, epochs=20, verbose=0)
    finally:
        done.set()
        t.join()
    assert len(ticks) > 1000


def test_rmsprop_step_matches_its_formula():
    # One linear unit, mean squared error over the whole batch: the gradient
    # is 2/N x^T (x w - y), so one centered RMSprop step is known exactly.
    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    y = rng.normal(size=(8, 1)).astype(np.float32)
    m = keras.Sequential([layers.Dense(1, use_bias=False, input_shape=(3,))])
    opt = keras.optimizers.RMSprop(0.01, rho=0.8, centered=True)
    m.compile(optimizer=opt, loss="mse")
    w = m.get_weights()[0].astype(np.float64)
    m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    g = 2.0 / 8 * x.T.astype(np.float64) @ (x @ w - y)
    v, a = 0.2 * g * g, 0.2 * g
    expected = w - 0.01 * g / (np.sqrt(v - a * a) + 1e-7)
    np.testing.assert_allclose(m.get_weights()[0], expected, rtol=1e-4)


def test_rmsprop_by_name_trains(cluster_data):
    x, y = cluster_data
    m = mlp()
    m.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
    h = m.fit(x, y, batch_size=16, epochs=3, verbose=0)
    assert h.history["loss"][-1] < 0.8 * h.history["loss"][0]
    with pytest.raises(ValueError, match="'rmsprop'"):
        m.compile(optimizer="adagrad", loss="mse")
