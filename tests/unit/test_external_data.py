"""External data is read at load, so a file truncated or rewritten afterwards changes nothing (it was memory-mapped:
a shrunk file faulted with SIGBUS at the first run); bad references fail with InvalidGraph."""
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxide

W = np.arange(4096, dtype=np.float32)


def _save(folder, location="w.bin", offset=0, length=None):
    with open(os.path.join(folder, "w.bin"), "wb") as f:
        f.write(b"\0" * offset + W.tobytes())
    t = numpy_helper.from_array(W, "w")
    t.ClearField("raw_data")
    t.data_location = T.EXTERNAL
    entries = {"location": location, "offset": str(offset)}
    if length is not None:
        entries["length"] = str(length)
    for k, v in entries.items():
        t.external_data.add(key=k, value=v)
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", T.FLOAT, [4096])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [4096])], [t])
    path = os.path.join(folder, "m.onnx")
    with open(path, "wb") as f:
        f.write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return path


def test_truncating_the_data_file_after_load_changes_nothing(tmp_path):
    """In a child process: a regression would kill it with SIGBUS, not the test run."""
    path = _save(str(tmp_path), offset=64)
    code = f"""
import numpy as np, onnxide
s = onnxide.InferenceSession({path!r}, providers=["CPUExecutionProvider"])
open({os.path.join(str(tmp_path), 'w.bin')!r}, "r+b").truncate(10)
y = s.run(None, {{"x": np.zeros(4096, np.float32)}})[0]
assert np.array_equal(y, np.arange(4096, dtype=np.float32)), y[:4]
print("ok")
"""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(onnxide.__file__)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr[-800:])


@pytest.mark.parametrize("kw,match", [
    (dict(location="../w.bin"), "leaves the model's folder"),
    (dict(location="missing.bin"), "not found"),
    (dict(offset=0, length=10**9), "out of bounds"),
])
def test_bad_references_fail_cleanly(tmp_path, kw, match):
    path = _save(str(tmp_path), **kw)
    with pytest.raises(onnxide.InvalidGraph, match=match):
        onnxide.InferenceSession(path, providers=["CPUExecutionProvider"])


def test_external_data_loads_and_runs(tmp_path):
    s = onnxide.InferenceSession(_save(str(tmp_path), offset=16), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(s.run(None, {"x": np.ones(4096, np.float32)})[0], W + 1)
