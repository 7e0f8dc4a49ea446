"""A/B of one native-EP setting on the standard models (the numbers behind the native kernels' tuning comments): a
session per value, each built and warmed with its value set, then blocks of runs alternating between the values in
one process (a pause before each block, as bench_model), medians printed.

usage: python tests/bench/ab_native.py SETTING=V1,V2[,...] [--models resnet,readme] [--threads 2] [--rounds 8]
                                       [--block 5] [--pause 0.2]
SETTING: parallel_work / pool_spin (the library's nx_set_parallel_work / nx_set_pool_spin), or a module constant of
onnxide_native.cpu_ops (e.g. WINOGRAD_F4=True,False). Prints timings only (no assertions).
"""
import argparse
import ast
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "py_engine"), os.path.join(ROOT, "native_eps"), os.path.dirname(HERE), HERE]

import onnxide  # noqa: E402
from onnxide.bench import make_feeds  # noqa: E402
from onnxide_native import cpu_ops, lib as native_lib  # noqa: E402
from run_bench import standard_models  # noqa: E402

LIBRARY_SETTINGS = {"parallel_work": "nx_set_parallel_work", "pool_spin": "nx_set_pool_spin"}


def setter(name):
    """A function applying one value of setting `name`."""
    if name in LIBRARY_SETTINGS:
        fn = getattr(native_lib.load(), LIBRARY_SETTINGS[name])
        return lambda v: fn(int(v))
    if not hasattr(cpu_ops, name):
        raise SystemExit(f"ab_native: no setting {name} (library: {sorted(LIBRARY_SETTINGS)}, or a cpu_ops constant)")
    return lambda v: setattr(cpu_ops, name, v)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("setting", help="NAME=V1,V2,...")
    ap.add_argument("--models", default="", help="comma-separated parts of model names (default: all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=8, help="blocks of runs per value")
    ap.add_argument("--block", type=int, default=5,
                    help="runs per block (a model of ~0.1 ms a run needs hundreds to reach the steady state of one "
                         "model run over and over: short blocks measure the other session's caches too)")
    ap.add_argument("--pause", type=float, default=0.2,
                    help="seconds before each block (0: blocks back to back; a pause leaves the pool's workers and "
                         "the VM's vCPUs idle, which a model of ~0.1 ms a run feels in every block)")
    args = ap.parse_args(argv)
    name, _, values = args.setting.partition("=")
    values = [ast.literal_eval(v) for v in values.split(",")]
    apply = setter(name)
    wanted = [w.lower() for w in args.models.split(",") if w]
    for title, model, feeds, dims in standard_models():
        if wanted and not any(w in title.lower() for w in wanted):
            continue
        sessions = []
        for v in values:
            apply(v)
            so = onnxide.SessionOptions()
            so.intra_op_num_threads = args.threads
            s = onnxide.InferenceSession(model, so)
            f = feeds or make_feeds(s, dims=dims)
            for _ in range(3):  # (a shape-specialized plan is built on the second run: with this value set)
                s.run(None, f)
            sessions.append((v, s, f))
        times = {i: [] for i in range(len(values))}
        for _ in range(args.rounds):
            for i, (v, s, f) in enumerate(sessions):
                apply(v)
                time.sleep(args.pause)
                s.run(None, f)
                for _ in range(args.block):
                    t = time.perf_counter()
                    s.run(None, f)
                    times[i].append((time.perf_counter() - t) * 1e3)
        cells = "  ".join(f"{name}={v}: {statistics.median(times[i]):8.3f} ms" for i, v in enumerate(values))
        print(f"{title[:44]:44s} t{args.threads}  {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
