"""Functional Keras models of several inputs and outputs, written as for
TensorFlow 2 on the IPU with only the imports changed (import tessera.tf as
tf; from tessera import ipu): lists and dicts of arrays, per-output losses
and loss_weights, nested tf.data elements, predict returning a list."""

import numpy as np
import pytest


def _data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n)
    image = (rng.normal(size=(n, 4)) * 0.3 +
             np.where(labels[:, None] == 1, 1.0, -1.0)).astype("float32")
    extra = rng.normal(size=(n, 3)).astype("float32")
    target = extra.sum(axis=1, keepdims=True).astype("float32")
    return image, extra, labels.astype("int32"), target


def _model(tf):
    image = tf.keras.Input(shape=(4,), name="image")
    extra = tf.keras.Input(shape=(3,), name="extra")
    x = tf.keras.layers.Concatenate()([image, extra])
    x = tf.keras.layers.Dense(16, activation="relu")(x)
    cls = tf.keras.layers.Dense(2, activation="softmax", name="cls")(x)
    reg = tf.keras.layers.Dense(1, name="reg")(x)
    return tf.keras.Model(inputs=[image, extra], outputs=[cls, reg])


def _ipu_scope():
    from tessera import ipu
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()
    return ipu.ipu_strategy.IPUStrategy().scope()


def test_two_inputs_two_outputs_with_lists():
    import tessera.tf as tf

    image, extra, labels, target = _data()
    with _ipu_scope():
        model = _model(tf)
        assert model.input_shape == [(None, 4), (None, 3)]
        assert model.output_shape == [(None, 2), (None, 1)]
        assert model.output_names == ["cls", "reg"]
        model.compile(optimizer=tf.keras.optimizers.Adam(0.03),
                      loss=["sparse_categorical_crossentropy", "mse"],
                      metrics=["accuracy"], steps_per_execution=4)
        history = model.fit([image, extra], [labels, target], batch_size=8,
                            epochs=6, verbose=0)
        h = history.history
        assert list(h) == ["loss", "cls_loss", "reg_loss", "cls_accuracy"]
        assert h["reg_loss"][-1] < 0.5 * h["reg_loss"][0]
        assert h["cls_accuracy"][-1] > 0.9
        np.testing.assert_allclose(
            h["loss"][-1], h["cls_loss"][-1] + h["reg_loss"][-1], rtol=1e-4)

        results = model.evaluate([image, extra], [labels, target],
                                 batch_size=8, verbose=0)
        assert len(results) == 4
        probs, predicted = model.predict([image, extra], batch_size=16)
        assert probs.shape == (64, 2) and predicted.shape == (64, 1)
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
        mse = float(np.mean((predicted - target) ** 2))
        assert mse == pytest.approx(results[2], rel=1e-3)


def test_dicts_by_name_with_loss_weights_and_sparse_accuracy_name():
    import tessera.tf as tf

    image, extra, labels, target = _data()
    with _ipu_scope():
        model = _model(tf)
        model.compile(
            optimizer="adam",
            loss={"cls": tf.keras.losses.SparseCategoricalCrossentropy(),
                  "reg": "mse"},
            loss_weights={"cls": 0.5, "reg": 2.0},
            metrics=["sparse_categorical_accuracy"])
        model.fit({"image": image, "extra": extra},
                  {"cls": labels, "reg": target}, batch_size=8, epochs=1,
                  verbose=0)
        logs = model.evaluate({"image": image, "extra": extra},
                              {"cls": labels, "reg": target}, batch_size=8,
                              verbose=0, return_dict=True)
        assert list(logs) == ["loss", "cls_loss", "reg_loss",
                              "cls_sparse_categorical_accuracy"]
        assert logs["loss"] == pytest.approx(
            0.5 * logs["cls_loss"] + 2.0 * logs["reg_loss"], rel=1e-4)


def test_nested_dataset_elements_and_validation_data():
    import tessera.tf as tf

    image, extra, labels, target = _data()
    ds = tf.data.Dataset.from_tensor_slices(((image, extra), (labels, target)))
    first = next(iter(ds))
    assert len(first) == 2 and len(first[0]) == 2 and first[0][1].shape == (3,)
    ds = ds.map(lambda x, y: ((x[0] * 1.0, x[1]), y))
    ds = ds.shuffle(64).batch(8, drop_remainder=True)
    with _ipu_scope():
        model = _model(tf)
        model.compile(loss=["sparse_categorical_crossentropy", "mse"],
                      metrics=["accuracy"])
        history = model.fit(ds, epochs=2, verbose=0,
                            validation_data=([image, extra],
                                             [labels, target]))
        assert "val_cls_accuracy" in history.history
        assert "val_reg_loss" in history.history
        out = model.predict(ds)
        assert [o.shape for o in out] == [(64, 2), (64, 1)]


def test_one_input_two_outputs_and_validation_split():
    import tessera.tf as tf

    image, _, labels, _ = _data()
    with _ipu_scope():
        inp = tf.keras.Input(shape=(4,))
        h = tf.keras.layers.Dense(8, activation="relu")(inp)
        a = tf.keras.layers.Dense(2, activation="softmax", name="a")(h)
        b = tf.keras.layers.Dense(2, activation="softmax", name="b")(h)
        model = tf.keras.Model(inp, [a, b])
        model.compile(loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"])
        history = model.fit(image, [labels, labels], batch_size=8, epochs=1,
                            validation_split=0.25, verbose=0)
        assert set(history.history) >= {"a_accuracy", "b_accuracy",
                                         "val_a_loss", "val_b_accuracy"}


def test_bad_multi_io_arguments_say_what_is_wrong():
    import tessera.tf as tf

    image, extra, labels, target = _data()
    with _ipu_scope():
        model = _model(tf)
        with pytest.raises(ValueError, match="3 entries for the 2 outputs"):
            model.compile(loss=["mse", "mse", "mse"])
        model.compile(loss=["sparse_categorical_crossentropy", "mse"])
        with pytest.raises(ValueError, match="takes 2 arrays as x"):
            model.fit(image, [labels, target], verbose=0)
        with pytest.raises(ValueError, match=r"no arrays for \['extra'\]"):
            model.fit({"image": image}, [labels, target], verbose=0)
        # The wrong shape for the second input names its Input layer.
        with pytest.raises(ValueError, match=r'Input "extra" takes \(None, 3\)'):
            model.fit([image, extra[:, :2]], [labels, target], verbose=0)
        with pytest.raises(ValueError, match="not outputs of model"):
            model.compile(loss={"cls": "mse", "nope": "mse"})
