"""A Keras-on-IPU program in the style of keras-on-ipu-ulhpc.md: a small
ResNet-style functional model (residual blocks of Conv2D, BatchNormalization
and ReLU joined by Add, then GlobalAveragePooling2D and a softmax Dense) on
CIFAR-shaped synthetic data (32x32x3 images, 10 classes), fed by a tf.data
pipeline, trained with steps_per_execution inside an IPUStrategy scope, then
recompiled with metrics to evaluate, as the seed does.

Run: /usr/bin/python3 examples/python/keras_resnet.py
"""

import numpy as np

import tessera.tf as tf
from tessera import ipu
from tessera.tf import keras

BATCH_SIZE = 16
NUM_EPOCHS = 8
EXAMPLES = 256

tf.random.set_seed(1)
cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()


def residual_block(x, filters):
    y = keras.layers.Conv2D(filters, 3, padding="same")(x)
    y = keras.layers.BatchNormalization(momentum=0.9)(y)
    y = keras.layers.ReLU()(y)
    y = keras.layers.Conv2D(filters, 3, padding="same")(y)
    y = keras.layers.BatchNormalization(momentum=0.9)(y)
    y = keras.layers.Add()([x, y])
    return keras.layers.ReLU()(y)


def get_model():
    input_layer = keras.layers.Input(shape=(32, 32, 3), batch_size=BATCH_SIZE)
    x = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(
        input_layer)
    x = residual_block(x, 16)
    x = keras.layers.MaxPooling2D()(x)
    x = residual_block(x, 16)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dense(10, activation="softmax")(x)
    return keras.Model(inputs=input_layer, outputs=x, name="resnet_small")


# Synthetic CIFAR-shaped data: noise with a class-specific tint (class c
# brightens colour channel c % 3 by an amount set by c // 3), so the model
# has something to learn after global average pooling.
rng = np.random.default_rng(0)
labels = rng.integers(0, 10, size=(EXAMPLES, 1)).astype(np.int32)
images = rng.integers(0, 128, size=(EXAMPLES, 32, 32, 3)).astype(np.uint8)
for i, c in enumerate(labels[:, 0]):
    images[i, :, :, c % 3] += np.uint8(25 * (c // 3 + 1))
images = images.astype(np.float32) / 255.0

dataset = (tf.data.Dataset.from_tensor_slices(
               (tf.cast(images, tf.float32), tf.cast(labels, tf.float32)))
           .shuffle(EXAMPLES)
           .batch(BATCH_SIZE, drop_remainder=True)
           .prefetch(tf.data.AUTOTUNE))

with ipu.ipu_strategy.IPUStrategy().scope():
    model = get_model()
    model.summary()
    steps_per_exec = EXAMPLES // BATCH_SIZE
    model.compile(optimizer=keras.optimizers.Adam(0.003),
                  loss="sparse_categorical_crossentropy",
                  steps_per_execution=steps_per_exec)
    model.fit(dataset, epochs=NUM_EPOCHS)
    model.compile(metrics=["accuracy"], loss="sparse_categorical_crossentropy",
                  steps_per_execution=steps_per_exec)
    loss, accuracy = model.evaluate(dataset)
    print(f"loss: {round(loss, 4)}, accuracy: {round(accuracy, 4)}")
