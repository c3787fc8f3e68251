"""tessera.keras.mixed_precision: Keras' policies and LossScaleOptimizer
over tessera::nn's half precision."""

import numpy as np
import pytest

from tessera import keras
from tessera.keras import layers, mixed_precision

from conftest import clusters


@pytest.fixture(autouse=True)
def float32_after():
    yield
    mixed_precision.set_global_policy("float32")


def mlp(**dense_kwargs):
    return keras.Sequential([
        layers.Dense(16, activation="relu", input_shape=(8,)),
        layers.Dense(2, activation="softmax", **dense_kwargs),
    ])


def test_policies_have_keras_dtypes():
    p = mixed_precision.Policy("mixed_float16")
    assert (p.compute_dtype, p.variable_dtype) == ("float16", "float32")
    assert mixed_precision.Policy("float16").variable_dtype == "float16"
    assert mixed_precision.global_policy().name == "float32"
    mixed_precision.set_global_policy("mixed_float16")
    assert mixed_precision.global_policy() == p
    d = layers.Dense(3)
    assert d.dtype_policy == p and d.compute_dtype == "float16"
    assert d.dtype == "float32"
    assert layers.Dense(3, dtype="float32").compute_dtype == "float32"


def test_model_layers_report_their_dtypes():
    mixed_precision.set_global_policy("mixed_float16")
    x = keras.Input((8,))
    h = layers.Dense(16, activation="relu")(x)
    m = keras.Model(x, layers.Dense(2, dtype="float32")(h))
    hidden, head = m.layers[-2], m.layers[-1]
    assert (hidden.compute_dtype, hidden.dtype) == ("float16", "float32")
    assert (head.compute_dtype, head.dtype) == ("float32", "float32")


def test_unknown_policy_suggests_the_name():
    with pytest.raises(ValueError, match='did you mean "mixed_float16"'):
        mixed_precision.set_global_policy("mixed_float61")
    assert mixed_precision.global_policy().name == "float32"


def test_mixed_float16_trains_with_dynamic_loss_scaling():
    x, y = clusters()
    mixed_precision.set_global_policy("mixed_float16")
    m = mlp(dtype="float32")  # Keras' advice: a float32 output layer
    opt = mixed_precision.LossScaleOptimizer(keras.optimizers.Adam(0.05),
                                             initial_scale=2.0 ** 40,
                                             dynamic_growth_steps=1000)
    m.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    assert opt.dynamic_scale == 2.0 ** 40
    h = m.fit(x, y, batch_size=16, epochs=3, verbose=0)
    # 2^40 overflows half gradients: steps were skipped and the scale fell
    # until they fit; training went on.
    assert 1 <= opt.dynamic_scale < 2.0 ** 40
    assert h.history["loss"][-1] < 0.5 * h.history["loss"][0]
    assert m.predict(x[:4]).dtype == np.float32


def test_static_loss_scale_and_errors():
    x, y = clusters()
    plain, scaled = mlp(), mlp()
    plain.compile(optimizer=keras.optimizers.SGD(0.1),
                  loss="sparse_categorical_crossentropy")
    opt = mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1),
                                             dynamic=False, initial_scale=256)
    scaled.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    for m in (plain, scaled):
        m.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    assert opt.loss_scale == 256
    for a, b in zip(plain.get_weights(), scaled.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="initial_scale"):
        mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(),
                                           dynamic=False)
    with pytest.raises(Exception, match="positive and finite, not 0"):
        mlp().compile(optimizer=mixed_precision.LossScaleOptimizer(
            keras.optimizers.SGD(), initial_scale=0),
            loss="sparse_categorical_crossentropy")
