"""Where a 2-thread run's time goes when the machine's two CPUs are far apart (docs/design.md, the kernels' thread
pool): in windows of a few tenths of a second, a core-to-core round trip between CPUs 0 and 1 (a ping-pong probe
compiled with the system C compiler), then one model's median at 2 threads, onnxide and onnxruntime in one process;
at the end the medians of the windows whose round trip was near and those where it was far.

usage: python tests/bench/two_dies.py [--model "default CNN"] [--windows 40] [--far-ns 200]
Prints; no assertions. Needs gcc and 2+ CPUs (on a VM the placement changes over tens of seconds: run long enough).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "py_engine"), os.path.dirname(HERE), HERE]

from onnxide.bench import make_feeds  # noqa: E402
from run_bench import standard_models  # noqa: E402

PROBE = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
static volatile int flag __attribute__((aligned(64)));
static void pin(int c) {
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}
static void* other(void* a) {
    (void)a; pin(0);
    for (int i = 0; i < 100000; i++) { while (flag != 1) {} flag = 0; }
    return 0;
}
int main(void) {
    pthread_t t; struct timespec a, b;
    pin(1); pthread_create(&t, 0, other, 0);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 100000; i++) { flag = 1; while (flag != 0) {} }
    clock_gettime(CLOCK_MONOTONIC, &b);
    pthread_join(t, 0);
    printf("%.0f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 100000);
    return 0;
}
"""


def build_probe(folder):
    src, exe = os.path.join(folder, "probe.c"), os.path.join(folder, "probe")
    with open(src, "w") as f:
        f.write(PROBE)
    subprocess.run(["gcc", "-O2", "-pthread", src, "-o", exe], check=True)
    return exe


def window_median(session, feeds, seconds):
    times, end = [], time.time() + seconds
    while time.time() < end:
        t = time.perf_counter_ns()
        session.run(None, feeds)
        times.append((time.perf_counter_ns() - t) / 1e3)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="default CNN", help="part of a standard model's name (run_bench.py)")
    ap.add_argument("--windows", type=int, default=40)
    ap.add_argument("--far-ns", type=float, default=200.0, help="round trips above this count as far apart")
    args = ap.parse_args(argv)
    import onnxide
    import onnxruntime as ort

    name, model, feeds, dims = next(m for m in standard_models() if args.model.lower() in m[0].lower())
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = 2
    ox = onnxide.InferenceSession(model, so)
    o = ort.SessionOptions()
    o.intra_op_num_threads, o.inter_op_num_threads = 2, 1
    rt = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
    feeds = feeds or make_feeds(ox, dims=dims)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        probe = build_probe(folder)
        print(f"{name}, 2 threads (µs per run, window medians)")
        for _ in range(args.windows):
            time.sleep(0.05)  # (both engines' idle workers spin a few ms after a run: the probe would share a core)
            trip = float(subprocess.run([probe], capture_output=True, text=True, check=True).stdout)
            a, b = window_median(ox, feeds, 0.3), window_median(rt, feeds, 0.3)
            rows.append((trip, a, b))
            print(f"  round trip {trip:5.0f} ns   onnxide {a:8.1f}   onnxruntime {b:8.1f}   ratio {a / b:5.2f}",
                  flush=True)
    for label, part in (("near", [r for r in rows if r[0] <= args.far_ns]),
                        ("far", [r for r in rows if r[0] > args.far_ns])):
        if part:
            a, b = statistics.median(r[1] for r in part), statistics.median(r[2] for r in part)
            print(f"{label:4s} ({len(part)} windows, round trip {statistics.median(r[0] for r in part):.0f} ns): "
                  f"onnxide {a:.1f} µs, onnxruntime {b:.1f} µs, ratio {a / b:.2f}")


if __name__ == "__main__":
    main()
