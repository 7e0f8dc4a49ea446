"""ONNX backend conformance inside headless Chromium: cases run by onnxide in Pyodide (a Worker of
pages/conformance.html), outputs compared natively with tests/conformance/cases.py's compare, next to the native
CPU EP's result for the same case. CI runs a fixed subset of >= 300 small cases over every op family; with
--browser-full all 2,033 run and docs/conformance/browser.md (+ .json) is written. --browser-ep wasm runs the cases with
WasmExecutionProvider first in the page and natively (wasmtime); the full run then writes docs/conformance/wasm.md.

Gate: a case that passes natively must pass in the browser unless known_gaps.json lists it (a list that only
shrinks: a listed case that passes is reported so it can be removed)."""
import base64
import collections
import json
import os
import time

import numpy as np
import pytest

import casecodec as cc
from conformance.cases import load_cases
from conformance.run_backend import LEVELS, run_case
from onnxide import dtypes as dt
from onnxide.optimizer.eliminate import _NONDETERMINISTIC

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUBSET_MIN, MAX_CASE_BYTES, BATCH, CASE_TIMEOUT_S = 320, 1 << 20, 25, 90
EPS = {"cpu": "CPUExecutionProvider", "wasm": "WasmExecutionProvider", "webgpu": "WebGpuExecutionProvider"}
WEBGPU_SUBSET = 160  # cases in CI's WebGPU run (SwiftShader compiles each kernel: seconds per case)


def _nbytes(v):
    if isinstance(v, (list, tuple)):
        return sum(_nbytes(x) for x in v)
    if isinstance(v, dict):
        return sum(_nbytes(x) for x in v.values())
    return getattr(v, "nbytes", 8)


def case_bytes(c):
    return len(c.model_bytes()) + sum(_nbytes(i) + _nbytes(o) for i, o in c.data_sets)


def select_subset(cases, minimum=SUBSET_MIN):
    """Deterministic: small cases, round-robin over (domain, op) pairs so every op family is represented."""
    small = [c for c in cases if case_bytes(c) <= MAX_CASE_BYTES]
    by_op = collections.defaultdict(list)
    for c in sorted(small, key=lambda c: (len(c.ops), c.name)):
        for op in c.ops:
            by_op[op].append(c)
    chosen, seen, depth = [], set(), 0
    while len(chosen) < minimum and depth < 50:
        for op in sorted(by_op):
            for c in by_op[op][depth:depth + 1]:
                if c.name not in seen:
                    seen.add(c.name)
                    chosen.append(c)
        depth += 1
    return sorted(chosen, key=lambda c: c.name)


def write_batches(cases, folder):
    os.makedirs(folder, exist_ok=True)
    files = []
    for b in range(0, len(cases), BATCH):
        w = cc.Writer()
        entries = [{"name": c.name, "model": w.raw(c.model_bytes()),
                    "sets": [[w.value(x, lambda d, _=None: dt.code_of(d)) for x in ins] for ins, _ in c.data_sets]}
                   for c in cases[b:b + BATCH]]
        name = f"batch_{b // BATCH:03d}.bin"
        with open(os.path.join(folder, name), "wb") as f:
            f.write(w.blob({"cases": entries}))
        files.append((name, len(entries)))
    return files


def judge(case, res):
    """(passed, reason) for one browser result against the case's expected outputs."""
    if "error" in res:
        return False, res["error"]
    header, payload = cc.read(base64.b64decode(res["b64"]))
    if "error" in header:
        return False, header["error"]
    for (inputs, expected), got in zip(case.data_sets, header["sets"]):
        why = case.compare(expected, [cc.value(g, payload, dt.np_dtype) for g in got])
        if why:
            return False, why
    return True, ""


def run_in_browser(browser, server, scratch, cases, ep="CPUExecutionProvider"):
    from conftest import open_page
    folder = scratch / "conformance"
    batches = write_batches(cases, str(folder))
    page = open_page(browser, f"{server.url}tests/browser/pages/conformance.html?ep={ep}", "() => window.confReady",
                     timeout_ms=180_000)
    results = {}
    try:
        by_name = {c.name: c for c in cases}
        for bi, (name, n) in enumerate(batches):
            out = page.evaluate("([u, n, t]) => window.runBatch(u, n, t)",
                                [f"/_scratch/conformance/{name}", n, CASE_TIMEOUT_S * 1000])
            for c, res in zip(cases[bi * BATCH: bi * BATCH + n], out):
                results[c.name] = judge(by_name[c.name], res)
    finally:
        page.close()
    return results


