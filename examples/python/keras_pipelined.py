"""The tensor-inspection seed's pipelined model (tf2-pipelining-tensor-
inspection.md's create_pipeline_model) on Fashion-MNIST, through
`import tessera`: a fully connected model whose layers are called inside
ipu.keras.PipelineStage scopes (Flatten and Dense 256 on stage 0, Dense 128
and Dense 10 on stage 1), pipelined over two IPUs with
set_pipelining_options, N micro-batches of 32 per weight update.

Run with Debian's interpreter: /usr/bin/python3 examples/python/keras_pipelined.py
EXAMPLES (default 16000: the seed's 500 steps per epoch), EPOCHS (default
2), STEPS_PER_UPDATE (N, default 4) and SCHEDULE (Grouped, Interleaved or
Sequential) change the run.
"""

import os

import tessera.tf as tf
from tessera import ipu
from tessera.tf import keras

BATCH_SIZE = 32
EXAMPLES = int(os.environ.get("EXAMPLES", "16000"))
EPOCHS = int(os.environ.get("EPOCHS", "2"))
N = int(os.environ.get("STEPS_PER_UPDATE", "4"))
SCHEDULE = getattr(ipu.ops.pipelining_ops.PipelineSchedule,
                   os.environ.get("SCHEDULE", "Grouped"))


def create_pipeline_model(gradient_accumulation_steps_per_replica):
    input_layer = keras.layers.Input(shape=(28, 28, 1), dtype=tf.float32,
                                     batch_size=BATCH_SIZE)
    with ipu.keras.PipelineStage(0):
        x = keras.layers.Flatten()(input_layer)
        x = keras.layers.Dense(256, activation="relu", name="Dense_256")(x)
    with ipu.keras.PipelineStage(1):
        x = keras.layers.Dense(128, activation="relu", name="Dense_128")(x)
        x = keras.layers.Dense(10, activation="softmax", name="Dense_10")(x)
    model = keras.Model(input_layer, x)
    model.set_pipelining_options(
        gradient_accumulation_steps_per_replica=
        gradient_accumulation_steps_per_replica,
        pipeline_schedule=SCHEDULE)
    return model


# Two IPUs: one per pipeline stage.
cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 2
cfg.configure_ipu_system()

(x_train, y_train), (x_test, y_test) = \
    keras.datasets.fashion_mnist.load_data()
x_train = x_train[:EXAMPLES].astype("float32")[..., tf.newaxis] / 255.0
y_train = y_train[:EXAMPLES]
x_test = x_test.astype("float32")[..., tf.newaxis] / 255.0

steps = len(x_train) // BATCH_SIZE
# A device run is a whole number of weight updates and divides the epoch.
steps_per_execution = 100 if steps % 100 == 0 and 100 % N == 0 else N

with ipu.ipu_strategy.IPUStrategy().scope():
    model = create_pipeline_model(N)
    model.summary()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05,
                                                 momentum=0.9),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"],
                  steps_per_execution=steps_per_execution)
    model.fit(x_train, y_train, batch_size=BATCH_SIZE, epochs=EPOCHS,
              shuffle=True)
    loss, accuracy = model.evaluate(x_test[:2000], y_test[:2000],
                                    batch_size=100, verbose=0)
    print("test loss: %.4f, test accuracy: %.4f" % (loss, accuracy))
