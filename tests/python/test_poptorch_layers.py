"""poptorch: layers that train differently from how they infer.

BatchNorm2d in a trainingModel normalises with the batch's statistics and
updates running_mean / running_var as PyTorch's training does (the wrapped
module holds them after each call, so a plain PyTorch eval sees them);
Dropout drops in a trainingModel and is the identity in an
inferenceModel."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402

import poptorch  # noqa: E402

MICRO = 8


class BnCnn(nn.Module):
    def __init__(self):
        super().__init__()
        # No bias before a batch norm: its gradient is rounding noise, which
        # Adam would amplify into steps that no two machines agree on.
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4),
            nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, bias=False),
            nn.BatchNorm2d(6, momentum=0.3), nn.Tanh())
        self.classifier = nn.Linear(6 * 2 * 2, 10)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels):
        out = self.classifier(torch.flatten(self.features(x), 1))
        return out, self.loss(out, labels)


def _options(iterations=1, accumulation=1):
    opts = poptorch.Options().deviceIterations(iterations).tilesPerIpu(16)
    opts.Training.gradientAccumulation(accumulation)
    return opts.outputMode(poptorch.OutputMode.All)


def _data(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(n, 1, 8, 8, generator=g) * 2 + 0.5
    ys = (xs[:, 0, :4, :4].sum(dim=(1, 2)).clamp(-4.9, 4.9) + 5).long()
    return xs, ys


@pytest.mark.parametrize("kind,iterations,accumulation",
                         [("sgd", 1, 1), ("adam", 4, 1), ("sgd", 2, 2)])
def test_batch_norm_trains_as_pytorch_with_running_statistics(
        kind, iterations, accumulation):
    torch.manual_seed(0)
    model, reference = BnCnn(), BnCnn()
    reference.load_state_dict(model.state_dict())
    steps = 8
    xs, ys = _data(steps * MICRO * accumulation)
    lib = {"sgd": lambda m, p: m.SGD(p, lr=0.05),
           "adam": lambda m, p: m.Adam(p, lr=0.01)}[kind]
    training = poptorch.trainingModel(
        model, _options(iterations, accumulation),
        lib(poptorch.optim, model.parameters()))
    per_call = MICRO * iterations * accumulation
    got = [training(xs[c:c + per_call], ys[c:c + per_call])[1].reshape(-1)
           for c in range(0, len(xs), per_call)]
    got = torch.cat(got).numpy().reshape(steps, accumulation).mean(1)
    # PyTorch: each micro-batch's forward updates the running statistics;
    # an optimizer step takes the mean gradient of the accumulated ones.
    reference.train()
    opt = lib(torch.optim, reference.parameters())
    expected = []
    for s in range(steps):
        opt.zero_grad()
        losses = []
        for a in range(accumulation):
            b = slice((s * accumulation + a) * MICRO,
                      (s * accumulation + a + 1) * MICRO)
            _, loss = reference(xs[b], ys[b])
            (loss / accumulation).backward()
            losses.append(loss.item())
        opt.step()
        expected.append(np.mean(losses))
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    state, ref_state = model.state_dict(), reference.state_dict()
    assert state.keys() == ref_state.keys()
    for name in state:
        np.testing.assert_allclose(state[name].numpy(),
                                   ref_state[name].numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=name)
    bn = model.features[1]
    assert bn.num_batches_tracked.item() == steps * accumulation
    assert not torch.allclose(bn.running_var, torch.ones(4))
    # A plain PyTorch evaluation sees the trained running statistics, and
    # so does an inference model of the same module.
    model.eval()
    reference.eval()
    with torch.no_grad():
        np.testing.assert_allclose(model(xs[:MICRO], ys[:MICRO])[0],
                                   reference(xs[:MICRO], ys[:MICRO])[0],
                                   rtol=1e-4, atol=1e-5)
        inference = poptorch.inferenceModel(model, _options())
        np.testing.assert_allclose(inference(xs[:MICRO], ys[:MICRO])[0],
                                   reference(xs[:MICRO], ys[:MICRO])[0],
                                   rtol=1e-4, atol=1e-5)


def test_tracing_leaves_the_modules_state_alone():
    torch.manual_seed(0)
    model = BnCnn()
    model.eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    # With a seed, the dropout masks take nothing from PyTorch's generator.
    opts = _options().randomSeed(5)
    rng = torch.get_rng_state()
    xs, ys = _data(MICRO)
    poptorch.trainingModel(model, opts).compile(xs, ys)
    assert not model.training
    assert torch.equal(torch.get_rng_state(), rng)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


class Drop(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))
        self.drop = nn.Dropout(p)

    def forward(self, x):
        y = self.drop(x * self.scale)
        # A zero gradient: the scale stays 1 however long it trains.
        return y, y.sum() * 0.0


@pytest.mark.parametrize("p", [0.3, 0.75])
def test_dropout_drops_in_training_and_scales_what_it_keeps(p):
    x = torch.rand(2 * 4, 50, 40) + 0.5  # no zeros of its own
    training = poptorch.trainingModel(
        Drop(p), _options(iterations=2).randomSeed(7),
        poptorch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1))
    y, _ = training(x)
    kept = y != 0
    # 16000 elements: the fraction dropped is within 0.02 of p.
    assert abs(1 - kept.float().mean().item() - p) < 0.02
    np.testing.assert_allclose(y[kept], (x / (1 - p))[kept], rtol=1e-6)
    # Each step and each sample draws its own mask.
    masks = kept.reshape(2, 4, -1)
    assert not torch.equal(masks[0], masks[1])
    assert not torch.equal(masks[0, 0], masks[0, 1])
    y2, _ = training(x)
    assert not torch.equal(y2 != 0, kept)


def test_dropout_is_the_identity_in_inference_and_eval():
    net = Drop(0.5)
    x = torch.rand(4, 10, 10) + 0.5
    y, _ = poptorch.inferenceModel(net, _options())(x)
    assert torch.equal(y, x)
    net.eval()
    with torch.no_grad():
        assert torch.equal(net(x)[0], x)