def write_report(cases, browser_res, native_res, path_md, ep="CPUExecutionProvider"):
    by_op = collections.defaultdict(lambda: [0, 0, 0])
    for c in cases:
        for op in c.ops:
            by_op[op][0] += browser_res[c.name][0]
            by_op[op][1] += native_res[c.name][0]
            by_op[op][2] += 1
    bp = sum(r[0] for r in browser_res.values())
    npass = sum(r[0] for r in native_res.values())
    only_native = sorted(k for k in browser_res if native_res[k][0] and not browser_res[k][0])
    only_browser = sorted(k for k in browser_res if browser_res[k][0] and not native_res[k][0])
    native = "CPU EP" if ep == "CPUExecutionProvider" else f"{ep} first, kernels run by wasmtime"
    lines = [f"# Conformance: onnxide in the browser (Chromium, Pyodide 0.27.7, numpy 2.0.2), {ep} first", "",
             f"ONNX backend cases passed in headless Chromium with {ep} first: **{bp} / {len(cases)}**; natively "
             f"({native}, same tree): **{npass} / {len(cases)}**.", "",
             f"Written by `python3 -m pytest tests/browser/test_conformance.py --browser-full"
             f"{'' if ep == 'CPUExecutionProvider' else ' --browser-ep wasm'}` (each case runs in a "
             "Web Worker; outputs compared with tests/conformance/cases.py's `compare`).", "",
             f"## Failing in the browser but passing natively ({len(only_native)})", "", "| case | browser reason |",
             "|---|---|"]
    lines += [f"| {k} | {browser_res[k][1].replace('|', '/')} |" for k in only_native]
    if only_browser:
        lines += ["", f"## Passing in the browser but failing natively ({len(only_browser)})", ""]
        lines += [f"- {k}: native: {native_res[k][1].replace('|', '/')}" for k in only_browser]
    lines += ["", "## By operator", "", "| domain | op | browser | native | cases |", "|---|---|---|---|---|"]
    for (d, op), (b, n, t) in sorted(by_op.items()):
        lines.append(f"| {d} | {op} | {b} | {n} | {t} |")
    lines += ["", "## All failing cases (browser)", "", "| case | reason |", "|---|---|"]
    lines += [f"| {k} | {why.replace('|', '/')} |" for k, (ok, why) in sorted(browser_res.items()) if not ok]
    os.makedirs(os.path.dirname(path_md), exist_ok=True)
    with open(path_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(path_md[:-3] + ".json", "w") as f:
        json.dump({"browser_passed": bp, "native_passed": npass, "total": len(cases),
                   "cases": {k: {"browser": browser_res[k][0], "native": native_res[k][0],
                                 "reason": browser_res[k][1]} for k in sorted(browser_res)}}, f, indent=1)


@pytest.fixture(scope="module")
def all_cases():
    return load_cases()


def test_backend_cases_in_chromium(browser, server, scratch, all_cases, request, capsys):
    full = request.config.getoption("--browser-full")
    cases = all_cases if full else select_subset(all_cases)
    ops = {op for c in cases for op in c.ops}
    assert full or (len(cases) >= 300 and len(ops) >= 150), (len(cases), len(ops))
    t0 = time.time()
    ep = EPS[request.config.getoption("--browser-ep")]
    if ep != "CPUExecutionProvider":
        import onnxide.eps  # noqa: F401  (registers WasmExecutionProvider natively when wasmtime is present)
        if ep not in onnxide.get_available_providers():
            pytest.skip(f"{ep} is not available natively (wasmtime + wasm_kernels/build.sh)")
    browser_res = run_in_browser(browser, server, scratch, cases, ep)
    t1 = time.time()
    with np.errstate(all="ignore"):
        native_res = {c.name: run_case(c, ep, LEVELS["all"], 120) for c in cases}
    with open(os.path.join(HERE, "known_gaps.json")) as f:
        gaps = json.load(f)
    # random ops (Bernoulli, RandomNormal, ...) match a case's expected values only by chance, in either place
    random_cases = {c.name for c in cases if any(op in _NONDETERMINISTIC for _, op in c.ops)}
    regressions = [f"{k}: {browser_res[k][1]}" for k in sorted(browser_res)
                   if native_res[k][0] and not browser_res[k][0] and k not in gaps and k not in random_cases]
    fixed = [k for k in gaps if k in browser_res and browser_res[k][0]]
    bp = sum(r[0] for r in browser_res.values())
    npass = sum(r[0] for r in native_res.values())
    if full:
        doc = {"CPUExecutionProvider": "browser.md", "WasmExecutionProvider": "wasm.md"}.get(ep, "webgpu-browser.md")
        write_report(cases, browser_res, native_res, os.path.join(ROOT, "docs", "conformance", doc), ep)
    with capsys.disabled():
        print(f"\nbrowser conformance [{ep}] ({'full' if full else 'subset'}): {bp} / {len(cases)} in Chromium "
              f"({t1 - t0:.0f}s), native {npass} / {len(cases)}; {len(ops)} (domain, op) pairs; "
              f"{len(regressions)} new browser-only failures; {len(fixed)} known gaps now pass")
        for k in fixed:
            print(f"  known gap now passes (remove from known_gaps.json): {k}")
    assert not regressions, "passing natively but failing in Chromium:\n" + "\n".join(regressions[:40])


def test_webgpu_cases_in_chromium(browser, server, scratch, all_cases, request, capsys):
    """The WebGPU EP in a Chromium Worker (SwiftShader) on a subset over the ops it runs on the GPU: each case that
    passes natively on WebGPU (lavapipe) passes in the page too."""
    import onnxide
    ep = "WebGpuExecutionProvider"
    if ep not in onnxide.get_available_providers():
        pytest.skip("wgpu-py is not installed natively")
    from conformance.run_backend import recorded
    on_gpu = {tuple(op.split("::")) for op in recorded(ep).get("ran_on_device", ())}
    cases = [c for c in select_subset(all_cases) if any(op in on_gpu for op in c.ops)][:WEBGPU_SUBSET]
    t0 = time.time()
    browser_res = run_in_browser(browser, server, scratch, cases, ep)
    t1 = time.time()
    with np.errstate(all="ignore"):
        native_res = {c.name: run_case(c, ep, LEVELS["all"], 120) for c in cases}
    random_cases = {c.name for c in cases if any(op in _NONDETERMINISTIC for _, op in c.ops)}
    regressions = [f"{k}: {browser_res[k][1]}" for k in sorted(browser_res)
                   if native_res[k][0] and not browser_res[k][0] and k not in random_cases]
    with capsys.disabled():
        print(f"\nbrowser conformance [{ep}] (subset): {sum(r[0] for r in browser_res.values())} / {len(cases)} in "
              f"Chromium ({t1 - t0:.0f}s), native {sum(r[0] for r in native_res.values())} / {len(cases)}")
    assert not regressions, "passing natively on WebGPU but failing in Chromium:\n" + "\n".join(regressions[:40])
