"""TensorFlow-1-style graph programs (tessera.tf.compat.v1 and the TF1
modules of tessera.ipu): the seeds' example programs, run as scripts with
their outputs checked, and the graph, session and error behaviour they
rely on."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tessera
import tessera.tf.compat.v1 as tf
from tessera import ipu

_EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                         "python", "tf1")


@pytest.fixture(autouse=True)
def fresh_graph(tmp_path, monkeypatch):
    """A new default graph, and an IPU system of this test's own (so the
    IPUs sessions attach do not depend on other processes)."""
    monkeypatch.setenv("TESSERA_SYSTEM_DIR", str(tmp_path / "ipus"))
    monkeypatch.delenv("TESSERA_SYSTEM", raising=False)
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def run_example(name, tmp_path):
    """Runs examples/python/tf1/<name> in its own process (its own IPU
    system folder, so the IPUs it attaches are known); returns (stdout,
    stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(tessera.__file__))
    env["TESSERA_SYSTEM_DIR"] = str(tmp_path / "system")
    env.pop("TESSERA_SYSTEM", None)
    p = subprocess.run([sys.executable, os.path.join(_EXAMPLES, name)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr


# ---- the seeds' programs ---------------------------------------------------

def test_basic_add_example_prints_the_sum(tmp_path):
    out, err = run_example("basic_add.py", tmp_path)
    assert out.strip() == "[3. 8.]"
    # ipu_scope placed the sum on the IPU, as the tutorial's log shows.
    assert "Device /device:IPU:0 attached to IPU: 0 (IPUs 0)" in err


def test_sharded_sum_example_runs_on_a_4_ipu_device(tmp_path):
    out, err = run_example("sharded_sum.py", tmp_path)
    assert out.strip() == "[array([ 4., 14.], dtype=float32)]"
    # The first 4-IPU device of a 16-IPU system is 24 (IPUs 0 to 3), as
    # the tutorial's log shows a multi-IPU id.
    assert "Device /device:IPU:0 attached to IPUs: 24 (IPUs 0, 1, 2, 3)" \
        in err


def test_training_loop_example_outfeeds_every_iteration(tmp_path):
    out, _ = run_example("training_loop.py", tmp_path)
    assert "'d1': array([[2., 2., 2., ..., 2., 2., 2.]," in out
    assert "'d2': array([[0., 0., 0., ..., 0., 0., 0.]," in out


def test_train_mlp_example_learns(tmp_path):
    out, _ = run_example("train_mlp.py", tmp_path)
    lines = out.strip().splitlines()
    losses = [float(l.split("mean loss ")[1].split()[0])
              for l in lines if l.startswith("run ")]
    assert len(losses) == 3 and losses[2] < losses[0] < 0.7
    assert "global step: 150" in lines
    assert float(lines[-1].split()[-1]) > 0.95


# ---- graphs and sessions ---------------------------------------------------

def test_session_holds_the_ipus_while_open():
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 2
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()
    a = tf.placeholder(np.float32, [2])
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        r = ipu.ipu_compiler.compile(lambda x: x * 2.0, [a])
    with tf.Session() as sess:
        assert sess.run(r, {a: [1., 2.]})[0].tolist() == [2., 4.]
        held = set(sess._device.ipus)
        other = tessera._tessera.acquire_ipus(2)
        assert held and not held & set(other.ipus)
        other.detach()
    again = tessera._tessera.acquire_ipus(2)
    assert set(again.ipus) == held  # freed when the session closed
    again.detach()


def test_host_and_ipu_training_take_the_same_steps():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    y = (np.arange(8) % 3).astype(np.int32)
    px = tf.placeholder(np.float32, [8, 4], name="x")
    py = tf.placeholder(np.int32, [8], name="y")

    def step(xx, yy, scope):
        with tf.variable_scope(scope, use_resource=True):
            logits = tf.layers.dense(
                xx, 3, name="dense",
                kernel_initializer=tf.glorot_uniform_initializer(7))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=yy, logits=logits))
        return tf.train.MomentumOptimizer(0.5, 0.9).minimize(loss)

    host_step = step(px, py, "host")
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        ipu_step = ipu.ipu_compiler.compile(
            lambda a, b: step(a, b, "dev"), [px, py])
    g = tf.get_default_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        w0 = sess.run(g.variables["host/dense/kernel"])
        np.testing.assert_array_equal(w0, sess.run(g.variables[
            "dev/dense/kernel"]))
        for _ in range(4):
            sess.run([host_step, ipu_step], {px: x, py: y})
        wh = sess.run(g.variables["host/dense/kernel"])
        wd = sess.run(g.variables["dev/dense/kernel"])
    assert np.abs(wh - w0).max() > 0.05
    np.testing.assert_allclose(wh, wd, atol=1e-4)


