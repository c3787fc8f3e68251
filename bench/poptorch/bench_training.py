#!/usr/bin/python3
"""Host time per training step of the PopTorch example's network
(examples/poptorch/mnist.py: Network with its loss, SGD) through
poptorch.trainingModel on the IPU Model and through plain PyTorch on the
CPU, same batches, same run. Each side: one warm-up (poptorch: the call
that compiles), then the best of three timed runs of STEPS steps.

    bench_training.py [BATCH] [DEVICE_ITERATIONS] [STEPS] [TILES]

TILES is the IPU Model's tiles per IPU (default 1216, what the example
uses): the simulated step's host time grows with the tiles.

Prints both times and their ratio (PyTorch / poptorch: above 1 means
poptorch is faster).
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples", "poptorch"))
import mnist  # noqa: E402
import poptorch  # noqa: E402


def best_of_three(fn):
    fn()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    tiles = int(sys.argv[4]) if len(sys.argv) > 4 else 1216
    calls = steps // iterations
    torch.manual_seed(0)
    xs = torch.randn(calls, iterations * batch, 1, 28, 28)
    ys = torch.randint(0, 10, (calls, iterations * batch))

    net = mnist.TrainingModelWithLoss(mnist.Network())
    opts = poptorch.Options().deviceIterations(iterations).tilesPerIpu(tiles)
    model = poptorch.trainingModel(
        net, opts, poptorch.optim.SGD(net.parameters(), lr=0.01))

    def ipu():
        for c in range(calls):
            model(xs[c], ys[c])

    reference = mnist.TrainingModelWithLoss(mnist.Network())
    opt = torch.optim.SGD(reference.parameters(), lr=0.01)

    def cpu():
        for c in range(calls):
            for x, y in zip(xs[c].split(batch), ys[c].split(batch)):
                opt.zero_grad()
                _, loss = reference(x, y)
                loss.backward()
                opt.step()

    ipu_ms = best_of_three(ipu) / steps * 1e3
    cpu_ms = best_of_three(cpu) / steps * 1e3
    print(f"batch {batch}, {iterations} device iterations, {steps} steps, "
          f"{tiles} tiles, {torch.get_num_threads()} PyTorch threads")
    print(f"poptorch.trainingModel: {ipu_ms:.3f} ms per step")
    print(f"PyTorch on the CPU:     {cpu_ms:.3f} ms per step")
    print(f"ratio {cpu_ms / ipu_ms:.3f}")


if __name__ == "__main__":
    main()
