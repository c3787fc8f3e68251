#!/usr/bin/python3
"""The MLP of `tessera train` (784-256-128-10, ReLU, softmax; Adam 0.0005)
trained through `import tessera` on Fashion-MNIST: prints the best host
time per step of the device runs (as `tessera train` measures it) and the
wall time per step of the whole fit() call (and the samples/s it makes),
the best of three fits after one that compiles, for bench/python/run.sh to
set against `tessera train` and bench/python/torch.sh against PyTorch. The
examples go in unshuffled, as the PyTorch peer takes them.
Usage: keras_mlp.py BATCH STEPS STEPS_PER_EXECUTION CACHE"""
import sys
import time

import numpy as np

from tessera import ipu, keras

batch, steps, spe, cache = (int(sys.argv[1]), int(sys.argv[2]),
                            int(sys.argv[3]), sys.argv[4])
cfg = ipu.config.IPUConfig()
cfg.executable_cache_path = cache
cfg.configure_ipu_system()

(x, y), _ = keras.datasets.fashion_mnist.load_data()
n = batch * steps
x = x[:n].reshape(n, 784).astype(np.float32) / 255.0
y = y[:n]

model = keras.Sequential([
    keras.layers.Dense(256, activation="relu", input_shape=(784,)),
    keras.layers.Dense(128, activation="relu"),
    keras.layers.Dense(10, activation="softmax")], name="mlp")
model.compile(optimizer=keras.optimizers.Adam(0.0005),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"],
              steps_per_execution=spe)
model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
runs = []
for _ in range(3):
    start = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
    wall = (time.perf_counter() - start) / steps
    runs.append((model._core.last_fit_stats()["host_seconds_per_step"], wall))
device = min(r[0] for r in runs)
wall = min(r[1] for r in runs)
print("Host time per step: %.4f ms" % (device * 1000))
# The whole fit() call per step, Python and conversion included, against
# the device runs alone in the same fit: what the binding adds.
print("fit() wall time per step: %.4f ms (%.3fx the device runs)"
      % (wall * 1000, wall / device))
print("fit() samples/s: %.0f" % (batch / wall))
