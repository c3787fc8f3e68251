"""Programs written as the seeds write them for TensorFlow 2 on the IPU,
with only their imports changed:
  import tensorflow as tf                 -> import tessera.tf as tf
  from tensorflow import keras            -> from tessera.tf import keras
  from tensorflow.keras.layers import *   -> from tessera.tf.keras.layers import *
  from tensorflow.python import ipu       -> from tessera import ipu
(Data sizes are cut down so the tests stay fast.)"""

import numpy as np


def test_workshop_keras_cnn_with_ipu_config_and_strategy(capfd):
    # The onboarding workshop's "Keras on IPU" program (CIFAR-10-shaped
    # data here: random images and labels).
    import tessera.tf as tf
    from tessera.tf.keras.layers import (Activation, Conv2D, Dense, Dropout,
                                         Flatten, MaxPooling2D)
    from tessera import ipu

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()
    with ipu.ipu_strategy.IPUStrategy().scope():
        rng = np.random.default_rng(0)
        x_train = rng.integers(0, 256, size=(128, 16, 16, 3), dtype=np.uint8)
        y_train = rng.integers(0, 10, size=(128, 1), dtype=np.uint8)
        x_train = x_train.astype('float32') / 255.0
        y_train = tf.keras.utils.to_categorical(y_train, 10)
        ds_train = tf.data.Dataset.from_tensor_slices(
            (x_train, y_train)).batch(64, drop_remainder=True)

        model = tf.keras.Sequential([
            Conv2D(8, (3, 3), padding='same', input_shape=x_train.shape[1:]),
            Activation('relu'),
            Conv2D(8, (3, 3)),
            Activation('relu'),
            MaxPooling2D(pool_size=(2, 2)),
            Dropout(0.25),
            Flatten(),
            Dense(32),
            Activation('relu'),
            Dropout(0.5),
            Dense(10),
            Activation('softmax')
        ])
        model.compile(loss='categorical_crossentropy',
                      optimizer=tf.optimizers.SGD(learning_rate=0.016),
                      metrics=['accuracy'])
        history = model.fit(ds_train, epochs=2)
    assert len(history.history["loss"]) == 2
    out = capfd.readouterr().out
    assert "Epoch 2/2" in out and "2/2 [==============================]" in out


def test_keras_on_ipu_functional_program_with_recompile_for_evaluate(capfd):
    # keras-on-ipu-ulhpc.md: functional model, tf.data pipeline with casts,
    # shuffle, map and prefetch, steps_per_execution, compile again to
    # evaluate with metrics.
    from tessera.tf import keras
    import tessera.tf as tf
    from tessera import ipu

    scope = tf.distribute.get_strategy().scope
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()

    BATCH_SIZE = 2
    IMG_SIZE = 8

    def get_model():
        input_layer = tf.keras.layers.Input(shape=(IMG_SIZE, IMG_SIZE, 3),
                                            batch_size=BATCH_SIZE)
        x = tf.keras.layers.Conv2D(4, 3, padding="same")(input_layer)
        x = tf.keras.layers.GlobalAveragePooling2D()(x)
        x = keras.layers.Flatten()(x)
        x = keras.layers.Dense(10, activation='softmax')(x)
        return keras.Model(inputs=input_layer, outputs=x)

    keras.backend.set_image_data_format("channels_last")
    rng = np.random.default_rng(1)
    trainImages = rng.integers(0, 256, (40, IMG_SIZE, IMG_SIZE, 3), np.uint8)
    trainLabels = rng.integers(0, 10, (40, 1), np.uint8)
    trainImages = trainImages.astype(np.float32) / 255.0
    trainLabels = trainLabels.astype(np.int32)

    train_dataset = tf.data.Dataset.from_tensor_slices(
        (tf.cast(trainImages, tf.float32), tf.cast(trainLabels, tf.float32)))
    xy_train_gen = (
        train_dataset.shuffle(len(trainImages))
        .batch(BATCH_SIZE, drop_remainder=True)
        .map(lambda image, label: (image, label))
        .prefetch(tf.data.AUTOTUNE))

    with scope():
        model = get_model()
        model.summary()
        if hasattr(tf.keras.optimizers, "legacy"):
            optimizer = tf.keras.optimizers.legacy.Adam(0.01)
        else:
            optimizer = tf.keras.optimizers.Adam(0.01)
        train_steps_per_exec = len(trainImages) // BATCH_SIZE
        model.compile(optimizer=optimizer,
                      loss="sparse_categorical_crossentropy",
                      steps_per_execution=train_steps_per_exec)
        model.fit(xy_train_gen, epochs=2, batch_size=BATCH_SIZE)
        model.compile(metrics=["accuracy"],
                      loss="sparse_categorical_crossentropy",
                      steps_per_execution=train_steps_per_exec)
        (loss, accuracy) = model.evaluate(xy_train_gen,
                                          batch_size=BATCH_SIZE)
    assert 0.0 <= accuracy <= 1.0 and loss > 0
    out = capfd.readouterr().out
    assert 'Model: "model"' in out and "input (InputLayer)" in out
    assert "20/20 [==============================]" in out


def test_tf2_tensor_inspection_style_program_with_a_callback():
    # tf2-pipelining-tensor-inspection.md's dataset and Sequential model
    # (no Input: built on first fit), Fashion-MNIST in place of MNIST, and
    # a Keras callback subclass.
    import tessera.tf as tf
    from tessera.tf import keras
    from tessera import ipu

    if tf.__version__[0] != '2':
        raise ImportError("TensorFlow 2 is required for this example")

    def create_dataset():
        fashion = keras.datasets.fashion_mnist
        (x_train, y_train), (x_test, y_test) = fashion.load_data()
        x_train, y_train = x_train[:2048], y_train[:2048]
        x_train, x_test = x_train / 255.0, x_test / 255.0
        x_train = x_train[..., tf.newaxis]
        train_ds = tf.data.Dataset \
            .from_tensor_slices((x_train, y_train)) \
            .shuffle(len(x_train)) \
            .batch(32, drop_remainder=True)
        train_ds = train_ds.map(
            lambda d, l: (tf.cast(d, tf.float32), tf.cast(l, tf.float32)))
        return train_ds.repeat()

    class LossHistory(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.losses = []

        def on_train_batch_end(self, batch, logs=None):
            self.losses.append(logs["loss"])

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()
    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        model = keras.Sequential([
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation='relu', name="Dense_128"),
            keras.layers.Dense(10, activation='softmax', name="Dense_10")
        ])
        model.set_gradient_accumulation_options(
            gradient_accumulation_steps_per_replica=1)
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05),
                      loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"], steps_per_execution=16)
        history = LossHistory()
        model.fit(create_dataset(), steps_per_epoch=64, epochs=3,
                  callbacks=[history], verbose=0)
    assert len(history.losses) == 3 * 4
    assert history.losses[-1] < history.losses[0]
    assert [l.name for l in model.layers][2:] == ["Dense_128", "Dense_10"]


def test_the_resnet_example_trains_and_evaluates():
    import os
    import subprocess
    import sys
    import tessera
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(tessera.__path__[0])
    out = subprocess.run(
        [sys.executable, os.path.join(root, "examples", "python",
                                      "keras_resnet.py")],
        env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "add_1 (Add)" in out.stdout and "Epoch 8/8" in out.stdout
    accuracy = float(out.stdout.strip().splitlines()[-1].split()[-1])
    assert accuracy > 0.5  # ten classes: chance is 0.1
