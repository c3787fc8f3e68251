"""tessera.ipu: IPUConfig's options reach the C++ session."""

import os

import numpy as np
import pytest

import tessera
from tessera import ipu, keras
from tessera.keras import layers

from conftest import clusters


def small_model():
    m = keras.Sequential([layers.Dense(4, activation="relu",
                                       input_shape=(8,)),
                          layers.Dense(2, activation="softmax")])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
              steps_per_execution=4)
    return m


def test_unknown_options_are_errors_with_a_hint():
    cfg = ipu.config.IPUConfig()
    with pytest.raises(AttributeError, match="did you mean 'auto_select_ipus'"):
        cfg.auto_select_ipu = 1
    with pytest.raises(AttributeError, match="ipu_model has no option"):
        cfg.ipu_model.tiles = 4
    cfg.ipu_model.tiles_per_ipu = 8
    cfg.floating_point_behaviour.inv = True
    cfg.device_connection.type = ipu.config.DeviceConnectionType.ALWAYS


def test_the_configured_system_is_what_models_compile_for(small_ipu):
    x, y = clusters()
    small_ipu.device_connection.type = ipu.config.DeviceConnectionType.NEVER
    small_ipu.configure_ipu_system()
    with pytest.raises(tessera.OptionError, match="NEVER"):
        small_model().fit(x, y, batch_size=16, verbose=0)
    ipu.config.reset_ipu_configuration()


def test_tf_poplar_flags_executable_cache_path(small_ipu, tmp_path,
                                               monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("TF_POPLAR_FLAGS",
                       "--executable_cache_path=%s" % cache)
    small_ipu.configure_ipu_system()
    x, y = clusters()
    first = small_model()
    first.fit(x, y, batch_size=16, verbose=0)
    assert not first._core.last_fit_stats()["cache_hit"]
    assert os.listdir(cache)
    second = small_model()
    second.fit(x, y, batch_size=16, verbose=0)
    assert second._core.last_fit_stats()["cache_hit"]


def test_strategy_scope_and_tf1_spelling():
    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope() as s:
        assert s is strategy and ipu.IPUStrategy._active == 1
    assert ipu.IPUStrategy._active == 0
    cfg = ipu.utils.IPUConfig()
    ipu.utils.configure_ipu_system(cfg)
    # Pipelining: tests/python/test_keras_pipelining.py.
    with ipu.keras.PipelineStage(0) as stage:
        assert stage.stage == 0


def test_dataset_benchmark_reports_each_epoch():
    import json
    x = np.zeros((100, 4), np.float32)
    ds = tessera.data.Dataset.from_tensor_slices(x).batch(10).repeat()
    result = ipu.dataset_benchmark.dataset_benchmark(ds, 2, 5,
                                                     print_stats=False)
    stats = json.loads(result.numpy()[0])
    assert len(stats["epochs"]) == 2
    assert stats["epochs"][0]["elements_processed"] == 5
    assert stats["epochs"][1]["total_bytes_processed"] == 5 * 10 * 4 * 4
