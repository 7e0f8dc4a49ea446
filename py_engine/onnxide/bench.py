"""`onnxide bench`: onnxide and onnxruntime in one process, same model, inputs and thread count; medians, ratios."""
import os
import statistics
import time

import numpy as np

from . import dtypes


def make_feeds(sess, seed=0, dims=None):
    """Deterministic inputs for every graph input; symbolic dims take `dims[name]` or 1."""
    rng = np.random.default_rng(seed)
    dims = dims or {}
    feeds = {}
    for a in sess.get_inputs():
        shape = [d if isinstance(d, int) else dims.get(d, 1) for d in (a.shape or [])]
        code = dtypes.CODE_BY_NAME.get(a.type[len("tensor("):-1])
        if code is None:
            raise ValueError(f"bench: input '{a.name}' of type {a.type} needs explicit data")
        dt = dtypes.np_dtype(code)
        if dt.kind == "f":
            feeds[a.name] = rng.standard_normal(shape).astype(dt)
        elif dt.kind in "iu":
            feeds[a.name] = rng.integers(0, 2, shape).astype(dt)
        elif dt.kind == "b":
            feeds[a.name] = np.ones(shape, dtype=bool)
        else:
            raise ValueError(f"bench: input '{a.name}' of type {a.type} needs explicit data")
    return feeds


def _time_runs(fns, warmup, iterations, block=5, settle_s=0.3, warm_s=0.02):
    """Median wall time (ms) of each callable, run in turns of `block` runs each (a×5, b×5, a×5, ...) so that a
    machine whose speed drifts during the run (shared hosts do) slows every engine alike. Each turn starts after a
    pause, so the other engine's idle-spinning worker threads (OpenBLAS spins ~0.1 s after a call, onnxruntime's
    pool ~40 ms) have gone to sleep and do not take cores from the engine being timed, then untimed runs for
    `warm_s` (at least one): on this VM the first milliseconds after a pause ran up to 2.5x slower for every engine
    (cores clocked down, a sleeping worker's CPU slow to wake; measured at the time), which for a sub-millisecond
    model is the whole turn."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    times = [[] for _ in fns]
    while len(times[0]) < iterations:
        for fn, ts in zip(fns, times):
            if len(fns) > 1:
                time.sleep(settle_s)
            start = time.perf_counter()
            fn()
            while time.perf_counter() - start < warm_s:
                fn()
            for _ in range(min(block, iterations - len(ts))):
                t = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - t) * 1e3)
    return [statistics.median(ts) for ts in times]


def bench_model(model, threads=1, warmup=3, iterations=20, feeds=None, dims=None, with_ort=True):
    """A dict of timings (ms) for one model file or bytes: creation and run medians for onnxide and onnxruntime
    (their runs interleaved)."""
    import onnxide

    so = onnxide.SessionOptions()
    so.intra_op_num_threads = threads
    t = time.perf_counter()
    sess = onnxide.InferenceSession(model, so)
    row = {"onnxide_create_ms": (time.perf_counter() - t) * 1e3}
    feeds = feeds or make_feeds(sess, dims=dims)
    out = sess.run(None, feeds)
    if not with_ort:
        row["onnxide_ms"] = _time_runs([lambda: sess.run(None, feeds)], warmup, iterations)[0]
        return row
    import onnxruntime as ort

    oso = ort.SessionOptions()
    oso.intra_op_num_threads = threads
    oso.inter_op_num_threads = 1
    t = time.perf_counter()
    osess = ort.InferenceSession(model if isinstance(model, (bytes, str)) else os.fspath(model), oso,
                                 providers=["CPUExecutionProvider"])
    row["ort_create_ms"] = (time.perf_counter() - t) * 1e3
    ref = osess.run(None, feeds)
    row["onnxide_ms"], row["ort_ms"] = _time_runs([lambda: sess.run(None, feeds), lambda: osess.run(None, feeds)],
                                                  warmup, iterations)
    row["ratio"] = row["onnxide_ms"] / row["ort_ms"]
    row["max_abs_diff"] = max((float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
                               for a, b in zip(out, ref) if isinstance(a, np.ndarray) and a.dtype.kind in "fc"
                               and a.size), default=0.0)
    return row


def format_table(rows, threads):
    lines = ["| model | threads | onnxide ms | onnxruntime ms | ratio | onnxide create ms | ort create ms | max abs diff |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in rows:
        lines.append(f"| {name} | {threads} | {r['onnxide_ms']:.2f} | {r.get('ort_ms', float('nan')):.2f} | "
                     f"{r.get('ratio', float('nan')):.2f}x | {r['onnxide_create_ms']:.1f} | "
                     f"{r.get('ort_create_ms', float('nan')):.1f} | {r.get('max_abs_diff', float('nan')):.1e} |")
    return "\n".join(lines)
