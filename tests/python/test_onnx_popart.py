"""The popart package: PopART's Python API over Tessera's ONNX importer."""

import numpy as np
import pytest

import popart


def _device():
    return popart.DeviceManager().createIpuModelDevice(
        {"numIPUs": 1, "tilesPerIPU": 16})


def _mlp(builder, w_value, b_value):
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [4, 2]), "x")
    w = builder.addInitializedInputTensor(w_value, "w")
    b = builder.addInitializedInputTensor(b_value, "b")
    y = builder.aiOnnx.relu([builder.aiOnnx.add(
        [builder.aiOnnx.matmul([x, w]), b])])
    return x, y


def test_inference_matches_numpy_for_every_batch():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    builder = popart.Builder()
    x, y = _mlp(builder, w, b)
    builder.addOutputTensor(y)
    session = popart.InferenceSession(
        fnModel=builder.getModelProto(),
        dataFlow=popart.DataFlow(3, {y: popart.AnchorReturnType("ALL")}),
        deviceInfo=_device())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    assert anchors[y].shape == (3, 4, 3)
    xs = rng.standard_normal((3, 4, 2)).astype(np.float32)
    session.weightsFromHost()
    session.run(popart.PyStepIO({x: xs}, anchors))
    np.testing.assert_allclose(anchors[y], np.maximum(xs @ w + b, 0),
                               rtol=1e-5, atol=1e-6)


def test_anchor_return_types_final_everyn_and_sum():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    two = builder.aiOnnx.constant(np.array(2.0, np.float32))
    y = builder.aiOnnx.mul([x, two], "double")
    z = builder.aiOnnx.identity([y], "copy")
    s = builder.aiOnnx.identity([y], "total")
    builder.addOutputTensor(y)
    flow = popart.DataFlow(4, {y: popart.AnchorReturnType("FINAL"),
                               z: popart.AnchorReturnType("EVERYN", 2),
                               s: popart.AnchorReturnType("SUM")})
    session = popart.InferenceSession(builder.getModelProto(), flow,
                                      _device())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    xs = np.arange(8, dtype=np.float32).reshape(4, 2)
    session.run(popart.PyStepIO({x: xs}, anchors))
    np.testing.assert_array_equal(anchors[y], [12, 14])
    np.testing.assert_array_equal(anchors[z], [[4, 6], [12, 14]])
    np.testing.assert_array_equal(anchors[s], [24, 32])


def test_training_takes_sgd_steps_and_writes_the_trained_model(tmp_path):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 2]), "x")
    w0 = np.array([[0.5], [-0.5]], np.float32)
    w = builder.addInitializedInputTensor(w0, "w")
    p = builder.aiOnnx.matmul([x, w])
    loss = builder.aiGraphcore.l1loss([p], 1.0, popart.ReductionType.Sum)
    builder.addOutputTensor(loss)
    session = popart.TrainingSession(
        fnModel=builder.getModelProto(),
        dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("ALL")}),
        loss=loss, optimizer=popart.ConstSGD(0.1), deviceInfo=_device())
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    xs = np.array([[1, 2], [3, 1]], np.float32)
    session.run(popart.PyStepIO({x: xs}, anchors))
    # loss = sum |x w|: rows -0.5 and 1.0; gradient sign(xw) . x.
    assert anchors[loss] == pytest.approx(1.5)
    grad = np.array([[-1 * 1 + 1 * 3], [-1 * 2 + 1 * 1]], np.float32)
    expected = w0 - 0.1 * grad
    np.testing.assert_allclose(session.readWeights()["w"], expected,
                               rtol=1e-6)
    path = str(tmp_path / "trained.onnx")
    session.modelToHost(path)
    infer = popart.InferenceSession(
        path, popart.DataFlow(1, {p: popart.AnchorReturnType("ALL")}),
        _device())
    infer.prepareDevice()
    out = infer.initAnchorArrays()
    infer.run(popart.PyStepIO({x: xs}, out))
    np.testing.assert_allclose(out[p], xs @ expected, rtol=1e-6)


def test_unsupported_operator_names_the_node_and_op_type():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    y = builder._b.addNode("Einsum", [x], {}, 1, "contract")[0]
    builder.addOutputTensor(y)
    with pytest.raises(popart.popart_exception,
                       match=r"node 'contract' \(Einsum, opset 12\)"):
        popart.InferenceSession(
            builder.getModelProto(),
            popart.DataFlow(1, {y: popart.AnchorReturnType("ALL")}),
            _device())


def test_bytes_that_are_not_onnx_are_an_error():
    with pytest.raises(popart.popart_exception, match="not a valid ONNX"):
        popart.InferenceSession(b"\x0a\x05hello\xff",
                                popart.DataFlow(1, {}), _device())


def _dropout_model():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [10, 100]), "x")
    w = builder.addInitializedInputTensor(np.ones([1], np.float32), "w")
    y = builder.aiOnnx.dropout([builder.aiOnnx.mul([x, w])], 1, 0.4)[0]
    zero = builder.aiOnnx.constant(np.array(0.0, np.float32))
    loss = builder.aiOnnx.mul([builder.aiOnnx.reducesum([y], keepdims=0),
                               zero])
    builder.addOutputTensor(y)
    return builder.getModelProto(), x, y, loss