def test_softmax_cross_entropy_and_adam_on_the_host():
    labels = np.eye(3, dtype=np.float32)[[0, 1, 2, 1]]
    x = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2) / 8)
    with tf.variable_scope("m", use_resource=True):
        w = tf.get_variable("w", [2, 3], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=labels, logits=tf.matmul(x, w)))
    train = tf.train.AdamOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        np.testing.assert_allclose(first, np.log(3), rtol=1e-5)
        for _ in range(20):
            sess.run(train)
        assert sess.run(loss) < first - 0.1


def test_repeat_carries_loop_state_and_infeeds_continue():
    x0 = tf.placeholder(np.float32, [2])
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        r = ipu.ipu_compiler.compile(
            lambda x: ipu.loops.repeat(5, lambda s: s + 1.0, [x]), [x0])
    q = ipu.ipu_outfeed_queue.IPUOutfeedQueue(
        ipu.ipu_outfeed_queue.IPUOutfeedMode.LAST)
    ds = tf.data.Dataset.from_tensor_slices(
        np.arange(12, dtype=np.float32).reshape(6, 2)).repeat()
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(ds)
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        loop = ipu.ipu_compiler.compile(
            lambda: ipu.loops.repeat(3, lambda v: q.enqueue(v * 2.0), [],
                                     infeed))
    deq = q.dequeue()
    with tf.Session() as sess:
        assert sess.run(r, {x0: [1., 2.]})[0].tolist() == [6., 7.]
        sess.run(infeed.initializer)
        sess.run(loop)
        assert sess.run(deq).tolist() == [8., 10.]   # LAST: step 3 only
        sess.run(loop)
        assert sess.run(deq).tolist() == [20., 22.]  # the infeed went on


