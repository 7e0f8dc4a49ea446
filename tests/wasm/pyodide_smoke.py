"""In-Pyodide smoke check of the WASM EP's zero-copy (ctypes side module) route: kernels vs numpy, a session run
(with and without chains, the chain step checked to be there), and GEMM / softmax timings vs Pyodide's numpy. Run by tests/wasm/run_pyodide_node.mjs (Node) or a browser host:
    import runpy; runpy.run_path("tests/wasm/pyodide_smoke.py")      # with py_engine on sys.path
Prints one JSON line prefixed 'WASM_SMOKE ' and raises on a mismatch."""
import json
import sys
import time

import numpy as np

import onnxide
import onnxide.eps  # noqa: F401  (registers WasmExecutionProvider)
from onnxide.eps import wasm_ops as K
from onnxide.eps import wasm_ops_elem as E
from onnxide.eps import wasm_runtime as wrt
from onnxide.eps.wasm import WasmExecutionProvider
from onnxide.ops import conv as conv_ops, pool

assert wrt.IS_PYODIDE, "run this inside Pyodide"
report = {"python": sys.version.split()[0], "numpy": np.__version__, "relaxed_supported": wrt.relaxed_supported(),
          "providers": onnxide.get_available_providers()}
rng = np.random.default_rng(0)


def rand(*s):
    return rng.standard_normal(s).astype(np.float32)


def med(fn, reps=7):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


for build in ("simd128", "relaxed"):
    try:
        ep = WasmExecutionProvider({"wasm_simd": build})
    except Exception as e:
        report[build] = f"unavailable: {e}"
        continue
    rt = ep.rt
    a, b = rand(67, 129), rand(129, 33)
    np.testing.assert_allclose(K.matmul_fast(rt, a, b), a @ b, rtol=1e-4, atol=1e-4)
    x, w, bias = rand(2, 6, 13, 11), rand(8, 3, 3, 3), rand(8)
    kw = dict(group=2, pads=[1, 1, 1, 1], strides=[2, 1])
    np.testing.assert_allclose(K.conv_fast(rt, x, w, bias, **kw), conv_ops.conv(x, w, bias, **kw), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(K.pool_fast(rt, True, x, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
                                  pool.max_pool(x, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1))
    s = rand(5, 1000)
    np.testing.assert_allclose(E.softmax_fast(rt, False, False, s, -1), np.exp(s) / np.exp(s).sum(1, keepdims=True),
                               rtol=1e-5, atol=1e-7)
    y = rand(4, 8)[:, ::2]  # strided input: must be made contiguous, never read in place wrongly
    np.testing.assert_allclose(E.binary_fast(rt, 2, y, y), y * y, rtol=1e-6)
    row = {}
    for n in (256, 512):
        a, b = rand(n, n), rand(n, n)
        t_w = med(lambda: K.matmul_fast(rt, a, b))
        t_n = med(lambda: a @ b, reps=3)
        row[f"gemm{n}"] = {"wasm_ms": round(t_w * 1e3, 2), "numpy_ms": round(t_n * 1e3, 2),
                           "wasm_gflops": round(2 * n ** 3 / t_w / 1e9, 1)}
    s = rand(256, 1024)
    row["softmax256x1024"] = {"wasm_ms": round(med(lambda: E.softmax_fast(rt, False, False, s, -1)) * 1e3, 2),
                              "numpy_ms": round(med(lambda: np.exp(s - s.max(1, keepdims=True))) * 1e3, 2)}
    x, w = rand(1, 64, 56, 56), rand(64, 64, 3, 3)
    t_w = med(lambda: K.conv_fast(rt, x, w, None, pads=[1, 1, 1, 1]), reps=5)
    t_n = med(lambda: conv_ops.conv(x, w, None, pads=[1, 1, 1, 1]), reps=1)
    row["conv3x3_64x56x56"] = {"wasm_ms": round(t_w * 1e3, 2), "numpy_ms": round(t_n * 1e3, 2),
                               "wasm_gflops": round(2 * 64 * 64 * 9 * 56 * 56 / t_w / 1e9, 1)}
    x, w = rand(1, 128, 56, 56), rand(128, 1, 3, 3)
    row["dwconv3x3_128x56x56"] = {
        "wasm_ms": round(med(lambda: K.conv_fast(rt, x, w, None, pads=[1, 1, 1, 1], group=128)) * 1e3, 2),
        "numpy_ms": round(med(lambda: conv_ops.conv(x, w, None, pads=[1, 1, 1, 1], group=128), reps=1) * 1e3, 2)}
    report[build] = row
# end to end: the demo CNN through InferenceSession on both EPs
from onnxide.demo import default_input, default_model_bytes  # noqa: E402

model, x = default_model_bytes(), default_input()
sessions = {p: onnxide.InferenceSession(model, providers=[p])
            for p in ("WasmExecutionProvider", "CPUExecutionProvider")}
sessions["WasmExecutionProvider, chains off"] = onnxide.InferenceSession(
    model, providers=[("WasmExecutionProvider", {"chains": "0"})])
feed = {sessions["CPUExecutionProvider"].get_inputs()[0].name: x}
outs = {p: s.run(None, feed)[0] for p, s in sessions.items()}
for p in ("WasmExecutionProvider", "WasmExecutionProvider, chains off"):
    np.testing.assert_allclose(outs[p], outs["CPUExecutionProvider"], rtol=1e-4, atol=1e-5)
report["demo_cnn_ms"] = {p: round(med(lambda: s.run(None, feed)) * 1e3, 2) for p, s in sessions.items()}
# the chain step (eps/wasm_chain.py) ran on the ctypes route: its arena a numpy array, pointers passed in place
wasm_sess = sessions["WasmExecutionProvider"]
plans = [wasm_sess._executor.main_plan] + [e.main_plan for e in (
    wasm_sess._specialized._executors.values() if wasm_sess._specialized else ()) if e is not None]
report["demo_cnn_chained_nodes"] = [len(s.kernel.steps) for p in plans for s in p.steps
                                    if s.node.op_type == "WasmChain"]
assert report["demo_cnn_chained_nodes"], "no WasmChain step in the demo CNN's plan"
print("WASM_SMOKE " + json.dumps(report))
