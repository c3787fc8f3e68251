"""tf.keras.applications.ResNet50 as keras-on-ipu-ulhpc.md's users call it,
and ZeroPadding2D, the layer it needs. ResNet50 is checked by its
structure (Keras' parameter count, layer names and output shapes) without
compiling it: compiling 177 layers for the IPU Model takes about a minute
on the test machine, too long for a unit test."""

import numpy as np
import pytest


def test_resnet50_has_keras_parameters_names_and_shapes():
    import tessera.tf as tf

    model = tf.keras.applications.ResNet50(weights=None,
                                           input_shape=(32, 32, 3),
                                           classes=10)
    # Keras' figure for ResNet50(weights=None, classes=10).
    assert model.count_params() == 23608202
    assert model.input_shape == (None, 32, 32, 3)
    assert model.output_shape == (None, 10)
    names = [l.name for l in model.layers]
    assert len(names) == 177  # as in Keras: the Input and 176 layers
    for name in ("conv1_pad", "conv1_conv", "pool1_pool", "conv2_block1_0_bn",
                 "conv4_block6_out", "conv5_block3_add", "avg_pool",
                 "predictions"):
        assert name in names
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "conv1_pad (ZeroPadding2D)    (None, 38, 38, 3)" in text
    assert "pool1_pool (MaxPooling2D)    (None, 8, 8, 64)" in text
    assert "conv5_block3_out (Activation (None, 1, 1, 2048)" in text
    assert "Non-trainable params: 53,120" in text
    headless = tf.keras.applications.resnet.ResNet50(
        include_top=False, weights=None, input_shape=(64, 64, 3),
        pooling="avg")
    assert headless.output_shape == (None, 2048)


def test_resnet50_refuses_downloads_and_small_images():
    import tessera.tf as tf

    with pytest.raises(ValueError, match="downloads nothing"):
        tf.keras.applications.ResNet50(weights="imagenet")
    with pytest.raises(ValueError, match="at least 32"):
        tf.keras.applications.ResNet50(weights=None, input_shape=(16, 16, 3))


def test_zero_padding_puts_zeros_around_images_and_trains():
    from tessera import keras

    inp = keras.Input(shape=(2, 3, 1))
    out = keras.layers.ZeroPadding2D(((1, 0), (2, 1)))(inp)
    model = keras.Model(inp, keras.layers.Flatten()(out))
    assert model.output_shape == (None, 3 * 6)
    x = np.arange(1, 13, dtype=np.float32).reshape(2, 2, 3, 1)
    y = model.predict(x, batch_size=2).reshape(2, 3, 6)
    expected = np.zeros((2, 3, 6), np.float32)
    expected[:, 1:, 2:5] = x[..., 0]
    np.testing.assert_array_equal(y, expected)

    # Its gradient reaches the convolution before it.
    rng = np.random.default_rng(0)
    images = rng.normal(size=(32, 6, 6, 1)).astype(np.float32)
    labels = (images.mean(axis=(1, 2, 3)) > 0).astype(np.int32)
    m = keras.Sequential([
        keras.layers.Conv2D(4, 3, activation="relu", input_shape=(6, 6, 1)),
        keras.layers.ZeroPadding2D(1),
        keras.layers.Conv2D(4, 3),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(2, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(0.05),
              loss="sparse_categorical_crossentropy")
    before = m.get_weights()[0].copy()
    h = m.fit(images, labels, batch_size=8, epochs=3, verbose=0)
    assert not np.array_equal(before, m.get_weights()[0])
    assert h.history["loss"][-1] < h.history["loss"][0]
