"""Cold start in the browser: navigation -> first silero VAD result, each load in a fresh Chromium profile, onnxide
and onnxruntime-web alternating on the same page (web/bench/cold.html); medians, and onnxide's split into parts.

usage: python3 web/bench/cold_start.py [--runs 5] [--engines onnxide,ort,pyodide] [--doc docs/benchmarks-browser.md]
                                       [--json out.json]
`--doc` replaces (or appends) the file's "## Cold start" section and keeps the rest. Needs `bash .ci/setup_web.sh`.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from chromium import Browser, bench_unavailable  # noqa: E402
from devserver import ROOT, Server  # noqa: E402

HEADING = "## Cold start"
NAMES = {"onnxide": "onnxide (Worker host, WASM EP)", "ort": "onnxruntime-web (wasm, 1 thread, in the page)",
         "pyodide": "floor: Pyodide booted as the host boots it + `import numpy`, in the page, no onnxide"}


def load_once(url, engine, timeout_s):
    """One navigation in a fresh profile; returns the page's window.coldStart."""
    with Browser() as context:
        page = context.new_page()
        page.goto(f"{url}web/bench/cold.html?engine={engine}")
        page.wait_for_function("() => window.coldStart", timeout=timeout_s * 1000, polling=100)
        return page.evaluate("() => window.coldStart")


def measure(runs, engines, timeout_s=300):
    """{engine: [window.coldStart, ...]}, engines alternating within each round."""
    out = {e: [] for e in engines}
    with Server() as server:
        for i in range(runs):
            for e in engines:
                r = load_once(server.url, e, timeout_s)
                if "error" in r:
                    raise RuntimeError(f"{e}: {r['error']}")
                # the clip holds two spoken parts: the engine really ran the model (the floor runs none)
                if e != "pyodide" and len(r["segments"]) != 2:
                    raise RuntimeError(f"{e}: {len(r['segments'])} speech segments, expected 2")
                out[e].append(r)
                print(f"[cold] round {i + 1}/{runs} {e}: {r['totalMs']:.0f} ms", flush=True)
    return out


def render(res):
    """The "## Cold start" section (Markdown)."""
    med = statistics.median
    load = os.getloadavg()[0]
    n = min(len(v) for v in res.values())
    lines = [HEADING, "",
             f"Written by `python3 web/bench/cold_start.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
             f"navigation to the first silero VAD result (one 32 ms chunk of the demo's synthetic clip, the model "
             f"fetched by URL), {n} loads per engine, each in a fresh Chromium profile (nothing cached), engines "
             f"alternating, both on the same page (`web/bench/cold.html`), served from 127.0.0.1. 2-core machine "
             f"shared with other jobs (1-min load average {load:.1f} when written): absolute times swing by 2x and "
             f"more between runs; compare within one run.", "",
             "| engine | median ms | min ms | max ms | warm run median ms |", "|---|---:|---:|---:|---:|"]
    for e, rs in res.items():
        tot = [r["totalMs"] for r in rs]
        warm = [r["warmMedianMs"] for r in rs if r["warmMedianMs"] is not None]
        lines.append(f"| {NAMES.get(e, e)} {rs[0].get('version', '')} | {med(tot):.0f} | {min(tot):.0f} | "
                     f"{max(tot):.0f} | {f'{med(warm):.2f}' if warm else 'n/a'} |")
    if "pyodide" in res and "ort" in res:
        floor, peer = (med(r["totalMs"] for r in res[e]) for e in ("pyodide", "ort"))
        lines += ["", f"The floor row is what any page built on Pyodide pays before a line of onnxide runs: the "
                      f"host's own boot (memory snapshot, site-packages archive) and `import numpy`, in the page. "
                      f"It is {floor / peer:.2f}x onnxruntime-web's whole cold start in this run."]
    for e, rs in res.items():
        lines += ["", f"{NAMES.get(e, e)}, part by part (medians; consecutive parts, the overlapped one beside them):",
                  "", "| part | median ms |", "|---|---:|"]
        for j, p in enumerate(rs[0]["parts"]):
            lines.append(f"| {p['part']} | {med(r['parts'][j]['ms'] for r in rs):.0f} |")
        for j, p in enumerate(rs[0].get("overlapped", [])):
            lines.append(f"| {p['part']} (overlapped) | {med(r['overlapped'][j]['ms'] for r in rs):.0f} |")
    return "\n".join(lines) + "\n"


def split_section(text):
    """(before, the "## Cold start" section, after) of a Markdown text; the section is "" when absent."""
    at = text.find("\n" + HEADING + "\n")
    if at < 0:
        return text, "", ""
    end = text.find("\n## ", at + 1)
    end = len(text) if end < 0 else end + 1
    return text[:at + 1], text[at + 1:end], text[end:]


def write_section(path, section):
    text = open(path).read() if os.path.isfile(path) else ""
    before, _, after = split_section(text)
    before = before if before.endswith("\n\n") or not before else before.rstrip("\n") + "\n\n"
    with open(path, "w") as f:
        f.write(before + section + ("\n" + after if after else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="fresh-profile loads per engine")
    ap.add_argument("--engines", default="onnxide,ort,pyodide",
                    help="pyodide: the floor under any Pyodide page (boot + import numpy, no model)")
    ap.add_argument("--doc", default=None, help="write the section into this Markdown file")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    why = bench_unavailable(ROOT)
    if why:
        print(f"cold start skipped: {why}")
        return 1
    res = measure(args.runs, [e.strip() for e in args.engines.split(",") if e.strip()])
    section = render(res)
    print(section)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if args.doc:
        write_section(args.doc, section)
        print(f"wrote the {HEADING[3:]} section of {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