def test_gradient_accumulation_updates_every_nth_step():
    ds = tf.data.Dataset.from_tensor_slices(
        np.ones((4, 2), np.float32)).repeat()
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(ds)

    def body(x):
        with tf.variable_scope("acc", use_resource=True):
            w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
        opt = ipu.optimizers.GradientAccumulationOptimizerV2(
            ipu.optimizers.CrossReplicaOptimizer(
                tf.train.GradientDescentOptimizer(0.5)), num_mini_batches=3)
        return opt.minimize(tf.reduce_sum(w * x))

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        loop = ipu.ipu_compiler.compile(
            lambda: ipu.loops.repeat(1, body, [], infeed))
    w = tf.get_default_graph().variables["acc/w"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(infeed.initializer)
        seen = []
        for _ in range(3):
            sess.run(loop)
            seen.append(sess.run(w).tolist())
    assert seen == [[1., 1.], [1., 1.], [0.5, 0.5]]


def test_py_func_runs_on_the_host_between_ipu_parts():
    a = tf.placeholder(np.float32, [3])
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        doubled = ipu.ipu_compiler.compile(lambda x: x * 2.0, [a])[0]
    with tf.device("cpu"):
        sorted_ = tf.py_func(np.sort, [doubled], np.float32)
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        out = ipu.ipu_compiler.compile(lambda x: x + 1.0, [sorted_])
    with tf.Session() as sess:
        assert sess.run(out, {a: [3., 1., 2.]})[0].tolist() == [3., 5., 7.]


def test_conv2d_and_max_pooling2d_match_numpy():
    img = np.random.default_rng(0).standard_normal((2, 6, 6, 3)).astype(
        np.float32)
    pi = tf.placeholder(np.float32, img.shape)
    with tf.variable_scope("c", use_resource=True):
        y = tf.layers.max_pooling2d(tf.layers.conv2d(
            pi, 4, 3, padding="same", use_bias=False,
            kernel_initializer=tf.random_normal_initializer(seed=1)), 2, 2)
    w = tf.get_default_graph().variables["c/conv2d/kernel"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, kernel = sess.run([y, w], {pi: img})
    pad = np.pad(img, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = np.zeros((2, 6, 6, 4), np.float32)
    for i in range(6):
        for j in range(6):
            ref[:, i, j, :] = np.einsum("nhwc,hwco->no",
                                        pad[:, i:i + 3, j:j + 3, :], kernel)
    ref = ref.reshape(2, 3, 2, 3, 2, 4).max(axis=(2, 4))
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_old_utils_configuration_functions():
    cfg = ipu.utils.create_ipu_config()
    cfg = ipu.utils.auto_select_ipus(cfg, 2)
    cfg = ipu.utils.set_ipu_model_options(cfg, compile_ipu_code=False,
                                          tiles_per_ipu=16)
    ipu.utils.configure_ipu_system(cfg)
    core = ipu.config._current_system()
    assert core.auto_select_ipus == 2
    assert core.ipu_model.tiles_per_ipu == 16
    assert core.ipu_model.compile_ipu_code is False


# ---- errors ----------------------------------------------------------------

def test_unfed_placeholder_is_named():
    a = tf.placeholder(np.float32, [2], name="a")
    c = tf.placeholder(np.float32, [2], name="c")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="You must feed a value for placeholder "
                                 "tensor 'c:0' with dtype float32 and "
                                 r"shape \[2\]"):
            sess.run(a + c, {a: [1., 2.]})


def test_feed_of_the_wrong_shape():
    a = tf.placeholder(np.float32, [2], name="a")
    with tf.Session() as sess:
        with pytest.raises(ValueError,
                           match=r"Cannot feed value of shape \(3,\) for "
                                 r"Tensor 'a:0', which has shape \(2,\)"):
            sess.run(a * 2.0, {a: [1., 2., 3.]})


def test_host_only_op_inside_compile_names_it_and_the_supported_ops():
    a = tf.placeholder(np.float32, [2])

    def fn(x):
        return tf.py_func(np.sort, [x], np.float32)

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        with pytest.raises(NotImplementedError) as e:
            ipu.ipu_compiler.compile(fn, [a])
    msg = str(e.value)
    assert "tf.py_func" in msg and "'py_func'" in msg
    assert "not supported inside ipu_compiler.compile" in msg
    for op in ("add", "matmul", "relu", "conv2d", "reduceSum"):
        assert op in msg.split(
            "Ops supported inside ipu_compiler.compile:")[1]


def test_tf_variable_on_the_ipu_gives_the_resource_variable_advice():
    with tf.device("cpu"):
        v = tf.Variable(np.float32([1., 2.]), name="v")   # a VariableV2
    with tf.Session() as sess:                 # the host may use it ...
        sess.run(tf.global_variables_initializer())
        assert sess.run(v * 2.0).tolist() == [2., 4.]
    for make in (lambda: tf.Variable([2.], name="w"),   # ... the IPU not
                 lambda: ipu.ipu_compiler.compile(lambda: v * 2.0)):
        with ipu.scopes.ipu_scope("/device:IPU:0"):
            with pytest.raises(TypeError) as e:
                out = make()
                with tf.Session() as sess:
                    sess.run(tf.global_variables_initializer())
                    sess.run(out)
        msg = str(e.value)
        assert msg.startswith(("tf.Variable 'w' is placed on the IPU",
                               "the IPU cannot use variable v"))
        assert "Do not add variables using tf.Variable" in msg
        assert "use_resource=True" in msg and "assign_add" in msg
        assert "set_use_resource(True)" in msg


def test_uninitialised_variable_is_named():
    with tf.variable_scope("vs", use_resource=True):
        v = tf.get_variable("v", [2], initializer=tf.constant_initializer(.5))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="uninitialized value vs/v"):
            sess.run(v + 1.0)
        sess.run(tf.global_variables_initializer())
        assert sess.run(v + 1.0).tolist() == [1.5, 1.5]


def test_top_level_tf_has_the_tf1_names():
    import tessera.tf as tf2
    a = tf2.placeholder(np.float32, [2])
    with tf2.Session() as sess:
        assert sess.run(tf2.add(a, tf2.constant([1., 2.])),
                        {a: [1., 1.]}).tolist() == [2., 3.]
    assert tf2.cast(np.array([1.5]), np.int32).tolist() == [1]


def test_ipus_beyond_the_shards_replicate_the_graph():
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 2
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()
    ds = tf.data.Dataset.from_tensor_slices(
        np.arange(8, dtype=np.float32).reshape(8, 1)).repeat()
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(ds)
    q = ipu.ipu_outfeed_queue.IPUOutfeedQueue()

    def body(x):
        with tf.variable_scope("rep", use_resource=True):
            w = tf.get_variable("w", [1], initializer=tf.zeros_initializer())
        opt = ipu.optimizers.CrossReplicaOptimizer(
            tf.train.GradientDescentOptimizer(1.0))
        return q.enqueue(x), opt.minimize(tf.reduce_sum(w * x))

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        loop = ipu.ipu_compiler.compile(
            lambda: ipu.loops.repeat(2, body, [], infeed))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(infeed.initializer)
        sess.run(loop)
        # 2 steps x 2 replicas, consecutive elements in replica order.
        assert sess.run(q.dequeue()).reshape(2, 2).tolist() == [[0., 1.],
                                                                [2., 3.]]
        # Each step: w -= mean over replicas of x.
        w = tf.get_default_graph().variables["rep/w"]
        assert sess.run(w).tolist() == [-(0.5 + 2.5)]


def test_select_ipus_attaches_that_device(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_SYSTEM_DIR", str(tmp_path))
    cfg = ipu.config.IPUConfig()
    cfg.select_ipus = [17]          # the second pair: IPUs 2 and 3
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()
    assert ipu.config._current_system().auto_select_ipus == 2
    a = tf.placeholder(np.float32, [1])
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        r = ipu.ipu_compiler.compile(lambda x: x + 1.0, [a])
    with tf.Session() as sess:
        assert sess.run(r, {a: [1.]})[0].tolist() == [2.]
        assert sess._device.id == 17 and list(sess._device.ipus) == [2, 3]


def test_executable_cache_is_used_by_the_next_session(tmp_path):
    cfg = ipu.config.IPUConfig()
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.executable_cache_path = str(tmp_path / "cache")
    cfg.configure_ipu_system()
    a = tf.placeholder(np.float32, [2])
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        r = ipu.ipu_compiler.compile(lambda x: x * 3.0, [a])
    seen = []
    for _ in range(2):
        with tf.Session() as sess:
            assert sess.run(r, {a: [1., 2.]})[0].tolist() == [3., 6.]
            seen.append(sess.from_cache)
    assert seen == [False, True]
    assert os.listdir(tmp_path / "cache")


def test_tessera_monitor_shows_the_sessions_ipus(tmp_path, monkeypatch):
    tool = os.path.join(os.path.dirname(__file__), "..", "..", "build",
                        "tools", "tessera")
    if not os.path.exists(tool):
        pytest.skip("build/tools/tessera is not built")
    monkeypatch.setenv("TESSERA_SYSTEM_DIR", str(tmp_path))
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 4
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()
    a = tf.placeholder(np.float32, [1])
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        r = ipu.ipu_compiler.compile(lambda x: x + 1.0, [a])

    def monitor():
        out = subprocess.run([tool, "monitor", "--json"], capture_output=True,
                             text=True, check=True).stdout
        return [p for p in json.loads(out)["processes"]
                if p["pid"] == os.getpid()]

    with tf.Session() as sess:
        sess.run(r, {a: [1.]})
        mine = monitor()
        assert [(p["deviceId"], p["ipus"]) for p in mine] == [(24, [0, 1, 2,
                                                                    3])]
    assert monitor() == []


def test_a_host_step_fetched_with_its_loss_sees_the_loss_before_it():
    with tf.variable_scope("h", use_resource=True):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.))
    loss = w * w
    step = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run([step, loss]) == [None, 4.0]
        assert sess.run(w) == 1.0   # 2 - 0.25 * 2 * 2