def test_dropout_drops_in_training_and_not_in_inference():
    proto, x, y, loss = _dropout_model()
    xs = np.full((2, 10, 100), 3.0, np.float32)
    flow = popart.DataFlow(2, {y: popart.AnchorReturnType("ALL")})
    training = popart.TrainingSession(
        fnModel=proto, dataFlow=flow, loss=loss,
        optimizer=popart.ConstSGD(0.1), deviceInfo=_device())
    training.prepareDevice()
    training.setRandomSeed(3)
    anchors = training.initAnchorArrays()
    training.run(popart.PyStepIO({x: xs}, anchors))
    kept = anchors[y] != 0
    assert abs(1 - kept.mean() - 0.4) < 0.05
    np.testing.assert_allclose(anchors[y][kept], 3 / 0.6, rtol=1e-6)
    assert (kept[0] != kept[1]).any()  # each step its own mask
    inference = popart.InferenceSession(proto, flow, _device())
    inference.prepareDevice()
    anchors = inference.initAnchorArrays()
    inference.run(popart.PyStepIO({x: xs}, anchors))
    np.testing.assert_array_equal(anchors[y], xs)


def _staged_mlp(placed, widths=(6, 8, 8, 3)):
    """Three dense layers (tanh between them) and a mean squared error;
    with placed, layer k is pipeline stage k on IPU k (the context
    managers' form)."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, widths[0]]),
                               "x")
    y = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, widths[-1]]),
                               "y")
    h = x
    for k in range(len(widths) - 1):
        w = np.sin(np.arange(widths[k] * widths[k + 1]) * 1.7 + k) * 0.4
        with builder.pipelineStage(k) if placed else _nothing(), \
                builder.virtualGraph(k) if placed else _nothing():
            w = builder.addInitializedInputTensor(
                w.reshape(widths[k], widths[k + 1]).astype(np.float32))
            h = builder.aiOnnx.matmul([h, w])
            if k + 2 < len(widths):
                h = builder.aiOnnx.tanh([h])
            else:
                d = builder.aiOnnx.sub([h, y])
                loss = builder.aiOnnx.reducemean(
                    [builder.aiOnnx.mul([d, d])], keepdims=0)
    builder.addOutputTensor(loss)
    return builder.getModelProto(), x, y, loss


def _nothing():
    import contextlib
    return contextlib.nullcontext()


def _train_staged(placed, pipelining, accumulation=4, ipus=3, runs=3,
                  schedule=None):
    proto, x, y, loss = _staged_mlp(placed)
    opts = popart.SessionOptions()
    opts.enableGradientAccumulation = True
    opts.accumulationFactor = accumulation
    opts.enablePipelining = pipelining
    if schedule:
        opts.pipelineSchedule = schedule
    session = popart.TrainingSession(
        fnModel=proto,
        dataFlow=popart.DataFlow(2, {loss: popart.AnchorReturnType("ALL")}),
        loss=loss,
        optimizer=popart.SGD({"defaultLearningRate": (0.05, True),
                              "defaultMomentum": (0.9, True)}),
        deviceInfo=popart.DeviceManager().createIpuModelDevice(
            {"numIPUs": ipus, "tilesPerIPU": 16}),
        userOptions=opts)
    session.prepareDevice()
    session.weightsFromHost()
    losses = []
    rows = np.arange(runs * 2 * accumulation * 2, dtype=np.float32)
    for r in range(runs):
        part = rows[r * 2 * accumulation * 2:(r + 1) * 2 * accumulation * 2]
        xs = np.sin(part[:, None] * 0.37 + np.arange(6)).astype(np.float32)
        ys = np.cos(part[:, None] * 0.21 + np.arange(3)).astype(np.float32)
        anchors = session.initAnchorArrays()
        session.run(popart.PyStepIO(
            {x: xs.reshape(2, accumulation, 2, 6),
             y: ys.reshape(2, accumulation, 2, 3)}, anchors))
        losses.append(anchors[loss].ravel().copy())
    return np.concatenate(losses), session


@pytest.mark.parametrize("schedule", [None, "Interleaved"])
def test_pipelined_training_matches_accumulation_on_one_ipu(schedule):
    got, pipelined = _train_staged(True, True, schedule=schedule)
    want, single = _train_staged(False, False, ipus=1)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert want[-1] < 0.8 * want[0]
    for name, value in single.readWeights().items():
        np.testing.assert_allclose(pipelined.readWeights()[name], value,
                                   rtol=1e-5, atol=1e-6)
    assert pipelined.opStages() == [0, 1, 2]
    assert single.opStages() == []


def test_without_enable_pipelining_stages_are_ignored_and_nodes_shard():
    got, sharded = _train_staged(True, False, accumulation=1)
    want, _ = _train_staged(False, False, accumulation=1, ipus=1)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert sharded.opIpus() == [0, 1, 2]
    assert sharded.opStages() == []


def test_pipelining_errors_say_what_to_change():
    with pytest.raises(popart.popart_exception,
                       match="accumulation factor of at least the number "
                             "of stages .PopART's rule.*at least 3"):
        _train_staged(True, True, accumulation=2)
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    with builder.pipelineStage(0):
        with builder.virtualGraph(0):
            h = builder.aiOnnx.neg([x])
        with builder.virtualGraph(1):
            h = builder.aiOnnx.exp([h])
    builder.addOutputTensor(h)
    opts = popart.SessionOptions()
    opts.enablePipelining = True
    with pytest.raises(popart.popart_exception,
                       match="pipeline stage 0 is spread over IPUs 0 .* "
                             "and 1"):
        popart.TrainingSession(
            fnModel=builder.getModelProto(),
            dataFlow=popart.DataFlow(1, {h: popart.AnchorReturnType("ALL")}),
            loss=h, optimizer=popart.ConstSGD(0.1),
            deviceInfo=popart.DeviceManager().createIpuModelDevice(
                {"numIPUs": 2, "tilesPerIPU": 16}),
            userOptions=opts)
