"""The workshop's Keras CNN ("TF2/Keras on IPU") on Fashion-MNIST, through
`import tessera`: the program a TensorFlow-for-IPU user writes, with only
its imports changed (tensorflow -> tessera.tf, tensorflow.python.ipu ->
tessera.ipu). The model and training match `tessera train --model cnn`
(Conv2D 32, MaxPool, Conv2D 64, MaxPool, Dense 128, Dense 10; Adam 0.001,
batch 32, 3 epochs), which reaches 90.1% test accuracy.

Run with Debian's interpreter: /usr/bin/python3 examples/python/keras_cnn.py
(scripts/main.sh registers the package for it). Set EPOCHS to change the
epoch count.
"""

import os
import time

import numpy as np

import tessera.tf as tf
from tessera import ipu
from tessera.tf.keras.layers import *  # noqa: F401,F403

EPOCHS = int(os.environ.get("EPOCHS", "3"))
BATCH_SIZE = 32

start = time.time()

# Configure the IPU system: one IPU (the IPU Model, 1472 tiles of an ipu2).
cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()

with ipu.ipu_strategy.IPUStrategy().scope():
    (x_train, y_train), (x_test, y_test) = \
        tf.keras.datasets.fashion_mnist.load_data()
    x_train = x_train.astype("float32")[..., tf.newaxis] / 255.0
    x_test = x_test.astype("float32")[..., tf.newaxis] / 255.0

    model = tf.keras.Sequential([
        Conv2D(32, (3, 3), activation="relu", input_shape=x_train.shape[1:]),
        MaxPooling2D(pool_size=(2, 2)),
        Conv2D(64, (3, 3), activation="relu"),
        MaxPooling2D(pool_size=(2, 2)),
        Flatten(),
        Dense(128, activation="relu"),
        Dense(10, activation="softmax"),
    ])
    model.summary()

    # 1875 steps an epoch: 15 device runs of 125 steps each. epsilon=1e-8
    # as `tessera train`'s Adam (PyTorch's; Keras' default is 1e-7), so
    # both programs train exactly the same model.
    model.compile(loss="sparse_categorical_crossentropy",
                  optimizer=tf.keras.optimizers.Adam(learning_rate=0.001,
                                                     epsilon=1e-8),
                  metrics=["accuracy"],
                  steps_per_execution=125)
    model.fit(x_train, y_train, batch_size=BATCH_SIZE, epochs=EPOCHS)

    loss, accuracy = model.evaluate(x_test, y_test, batch_size=100)
    print("test loss: %.4f, test accuracy: %.4f" % (loss, accuracy))

    predictions = model.predict(x_test[:8])
    print("first predictions:", np.argmax(predictions, axis=1),
          "labels:", y_test[:8])

print("total time: %.1f s" % (time.time() - start))
