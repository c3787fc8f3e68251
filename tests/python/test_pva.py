"""pva: a PopVision-analysis-style script reads the report a Keras run
wrote with autoReport.all."""

import json
import os
import subprocess
import sys

import pytest

import pva

TRAIN = """
import numpy as np
from tessera import keras
m = keras.Sequential([keras.layers.Dense(4, activation="relu",
                                         input_shape=(3,)),
                      keras.layers.Dense(2, name="logits")])
m.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(
    from_logits=True))
m.fit(np.ones((8, 3), np.float32), np.zeros(8, np.int32), batch_size=4,
      epochs=1, verbose=0)
"""


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    env = dict(os.environ, TESSERA_ENGINE_OPTIONS=json.dumps(
        {"autoReport.all": "true", "autoReport.directory": str(folder)}))
    subprocess.run([sys.executable, "-c", TRAIN], env=env, check=True,
                   capture_output=True)
    return folder


def test_a_popvision_style_script_reads_the_report(report_dir):
    report = pva.openReport(str(report_dir / "profile.pop"),
                            str(report_dir / "debug.cbor"))
    with open(report_dir / "profile.json") as f:
        profile = json.load(f)
    target = report.compilation.target
    assert target.numTiles == target.numIPUs * target.tilesPerIpu == 1472
    assert report.compilation.graph.numComputeSets == len(
        profile["graph"]["computeSets"])
    tiles = report.compilation.tiles
    assert len(tiles) == target.numTiles
    assert sum(t.memory.total.includingGaps for t in tiles) == \
        profile["graph"]["memory"]["total"]
    steps = report.execution.steps
    assert steps and report.execution.available
    for step in steps:
        assert step.cyclesTo - step.cyclesFrom == step.cycles
    assert "Tessera" in report.poplarVersion.string
    names = {c.path for c in report.debugContexts}
    assert any(name.startswith("logits") for name in names)


def test_a_missing_report_is_a_report_error(tmp_path):
    with pytest.raises(pva.ReportError, match="has no profile.json"):
        pva.openReport(str(tmp_path / "profile.pop"))
