"""The package: importable from anywhere, documented, errors typed."""

import os
import subprocess
import sys

import pytest

import tessera


def test_imports_from_another_directory(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(tessera.__path__[0])
    out = subprocess.run(
        [sys.executable, "-c",
         "import tessera, tessera.keras, tessera.tf, tessera.ipu; "
         "print(tessera.__version__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == tessera.__version__


def test_the_extension_sits_in_the_package():
    assert os.path.dirname(tessera._tessera.__file__) == tessera.__path__[0]


def test_help_documents_the_keras_api():
    assert "steps_per_execution" in tessera.keras.Model.compile.__doc__
    assert "NumPy" in tessera.keras.Model.fit.__doc__
    assert "IPUConfig" in tessera.ipu.__doc__
    assert tessera._tessera.HostTensor.from_array.__doc__


def test_errors_derive_from_the_builtin_python_would_catch():
    assert issubclass(tessera.ShapeError, ValueError)
    assert issubclass(tessera.ShapeError, tessera.TesseraError)
    assert issubclass(tessera.TesseraTypeError, TypeError)
    assert issubclass(tessera.OptionError, ValueError)
    assert issubclass(tessera.ModelError, RuntimeError)


def test_cpp_errors_arrive_as_typed_python_errors():
    with pytest.raises(tessera.OptionError, match="padding must be"):
        tessera.keras.layers.Conv2D(4, 3, padding="full")


def test_poplar_environment_variables_reach_the_core(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(tessera.__path__[0])
    env.pop("TESSERA_ENGINE_OPTIONS", None)
    env["POPLAR_ENGINE_OPTIONS"] = '{"autoReport.bogus": "true"}'
    program = (
        "import numpy as np\n"
        "from tessera import keras, ipu\n"
        "c = ipu.config.IPUConfig(); c.ipu_model.tiles_per_ipu = 16\n"
        "c.configure_ipu_system()\n"
        "m = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])\n"
        "m.compile(loss='mse')\n"
        "m.fit(np.zeros((8, 4)), np.zeros((8, 2)), batch_size=4, verbose=0)\n")
    out = subprocess.run([sys.executable, "-c", program], cwd=tmp_path,
                         env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert "autoReport.bogus" in out.stderr
