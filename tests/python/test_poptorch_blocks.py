"""poptorch: Block, BeginBlock, Stage and the execution strategies.

Blocks on several IPUs run as a pipeline (PipelinedExecution, the
default) or sharded (ShardedExecution: each block's operations on its
IPU, one after the other); either gives the results of the model on one
IPU with the same gradient accumulation."""

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


def _options(iterations=2, strategy=None):
    opts = (poptorch.Options().deviceIterations(iterations).tilesPerIpu(16)
            .outputMode(poptorch.OutputMode.All))
    return opts.setExecutionStrategy(strategy or poptorch.ShardedExecution())


def _data(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(n, 1, 8, 8, generator=g)
    ys = (xs[:, 0, :4, :4].sum(dim=(1, 2)).clamp(-4.9, 4.9) + 5).long()
    return xs, ys


def _train(model, opts, xs, ys, calls=3, momentum=0.0):
    training = poptorch.trainingModel(
        model, opts, poptorch.optim.SGD(model.parameters(), lr=0.05,
                                        momentum=momentum))
    per_call = MICRO * opts.combined_batch_factor
    losses = [training(xs[c * per_call:(c + 1) * per_call],
                       ys[c * per_call:(c + 1) * per_call])[1]
              for c in range(calls)]
    return training, torch.cat(losses).numpy()


@pytest.mark.parametrize("blocks", [dict(ipus=(0, 1)), dict(auto=True)])
def test_two_sharded_blocks_on_two_ipus_train_as_on_one(blocks):
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


def _placements(model, stages=False):
    """(op type, IPU) of each node of the model's ONNX file, and its
    pipeline stage with stages."""
    parsed = _blocks._schema()()
    parsed.ParseFromString(model._proto)

    def attr(n, name):
        return [a.i for a in n.attribute if a.name == name][0]
    return [(n.name.split("/")[-1].split("_")[0], attr(n, "__ipu_number"))
            + ((attr(n, "__pipeline_stage"),) if stages else ())
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


class FourBlocks(nn.Module):
    """Four dense layers, layer k in Block str(k) on IPU ipus[k] (no
    blocks without ipus), and a mean squared error."""

    def __init__(self, ipus=None):
        super().__init__()
        self.layers = nn.ModuleList(
            [nn.Linear(a, b) for a, b in ((6, 8), (8, 8), (8, 8), (8, 3))])
        self.ipus = ipus

    def forward(self, x, y):
        for k, layer in enumerate(self.layers):
            if self.ipus:
                with poptorch.Block(str(k), ipu_id=self.ipus[k]):
                    x = layer(x)
            else:
                x = layer(x)
            if k < 3:
                x = torch.tanh(x)
        return x, ((x - y) * (x - y)).mean()


def _regression(n, seed=2):
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(n, 6, generator=g)
    return xs, torch.sin(xs[:, :3] * 2) + xs[:, 3:] * 0.5


def _pipelined(opts, accumulation=4):
    opts.Training.gradientAccumulation(accumulation)
    return opts


def _expect_same_training(got_model, want_model, got, want, learns=True):
    np.testing.assert_allclose(got, want, rtol=1e-5)
    if learns:
        assert want[-8:].mean() < 0.9 * want[:8].mean()
    for a, b in zip(got_model.parameters(), want_model.parameters()):
        np.testing.assert_allclose(a.detach(), b.detach(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("schedule", [None, "Interleaved"])
def test_four_pipelined_blocks_train_as_on_one_ipu(schedule):
    torch.manual_seed(0)
    one, four = FourBlocks(), FourBlocks(ipus=(0, 1, 2, 3))
    four.load_state_dict(one.state_dict())
    xs, ys = _regression(3 * 2 * 4 * MICRO)
    opts = _pipelined(_options(2, poptorch.PipelinedExecution()))
    if schedule:
        opts._Popart.set("pipelineSchedule", schedule)
    pipelined, got = _train(four, opts, xs, ys, momentum=0.9)
    single, want = _train(one, _pipelined(_options(2)), xs, ys,
                          momentum=0.9)
    _expect_same_training(four, one, got, want)
    assert pipelined._stages == 4 and pipelined._ipus == 4
    assert pipelined._session.opStages() == [0, 1, 2, 3]
    assert single._session.opStages() == []
    placed = _placements(pipelined, True)
    assert all(ipu == stage for _, ipu, stage in placed)
    assert sorted({stage for _, _, stage in placed}) == [0, 1, 2, 3]


@pytest.mark.parametrize("blocks,replicas", [(dict(ipus=(0, 1)), 1),
                                             (dict(auto=True), 1),
                                             (dict(ipus=(0, 1)), 2)])
def test_two_pipelined_blocks_by_default_train_as_on_one_ipu(blocks,
                                                             replicas):
    torch.manual_seed(0)
    one, two = TwoBlocks(), TwoBlocks(**blocks)
    two.load_state_dict(one.state_dict())
    xs, ys = _data(3 * 2 * 4 * replicas * MICRO)
    # PipelinedExecution is the default strategy.
    opts = _pipelined(poptorch.Options().deviceIterations(2)
                      .replicationFactor(replicas).tilesPerIpu(16)
                      .outputMode(poptorch.OutputMode.All))
    pipelined, got = _train(two, opts, xs, ys, momentum=0.9)
    single, want = _train(one, _pipelined(_options(2).replicationFactor(
        replicas)), xs, ys, momentum=0.9)
    # (The classifier learns slowly; equal weights after the momentum
    # steps show the updates match.)
    _expect_same_training(two, one, got, want, learns=False)
    assert pipelined._stages == 2 and pipelined._ipus == 2
    assert pipelined._session.opStages() == [0, 1]


def test_pipeline_stages_from_stage_objects_and_auto_increment():
    xs, ys = _regression(MICRO)
    # Blocks "0" and "1" in one stage on IPU 0, "2" and "3" in another on
    # IPU 1, whatever the blocks' own IPUs.
    strategy = poptorch.PipelinedExecution(
        poptorch.Stage("0", "1").ipu(0), poptorch.Stage("2", "3").ipu(1))
    model = poptorch.inferenceModel(FourBlocks(ipus=(0, 1, 2, 3)),
                                    _options(1, strategy))
    model(xs, ys)
    placed = _placements(model, True)
    assert {(ipu, stage) for _, ipu, stage in placed} == {(0, 0), (1, 1)}
    # AutoIncrement: each block its own stage, on its own IPU.
    strategy = poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement)
    model = poptorch.inferenceModel(FourBlocks(ipus=(0, 0, 1, 1)),
                                    _options(1, strategy))
    model(xs, ys)
    assert sorted({(ipu, stage) for _, ipu, stage in
                   _placements(model, True)}) == \
        [(0, 0), (0, 1), (1, 2), (1, 3)]


def test_pipelined_execution_needs_gradient_accumulation_of_the_stages():
    xs, ys = _regression(2 * 2 * MICRO)
    training = poptorch.trainingModel(
        FourBlocks(ipus=(0, 1, 2, 3)),
        _pipelined(_options(2, poptorch.PipelinedExecution()), 2))
    with pytest.raises(poptorch.Error,
                       match=r"gradientAccumulation is 2, but with "
                             r"poptorch.PipelinedExecution it must be "
                             r"greater than or equal to the number of "
                             r"pipeline stages \(4\)"):
        training(xs, ys)
    # A block in no stage of the strategy's poptorch.Stage objects.
    strategy = poptorch.PipelinedExecution(poptorch.Stage("0", "1", "2"))
    model = poptorch.inferenceModel(FourBlocks(ipus=(0, 1, 2, 3)),
                                    _options(1, strategy))
    with pytest.raises(ValueError, match="block '3' is in none"):
        model(xs[:MICRO], ys[:MICRO])


def test_execution_strategy_errors():
    with pytest.raises(ValueError, match="give a poptorch.PipelinedExecution"):
        poptorch.Options().setExecutionStrategy("sharded")
    with pytest.raises(ValueError, match="must be an IPU number"):
        poptorch.Block(ipu_id=-1)
    with pytest.raises(ValueError, match="use one of"):
        poptorch.Options()._Popart.set("pipelineSchedule", "bubbly")
