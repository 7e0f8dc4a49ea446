"""Python side of the browser benchmark (runs inside Pyodide): times onnxide sessions on given inputs, per-op profile."""
import json
import os
import time

import numpy as np

import onnxide

try:  # Pyodide
    from pyodide.ffi import to_js
    import js
except ImportError:  # pragma: no cover - only imported in the page
    to_js = js = None

EP_NAMES = {"wasm": "WasmExecutionProvider", "cpu": "CPUExecutionProvider",
            "wasm-nochains": ("WasmExecutionProvider", {"chains": "0"})}  # (--eps wasm,wasm-nochains: chains' A/B)


def _js(value):
    return to_js(value, dict_converter=js.Object.fromEntries, create_pyproxies=False)


def load_inputs(spec_json, folder):
    """{name: array} from the bench's input list [{name, type, dims, file}] (files written into `folder`)."""
    dtypes = {"float32": np.float32, "int64": np.int64, "int32": np.int32}
    feeds = {}
    for s in json.loads(spec_json):
        arr = np.fromfile(os.path.join(folder, s["file"]), dtype=dtypes[s["type"]])
        feeds[s["name"]] = arr.reshape([int(d) for d in s["dims"]])
    return feeds


def profile_ops(path, ep, feeds, top=10):
    """Per-op totals of one warm run with SessionOptions.enable_profiling: [{op, provider, ms, count}], total ms."""
    so = onnxide.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = "/tmp/onnxide_bench_profile"
    sess = onnxide.InferenceSession(path, so, providers=[EP_NAMES[ep]])
    sess.run(None, feeds)
    sess.end_profiling()  # drop the first run's events
    sess.run(None, feeds)
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    agg = {}
    for e in events:
        if e.get("cat") != "Node":
            continue
        key = (e["args"].get("op_name", e["name"]), e["args"].get("provider", ""))
        ms, n = agg.get(key, (0.0, 0))
        agg[key] = (ms + e["dur"] / 1e3, n + 1)
    rows = sorted(({"op": k[0], "provider": k[1], "ms": round(v[0], 3), "count": v[1]} for k, v in agg.items()),
                  key=lambda r: -r["ms"])
    return rows[:top], round(sum(r["ms"] for r in rows), 3)


_open = {}


def open_session(key, model_path, spec_json, folder, ep):
    """Creates a session and runs it once (the warm-up); {createMs, firstMs, providers, build}."""
    feeds = load_inputs(spec_json, folder)
    t0 = time.perf_counter()
    sess = onnxide.InferenceSession(model_path, providers=[EP_NAMES[ep]])
    create_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    outs = sess.run(None, feeds)
    first_ms = (time.perf_counter() - t0) * 1e3
    _open[key] = (sess, feeds, outs, model_path, ep)
    res = {"ep": ep, "providers": sess.get_providers(), "createMs": create_ms, "firstMs": first_ms}
    if ep == "wasm":
        from onnxide.eps import wasm_runtime
        res["build"] = wasm_runtime.load("auto")[1]
    return _js(res)


def run_once(key, reps=1):
    """Milliseconds of one warm InferenceSession.run (timed in Python, inputs already numpy): the mean of `reps`
    back-to-back runs."""
    sess, feeds, _, path, ep = _open[key]
    t0 = time.perf_counter()
    for _ in range(reps):
        outs = sess.run(None, feeds)
    ms = (time.perf_counter() - t0) * 1e3 / reps
    _open[key] = (sess, feeds, outs, path, ep)
    return ms


def close_session(key, profile=False):
    """Outputs of the last run as float32 bytes (for comparison) and, when asked, the per-op profile."""
    sess, feeds, outs, path, ep = _open.pop(key)
    res = {"outputs": [{"name": o.name, "dims": list(np.shape(v)),
                        "data": np.ascontiguousarray(v, dtype=np.float32).tobytes()}
                       for o, v in zip(sess.get_outputs(), outs)]}
    del sess
    if profile:
        res["profile"], res["profileTotalMs"] = profile_ops(path, ep, feeds)
    return _js(res)


def gemm(sizes=(256, 512, 1024), budget_s=1.0):
    """The repo's GEMM benchmark (onnxide.eps.wasm_bench) for both builds, through the ctypes route."""
    from onnxide.eps.wasm_bench import gemm_gflops
    rows = gemm_gflops(tuple(sizes), builds=("simd128", "relaxed"), with_numpy=True, budget_s=budget_s)
    return _js({"rows": rows})


def info():
    from onnxide.eps import wasm_runtime
    return _js({"onnxide": onnxide.__version__, "numpy": np.__version__,
                "providers": onnxide.get_available_providers(), "relaxed": wasm_runtime.relaxed_supported()})
