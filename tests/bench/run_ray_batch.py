"""Ray Data batch scoring throughput with onnxide: 1 actor vs 2 on a CPU-bound MLP, on a local 2-CPU cluster.

usage: python tests/bench/run_ray_batch.py [--rows 40000] [--repeats 2] [--write]   (--write: docs/benchmarks.md)"""
import argparse
import os
import platform
import shutil
import sys
import tempfile
import time


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "py_engine"), os.path.join(ROOT, "tests")]

from batch import data  # noqa: E402

MARKER = "<!-- ray-batch: written by tests/bench/run_ray_batch.py -->"
SHAPE = dict(features=256, hidden=1024, layers=3)


def _single_process(model, x, batch):
    import onnxide

    so = onnxide.SessionOptions()
    so.intra_op_num_threads = 1
    sess = onnxide.InferenceSession(model, so)
    t = time.perf_counter()
    for i in range(0, len(x), batch):
        sess.run(None, {"x": x[i:i + batch]})
    return time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=40000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    import ray

    from onnxide.batch import score

    model, x = data.mlp(**SHAPE), data.features(args.rows, SHAPE["features"])
    tmp = tempfile.mkdtemp()
    src = data.write_parquet(os.path.join(tmp, "in"), x, files=8)
    loop_s = _single_process(model, x, args.batch)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    times = {}
    try:
        for _ in range(args.repeats):
            for actors in (1, 2):
                out = os.path.join(tmp, f"out{actors}")
                shutil.rmtree(out, ignore_errors=True)
                t = time.perf_counter()
                score(src, model, out, inputs={"x": "features"}, actors=actors, threads=1, batch_size=args.batch)
                times.setdefault(actors, []).append(time.perf_counter() - t)
                print(f"actors={actors}: {times[actors][-1]:.1f} s", flush=True)
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    best = {a: min(t) for a, t in times.items()}
    lines = [MARKER, "", "## Ray Data batch scoring: 1 actor vs 2 (`onnxide.batch`)", "",
             f"Written by `python tests/bench/run_ray_batch.py --write`: {args.rows:,} Parquet rows (8 files) through "
             f"`onnxide.batch.score` on a local `ray.init(num_cpus=2)` cluster (Ray {ray.__version__}), MLP "
             f"{SHAPE['features']}-{SHAPE['hidden']}×{SHAPE['layers']}-10 (CPU-bound MatMuls), batch "
             f"{args.batch} rows, 1 intra-op thread per actor; end-to-end wall time of the job (read, actor start, "
             f"scoring, Parquet write), best of {args.repeats}. Machine: {platform.machine()}, {os.cpu_count()} "
             f"cores shared with other work, load average {os.getloadavg()[0]:.1f} at the end.", "",
             "| actors × threads | wall s (best) | rows/s | speed-up | every run, s |", "|---|---|---|---|---|"]
    for a in (1, 2):
        runs = ", ".join(f"{t:.1f}" for t in times[a])
        lines.append(f"| {a} × 1 | {best[a]:.1f} | {args.rows / best[a]:,.0f} | {best[1] / best[a]:.2f}x | {runs} |")
    lines += ["", f"The same rows in one plain process (one session, 1 thread, no Ray): {loop_s:.1f} s "
              f"({args.rows / loop_s:,.0f} rows/s) — the scoring itself; the rest of each Ray run is Ray's fixed cost "
              "(workers, actor start-up and model load, object transfers) and, on a loaded machine, waiting for a core: "
              "with a load average above the core count neither actor has a core of its own, so the speed-up here is "
              "a floor, not what 2 one-thread actors reach on 2 idle cores."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        path = os.path.join(ROOT, "docs", "benchmarks.md")
        head = open(path).read().partition(MARKER)[0].rstrip("\n")
        with open(path, "w") as f:
            f.write(head + "\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
