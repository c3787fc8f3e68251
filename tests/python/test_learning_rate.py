"""Learning rates changed between device runs without recompiling:
tessera.keras' optimizer.learning_rate, LearningRateScheduler,
ReduceLROnPlateau and optimizers.schedules; PopTorch's optimizers stepped
by torch.optim.lr_scheduler; popart's updateOptimizerFromHost.

Each trains like a run that used the rate from the start for those steps
(a model compiled at the rate, or NumPy's SGD), and none compiles again:
the compile bar, which every compilation draws on stderr (the tests use no
executable cache), does not appear after the first fit."""

import numpy as np
import pytest

from conftest import clusters
from tessera import keras

BATCH = 16


def _model():
    model = keras.Sequential([
        keras.layers.Dense(6, activation="tanh", input_shape=(8,)),
        keras.layers.Dense(2, activation="softmax")])
    return model


def _compile(model, lr, **kwargs):
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr),
                  loss="sparse_categorical_crossentropy", **kwargs)


def _fit(model, x, y, **kwargs):
    return model.fit(x, y, batch_size=BATCH, shuffle=False, verbose=0,
                     **kwargs)


def _reference(initial, x, y, rates, **compile_kwargs):
    """The weights after one epoch at each of `rates`, recompiling the
    model (which keeps its weights) at each rate."""
    model = _model()
    _compile(model, rates[0], **compile_kwargs)
    model.set_weights(initial)
    for r in rates:
        _compile(model, r, **compile_kwargs)
        _fit(model, x, y, epochs=1)
    return model.get_weights()


def _compilations(capsys):
    """How many compile bars (one line each, redrawn with carriage
    returns) stderr received since the last call."""
    return sum("Compilation Finished" in line
               for line in capsys.readouterr().err.split("\n"))


def _compiled_and_reset(model, x, y, capsys):
    """Trains one epoch, so the training program is compiled, then puts
    the first weights back (SGD keeps no state) and clears stderr."""
    initial = model.get_weights()
    _fit(model, x, y, epochs=1)
    model.set_weights(initial)
    assert _compilations(capsys) >= 1
    return initial


def _assert_same_weights(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_setting_the_learning_rate_trains_with_it_without_recompiling(
        capsys):
    x, y = clusters(64)
    model = _model()
    _compile(model, 0.1)
    initial = model.get_weights()
    _fit(model, x, y, epochs=1)
    assert _compilations(capsys) >= 1
    model.optimizer.learning_rate = 0.5
    assert float(model.optimizer.lr) == pytest.approx(0.5)
    _fit(model, x, y, epochs=1)
    keras.backend.set_value(model.optimizer.lr, 0.02)
    assert keras.backend.get_value(model.optimizer.learning_rate) == \
        pytest.approx(0.02)
    _fit(model, x, y, epochs=1)
    assert _compilations(capsys) == 0
    expected = _reference(initial, x, y, [0.1, 0.5, 0.02])
    _assert_same_weights(model.get_weights(), expected)
    # Not trained at the first rate throughout.
    other = _reference(initial, x, y, [0.1, 0.1, 0.1])
    assert not np.allclose(model.get_weights()[0], other[0])


def test_learning_rate_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        keras.optimizers.SGD(learning_rate=0.0)
    model = _model()
    _compile(model, 0.1)
    with pytest.raises(ValueError, match="positive"):
        model.optimizer.learning_rate = -1.0
    assert float(model.optimizer.learning_rate) == pytest.approx(0.1)


@pytest.mark.parametrize("two_arguments", [True, False])
def test_learning_rate_scheduler_sets_each_epochs_rate(capsys,
                                                       two_arguments):
    x, y = clusters(64)
    model = _model()
    _compile(model, 0.2)
    initial = _compiled_and_reset(model, x, y, capsys)
    if two_arguments:
        def schedule(epoch, lr):
            return lr if epoch == 0 else lr * 0.5
    else:
        def schedule(epoch):
            return 0.2 * 0.5 ** epoch
    history = _fit(model, x, y, epochs=3,
                   callbacks=[keras.callbacks.LearningRateScheduler(
                       schedule)])
    assert _compilations(capsys) == 0
    assert history.history["lr"] == pytest.approx([0.2, 0.1, 0.05])
    expected = _reference(initial, x, y, [0.2, 0.1, 0.05])
    _assert_same_weights(model.get_weights(), expected)


def test_reduce_lr_on_plateau_reduces_after_patience(capsys):
    x, y = clusters(64)
    model = _model()
    _compile(model, 0.2)
    initial = _compiled_and_reset(model, x, y, capsys)
    # No epoch improves the loss by min_delta after the first, so each
    # later one with patience 1 halves the rate, down to min_lr.
    cb = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5,
                                           patience=1, min_delta=10.0,
                                           min_lr=0.06)
    history = _fit(model, x, y, epochs=4, callbacks=[cb])
    assert _compilations(capsys) == 0
    rates = [0.2, 0.2, 0.1, 0.06]
    assert history.history["lr"] == pytest.approx(rates)
    assert float(model.optimizer.learning_rate) == pytest.approx(0.06)
    _assert_same_weights(model.get_weights(),
                         _reference(initial, x, y, rates))


