"""Benchmark of threads under load (issue 16, item 4): each standard model at 2 threads, onnxide and onnxruntime in
one process, first on a quiet machine, then with a competing busy process (one spinning child) — each engine's
slowdown = loaded median / quiet median. Writes its section of docs/benchmarks.md with --write.

usage: python tests/bench/run_contention.py [--threads 2] [--iterations 20] [--write]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "py_engine"), os.path.dirname(HERE), HERE]

from onnxide.bench import bench_model  # noqa: E402
from run_bench import standard_models  # noqa: E402

BEGIN, END = "<!-- load: written by tests/bench/run_contention.py -->", "<!-- /load -->"


class Competitor:
    """A busy process (a Python loop on one core) for the duration of a `with` block."""

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--write", action="store_true", help="write the section of docs/benchmarks.md")
    args = ap.parse_args(argv)
    rows = []
    for name, model, feeds, dims in standard_models():
        if "session creation" in name:
            continue
        quiet = bench_model(model, args.threads, 3, args.iterations, feeds=feeds, dims=dims)
        with Competitor():
            loaded = bench_model(model, args.threads, 3, args.iterations, feeds=feeds, dims=dims)
        row = (name, quiet["onnxide_ms"], loaded["onnxide_ms"], quiet["ort_ms"], loaded["ort_ms"])
        rows.append(row)
        print(f"{name:50s} onnxide {row[1]:8.2f} -> {row[2]:8.2f} ms ({row[2] / row[1]:5.2f}x)   onnxruntime "
              f"{row[3]:8.2f} -> {row[4]:8.2f} ms ({row[4] / row[3]:5.2f}x)", flush=True)
    lines = [BEGIN, "", "## Under load: a competing busy process", "",
             f"Written by `python tests/bench/run_contention.py --write`: {args.threads} threads, each model timed "
             f"quiet and then with one busy process spinning on a core ({os.cpu_count()} cores), onnxide and "
             "onnxruntime alternating in blocks in one process (medians of "
             f"{args.iterations} runs). Slowdown = loaded / quiet; onnxide's native kernels run on their "
             "own pool (native_eps/cpu_kernels/nx_pool.c: chunks claimed from a counter, idle workers spin, then "
             "yield, then sleep).", "",
             "| model | onnxide quiet ms | loaded ms | slowdown | onnxruntime quiet ms | loaded ms | slowdown |",
             "|---|---|---|---|---|---|---|"]
    for name, oq, ol, rq, rl in rows:
        lines.append(f"| {name} | {oq:.2f} | {ol:.2f} | {ol / oq:.2f}x | {rq:.2f} | {rl:.2f} | {rl / rq:.2f}x |")
    section = "\n".join(lines + ["", END])
    print(section)
    if args.write:
        path = os.path.join(ROOT, "docs", "benchmarks.md")
        text = open(path).read() if os.path.exists(path) else ""
        pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
        text = pattern.sub(lambda m: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
        with open(path, "w") as f:
            f.write(text.rstrip("\n") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
