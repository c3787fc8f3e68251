"""Pipelined tessera.keras models (TensorFlow for the IPU's
set_pipeline_stage_assignment, ipu.keras.PipelineStage,
set_pipelining_options, set_gradient_accumulation_options): the
tensor-inspection seed's fully connected model, pipelined over 2 IPUs with
N = 4 micro-batches per weight update, ends with the weights of the same
model trained unpipelined with gradient accumulation N = 4; options that do
not go together reach Python as exceptions with the C++ message."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tessera
from tessera import ipu, keras
from tessera.keras import layers

N = 4  # gradient_accumulation_steps_per_replica
BATCH, EXAMPLES = 4, 64
Schedule = ipu.ops.pipelining_ops.PipelineSchedule


def configure(ipus):
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = ipus
    cfg.ipu_model.tiles_per_ipu = 16
    cfg.configure_ipu_system()


def data():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((EXAMPLES, 6, 6, 1)).astype(np.float32)
    y = rng.integers(0, 5, EXAMPLES)
    return x, y


def sequential():
    # The seed's create_pipeline_sequential_model, smaller.
    return keras.Sequential([
        layers.Flatten(input_shape=(6, 6, 1)),
        layers.Dense(16, activation="relu", name="Dense_256"),
        layers.Dense(12, activation="relu", name="Dense_128"),
        layers.Dense(5, activation="softmax", name="Dense_10")])


def functional(staged):
    # The seed's create_pipeline_model (PipelineStage scopes), smaller; with
    # staged=False, the same layers without stages.
    def stage(n):
        return ipu.keras.PipelineStage(n) if staged else _NoStage()

    input_layer = layers.Input(shape=(6, 6, 1), dtype="float32",
                               batch_size=BATCH)
    with stage(0):
        x = layers.Flatten()(input_layer)
        x = layers.Dense(16, activation="relu", name="Dense_256")(x)
    with stage(1):
        x = layers.Dense(12, activation="relu", name="Dense_128")(x)
        x = layers.Dense(5, activation="softmax", name="Dense_10")(x)
    return keras.Model(input_layer, x)


class _NoStage:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def train(model, weights):
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
                  loss="sparse_categorical_crossentropy",
                  steps_per_execution=N)
    model.set_weights(weights)
    x, y = data()
    model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    return model.get_weights()


def reference(make, weights, count=N):
    configure(1)
    with ipu.ipu_strategy.IPUStrategy().scope():
        model = make()
        model.set_gradient_accumulation_options(
            gradient_accumulation_steps_per_replica=count)
        return train(model, weights)


def initial_weights(make):
    model = make()
    model.compile(loss="sparse_categorical_crossentropy")
    return model.get_weights()


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("schedule", [Schedule.Grouped, Schedule.Interleaved,
                                      Schedule.Sequential])
def test_pipelined_sequential_trains_as_accumulation(schedule):
    start = initial_weights(sequential)
    configure(2)
    with ipu.ipu_strategy.IPUStrategy().scope():
        model = sequential()
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=N,
            pipeline_schedule=schedule, device_mapping=None,
            offload_weight_update_variables=None)
        model.set_pipeline_stage_assignment([0, 0, 1, 1])
        got = train(model, start)
    want = reference(sequential, start)
    assert_same(got, want)
    # Training moved the weights, and accumulating mattered: one update
    # per step ends elsewhere.
    assert not np.allclose(got[0], start[0])
    assert not np.allclose(reference(sequential, start, count=1)[0], got[0],
                           rtol=1e-4)


def test_recomputation_and_device_mapping_keep_the_weights():
    start = initial_weights(sequential)
    configure(2)
    with ipu.ipu_strategy.IPUStrategy().scope():
        model = sequential()
        model.set_pipeline_stage_assignment([0, 0, 1, 1])
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=N, device_mapping=[1, 0],
            recomputation_mode=ipu.pipelining_ops.RecomputationMode.Auto)
        got = train(model, start)
    assert_same(got, reference(sequential, start))


def test_a_device_mapping_beyond_the_ipus_is_the_cpp_error():
    configure(2)
    model = sequential()
    model.set_pipeline_stage_assignment([0, 0, 1, 1])
    model.set_pipelining_options(gradient_accumulation_steps_per_replica=N,
                                 device_mapping=[0, 2])
    model.compile(loss="sparse_categorical_crossentropy",
                  steps_per_execution=N)
    x, y = data()
    with pytest.raises(tessera.OptionError,
                       match="need 3 IPUs but it is compiled for 2"):
        model.fit(x, y, batch_size=BATCH, verbose=0)


def test_pipelined_functional_with_stage_scopes_trains_as_accumulation():
    start = initial_weights(lambda: functional(False))
    configure(2)
    with ipu.ipu_strategy.IPUStrategy().scope():
        model = functional(True)
        assert [a.pipeline_stage for a in
                model.get_pipeline_stage_assignment()] == [0, 0, 1, 1]
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=N)
        got = train(model, start)
    assert_same(got, reference(lambda: functional(False), start))
    assert not np.allclose(got[0], start[0])


def test_functional_assignment_as_a_list_per_layer():
    start = initial_weights(lambda: functional(False))
    configure(2)
    with ipu.ipu_strategy.IPUStrategy().scope():
        model = functional(False)
        assignment = model.get_pipeline_stage_assignment()
        assert [a.pipeline_stage for a in assignment] == [None] * 4
        for a, stage in zip(assignment, [0, 1, 1, 1]):
            a.pipeline_stage = stage
        model.set_pipeline_stage_assignment(assignment)
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=N,
            pipeline_schedule=Schedule.Interleaved)
        got = train(model, start)
    assert_same(got, reference(lambda: functional(False), start))


def test_stage_scopes_follow_the_layers_through_branches():
    # The model lists layers depth-first from its output (p, q, r, s), not
    # in the order they were called (q, p, r, s); each keeps its stage.
    inp = layers.Input(shape=(4,))
    with ipu.keras.PipelineStage(1):
        q = layers.Dense(4, name="q")(inp)
    with ipu.keras.PipelineStage(0):
        p = layers.Dense(4, name="p")(inp)
    with ipu.keras.PipelineStage(1):
        r = layers.Add(name="r")([p, q])
        s = layers.Dense(2, name="s")(r)
    model = keras.Model(inp, s)
    got = [(a.layer.name, a.pipeline_stage)
           for a in model.get_pipeline_stage_assignment()]
    assert got == [("p", 0), ("q", 1), ("r", 1), ("s", 1)]


def test_summary_shows_the_stages(capsys):
    model = functional(True)
    model.summary()
    out = capsys.readouterr().out
    assert "Stage" in out.splitlines()[2]
    rows = [l.split() for l in out.splitlines() if l.startswith("Dense_")]
    assert [r[-1] for r in rows] == ["0", "1", "1"]


def test_stage_assignment_of_the_wrong_length_is_the_cpp_error():
    model = sequential()
    with pytest.raises(tessera.OptionError,
                       match="has 4 layers after its Input but the "
                             "assignment lists 2 stages"):
        model.set_pipeline_stage_assignment([0, 1])
    with pytest.raises(ValueError, match="stages start at 0"):
        model.set_pipeline_stage_assignment([1, 1, 2, 2])
    # A Sequential built on first use meets the same check then.
    late = keras.Sequential([layers.Flatten(), layers.Dense(3)])
    late.set_pipeline_stage_assignment([0, 0, 1])
    late.set_pipelining_options(gradient_accumulation_steps_per_replica=N)
    late.compile(loss="mse")
    x = np.zeros((8, 2, 2), np.float32)
    with pytest.raises(ValueError, match="has 2 layers after its Input but "
                                         "the assignment lists 3 stages"):
        late.fit(x, np.zeros((8, 3), np.float32), batch_size=2, verbose=0)


def test_pipelining_options_without_an_assignment_is_the_cpp_error():
    configure(2)
    model = sequential()
    model.set_pipelining_options(gradient_accumulation_steps_per_replica=N)
    model.compile(loss="sparse_categorical_crossentropy",
                  steps_per_execution=N)
    x, y = data()
    with pytest.raises(tessera.ModelError,
                       match="has pipelining options but no pipeline stage "
                             "assignment"):
        model.fit(x, y, batch_size=BATCH, verbose=0)


def test_accumulation_below_the_stages_is_the_cpp_error():
    configure(2)
    model = sequential()
    model.set_pipeline_stage_assignment([0, 0, 1, 1])
    model.set_pipelining_options(gradient_accumulation_steps_per_replica=1)
    model.compile(loss="sparse_categorical_crossentropy")
    x, y = data()
    with pytest.raises(tessera.OptionError,
                       match="needs a gradient accumulation count of at "
                             "least the 2 pipeline stages, got 1"):
        model.fit(x, y, batch_size=BATCH, verbose=0)


def test_an_assignment_without_pipelining_options_is_the_cpp_error():
    configure(2)
    model = functional(True)
    model.compile(loss="sparse_categorical_crossentropy")
    x, y = data()
    with pytest.raises(tessera.ModelError,
                       match="has a pipeline stage assignment but was "
                             "compiled without pipelining options"):
        model.fit(x, y, batch_size=BATCH, verbose=0)


def test_misspelled_arguments_are_type_errors_and_ignored_ones_pass():
    model = sequential()
    with pytest.raises(TypeError, match="gradient_acumulation_steps"):
        model.set_pipelining_options(gradient_acumulation_steps_per_replica=4)
    with pytest.raises(TypeError, match="pipline_schedule"):
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=4, pipline_schedule=0)
    with pytest.raises(TypeError, match="gradient_accumulation_step_per"):
        model.set_gradient_accumulation_options(
            gradient_accumulation_step_per_replica=4)
    model.set_pipelining_options(
        gradient_accumulation_steps_per_replica=4,
        offload_weight_update_variables=False, accumulate_outfeed=True,
        recomputation_mode=ipu.pipelining_ops.RecomputationMode.Auto,
        forward_propagation_stages_poplar_options={})
    model.set_gradient_accumulation_options(
        gradient_accumulation_steps_per_replica=4,
        experimental_normalize_gradients=True)
    with pytest.raises(ValueError, match="give gradient_accumulation_steps"):
        model.set_pipelining_options()
    with pytest.raises(tessera.OptionError, match="unknown pipeline_schedule"):
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=4,
            pipeline_schedule="Zigzag")
    # The error left the options as they were; the names work as strings.
    model.set_pipelining_options(gradient_accumulation_steps_per_replica=4,
                                 pipeline_schedule="interleaved")


def test_pipeline_stage_scopes_must_cover_every_layer_and_not_nest():
    inp = layers.Input(shape=(3,))
    with ipu.keras.PipelineStage(0):
        x = layers.Dense(4)(inp)
    y = layers.Dense(2, name="outside")(x)
    with pytest.raises(ValueError, match=r"\['outside'\] were called outside"):
        keras.Model(inp, y)
    with ipu.keras.PipelineStage(0):
        with pytest.raises(ValueError, match="do not nest"):
            with ipu.keras.PipelineStage(1):
                pass
    with pytest.raises(ValueError, match="start at 0"):
        ipu.keras.PipelineStage(-1)


def test_the_pipelined_example_prints_keras_progress(tmp_path):
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(tessera.__path__[0])
    env["EXAMPLES"] = "512"
    out = subprocess.run(
        [sys.executable, os.path.join(root, "examples", "python",
                                      "keras_pipelined.py")],
        env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "Dense_256 (Dense)" in out.stdout and "Stage" in out.stdout
    assert "Epoch 2/2" in out.stdout and "16/16 [====" in out.stdout