def test_loop_without_its_infeed_initialised_says_so():
    ds = tf.data.Dataset.from_tensor_slices(np.ones((4, 2), np.float32))
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
    q = ipu.ipu_outfeed_queue.IPUOutfeedQueue()
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        loop = ipu.ipu_compiler.compile(
            lambda: ipu.loops.repeat(2, lambda x: q.enqueue(x), [], infeed))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match=r"run sess.run\(infeed_queue.initializer\)"):
            sess.run(loop)
        sess.run(infeed.initializer)
        assert sess.run(q.dequeue()).shape == (0, 2)   # nothing yet
        sess.run(loop)
        assert sess.run(q.dequeue()).shape == (2, 2)


def test_compiled_function_captures_host_tensors():
    pa = tf.placeholder(np.float32, [2], name="a")
    pb = tf.placeholder(np.float32, [2], name="b")
    with tf.device("cpu"):
        host_sum = pa + pb            # runs on the host's interpreter
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        out = ipu.ipu_compiler.compile(lambda: host_sum * 10.0)
    with tf.Session() as sess:
        for a, b in (([1., 2.], [3., 4.]), ([0., 1.], [1., 0.])):
            got = sess.run(out, {pa: a, pb: b})[0]
            assert got.tolist() == [10. * (x + y) for x, y in zip(a, b)]


