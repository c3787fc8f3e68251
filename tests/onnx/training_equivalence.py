#!/usr/bin/python3
"""Training equivalence of an imported ONNX model with PyTorch.

A small CNN whose forward returns its cross-entropy loss is exported with
torch.onnx.export, then trained STEPS steps on the IPU Model through
tessera_onnx_run --train (ModelSession). PyTorch trains the same model on
the same batches with the same optimizer; the two loss trajectories must
agree to a relative tolerance.

    training_equivalence.py RUNNER [--optimizer sgd|adam] [--steps N]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 8, 3), nn.Tanh())
        self.classifier = nn.Linear(8 * 2 * 2, 10)
        # No batch norm: the exporter folds it into the convolution in eval
        # mode, which PyTorch's own training would not match.
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels):
        h = self.features(x)
        logits = self.classifier(torch.flatten(h, 1))
        return self.loss(logits, labels)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runner")
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rtol", type=float, default=1e-4)
    a = p.parse_args()
    lr = 0.05 if a.optimizer == "sgd" else 0.003

    torch.manual_seed(0)
    model = SmallCnn()
    batch = 4
    xs = torch.randn(a.steps, batch, 1, 8, 8)
    # Labels that depend on the image, so there is something to learn.
    ys = (xs[:, :, 0, :4, :4].sum(dim=(2, 3)).clamp(-4.9, 4.9) + 5).long()

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cnn.onnx")
        torch.onnx.export(model, (xs[0], ys[0]), path, opset_version=13,
                          input_names=["x", "labels"], output_names=["loss"],
                          do_constant_folding=False)
        xs.numpy().astype(np.float32).tofile(os.path.join(tmp, "x.bin"))
        ys.numpy().astype(np.int32).tofile(os.path.join(tmp, "labels.bin"))
        cmd = [a.runner, path, tmp, "--train", "loss", "--steps",
               str(a.steps), "--" + a.optimizer, str(lr),
               "x=" + os.path.join(tmp, "x.bin"),
               "labels=" + os.path.join(tmp, "labels.bin")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            print("FAIL: tessera_onnx_run exited with", r.returncode)
            return 1
        got = np.fromfile(os.path.join(tmp, "0.bin"), dtype=np.float32)

    opt = (torch.optim.SGD(model.parameters(), lr=lr) if a.optimizer == "sgd"
           else torch.optim.Adam(model.parameters(), lr=lr))
    expected = []
    for s in range(a.steps):
        opt.zero_grad()
        loss = model(xs[s], ys[s])
        loss.backward()
        opt.step()
        expected.append(loss.item())
    expected = np.array(expected)
    err = np.max(np.abs(got - expected) / np.abs(expected))
    print(f"{a.optimizer} {a.steps} steps: loss {expected[0]:.4f} -> "
          f"{expected[-1]:.4f}; max relative difference {err:.3g} "
          f"(tolerance {a.rtol:g})")
    if not np.isfinite(err) or err > a.rtol:
        print("tessera:", got)
        print("torch:  ", expected)
        print("FAIL")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
