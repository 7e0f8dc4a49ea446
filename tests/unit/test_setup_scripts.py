"""The set-up's install rules (.ci/lib.sh, .ci/satisfied.py): requirements already satisfied are not reinstalled, and
outside a virtual environment nothing is pip-installed unless ONNXIDE_SYSTEM_PIP=1 asks for it."""
import importlib.metadata as md
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SATISFIED = os.path.join(ROOT, ".ci", "satisfied.py")


def _satisfied(*args):
    return subprocess.run([sys.executable, SATISFIED, *args], cwd=ROOT).returncode == 0


def test_satisfied_reads_requirements_and_wheel_names():
    numpy = md.version("numpy")
    assert _satisfied("numpy", f"numpy=={numpy}", "numpy>=1.0")
    assert not _satisfied(f"numpy>{numpy}")
    assert not _satisfied("numpy", "no-such-package-onnxide-test")
    assert _satisfied("--no-deps", f"/somewhere/numpy-{numpy}-cp311-cp311-linux_x86_64.whl")
    assert not _satisfied(f"/somewhere/numpy-{numpy}.post9-cp311-cp311-linux_x86_64.whl")


def _pip_install_outside_venv(env_extra):
    bin_dir = os.path.dirname(sys.executable)  # python3 as this test's interpreter
    env = {k: v for k, v in os.environ.items() if k != "ONNXIDE_SYSTEM_PIP"}
    env.update(PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), **env_extra)
    return subprocess.run(["bash", "-c", "source .ci/lib.sh && pip_install no-such-package-onnxide-test==0"],
                          cwd=ROOT, env=env, capture_output=True, text=True)


@pytest.mark.skipif(sys.prefix != sys.base_prefix, reason="these tests run inside a virtual environment")
def test_no_pip_install_into_the_system_python_unasked():
    p = _pip_install_outside_venv({})
    assert p.returncode == 1
    assert "not in a virtual environment" in p.stderr and "ONNXIDE_SYSTEM_PIP=1" in p.stderr, p.stderr
    assert "Collecting" not in p.stdout + p.stderr  # pip never ran


@pytest.mark.skipif(sys.prefix != sys.base_prefix, reason="these tests run inside a virtual environment")
def test_system_pip_when_asked():
    p = _pip_install_outside_venv({"ONNXIDE_SYSTEM_PIP": "1"})
    assert p.returncode != 0 and "not in a virtual environment" not in p.stderr  # pip ran (and found no such package)
    assert "no-such-package-onnxide-test" in p.stderr, p.stderr
