"""pipelining_ops.pipeline in TF1 graphs: a pipelined model trains to the
weights of the same model trained unpipelined with
GradientAccumulationOptimizerV2 of the same count, its outfeed gets the
last stage's outputs per micro-batch, and what a pipeline cannot run is an
exception with the core's message."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tessera
import tessera.tf.compat.v1 as tf
from tessera import ipu
from tessera.ipu import pipelining_ops

STAGES, COUNT, REPEATS, RUNS = 4, 4, 2, 3
MICRO, IN, WIDTH, OUT = 2, 5, 6, 3


@pytest.fixture(autouse=True)
def fresh_graph(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_SYSTEM_DIR", str(tmp_path / "ipus"))
    monkeypatch.delenv("TESSERA_SYSTEM", raising=False)
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()
    ipu.config.reset_ipu_configuration()


def configure(ipus, recompute=False):
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = ipus
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.allow_recompute = recompute
    cfg.configure_ipu_system()


def dataset():
    rng = np.random.default_rng(3)
    n = COUNT * REPEATS * RUNS * MICRO
    x = rng.standard_normal((n, IN)).astype(np.float32)
    y = np.tanh(x[:, :OUT] - 0.5 * x[:, IN - OUT:]).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(
        MICRO, drop_remainder=True).repeat()


def layer(k):
    """Stage k: a dense layer (tanh but on the last, which ends with the
    squared error); takes and returns (h, y), the last returns the loss."""
    def stage(h, y):
        last = k == STAGES - 1
        with tf.variable_scope("layer%d" % k, use_resource=True):
            h = tf.layers.dense(
                h, OUT if last else WIDTH, name="dense",
                kernel_initializer=tf.glorot_uniform_initializer(10 + k),
                bias_initializer=tf.constant_initializer(0.1 * k))
        if last:
            return tf.reduce_mean(tf.square(h - y))
        return tf.nn.tanh(h), y
    return stage


def optimizer():
    return tf.train.MomentumOptimizer(0.1, 0.9)


def weights():
    g = tf.get_default_graph()
    return {name: v for name, v in g.variables.items()
            if name.startswith("layer")}


def train_pipelined(schedule, mapping=None, recompute=False,
                    accumulation_dtype=None):
    configure(STAGES, recompute)
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset())
    outfeed = ipu.ipu_outfeed_queue.IPUOutfeedQueue()

    def optimizer_function(loss):
        return pipelining_ops.OptimizerFunctionOutput(optimizer(), loss)

    def net():
        return pipelining_ops.pipeline(
            [layer(k) for k in range(STAGES)],
            gradient_accumulation_count=COUNT, repeat_count=REPEATS,
            infeed_queue=infeed, outfeed_queue=outfeed,
            optimizer_function=optimizer_function,
            pipeline_schedule=schedule, device_mapping=mapping,
            gradient_accumulation_dtype=accumulation_dtype)

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        op = ipu.ipu_compiler.compile(net, [])
    deq = outfeed.dequeue()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(infeed.initializer)
        losses = []
        for _ in range(RUNS):
            sess.run(op)
            losses.extend(sess.run(deq).tolist())
        # The program ran as a pipeline: its ops carry their stages.
        text = sess._programs[("program", id(op.attrs["call"]))] \
            .program.text()
        assert "@stage(%d)" % (STAGES - 1) in text
        programs.append(text)
        return sess.run(weights()), losses


programs = []  # the IR text of each pipelined program trained


def backward_tanhs(text):
    return sum(" tanh(" in line and "@backward" in line
               for line in text.splitlines())


def train_accumulated():
    configure(1)
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset())
    outfeed = ipu.ipu_outfeed_queue.IPUOutfeedQueue()

    def body(x, y):
        args = (x, y)
        for k in range(STAGES - 1):
            args = layer(k)(*args)
        loss = layer(STAGES - 1)(*args)
        opt = ipu.optimizers.GradientAccumulationOptimizerV2(
            optimizer(), num_mini_batches=COUNT)
        return [opt.minimize(loss), outfeed.enqueue(loss)]

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        op = ipu.ipu_compiler.compile(
            lambda: ipu.loops.repeat(COUNT * REPEATS, body, [], infeed))
    deq = outfeed.dequeue()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(infeed.initializer)
        losses = []
        for _ in range(RUNS):
            sess.run(op)
            losses.extend(sess.run(deq).tolist())
        return sess.run(weights()), losses


@pytest.fixture(scope="module")
def reference():
    tf.reset_default_graph()
    try:
        return train_accumulated()
    finally:
        tf.reset_default_graph()
        ipu.config.reset_ipu_configuration()


def assert_same_training(got, want):
    (w_got, l_got), (w_want, l_want) = got, want
    assert len(l_got) == len(l_want) == COUNT * REPEATS * RUNS
    np.testing.assert_allclose(l_got, l_want, rtol=1e-5, atol=1e-6)
    assert l_want[-1] < l_want[0]
    assert sorted(w_got) == sorted(w_want) and len(w_got) == 2 * STAGES
    for name in w_want:
        np.testing.assert_allclose(w_got[name], w_want[name], rtol=1e-5,
                                   atol=1e-6, err_msg=name)


@pytest.mark.parametrize("schedule", [
    pipelining_ops.PipelineSchedule.Grouped,
    pipelining_ops.PipelineSchedule.Interleaved,
    pipelining_ops.PipelineSchedule.Sequential])
def test_pipeline_trains_as_gradient_accumulation(schedule, reference):
    assert_same_training(train_pipelined(schedule), reference)


def test_pipeline_with_recompute_and_a_device_mapping(reference):
    train_pipelined(pipelining_ops.PipelineSchedule.Grouped)
    tf.reset_default_graph()
    got = train_pipelined(pipelining_ops.PipelineSchedule.Grouped,
                          mapping=[3, 2, 1, 0], recompute=True)
    assert_same_training(got, reference)
    # The backward passes recompute the tanh of every stage but the last.
    assert backward_tanhs(programs[-1]) == \
        backward_tanhs(programs[-2]) + STAGES - 1


def test_half_gradient_accumulators(reference):
    w_half, _ = train_pipelined(pipelining_ops.PipelineSchedule.Grouped,
                                accumulation_dtype=tf.float16)
    w_want, _ = reference
    diff = max(np.abs(w_half[n] - w_want[n]).max() for n in w_want)
    assert 0 < diff < 1e-3  # rounded in half, still the same training


def test_device_mapping_naming_a_missing_ipu():
    with pytest.raises(ValueError, match="puts stage 3 on IPU 4, but the "
                       "model has 4 IPUs"):
        train_pipelined(pipelining_ops.PipelineSchedule.Grouped,
                        mapping=[0, 1, 2, 4])


def test_replicated_pipeline_is_refused(monkeypatch):
    # The session does not run a pipeline replicated (it would not return).
    monkeypatch.setattr(sys.modules[__name__], "configure",
                        lambda ipus, recompute=False: configure_8())
    with pytest.raises(NotImplementedError, match="the pipeline uses 4 IPUs "
                       "and the system has 8.*set auto_select_ipus to 4"):
        train_pipelined(pipelining_ops.PipelineSchedule.Grouped)


def configure_8():
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 8
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()


def test_grouped_needs_a_count_of_at_least_the_stages(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "COUNT", 2)
    with pytest.raises(ValueError, match="gradient accumulation count is 2 "
                       "for 4 stages; set it to at least 4"):
        train_pipelined(pipelining_ops.PipelineSchedule.Grouped)


def test_sequential_takes_a_count_below_the_stages(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "COUNT", 2)
    want = train_accumulated()
    tf.reset_default_graph()
    got = train_pipelined(pipelining_ops.PipelineSchedule.Sequential)
    assert_same_training(got, want)


def test_a_stage_using_what_a_later_stage_computes():
    # Stage 0 reads a value made in stage 1 (a tensor the stages share
    # through Python): the session refuses the order.
    configure(2)
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset())
    later = []

    def stage0(x, y):
        with tf.variable_scope("s0", use_resource=True):
            h = tf.layers.dense(x, WIDTH)
        return h, y

    def stage1(h, y):
        with tf.variable_scope("s1", use_resource=True):
            out = tf.layers.dense(h, OUT)
        later.append(out)
        return tf.reduce_mean(tf.square(out - y))

    def optimizer_function(loss):
        # Placed back in stage 0, an op reading stage 1's output.
        g = tf.get_default_graph()
        with g.placement(stage=0):
            loss = loss + tf.reduce_sum(later[0]) * 0.0
        return pipelining_ops.OptimizerFunctionOutput(
            tf.train.GradientDescentOptimizer(0.1), loss)

    def net():
        return pipelining_ops.pipeline(
            [stage0, stage1], gradient_accumulation_count=2,
            infeed_queue=infeed, optimizer_function=optimizer_function)

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        op = ipu.ipu_compiler.compile(net, [])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(infeed.initializer)
        with pytest.raises(ValueError, match="uses '.*' from stage 1; a "
                           "stage can only use values of itself or earlier "
                           "stages"):
            sess.run(op)


def test_accumulating_optimizer_in_a_pipeline_is_refused():
    configure(2)
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset())

    def optimizer_function(loss):
        return pipelining_ops.OptimizerFunctionOutput(
            ipu.optimizers.GradientAccumulationOptimizerV2(
                optimizer(), num_mini_batches=2), loss)

    def net():
        return pipelining_ops.pipeline(
            [layer(STAGES - 2), layer(STAGES - 1)],
            gradient_accumulation_count=2, infeed_queue=infeed,
            optimizer_function=optimizer_function)

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        with pytest.raises(ValueError, match="accumulates gradients itself"):
            ipu.ipu_compiler.compile(net, [])


def test_pipeline_outside_compile_is_refused():
    with pytest.raises(ValueError, match="inside ipu_compiler.compile"):
        pipelining_ops.pipeline([layer(0)], gradient_accumulation_count=2)


def test_pipelined_model_example(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(tessera.__file__))
    env["TESSERA_SYSTEM_DIR"] = str(tmp_path / "system")
    env.pop("TESSERA_SYSTEM", None)
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                           "python", "tf1", "pipelined_model.py")
    p = subprocess.run([sys.executable, example], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    losses = [float(line.split()[-1]) for line in lines
              if line.startswith("run ")]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert all("16 micro-batches" in line for line in lines[:3])
    assert float(lines[-1].split()[-1]) > 0.8  # the host's accuracy
    assert "Device /device:IPU:0 attached to IPUs: 24 (IPUs 0, 1, 2, 3)" \
        in p.stderr


def test_learning_rate_threaded_through_the_stages():
    # The seed's shape: the learning rate is an argument of the pipeline,
    # passed along the stages to the optimizer function.
    configure(2)
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset())
    outfeed = ipu.ipu_outfeed_queue.IPUOutfeedQueue()

    def stage0(lr, x, y):
        return (lr,) + tuple(layer(STAGES - 2)(x, y))

    def stage1(lr, h, y):
        return {"lr": lr, "loss": layer(STAGES - 1)(h, y)}

    def optimizer_function(lr, loss):
        return pipelining_ops.OptimizerFunctionOutput(
            tf.train.GradientDescentOptimizer(lr), loss)

    def net(lr):
        return pipelining_ops.pipeline(
            [stage0, stage1], gradient_accumulation_count=2, inputs=[lr],
            infeed_queue=infeed, outfeed_queue=outfeed,
            optimizer_function=optimizer_function)

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        op = ipu.ipu_compiler.compile(net, [0.25])
    deq = outfeed.dequeue()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(infeed.initializer)
        sess.run(op)
        out = sess.run(deq)
    assert sorted(out) == ["loss", "lr"]
    assert out["lr"].tolist() == [0.25, 0.25]
    assert out["loss"].shape == (2,)


def test_learning_rate_fed_each_run_is_refused():
    lr = tf.placeholder(np.float32, [])
    configure(2)
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset())

    def net(rate):
        return pipelining_ops.pipeline(
            [layer(STAGES - 2), layer(STAGES - 1)],
            gradient_accumulation_count=2, infeed_queue=infeed,
            optimizer_function=lambda loss:
            pipelining_ops.OptimizerFunctionOutput(
                tf.train.GradientDescentOptimizer(rate), loss))

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        with pytest.raises(TypeError, match="learning_rate must be a number "
                           "or a constant"):
            ipu.ipu_compiler.compile(net, [lr])


def concurrent(pipelined, mapping=None):
    """The seed's shape: a first stage, two concurrent stages on its output,
    a stage on both of theirs and a last one; trained pipelined (on 4 IPUs,
    by default the concurrent stages on IPUs 1 and 2 and the next stage
    sharing IPU 2) or, with the same ops in order, unpipelined with
    GradientAccumulationOptimizerV2."""
    configure(4 if pipelined else 1)
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset())
    outfeed = ipu.ipu_outfeed_queue.IPUOutfeedQueue()

    def dense(scope, x, units, seed):
        with tf.variable_scope(scope, use_resource=True):
            return tf.layers.dense(
                x, units, name="dense",
                kernel_initializer=tf.glorot_uniform_initializer(seed))

    def first(x, y):
        return tf.nn.tanh(dense("layer_first", x, WIDTH, 1)), y

    def left(h, y):
        return [tf.nn.tanh(dense("layer_left", h, WIDTH, 2))]

    def right(h, y):
        return tf.nn.tanh(dense("layer_right", h, WIDTH, 3)), y

    def mix(a, b, y):
        return dense("layer_mix", a, WIDTH, 4) + \
            dense("layer_mix2", b, WIDTH, 5), y

    def last(m, y):
        out = dense("layer_last", tf.nn.tanh(m), OUT, 6)
        return tf.reduce_mean(tf.square(out - y))

    def opt():
        return tf.train.GradientDescentOptimizer(0.2)

    if pipelined:
        def net():
            return pipelining_ops.pipeline(
                [first, [left, right], mix, last],
                gradient_accumulation_count=COUNT, repeat_count=REPEATS,
                infeed_queue=infeed, outfeed_queue=outfeed,
                optimizer_function=lambda loss:
                pipelining_ops.OptimizerFunctionOutput(opt(), loss),
                device_mapping=mapping or [0, [1, 2], 2, 3])
    else:
        def body(x, y):
            h, y = first(x, y)
            loss = last(*mix(*left(h, y), *right(h, y)))
            return [ipu.optimizers.GradientAccumulationOptimizerV2(
                opt(), COUNT).minimize(loss), outfeed.enqueue(loss)]

        def net():
            return ipu.loops.repeat(COUNT * REPEATS, body, [], infeed)
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        op = ipu.ipu_compiler.compile(net, [])
    deq = outfeed.dequeue()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(infeed.initializer)
        losses = []
        for _ in range(RUNS):
            sess.run(op)
            losses.extend(sess.run(deq).tolist())
        if pipelined:
            programs.append(sess._programs[("program", id(op.attrs["call"]))]
                            .program.text())
        return sess.run(weights()), losses


@pytest.mark.parametrize("mapping", [None, [0, [1, 1], 2, 3]],
                         ids=["two_ipus", "one_ipu"])
def test_concurrent_stages_take_the_same_inputs_and_concatenate(mapping):
    want = concurrent(False)
    tf.reset_default_graph()
    ipu.config.reset_ipu_configuration()
    (w_got, l_got), (w_want, l_want) = concurrent(True, mapping), want
    np.testing.assert_allclose(l_got, l_want, rtol=1e-5, atol=1e-6)
    assert l_want[-1] < l_want[0] and len(w_want) == 12
    for name in w_want:
        np.testing.assert_allclose(w_got[name], w_want[name], rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    # On two IPUs, the concurrent stages' ops are its sub-stages 0 and 1;
    # on one, stage 1 is one stage.
    left = [line for line in programs[-1].splitlines()
            if "layer_left" in line and "@stage(1)" in line]
    assert left and all(("@ipu(0)" in line) == (mapping is None)
                        for line in left)


def test_concurrent_stages_default_to_their_own_ipus():
    f = layer(0)
    assert pipelining_ops._mapping(None, [f, [f, f], f, f]) == \
        [0, [1, 2], 3, 4]


def test_concurrent_stage_on_a_missing_ipu():
    with pytest.raises(ValueError, match="puts sub-stage 1 of stage 1 on IPU "
                       "4, but the model has 4 IPUs"):
        concurrent(True, [0, [1, 4], 2, 3])


def test_concurrent_stages_need_an_ipu_each():
    with pytest.raises(ValueError, match="device_mapping\\[1\\] lists 3 "
                       "IPUs for 2 concurrent stages"):
        concurrent(True, [0, [1, 2, 3], 2, 3])


def test_inference_pipeline_is_refused():
    configure(2)
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset())
    outfeed = ipu.ipu_outfeed_queue.IPUOutfeedQueue()
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        with pytest.raises(NotImplementedError, match="give an "
                           "optimizer_function"):
            ipu.ipu_compiler.compile(lambda: pipelining_ops.pipeline(
                [layer(0), layer(1)], gradient_accumulation_count=2,
                infeed_queue=infeed, outfeed_queue=outfeed))
