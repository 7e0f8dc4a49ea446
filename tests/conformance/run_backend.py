"""Run the ONNX backend cases through onnxide.InferenceSession with a chosen EP; print results, write reports.

usage: python tests/conformance/run_backend.py [-k REGEX] [-v] [--list] [--provider NAME] [--report]
       [--opt-level disable|basic|extended|all] [--timeout S]
"""
import argparse
import collections
import json
import os
import re
import signal
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "py_engine"))
sys.path.insert(0, os.path.dirname(HERE))

from conformance.cases import load_cases  # noqa: E402

LEVELS = {"disable": 0, "basic": 1, "extended": 2, "all": 99}


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def mock_audit(provider):
    """For the mock device EP (tests/device/): registers it and returns its transfer-bound Audit; else None."""
    from device.mock_device import MOCK, Audit, install
    return Audit(install()) if provider == MOCK else None


def device_ops(sess):
    """(domain, op) of the nodes a session runs on a device other than the host (bodies included)."""
    found = set()

    def walk(plan):
        for s in plan.steps:
            if not s.is_transfer and not s.device.is_host:
                found.add((s.node.domain or "ai.onnx", s.node.op_type))
            for body in (s.bodies or {}).values():
                walk(body)
    walk(sess._executor.main_plan)
    return found


def run_case(case, provider, opt_level, timeout, placed=None):
    """(passed: bool, reason: str) for one case; `placed` (a set) collects the ops that ran on a device."""
    import numpy as np
    import onnxide

    audit = mock_audit(provider)
    so = onnxide.SessionOptions()
    so.graph_optimization_level = opt_level
    so.intra_op_num_threads = 1  # one thread: every kernel an EP has runs (the native GEMM only runs there)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            src = case.model_path if case.model_path else case.model_bytes()
            sess = onnxide.InferenceSession(src, so, providers=[provider])
            if placed is not None:
                placed |= device_ops(sess)
            if audit is not None:
                audit.created()
            names = [i.name for i in sess.get_inputs()]
            for inputs, expected in case.data_sets:
                feed = dict(zip(names, inputs))
                why = case.compare(expected, sess.run(None, feed))
                if why:
                    return False, why
                if audit is not None:
                    audit.ran()
        return True, ""
    except _Timeout:
        return False, f"timeout after {timeout}s"
    except Exception as e:  # record and go on: the report lists the reason
        msg = str(e).splitlines()[0] if str(e) else ""
        return False, f"{type(e).__name__}: {msg[:300]}"
    finally:
        signal.alarm(0)


def report_name(provider):
    return {"CPUExecutionProvider": "cpu", "WasmExecutionProvider": "wasm", "WebGpuExecutionProvider": "webgpu",
            "CUDAExecutionProvider": "cuda", "NativeCPUExecutionProvider": "native-cpu",
            "MockDeviceExecutionProvider": "mock-device"}.get(provider, provider)


def recorded(provider):
    """docs/conformance/<ep>.json."""
    with open(os.path.join(ROOT, "docs", "conformance", f"{report_name(provider)}.json")) as f:
        return json.load(f)


def recorded_passes(provider):
    """The names of the cases docs/conformance/<ep>.json records as passing."""
    return {k for k, v in recorded(provider)["cases"].items() if v["passed"]}


def write_report(results, cases, provider, out_dir, placed=None):
    """docs/conformance/<ep>.md / .json; `placed` {case: ops that ran on a device} adds the per-op device column."""
    by_op = collections.defaultdict(lambda: [0, 0, 0])
    for c in cases:
        ok = results[c.name][0]
        for op in c.ops:
            by_op[op][1] += 1
            by_op[op][0] += ok
            by_op[op][2] += ok and placed is not None and op in placed.get(c.name, ())
    passed = sum(1 for r in results.values() if r[0])
    short = report_name(provider)
    os.makedirs(out_dir, exist_ok=True)
    data = {"provider": provider, "passed": passed, "total": len(results),
            "cases": {k: {"passed": v[0], "reason": v[1]} for k, v in sorted(results.items())}}
    if placed is not None:  # the op types that ran on the device in a passing case
        data["ran_on_device"] = sorted(f"{d}::{o}" for (d, o), (p, t, n) in by_op.items() if n)
    with open(os.path.join(out_dir, f"{short}.json"), "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    lines = [f"# Conformance: {provider}", "",
             f"ONNX backend cases passed: **{passed} / {len(results)}** "
             f"(written by `tests/conformance/run_backend.py --report --provider {provider}`).", "",
             "| domain | op | passed | cases |" + (" passed, ran on the device |" if placed is not None else ""),
             "|---|---|---|---|" + ("---|" if placed is not None else "")]
    for (dom, op), (p, t, d) in sorted(by_op.items()):
        lines.append(f"| {dom} | {op} | {p} | {t} |" + (f" {d} |" if placed is not None else ""))
    if placed is not None:
        gpu = sorted({op for (op, (p, t, d)) in by_op.items() if d})
        lines[2:2] = [f"Op types that ran on the device in a passing case: **{len(gpu)}** (nodes the EP declined ran "
                      f"on the CPU EP behind it).", ""]
    lines += ["", "## Failing cases", "", "| case | reason |", "|---|---|"]
    for k, (ok, why) in sorted(results.items()):
        if not ok:
            lines.append(f"| {k} | {why.replace('|', '/')} |")
    with open(os.path.join(out_dir, f"{short}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default=None, help="regex on case names")
    ap.add_argument("-v", action="store_true", help="print every case")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--provider", default="CPUExecutionProvider")
    ap.add_argument("--opt-level", default="all", choices=LEVELS)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--report", action="store_true", help="write docs/conformance/<ep>.md and .json")
    args = ap.parse_args(argv)
    import onnxide
    from device.mock_device import MOCK
    if args.provider != MOCK and args.provider not in onnxide.get_available_providers():
        names = ", ".join(onnxide.get_available_providers() + [MOCK])
        ap.error(f"--provider {args.provider!r} is not an available provider ({names}): sessions would fall back to "
                 "the CPU EP")
    cases = load_cases()
    if args.k:
        rx = re.compile(args.k)
        cases = [c for c in cases if rx.search(c.name)]
    if args.list:
        for c in cases:
            print(c.name, c.source, " ".join(f"{d}:{o}" for d, o in c.ops))
        return 0
    results, placed, t0 = {}, {}, time.time()
    for c in cases:
        t = time.time()
        placed[c.name] = set()
        ok, why = run_case(c, args.provider, LEVELS[args.opt_level], args.timeout, placed[c.name])
        results[c.name] = (ok, why)
        if args.v or not ok:
            print(f"{'PASS' if ok else 'FAIL'} {c.name} ({time.time() - t:.2f}s) {why}", flush=True)
    passed = sum(1 for r in results.values() if r[0])
    print(f"{passed} passed, {len(results) - passed} failed  [{args.provider}, {time.time() - t0:.0f}s]")
    if args.report:
        write_report(results, cases, args.provider, os.path.join(ROOT, "docs", "conformance"),
                     placed if any(placed.values()) else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