class _FakeModel:
    def __init__(self, lr):
        self.optimizer = keras.optimizers.SGD(learning_rate=lr)


def test_reduce_lr_on_plateau_cooldown_and_max_mode():
    cb = keras.callbacks.ReduceLROnPlateau(monitor="val_accuracy",
                                           factor=0.1, patience=2,
                                           cooldown=1, min_delta=0.0)
    cb.set_model(_FakeModel(1.0))
    cb.on_train_begin()
    rates = []
    for epoch, acc in enumerate([0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.7]):
        logs = {"val_accuracy": acc}
        cb.on_epoch_end(epoch, logs)
        rates.append(float(cb.model.optimizer.learning_rate))
    # "auto" watches accuracy rising. Two flat epochs (2, 3) reduce; the
    # cooldown epoch (4) ends the cooldown and counts as Keras counts it,
    # so 5 reduces again; 6 is the next cooldown epoch.
    assert rates == pytest.approx([1, 1, 1, 0.1, 0.1, 0.01, 0.01, 0.01])
    with pytest.raises(ValueError, match="below 1"):
        keras.callbacks.ReduceLROnPlateau(factor=1.5)


def test_schedules_follow_keras_formulas():
    from tessera.tf.keras.optimizers.schedules import ExponentialDecay
    s = keras.optimizers.schedules
    assert ExponentialDecay is s.ExponentialDecay
    e = s.ExponentialDecay(0.1, decay_steps=4, decay_rate=0.5)
    assert e(0) == pytest.approx(0.1) and e(6) == pytest.approx(0.1 * 0.5**1.5)
    e = s.ExponentialDecay(0.1, 4, 0.5, staircase=True)
    assert e(7) == pytest.approx(0.05) and e(8) == pytest.approx(0.025)
    p = s.PiecewiseConstantDecay([2, 5], [1.0, 0.5, 0.1])
    assert [p(i) for i in (0, 2, 3, 5, 6)] == [1.0, 1.0, 0.5, 0.5, 0.1]
    with pytest.raises(ValueError, match="3 values"):
        s.PiecewiseConstantDecay([2, 5], [1.0, 0.5])
    assert s.InverseTimeDecay(1.0, 2, 0.5)(4) == pytest.approx(0.5)
    poly = s.PolynomialDecay(1.0, 10, end_learning_rate=0.1, power=2)
    assert poly(5) == pytest.approx(0.9 * 0.25 + 0.1)
    assert poly(20) == pytest.approx(0.1)


