"""tf.keras's names over Tessera's C++ models (tessera::nn).

    from tessera import keras
    model = keras.Sequential([
        keras.layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
        keras.layers.MaxPooling2D(), keras.layers.Flatten(),
        keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x_train, y_train, epochs=3)

Training runs on the IPU Model in C++; see tessera.ipu for its options.
"""

from . import (backend, callbacks, datasets, initializers, layers, losses,
               metrics, mixed_precision, optimizers, utils)
from . import applications  # noqa: E402 (after layers and models)
from .layers import Input
from .models import Model, Sequential

__all__ = ["Model", "Sequential", "Input", "layers", "optimizers", "losses",
           "metrics", "callbacks", "datasets", "utils", "backend",
           "initializers", "models", "applications", "mixed_precision"]

from . import models  # noqa: E402
