"""poptorch: Block, BeginBlock, Stage and the execution strategies.

Blocks on several IPUs run sharded (each block's operations on its IPU,
one after the other), which gives the results of the model on one IPU."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402

import poptorch  # noqa: E402
from poptorch import _blocks  # noqa: E402

MICRO = 4


class TwoBlocks(nn.Module):
    """Features then classifier, each in a Block when ipus is given."""

    def __init__(self, ipus=None, auto=False):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Sequential(nn.Conv2d(4, 8, 3), nn.Tanh()))
        self.classifier = nn.Linear(8 * 2 * 2, 10)
        self.loss = nn.CrossEntropyLoss()
        self.ipus, self.auto = ipus, auto

    def forward(self, x, labels):
        if self.auto:
            poptorch.Block.useAutoId()
        first = (poptorch.Block() if self.auto
                 else poptorch.Block("features", ipu_id=self.ipus[0])
                 if self.ipus else None)
        if first:
            with first:
                h = self.features(x)
        else:
            h = self.features(x)
        h = torch.flatten(h, 1)
        if self.auto:
            with poptorch.Block():
                out = self.classifier(h)
        elif self.ipus:
            with poptorch.Block("classifier", ipu_id=self.ipus[1]):
                out = self.classifier(h)
        else:
            out = self.classifier(h)
        return out, self.loss(out, labels)


def _options(iterations=2):
    return (poptorch.Options().deviceIterations(iterations).tilesPerIpu(16)
            .outputMode(poptorch.OutputMode.All))


def _data(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(n, 1, 8, 8, generator=g)
    ys = (xs[:, 0, :4, :4].sum(dim=(1, 2)).clamp(-4.9, 4.9) + 5).long()
    return xs, ys


def _train(model, opts, xs, ys, calls=3):
    training = poptorch.trainingModel(
        model, opts, poptorch.optim.SGD(model.parameters(), lr=0.05))
    per_call = MICRO * opts.device_iterations
    losses = [training(xs[c * per_call:(c + 1) * per_call],
                       ys[c * per_call:(c + 1) * per_call])[1]
              for c in range(calls)]
    return training, torch.cat(losses).numpy()


@pytest.mark.parametrize("blocks", [dict(ipus=(0, 1)), dict(auto=True)])
def test_two_blocks_on_two_ipus_train_as_on_one(blocks):
    torch.manual_seed(0)
    one = TwoBlocks()
    two = TwoBlocks(**blocks)
    two.load_state_dict(one.state_dict())
    xs, ys = _data(6 * MICRO)
    sharded, got = _train(two, _options(), xs, ys)
    single, expected = _train(one, _options(), xs, ys)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    for a, b in zip(two.parameters(), one.parameters()):
        np.testing.assert_allclose(a.detach(), b.detach(), rtol=1e-5,
                                   atol=1e-6)
    # The operations (the backward pass's too) are on both IPUs of the
    # sharded model's device, on one of the other's.
    assert sharded._ipus == 2 and single._ipus == 1
    assert sharded._session.opIpus() == [0, 1]
    assert single._session.opIpus() == [0]
    # A plain PyTorch run of the blocked model is unaffected by the blocks.
    with torch.no_grad():
        np.testing.assert_allclose(two(xs, ys)[0], one(xs, ys)[0],
                                   rtol=1e-5, atol=1e-6)


def test_block_places_its_modules_and_what_follows():
    torch.manual_seed(0)
    model = TwoBlocks(ipus=(1, 0))
    xs, ys = _data(MICRO)
    inference = poptorch.inferenceModel(model, _options(1))
    inference(xs, ys)
    assert inference._ipus == 2
    assert inference._session.opIpus() == [0, 1]
    placed = _placements(inference)
    # The features (nested Sequential too) on IPU 1, the flatten after
    # them too, the classifier and its loss on IPU 0.
    assert placed[:6] == [("Conv", 1), ("Relu", 1), ("MaxPool", 1),
                          ("Conv", 1), ("Tanh", 1), ("Flatten", 1)]
    assert placed[6:] == [("Gemm", 0), ("SoftmaxCrossEntropyLoss", 0)]


def _placements(model):
    parsed = _blocks._schema()()
    parsed.ParseFromString(model._proto)
    return [(n.name.split("/")[-1].split("_")[0],
             [a.i for a in n.attribute if a.name == "__ipu_number"][0])
            for n in parsed.graph.node]


def test_stages_of_sharded_execution_move_blocks_to_their_ipus():
    model = TwoBlocks(ipus=(0, 0))
    opts = _options(1).setExecutionStrategy(poptorch.ShardedExecution(
        poptorch.Stage("features"), poptorch.Stage("classifier").ipu(1)))
    xs, ys = _data(MICRO)
    inference = poptorch.inferenceModel(model, opts)
    inference(xs, ys)
    assert [ipu for _, ipu in _placements(inference)] == [0] * 6 + [1, 1]


def test_begin_block_on_a_module_inside_a_container():
    # PyTorch's exporter names a container's child by the container:
    # "/features/features.3/features.3.0/Conv".
    assert _blocks.scope_path("features.3.0") == \
        "/features/features.3/features.3.0/"
    assert _blocks.scope_path("model.classifier") == "/model/classifier/"
    model = TwoBlocks()
    model.features[3] = poptorch.BeginBlock(model.features[3], ipu_id=1)
    xs, ys = _data(MICRO)
    inference = poptorch.inferenceModel(model, _options(1))
    inference(xs, ys)
    assert [ipu for _, ipu in _placements(inference)] == \
        [0, 0, 0, 1, 1, 1, 1, 1]


def test_pipelined_execution_is_not_available_yet():
    with pytest.raises(NotImplementedError,
                       match="use poptorch.ShardedExecution"):
        poptorch.Options().setExecutionStrategy(
            poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    with pytest.raises(ValueError, match="give a poptorch.ShardedExecution"):
        poptorch.Options().setExecutionStrategy("sharded")
    with pytest.raises(ValueError, match="must be an IPU number"):
        poptorch.Block(ipu_id=-1)
