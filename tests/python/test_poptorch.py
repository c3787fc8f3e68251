"""poptorch: PyTorch models trained and run on the IPU Model.

Training equivalence: a small CNN trained through poptorch.trainingModel
follows the loss trajectory of the same CNN trained by PyTorch itself on
the same batches (with replicas and gradient accumulation, PyTorch takes
each step on all their micro-batches together, whose mean gradient is
what the replicas and accumulation average)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402

import poptorch  # noqa: E402

STEPS = 20
MICRO = 4


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 8, 3), nn.Tanh())
        self.classifier = nn.Linear(8 * 2 * 2, 10)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class WithLoss(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels):
        out = self.model(x)
        return out, self.loss(out, labels)


def _options(iterations=1, replicas=1, accumulation=1):
    opts = poptorch.Options().deviceIterations(iterations).tilesPerIpu(16)
    opts.replicationFactor(replicas)
    opts.Training.gradientAccumulation(accumulation)
    return opts.outputMode(poptorch.OutputMode.All)


def _data(steps, per_step, seed=1):
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(steps * per_step, 1, 8, 8, generator=g)
    # Labels that depend on the image, so there is something to learn.
    ys = (xs[:, 0, :4, :4].sum(dim=(1, 2)).clamp(-4.9, 4.9) + 5).long()
    return xs, ys


def _optimizer(kind, params, lib):
    if kind == "sgd":
        return lib.SGD(params, lr=0.05)
    if kind == "momentum":
        return lib.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-3)
    if kind == "nesterov":
        return lib.SGD(params, lr=0.01, momentum=0.9, nesterov=True)
    if kind == "adamw":
        return lib.AdamW(params, lr=0.003, weight_decay=0.05)
    return lib.Adam(params, lr=0.003)


def _torch_losses(model, kind, xs, ys, per_step):
    opt = _optimizer(kind, model.parameters(), torch.optim)
    losses = []
    for s in range(STEPS):
        batch = slice(s * per_step, (s + 1) * per_step)
        opt.zero_grad()
        _, loss = model(xs[batch], ys[batch])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def _poptorch_losses(model, opts, kind, xs, ys, lib=poptorch.optim):
    training = poptorch.trainingModel(
        model, opts, _optimizer(kind, model.parameters(), lib))
    per_call = MICRO * opts.combined_batch_factor
    losses = []
    for c in range(len(xs) // per_call):
        batch = slice(c * per_call, (c + 1) * per_call)
        _, loss = training(xs[batch], ys[batch])
        losses.append(loss.numpy().reshape(-1))
    # One loss per micro-batch; a step's loss is the mean over its
    # replicas and accumulated micro-batches.
    per_step = (opts.Training.gradient_accumulation *
                opts.replication_factor)
    return np.concatenate(losses).reshape(STEPS, per_step).mean(axis=1)


@pytest.mark.parametrize("kind,iterations,replicas,accumulation", [
    ("sgd", 1, 1, 1), ("sgd", 10, 1, 1), ("adam", 1, 1, 1),
    ("adam", 10, 1, 1), ("momentum", 10, 1, 1), ("sgd", 2, 2, 1),
    ("sgd", 1, 1, 4), ("adam", 5, 2, 4), ("nesterov", 2, 1, 1),
    ("adamw", 2, 1, 1)])
def test_training_follows_pytorchs_loss_trajectory(kind, iterations,
                                                   replicas, accumulation):
    torch.manual_seed(0)
    model = WithLoss(SmallCnn())
    reference = WithLoss(SmallCnn())
    reference.load_state_dict(model.state_dict())
    opts = _options(iterations, replicas, accumulation)
    per_step = MICRO * replicas * accumulation
    xs, ys = _data(STEPS, per_step)
    got = _poptorch_losses(model, opts, kind, xs, ys)
    expected = _torch_losses(reference, kind, xs, ys, per_step)
    assert expected[-1] < expected[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    # The wrapped module holds the trained weights.
    for a, b in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                                   rtol=1e-4, atol=1e-5)


def test_torch_optim_optimizers_are_read_like_poptorch_optim():
    torch.manual_seed(0)
    model = WithLoss(SmallCnn())
    reference = WithLoss(SmallCnn())
    reference.load_state_dict(model.state_dict())
    xs, ys = _data(STEPS, MICRO)
    got = _poptorch_losses(model, _options(10), "adam", xs, ys,
                           lib=torch.optim)
    expected = _torch_losses(reference, "adam", xs, ys, MICRO)
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_inference_model_matches_pytorch_and_sees_trained_weights():
    torch.manual_seed(0)
    net = SmallCnn()
    opts = _options(iterations=3)
    xs, ys = _data(3, MICRO)
    inference = poptorch.inferenceModel(net, opts)
    with torch.no_grad():
        before = net(xs)
    np.testing.assert_allclose(inference(xs).numpy(), before.numpy(),
                               rtol=1e-4, atol=1e-5)
    training = poptorch.trainingModel(
        WithLoss(net), opts, poptorch.optim.SGD(net.parameters(), lr=0.5))
    training(xs, ys)
    training.detachFromDevice()
    with torch.no_grad():
        after = net(xs)  # plain PyTorch, with the trained weights
    assert not torch.allclose(after, before, atol=1e-3)
    np.testing.assert_allclose(inference(xs).numpy(), after.numpy(),
                               rtol=1e-4, atol=1e-5)


def test_host_weight_changes_reach_the_device():
    torch.manual_seed(0)
    net = SmallCnn()
    inference = poptorch.inferenceModel(net, _options())
    xs, _ = _data(1, MICRO)
    inference(xs)
    with torch.no_grad():
        net.classifier.bias.add_(1.0)
    np.testing.assert_allclose(inference(xs).numpy(), net(xs).detach(),
                               rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        net.classifier.bias.sub_(1.0)
    inference.copyWeightsToDevice()
    np.testing.assert_allclose(inference(xs).numpy(), net(xs).detach(),
                               rtol=1e-4, atol=1e-5)


def test_output_modes_final_sum_and_every_n():
    torch.manual_seed(0)
    net = SmallCnn()
    xs, _ = _data(4, MICRO)
    with torch.no_grad():
        expected = net(xs).reshape(4, MICRO, 10)
    final = poptorch.inferenceModel(net, _options(4).outputMode(
        poptorch.OutputMode.Final))
    np.testing.assert_allclose(final(xs), expected[-1], rtol=1e-4,
                               atol=1e-5)
    total = poptorch.inferenceModel(net, _options(4).anchorMode(
        poptorch.AnchorMode.Sum))
    np.testing.assert_allclose(total(xs), expected.sum(0), rtol=1e-4,
                               atol=1e-4)
    every = poptorch.inferenceModel(net, _options(4).outputMode(
        poptorch.OutputMode.EveryN, output_return_period=2))
    np.testing.assert_allclose(every(xs), expected[1::2].reshape(-1, 10),
                               rtol=1e-4, atol=1e-5)


def test_dataloader_gives_combined_batches():
    opts = _options(iterations=5, replicas=2, accumulation=3)
    dataset = torch.utils.data.TensorDataset(torch.arange(100.0))
    loader = poptorch.DataLoader(opts, dataset, batch_size=2)
    batches = [b[0] for b in loader]
    assert loader.combinedBatchSize == 60
    assert [len(b) for b in batches] == [60]  # the last 40 are dropped
    np.testing.assert_array_equal(batches[0], np.arange(60.0))
    with pytest.raises(ValueError, match=r"fewer than one combined batch "
                                         r"of 120"):
        poptorch.DataLoader(opts, dataset, batch_size=4)


def test_training_model_without_a_loss_is_an_error():
    training = poptorch.trainingModel(SmallCnn(), _options())
    with pytest.raises(poptorch.Error, match=r"forward returned no loss.*"
                                             r"shapes \[\(4, 10\)\]"):
        training(torch.zeros(MICRO, 1, 8, 8))


def test_batch_that_does_not_match_the_options_is_an_error():
    opts = _options(iterations=10)
    training = poptorch.trainingModel(WithLoss(SmallCnn()), opts)
    xs, ys = _data(10, MICRO)
    with pytest.raises(poptorch.Error, match=r"36 samples.*multiple of "
                                             r"deviceIterations 10"):
        training(xs[:36], ys[:36])
    training(xs, ys)
    # A loader made with other options gives batches of another size.
    other = poptorch.DataLoader(_options(iterations=5),
                                torch.utils.data.TensorDataset(xs, ys),
                                batch_size=MICRO)
    x, y = next(iter(other))
    with pytest.raises(poptorch.Error, match=r"compiled for 4"):
        training(x, y)


def test_detached_model_must_be_attached_before_running():
    net = SmallCnn()
    inference = poptorch.inferenceModel(net, _options())
    xs, _ = _data(1, MICRO)
    inference(xs)
    inference.detachFromDevice()
    with pytest.raises(poptorch.Error, match=r"detachFromDevice\(\); call "
                                             r"attachToDevice\(\)"):
        inference(xs)
    inference.attachToDevice()
    np.testing.assert_allclose(inference(xs).numpy(), net(xs).detach(),
                               rtol=1e-4, atol=1e-5)


def test_compile_then_run_and_executable_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POPTORCH_CACHE_DIR", str(tmp_path))
    xs, _ = _data(2, MICRO)
    net = SmallCnn()
    first = poptorch.inferenceModel(net, _options(2))
    first.compile(xs)
    assert first.isCompiled() and first.isAttachedToDevice()
    cached = list(tmp_path.iterdir())
    assert cached, "compile() with POPTORCH_CACHE_DIR writes the executable"
    second = poptorch.inferenceModel(net, _options(2))
    np.testing.assert_allclose(second(xs).numpy(), first(xs).numpy())
    assert sorted(tmp_path.iterdir()) == sorted(cached)


def test_frozen_parameters_are_not_trained_and_take_no_state():
    torch.manual_seed(0)
    model = WithLoss(SmallCnn())
    reference = WithLoss(SmallCnn())
    reference.load_state_dict(model.state_dict())
    for m in (model, reference):
        m.model.classifier.bias.requires_grad_(False)
        m.model.features[0].weight.requires_grad_(False)
    frozen = {n: p.detach().clone() for n, p in model.named_parameters()
              if not p.requires_grad}
    xs, ys = _data(STEPS, MICRO)
    got = _poptorch_losses(model, _options(10), "momentum", xs, ys)
    expected = _torch_losses(reference, "momentum", xs, ys, MICRO)
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    for (name, a), b in zip(model.named_parameters(),
                            reference.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)
    for name, before in frozen.items():
        assert torch.equal(dict(model.named_parameters())[name], before)


def test_frozen_parameters_have_no_optimizer_state():
    net = SmallCnn()
    net.classifier.bias.requires_grad_(False)
    training = poptorch.trainingModel(
        WithLoss(net), _options(),
        poptorch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9))
    xs, ys = _data(1, MICRO)
    training(xs, ys)
    state = training._session.readState()
    assert "model.classifier.weight/momentum" in state
    assert not [k for k in state if k.startswith("model.classifier.bias/")]


def test_a_model_without_trainable_parameters_is_an_error():
    net = SmallCnn()
    net.requires_grad_(False)
    with pytest.raises(poptorch.Error, match="nothing to train"):
        poptorch.trainingModel(WithLoss(net), _options())


def test_replicated_inference_returns_every_sample_in_order():
    torch.manual_seed(0)
    net = SmallCnn()
    xs, _ = _data(2 * 2, MICRO)
    inference = poptorch.inferenceModel(net, _options(2, replicas=2))
    with torch.no_grad():
        expected = net(xs)
    got = inference(xs)
    assert got.shape == (16, 10)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-4,
                               atol=1e-5)


def test_set_optimizer_changes_the_learning_rate_between_calls():
    torch.manual_seed(0)
    model = WithLoss(SmallCnn())
    reference = WithLoss(SmallCnn())
    reference.load_state_dict(model.state_dict())
    xs, ys = _data(4, MICRO)
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.05)
    training = poptorch.trainingModel(model, _options(2), optimizer)
    _, first = training(xs[:8], ys[:8])
    for group in optimizer.param_groups:
        group["lr"] = 0.5
    training.setOptimizer(optimizer)
    _, second = training(xs[8:], ys[8:])
    got = np.concatenate([first.numpy(), second.numpy()])
    opt = torch.optim.SGD(reference.parameters(), lr=0.05)
    expected = []
    for s in range(4):
        if s == 2:
            opt.param_groups[0]["lr"] = 0.5
        opt.zero_grad()
        _, loss = reference(xs[s * MICRO:(s + 1) * MICRO],
                            ys[s * MICRO:(s + 1) * MICRO])
        loss.backward()
        opt.step()
        expected.append(loss.item())
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    for a, b in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["momentum", "adam"])
def test_changed_learning_rate_keeps_optimizer_state(kind):
    # Changed through setOptimizer, and (the second time) only in the
    # optimizer's param_groups, which the next call picks up.
    torch.manual_seed(0)
    model = WithLoss(SmallCnn())
    reference = WithLoss(SmallCnn())
    reference.load_state_dict(model.state_dict())
    xs, ys = _data(6, MICRO)
    optimizer = _optimizer(kind, model.parameters(), poptorch.optim)
    training = poptorch.trainingModel(model, _options(2), optimizer)
    rates = [optimizer.param_groups[0]["lr"] * f for f in (1, 3, 0.5)]
    got = []
    for c in range(3):
        optimizer.param_groups[0]["lr"] = rates[c]
        if c == 1:
            training.setOptimizer(optimizer)
        _, loss = training(xs[c * 8:(c + 1) * 8], ys[c * 8:(c + 1) * 8])
        got.append(loss.numpy())
    opt = _optimizer(kind, reference.parameters(), torch.optim)
    expected = []
    for s in range(6):
        opt.param_groups[0]["lr"] = rates[s // 2]
        opt.zero_grad()
        _, loss = reference(xs[s * MICRO:(s + 1) * MICRO],
                            ys[s * MICRO:(s + 1) * MICRO])
        loss.backward()
        opt.step()
        expected.append(loss.item())
    np.testing.assert_allclose(np.concatenate(got), expected, rtol=1e-4)
    for a, b in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                                   rtol=1e-4, atol=1e-5)


def test_set_optimizer_of_another_kind_is_an_error():
    net = SmallCnn()
    training = poptorch.trainingModel(
        WithLoss(net), _options(),
        poptorch.optim.SGD(net.parameters(), lr=0.01))
    xs, ys = _data(1, MICRO)
    training(xs, ys)
    with pytest.raises(poptorch.Error, match="other state"):
        training.setOptimizer(poptorch.optim.Adam(net.parameters()))


def test_begin_block_places_later_layers_on_the_next_ipu():
    from poptorch import _blocks
    torch.manual_seed(0)
    model = WithLoss(SmallCnn())
    reference = WithLoss(SmallCnn())
    reference.load_state_dict(model.state_dict())
    model.model.classifier = poptorch.BeginBlock(model.model.classifier,
                                                 ipu_id=1)
    xs, ys = _data(STEPS, MICRO * 2)
    # Sharded: the blocks run one after the other, without accumulation.
    opts = _options(10, replicas=2).setExecutionStrategy(
        poptorch.ShardedExecution())
    got = _poptorch_losses(model, opts, "sgd", xs, ys)
    expected = _torch_losses(reference, "sgd", xs, ys, MICRO * 2)
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    # The nodes from the classifier on (and the loss) are on IPU 1.
    proto, ipus, _ = _blocks.place_nodes(
        poptorch.inferenceModel(model)._export((xs[:MICRO], ys[:MICRO]), 2),
        _blocks.block_scopes(model))
    parsed = _blocks._schema()()
    parsed.ParseFromString(proto)
    placed = [(n.name.split("/")[-1], [a.i for a in n.attribute
                                       if a.name == "__ipu_number"])
              for n in parsed.graph.node]
    assert ipus == 2
    assert placed[0] == ("Conv", [0])
    assert [p for _, p in placed[-2:]] == [[1], [1]]
    assert [p for n, p in placed if n == "Gemm"] == [[1]]
    # Tessera's importer places by the attribute: one IPU is too few.
    import popart
    with pytest.raises(popart.popart_exception, match="is on IPU 1"):
        popart.InferenceSession(
            proto, popart.DataFlow(1, {"output1": "ALL"}),
            popart.DeviceManager().createIpuModelDevice(
                {"numIPUs": 1, "tilesPerIPU": 16})).prepareDevice()


class Classify(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        logits = self.net(x)
        return (logits > 0).int(), logits


def test_integer_outputs_come_back_as_int32():
    torch.manual_seed(0)
    net = SmallCnn()
    xs, _ = _data(2, MICRO)
    positive, logits = poptorch.inferenceModel(Classify(net), _options(2))(xs)
    assert positive.dtype == torch.int32
    with torch.no_grad():
        expected = net(xs)
    # Logits within rounding of 0 may compare either way.
    near = np.abs(expected.numpy()) < 1e-5
    assert ((positive.numpy() == (expected > 0).numpy()) | near).all()
