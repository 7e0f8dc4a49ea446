"""A fresh-machine install: the wheel built from a clean copy of this tree (`pip wheel`: the native kernels compiled at
build time) is pip-installed into a brand-new virtual environment, with numpy its only dependency from the registry,
and there a small model runs through onnxide.InferenceSession with the default providers on the native CPU EP (from
the installed package, the build for this CPU's level), its outputs against numpy; then the wheel a machine with no C
compiler builds (pure Python) replaces it and the same model runs on numpy alone. About 1-2 minutes (the kernel
compile and numpy's install); skipped where venv or a C compiler is missing; needs the package registry (pip's
isolated build fetches setuptools, the install numpy)."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREE = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "py_engine", "native_eps", "webgpu_shaders"]
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "*.so", "*.onnx")

# Run inside the new environment: MatMul + Add + Relu + Softmax on sizes the native kernels take, built with
# onnxide's own proto helpers (the environment has no onnx package), checked against numpy.
SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import onnxide
    from onnxide import proto as P
    from onnxide.ir.to_proto import make_attribute, tensor_value_info
    from onnxide.tensors import from_numpy

    rng = np.random.default_rng(0)
    w = rng.standard_normal((256, 128)).astype(np.float32) * 0.1
    b = rng.standard_normal(128).astype(np.float32)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    nodes = [P.NodeProto(op_type="MatMul", input=["x", "w"], output=["m"]),
             P.NodeProto(op_type="Add", input=["m", "b"], output=["a"]),
             P.NodeProto(op_type="Relu", input=["a"], output=["r"]),
             P.NodeProto(op_type="Softmax", input=["r"], output=["y"], attribute=[make_attribute("axis", -1)])]
    graph = P.GraphProto(name="g", node=nodes, initializer=[from_numpy(w, "w"), from_numpy(b, "b")],
                         input=[tensor_value_info("x", (64, 256))], output=[tensor_value_info("y", (64, 128))])
    model = P.ModelProto(ir_version=8, graph=graph, opset_import=[P.OperatorSetIdProto(domain="", version=17)])
    so = onnxide.SessionOptions()
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    sess = onnxide.InferenceSession(model.SerializeToString(), so)
    y = sess.run(None, {"x": x})[0]
    r = np.maximum(x.astype(np.float64) @ w + b, 0)
    e = np.exp(r - r.max(axis=-1, keepdims=True))
    err = float(np.max(np.abs(y - e / e.sum(axis=-1, keepdims=True))))
    out = {"available": onnxide.get_available_providers(), "providers": sess.get_providers(), "max_err": err,
           "assigned": sorted({s.ep_name for s in sess.get_provider_graph_assignment_info()}),
           "onnxide": onnxide.__file__}
    if "NativeCPUExecutionProvider" in out["available"]:
        from onnxide_native import lib
        out.update(lib=lib.load().path, build_level=lib.load().build_level, cpu_level=lib.load().cpu_level)
    print(json.dumps(out))
""")


def _run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{cmd[:4]} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


def _stage(dst):
    """A clean copy of what a wheel is built from (no build/ folder, caches or earlier builds' files)."""
    for name in TREE:
        src = os.path.join(ROOT, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dst, name), ignore=SKIP)
        else:
            shutil.copyfile(src, os.path.join(dst, name))
    return dst


def _wheel(src, out, env=None, isolated=True):
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "-w", out, src]
         + ([] if isolated else ["--no-build-isolation"]), env=env)
    (name,) = os.listdir(out)
    return os.path.join(out, name)


def _in_venv(venv, *args):
    return _run([os.path.join(venv, "bin", "python"), *args], cwd=venv)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    try:
        import venv  # noqa: F401
        import ensurepip  # noqa: F401
    except ImportError:
        pytest.skip("no venv / ensurepip in this Python")
    path = str(tmp_path_factory.mktemp("fresh") / "venv")
    _run([sys.executable, "-m", "venv", path])
    return path


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    return _stage(str(tmp_path_factory.mktemp("src")))


def _no_compiler_path(tmp):
    """A PATH holding only this Python: the build finds no C compiler."""
    bin_dir = os.path.join(tmp, "bin")
    os.makedirs(bin_dir)
    os.symlink(os.path.realpath(sys.executable), os.path.join(bin_dir, "python3"))
    return bin_dir


def test_wheel_installs_and_runs_native_in_a_fresh_venv(venv, stage, tmp_path):
    if shutil.which(os.environ.get("CC") or "gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler here: the wheel would have no native kernels")
    whl = _wheel(stage, str(tmp_path / "dist"))
    assert "-py3-none-linux_" in whl, whl  # compiled code: for this platform, any Python 3
    _in_venv(venv, "-m", "pip", "install", "-q", "--disable-pip-version-check", whl)
    installed = {p["name"].lower() for p in json.loads(_in_venv(venv, "-m", "pip", "list", "--format", "json"))}
    assert installed - {"pip", "setuptools"} == {"onnxide", "numpy"}, installed
    got = json.loads(_in_venv(venv, "-I", "-c", SCRIPT).strip().splitlines()[-1])
    assert got["onnxide"].startswith(venv), got  # the installed package, not this checkout
    assert got["providers"][0] == "NativeCPUExecutionProvider", got
    assert "NativeCPUExecutionProvider" in got["assigned"], got
    assert got["lib"].startswith(venv) and os.path.basename(got["lib"]).startswith("libonnxide_cpu"), got
    if got["cpu_level"]:  # x86-64: the best build this CPU runs (the wheel has baseline, v3 and v4)
        assert got["build_level"] == max(v for v in (1, 3, 4) if v <= got["cpu_level"]), got
    assert got["max_err"] < 1e-5, got


def test_wheel_without_a_compiler_runs_on_numpy(venv, stage, tmp_path):
    env = dict(os.environ, PATH=_no_compiler_path(str(tmp_path)))
    env.pop("CC", None)
    whl = _wheel(stage, str(tmp_path / "dist"), env=env, isolated=False)
    assert whl.endswith("-py3-none-any.whl"), whl
    _in_venv(venv, "-m", "pip", "uninstall", "-q", "-y", "onnxide")
    _in_venv(venv, "-m", "pip", "install", "-q", "--disable-pip-version-check", whl)
    got = json.loads(_in_venv(venv, "-I", "-c", SCRIPT).strip().splitlines()[-1])
    assert got["onnxide"].startswith(venv), got
    assert "NativeCPUExecutionProvider" not in got["available"], got
    assert got["providers"] == ["CPUExecutionProvider"] and got["assigned"] == ["CPUExecutionProvider"], got
    assert got["max_err"] < 1e-5, got