def test_ipu_scope_ops_outside_compile_run_on_the_ipu():
    with tf.variable_scope("s", use_resource=True):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.))
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        loss = w * w
        step = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
    with tf.device("cpu"):
        host_view = loss + 0.0   # the host reads the IPU's result
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run([step, loss]) == [None, 4.0]
        assert sess._device is not None   # the IPU ran it
        assert sess.run([w, host_view]) == [1.0, 1.0]
        # (loss, step) and loss alone
        assert len([k for k in sess._programs if k[0] == "cluster"]) == 2


@pytest.mark.parametrize("on_ipu", [False, True])
def test_accuracy_one_hot_and_slicing(on_ipu):
    logits = tf.placeholder(np.float32, [4, 3])
    labels = tf.placeholder(np.int32, [4])

    def metrics(lg, lb):
        correct = tf.equal(tf.argmax(lg, axis=-1), lb)
        acc = tf.reduce_mean(tf.cast(correct, tf.float32))
        hot = tf.one_hot(lb, 3)
        return acc, hot[1:3, :2], lg[:, -1] > 0.5

    if on_ipu:
        with ipu.scopes.ipu_scope("/device:IPU:0"):
            out = ipu.ipu_compiler.compile(metrics, [logits, labels])
    else:
        out = metrics(logits, labels)
    lg = np.float32([[1, 0, 0], [0, 2, 0], [0, 0, 3], [1, 0, 0]])
    with tf.Session() as sess:
        acc, hot, big = sess.run(out, {logits: lg, labels: [0, 1, 1, 2]})
    assert acc == 0.5
    assert hot.tolist() == [[0., 1.], [0., 1.]]
    assert big.tolist() == [False, False, True, False]


def test_graph_seed_changes_unseeded_initial_values():
    def initial(seed):
        tf.reset_default_graph()
        if seed is not None:
            tf.set_random_seed(seed)
        with tf.variable_scope("v", use_resource=True):
            w = tf.get_variable("w", [3, 3])    # glorot_uniform, no seed
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(w)
    a, b, c = initial(None), initial(None), initial(5)
    np.testing.assert_array_equal(a, b)          # deterministic
    assert np.abs(a).max() <= np.sqrt(6 / 6) and not np.array_equal(a, c)


def test_outfeed_is_read_while_the_loop_runs():
    # The seed's "accessing outfeed queue results during execution": a
    # thread dequeues while sess.run(loop) runs. Element 100 of the infeed
    # waits (in the dataset's map function) until the thread has read
    # something, so the loop can only finish if reads happen during it.
    import threading
    n = 300
    seen = threading.Event()

    def hold(x):
        if x[0] >= 100 and not seen.wait(timeout=20):
            raise RuntimeError("nothing was read during the loop")
        return x

    ds = tf.data.Dataset.from_tensor_slices(
        np.arange(n, dtype=np.float32).reshape(n, 1)).map(hold)
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(ds)
    q = ipu.ipu_outfeed_queue.IPUOutfeedQueue()
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        loop = ipu.ipu_compiler.compile(lambda: ipu.loops.repeat(
            n, lambda x: q.enqueue(x + 0.0), [], infeed))
    deq = q.dequeue()
    got = []
    with tf.Session() as sess:
        sess.run(infeed.initializer)
        done = threading.Event()

        def reader():
            while not done.is_set():
                r = sess.run(deq)
                if r.size:
                    got.append(r)
                    seen.set()

        t = threading.Thread(target=reader)
        t.start()
        try:
            sess.run(loop)
        finally:
            done.set()
            t.join()
        got.append(sess.run(deq))
    assert seen.is_set() and len(got) >= 2
    np.testing.assert_array_equal(np.concatenate(got).ravel(), np.arange(n))
