"""onnxide's JS API in Node.js (Pyodide in-process, no browser): same results as natively, errors as messages."""
import gzip
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import onnxide

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(scope="module")
def node_result():
    if not shutil.which("node"):
        pytest.skip("node not installed")
    if not os.path.isfile(os.path.join(ROOT, "build", "web", "manifest.json")):
        pytest.skip("build/web/ missing (run bash .ci/setup_web.sh)")
    p = subprocess.run(["node", os.path.join(HERE, "node_api.mjs")], capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_node_host_runs_models_like_native(node_result):
    from onnxide.demo import default_model_bytes
    r = node_result
    assert r["mode"] == "node"
    assert r["inputNames"] == ["image"] and r["outputNames"] == ["probs"] and r["dims"] == [1, 10]
    x = (np.arange(3 * 64 * 64) % 97 / 97).astype(np.float32).reshape(1, 3, 64, 64)
    want = onnxide.InferenceSession(default_model_bytes()).run(None, {"image": x})[0]
    np.testing.assert_allclose(np.array(r["probs"], np.float32).reshape(1, 10), want, rtol=1e-5, atol=1e-6)
    sess = onnxide.InferenceSession(os.path.join(ROOT, "build", "web", "models", "silero_vad.onnx"))
    p, _ = sess.run(None, {"input": np.full((1, 576), 0.01, np.float32), "state": np.zeros((2, 1, 128), np.float32),
                           "sr": np.array(16000, np.int64)})
    assert abs(r["vad"][0] - float(p[0, 0])) < 1e-5 and r["vad"][1] == [2, 1, 128]
    assert r["timings"]["pyodideMs"] > 0
    assert r["timings"]["boot"] == "snapshot"  # (the fast boot: setup_web.sh made the snapshot)


BOOT_JS = """
import { PyodideHost } from '%s';
const logs = [];
const info = await new PyodideHost().init({ assetsURL: process.argv[1], onLog: (m) => logs.push(m) });
console.log(JSON.stringify({ boot: info.timings.boot, providers: info.providers, logs }));
"""


def test_node_host_boots_without_a_usable_snapshot(tmp_path):
    """Assets whose snapshot cannot be restored (here: not a snapshot at all): the host says so and boots the plain
    way, numpy and onnxide installed from their wheels."""
    if not shutil.which("node"):
        pytest.skip("node not installed")
    build = os.path.join(ROOT, "build", "web")
    if not os.path.isfile(os.path.join(build, "manifest.json")):
        pytest.skip("build/web/ missing (run bash .ci/setup_web.sh)")
    with open(os.path.join(build, "manifest.json")) as f:
        manifest = json.load(f)
    url = lambda rel: "file://" + os.path.join(build, rel) + ("/" if rel.endswith("/") else "")  # noqa: E731
    for key in ("indexURL", "wheel", "demoModel", "sitePackages"):
        manifest[key] = url(manifest[key])
    manifest["wasmKernels"] = [url(k) for k in manifest["wasmKernels"]]
    manifest["bytecode"] = [url(k) for k in manifest["bytecode"]]
    (tmp_path / "bad-snapshot.bin.gz").write_bytes(gzip.compress(b"not a snapshot" * 64))  # (Pyodide rejects it)
    manifest["snapshot"] = "bad-snapshot.bin.gz"
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    host = "file://" + os.path.join(ROOT, "web", "host.mjs")
    p = subprocess.run(["node", "--input-type=module", "-e", BOOT_JS % host, f"file://{tmp_path}/"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["boot"] == "plain" and "CPUExecutionProvider" in r["providers"]
    assert any("without its snapshot" in m for m in r["logs"]), r["logs"]


def test_node_bad_input_rejects(node_result):
    r = node_result
    # onnxruntime-web's messages in Node.js (its wasm backend there reads files with fs: the ENOENT text)
    assert r["badFeed"] == "input 'state' is missing in 'feeds'."
    assert r["missing"] == "ENOENT: no such file or directory, open '/no/such/model.onnx'"
    assert r["corrupt"] == ("Can't create a session. ERROR_CODE: 7, ERROR_MESSAGE: Failed to load model because "
                            "protobuf parsing failed.")


def test_external_data_prefilter(tmp_path):
    """The page skips the host's external-data parse only for model bytes that cannot name a file: a model saved with
    external data is always sent there, one without never (its bytes lack the serialized "location" key)."""
    if not shutil.which("node"):
        pytest.skip("node not installed")
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    m = helper.make_model(g)
    inline = m.SerializeToString()
    onnx.save_model(m, str(tmp_path / "ext.onnx"), save_as_external_data=True, location="w.bin", size_threshold=0)
    external = (tmp_path / "ext.onnx").read_bytes()
    key = b"\x0a\x08location"
    cases = {"inline": inline, "external": external, "key cut short": key[:-1], "key alone": key,
             "key at the end": inline + key}
    backend = "file://" + os.path.join(ROOT, "web", "onnxide-backend.mjs")
    script = (f"const {{ mayNameExternalData }} = await import({json.dumps(backend)});\n"
              f"const cases = {json.dumps({k: list(v) for k, v in cases.items()})};\n"
              "console.log(JSON.stringify(Object.fromEntries(Object.entries(cases).map(([k, v]) => "
              "[k, mayNameExternalData(new Uint8Array(v))]))));")
    p = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout) == {"inline": False, "external": True, "key cut short": False, "key alone": True,
                                    "key at the end": True}
