#!/usr/bin/python3
"""The PyTorch peer of `tessera train`: the same model (--model mlp:
784-256-128-10, ReLU; --model cnn: two 3x3 valid convolutions of 32 and 64
filters with ReLU, each followed by 2x2 max pooling, then dense 128 ReLU and
10), glorot-uniform weights, zero biases, softmax cross-entropy and Adam on
Fashion-MNIST from Debian's dataset-fashion-mnist, on the CPU. Prints one
line: `torch samples/s: N (threads T, batch B, steps S)`, the best of three
timed runs on --threads threads (bench/train/peer.sh runs it)."""
import argparse
import gzip
import os
import time

import numpy as np
import torch

DATA = os.environ.get("TESSERA_FASHION_MNIST_DIR",
                      "/usr/share/datasets/fashion-mnist")


def read_idx(name, offset):
    path = os.path.join(DATA, name)
    if not os.path.exists(path):
        raise SystemExit(f"torch_peer: {path} is missing; install Debian's "
                         "dataset-fashion-mnist package")
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def mlp():
    layers = [torch.nn.Linear(784, 256), torch.nn.ReLU(),
              torch.nn.Linear(256, 128), torch.nn.ReLU(),
              torch.nn.Linear(128, 10)]
    for layer in layers:
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.xavier_uniform_(layer.weight)
            torch.nn.init.zeros_(layer.bias)
    return torch.nn.Sequential(*layers)


def cnn():
    # Keras' layout is channels-last; PyTorch's fastest CPU path for a
    # small network is its native NCHW, which is what it is measured with.
    layers = [torch.nn.Unflatten(1, (1, 28, 28)),
              torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
              torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(),
              torch.nn.MaxPool2d(2), torch.nn.Flatten(),
              torch.nn.Linear(64 * 5 * 5, 128), torch.nn.ReLU(),
              torch.nn.Linear(128, 10)]
    for layer in layers:
        if isinstance(layer, (torch.nn.Linear, torch.nn.Conv2d)):
            torch.nn.init.xavier_uniform_(layer.weight)
            torch.nn.init.zeros_(layer.bias)
    return torch.nn.Sequential(*layers)


def samples_per_second(images, labels, batch, steps, threads, lr, model):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = cnn() if model == "cnn" else mlp()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = len(labels) // batch

    def step(i):
        k = (i % batches) * batch
        x, y = images[k:k + batch], labels[k:k + batch]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for i in range(min(20, steps)):  # warm-up: allocator, kernels
        step(i)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for i in range(steps):
            loss = step(i)
        float(loss)
        best = max(best, batch * steps / (time.perf_counter() - start))
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--learning-rate", type=float, default=0.001)
    p.add_argument("--threads", type=int, default=1,
                   help="host threads (start the process with OMP_NUM_THREADS "
                   "and OPENBLAS_NUM_THREADS set alike)")
    a = p.parse_args()
    images = torch.from_numpy(
        read_idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784)
        .astype(np.float32) / 255)
    labels = torch.from_numpy(
        read_idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
    rate = samples_per_second(images, labels, a.batch_size, a.steps,
                              a.threads, a.learning_rate, a.model)
    print(f"torch samples/s: {rate:.0f} (threads {a.threads}, batch "
          f"{a.batch_size}, steps {a.steps})")


if __name__ == "__main__":
    main()
