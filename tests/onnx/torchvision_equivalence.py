#!/usr/bin/python3
"""Inference equivalence of imported ONNX models with PyTorch.

Exports torchvision models (random weights, eval mode; or gelu_mlp, a
GELU classifier) with torch.onnx.export
at test time, runs the file on Tessera's IPU Model through tessera_onnx_run,
and checks every output against PyTorch's within a relative tolerance.

    torchvision_equivalence.py RUNNER MODEL [--size S] [--batch B] [--opset N]
                               [--rtol R] [--tiles T] [--interpret]

--tiles sets the IPU Model's tiles (tessera_onnx_run's default otherwise):
fewer tiles compile the 224x224 models several times faster.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runner")
    p.add_argument("model")
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--opset", type=int, default=13)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--tiles", type=int)
    p.add_argument("--interpret", action="store_true")
    a = p.parse_args()

    torch.manual_seed(0)
    if a.model == "gelu_mlp":  # GELU exports as Erf (opsets before 20)
        model = torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(3 * a.size * a.size, 64),
            torch.nn.GELU(), torch.nn.Linear(64, 10), torch.nn.Softmax(1))
    else:
        model = getattr(torchvision.models, a.model)(weights=None)
    model = model.eval()
    # Random batch-norm statistics, so the normalisation is not the
    # identity the fresh model's running mean 0 / variance 1 would give.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(a.batch, 3, a.size, a.size)
    with torch.no_grad():
        expected = model(x).numpy()

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, a.model + ".onnx")
        torch.onnx.export(model, x, path, opset_version=a.opset,
                          input_names=["image"], output_names=["logits"])
        x.numpy().astype(np.float32).tofile(os.path.join(tmp, "image.bin"))
        cmd = [a.runner, path, tmp, "image=" + os.path.join(tmp, "image.bin")]
        if a.interpret:
            cmd.append("--interpret")
        if a.tiles:
            cmd += ["--tiles", str(a.tiles)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            print("FAIL: tessera_onnx_run exited with", r.returncode)
            return 1
        got = np.fromfile(os.path.join(tmp, "0.bin"), dtype=np.float32)

    got = got.reshape(expected.shape)
    scale = np.abs(expected).max()
    err = np.abs(got - expected).max() / scale
    print(f"{a.model} {a.batch}x3x{a.size}x{a.size} opset {a.opset}: "
          f"max |tessera - torch| / max |torch| = {err:.3g} "
          f"(tolerance {a.rtol:g})")
    if not np.isfinite(err) or err > a.rtol:
        print("FAIL")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
