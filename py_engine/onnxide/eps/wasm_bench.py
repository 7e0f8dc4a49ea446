"""GEMM GFLOP/s of the wasm kernels (kernel time only, operands already in the module's memory).

Natively (wasmtime):   PYTHONPATH=py_engine python -m onnxide.eps.wasm_bench [--sizes 256,512,1024] [--build B]
In Pyodide (browser):  from onnxide.eps.wasm_bench import gemm_gflops; gemm_gflops()   # same code, ctypes route
Returns / prints one row per (build, size): median and best ms and GFLOP/s (best is the robust figure on a shared
machine); numpy's matmul on the same host for reference.
"""
import argparse
import json
import time

import numpy as np

from . import wasm_runtime as rt


def _times(fn, min_reps=3, budget_s=1.0):
    """(median, best) seconds of fn(); the best is the robust figure on a machine shared with other jobs."""
    fn()  # warm (tiers up in V8)
    times = []
    t_end = time.perf_counter() + budget_s
    while len(times) < min_reps or (time.perf_counter() < t_end and len(times) < 50):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), float(np.min(times))


def gemm_gflops(sizes=(256, 512, 1024), builds=("simd128", "relaxed"), with_numpy=True, budget_s=1.0):
    """[{build, n, ms, gflops}] for square float32 GEMMs C = A B, plus numpy rows when with_numpy."""
    rows = []
    rng = np.random.default_rng(0)
    for build in builds:
        try:
            be, got = rt.load(build)
        except RuntimeError as e:
            rows.append({"build": build, "error": str(e)})
            continue
        scratch = rt.Scratch(be.call("ox_gemm_scratch_floats", []))
        for n in sizes:
            a = rng.standard_normal((n, n), dtype=np.float32)
            b = rng.standard_normal((n, n), dtype=np.float32)
            c = np.empty((n, n), np.float32)
            args = [1, n, n, n, rt.In(a), n, 1, 0, rt.In(b), n, 1, 0, rt.Out(c), n, 0,
                    1.0, 0, 0, 0, 0, 0.0, 0, 0.0, 0.0, scratch]
            be.call("ox_gemm", args)
            err = float(np.abs(c - a @ b).max() / max(np.abs(a @ b).max(), 1e-30))
            med, best = _times(be.bind("ox_gemm", args), budget_s=budget_s)
            rows.append({"build": got, "n": n, "ms": round(med * 1e3, 3), "best_ms": round(best * 1e3, 3),
                         "gflops": round(2 * n ** 3 / med / 1e9, 2), "best_gflops": round(2 * n ** 3 / best / 1e9, 2),
                         "rel_err": err})
    if with_numpy:
        for n in sizes:
            a = rng.standard_normal((n, n), dtype=np.float32)
            b = rng.standard_normal((n, n), dtype=np.float32)
            med, best = _times(lambda: a @ b, budget_s=budget_s)
            rows.append({"build": "numpy", "n": n, "ms": round(med * 1e3, 3), "best_ms": round(best * 1e3, 3),
                         "gflops": round(2 * n ** 3 / med / 1e9, 2), "best_gflops": round(2 * n ** 3 / best / 1e9, 2)})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,512,1024")
    ap.add_argument("--build", default="simd128,relaxed")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = gemm_gflops(tuple(int(s) for s in args.sizes.split(",")), tuple(args.build.split(",")))
    host = "pyodide" if rt.IS_PYODIDE else "wasmtime"
    if args.json:
        print(json.dumps({"host": host, "rows": rows}))
        return 0
    print(f"GEMM single thread, host: {host}")
    for r in rows:
        if "error" in r:
            print(f"  {r['build']:8s} unavailable: {r['error']}")
        else:
            print(f"  {r['build']:8s} n={r['n']:5d}  median {r['ms']:9.3f} ms {r['gflops']:7.2f} GFLOP/s   "
                  f"best {r['best_ms']:9.3f} ms {r['best_gflops']:7.2f} GFLOP/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