def test_schedule_as_learning_rate_matches_numpy_sgd(capsys):
    """A linear regression trained by SGD on mean squared error: the
    schedule's rate at each run's first step trains that run."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]])
         + 0.1).astype(np.float32)
    schedule = keras.optimizers.schedules.PiecewiseConstantDecay(
        [3, 6], [0.1, 0.05, 0.01])
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(4,))])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=schedule),
                  loss="mse", steps_per_execution=2)
    w, b = [a.astype(np.float64) for a in model.get_weights()]
    _compilations(capsys)
    _fit(model, x, y, epochs=3)
    # The training program, once, for the six runs at three rates.
    assert _compilations(capsys) == 1
    assert model.optimizer.iterations == 12
    assert float(model.optimizer.learning_rate) == pytest.approx(0.01)
    step = 0
    for _ in range(3):
        for i in range(0, 64, BATCH):
            xb, yb = x[i:i + BATCH], y[i:i + BATCH]
            lr = schedule(step - step % 2)  # fixed for each run of 2
            err = xb @ w + b - yb
            w = w - lr * 2 * xb.T @ err / BATCH
            b = b - lr * 2 * err.sum(axis=0) / BATCH
            step += 1
    got_w, got_b = model.get_weights()
    np.testing.assert_allclose(got_w, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_b, b, rtol=1e-5, atol=1e-6)


# ---- PopTorch and popart ------------------------------------------------


# PopTorch steps the optimizer on the device, never torch's step(), which
# torch's scheduler warns about.
@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step")
def test_poptorch_step_lr_follows_pytorch_without_rebuilding():
    torch = pytest.importorskip("torch")
    import poptorch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(8, 6)
            self.fc2 = torch.nn.Linear(6, 3)
            self.loss = torch.nn.CrossEntropyLoss()

        def forward(self, x, labels):
            out = self.fc2(torch.tanh(self.fc1(x)))
            return out, self.loss(out, labels)

    torch.manual_seed(0)
    model, reference = Net(), Net()
    reference.load_state_dict(model.state_dict())
    g = torch.Generator().manual_seed(2)
    xs = torch.randn(8, 4, 8, generator=g)
    ys = (xs[:, :, 0] > 0).long() + (xs[:, :, 1] > 0).long()

    def optimizer_and_scheduler(params, lib):
        opt = lib.SGD(params, lr=0.2, momentum=0.9)
        return opt, torch.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)

    opt, sched = optimizer_and_scheduler(model.parameters(), poptorch.optim)
    opts = poptorch.Options().tilesPerIpu(16)
    training = poptorch.trainingModel(model, opts, opt)
    got = []
    session = None
    for s in range(8):
        _, loss = training(xs[s], ys[s])
        session = session or training._session
        assert training._session is session  # no rebuild for the rates
        got.append(float(loss))
        sched.step()
    ropt, rsched = optimizer_and_scheduler(reference.parameters(),
                                           torch.optim)
    expected = []
    for s in range(8):
        ropt.zero_grad()
        _, loss = reference(xs[s], ys[s])
        loss.backward()
        ropt.step()
        expected.append(loss.item())
        rsched.step()
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    for a, b in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                                   rtol=1e-4, atol=1e-5)
    # A compiled-in setting still rebuilds, keeping the state.
    opt.param_groups[0]["weight_decay"] = 1e-3
    training(xs[0], ys[0])
    assert training._session is not session


def test_popart_update_optimizer_from_host():
    popart = pytest.importorskip("popart")
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [4, 2]))
    w = builder.addInitializedInputTensor(np.ones([2, 1], np.float32))
    y = builder.aiOnnx.matmul([x, w])
    loss = builder.aiGraphcore.l1loss([y], 1.0)
    builder.addOutputTensor(loss)

    def train(rates):
        session = popart.TrainingSession(
            fnModel=builder.getModelProto(),
            dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType(
                "ALL")}),
            loss=loss, optimizer=popart.ConstSGD(rates[0]),
            deviceInfo=popart.DeviceManager().createIpuModelDevice(
                {"tilesPerIPU": 16}))
        session.prepareDevice()
        session.weightsFromHost()
        anchors = session.initAnchorArrays()
        data = np.arange(8, dtype=np.float32).reshape(4, 2)
        for r in rates:
            session.updateOptimizerFromHost(popart.ConstSGD(r))
            session.run(popart.PyStepIO({x: data}, anchors))
        return session, session.readWeights()[w]

    session, got = train([0.1, 0.01])
    # l1 loss of x @ w (all positive): the gradient of w is x's column
    # sums (times the loss scale 1.0, mean over the batch of 4).
    grad = np.arange(8, dtype=np.float32).reshape(4, 2).sum(0) / 4
    np.testing.assert_allclose(np.ravel(got), 1 - 0.11 * grad, rtol=1e-6)
    with pytest.raises(popart.popart_exception, match="compiled in"):
        session.updateOptimizerFromHost(popart.ConstSGD(0.1, 0.5))
