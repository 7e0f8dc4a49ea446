"""The browser main job: serve the repository on 127.0.0.1; in headless Chromium run the bundled default CNN through
the JS API (same input as natively, top classes, timings, difference from the native run), then open web/demo/
once and print the VAD result and timings (Pyodide boot separate from cold start and warm runs); screenshot.

usage: python3 web/main_job.py [--host worker|page] [--screenshot docs/web-demo.png] [--timeout 180]
Needs `bash .ci/setup_web.sh` first (Pyodide folder, onnxide wheel, demo model, Chromium). `--write FILE` replaces
the report at the top of FILE and keeps its hand-written `## ` sections below it.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from chromium import Browser, unavailable  # noqa: E402
from devserver import ROOT, Server  # noqa: E402


def run_demo(context, base_url, host="worker", timeout_s=180, screenshot=None):
    """Open the demo, wait for it to finish; returns window.onnxideDemo (state, result, error)."""
    page = context.new_page()
    logs = []
    page.on("console", lambda m: logs.append(f"[console.{m.type}] {m.text}"))
    page.on("pageerror", lambda e: logs.append(f"[pageerror] {e}"))
    t0 = time.time()
    page.goto(f"{base_url}web/demo/?host={host}")
    try:
        page.wait_for_function("() => window.onnxideDemo && ['done', 'error'].includes(window.onnxideDemo.state)",
                               timeout=timeout_s * 1000, polling=200)
    except Exception:
        pass
    demo = page.evaluate("() => window.onnxideDemo ? {state: window.onnxideDemo.state, error: window.onnxideDemo.error,"
                         " result: window.onnxideDemo.result} : null")
    demo = demo or {"state": "missing", "error": "window.onnxideDemo not set", "result": None}
    demo["wall_s"] = time.time() - t0
    demo["logs"] = logs
    if screenshot:
        os.makedirs(os.path.dirname(os.path.abspath(screenshot)), exist_ok=True)
        page.screenshot(path=screenshot, full_page=True)
    page.close()
    return demo


_DEFAULT_MODEL_JS = """async ([base, runs]) => {
  const ort = await import(base + 'web/onnxide-web.mjs');
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(base + 'build/web/models/default_cnn.onnx');
  const t1 = performance.now();
  const bytes = await (await fetch(base + 'build/web/models/default_input.bin')).arrayBuffer();
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', new Float32Array(bytes), [1, 3, 64, 64])};
  let out = await session.run(feeds);
  const t2 = performance.now();
  const times = [];
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    out = await session.run(feeds);
    times.push(performance.now() - s);
  }
  times.sort((a, b) => a - b);
  const probs = Array.from(out[session.outputNames[0]].data);
  await session.release();
  return {createMs: t1 - t0, firstRunMs: t2 - t1, warmMedianMs: times[times.length >> 1], probs,
          providers: session.providers || null};
}"""


_LINES = []


def say(text):
    """Print a report line and keep it for --write."""
    print(text, flush=True)
    _LINES.append(text)


def progress(text):
    """Print what the job is waiting for (not part of the report)."""
    print(f"[browser] {text}", flush=True)


def run_default_model(context, base_url, runs=20):
    """The bundled default CNN in the page (Worker host) on the native job's input; returns probs and timings."""
    import numpy as np

    sys.path.insert(0, os.path.join(ROOT, "py_engine"))
    from onnxide.demo import default_input

    models = os.path.join(ROOT, "build", "web", "models")
    default_input().astype(np.float32).tofile(os.path.join(models, "default_input.bin"))
    page = context.new_page()
    page.goto(f"{base_url}web/README.md")
    try:
        return page.evaluate(_DEFAULT_MODEL_JS, [base_url, runs])
    finally:
        page.close()


def report_default_model(res):
    import numpy as np

    sys.path.insert(0, os.path.join(ROOT, "py_engine"))
    import onnxide
    from onnxide.demo import default_input, default_model_bytes

    native = onnxide.InferenceSession(default_model_bytes()).run(None, {"image": default_input()})[0][0]
    probs = np.asarray(res["probs"], dtype=np.float32)
    top = np.argsort(-probs)[:3]
    say("onnxide in headless Chromium: bundled default CNN (1, 3, 64, 64), same input as the native job; "
        f"providers: {', '.join(res.get('providers') or ['?'])}")
    say("  top-3 classes: " + ", ".join(f"{int(i)} ({probs[i]:.4f})" for i in top)
          + f"; max |browser - native| = {float(np.abs(probs - native).max()):.1e}")
    say(f"  InferenceSession.create {res['createMs']:.0f} ms (booting Pyodide in a fresh Worker included), "
          f"first run {res['firstRunMs']:.1f} ms, "
          f"warm run median {res['warmMedianMs']:.2f} ms")


def report(demo):
    r = demo["result"]
    if demo["state"] != "done":
        say(f"onnxide web demo FAILED ({demo['state']}): {demo['error']}")
        for line in demo["logs"][-20:]:
            say("  " + line)
        return 1
    b = r["boot"]
    say(f"onnxide {r['versions']['onnxide']} in headless Chromium (Pyodide {r['versions']['pyodide']}, host: "
          f"{r['host']}, providers: {', '.join(r['providers'])}): silero VAD on a {r['audioSeconds']:.1f} s "
          f"synthetic clip")
    say("  speech segments: " + (", ".join(f"{a:.2f}-{e:.2f} s" for a, e in r["segments"]) or "none")
          + "  (synthesized voice at 1.00-2.60 s and 3.40-5.00 s)")
    how = "from its memory snapshot, numpy + onnxide written" if b.get("boot") == "snapshot" else \
        "numpy + onnxide wheels installed"
    say(f"  Pyodide boot {b['pyodideMs']:.0f} ms ({how} meanwhile); WASM kernels + numpy "
        f"+ onnxide import {b['importMs']:.0f} ms; model download {r['loadMs']:.0f} ms (beside the boot); session "
        f"creation {r['createMs']:.0f} ms")
    say(f"  cold start (navigation -> first result) {r['coldStartMs']:.0f} ms, part by part (the page's split):")
    split = r["coldStart"]
    for p in split["parts"] + [dict(o, part=o["part"] + " (overlapped)") for o in split["overlapped"]]:
        say(f"    {p['part']:<72} {p['ms']:7.0f} ms")
    say(f"  {len(r['runMs'])} runs of 32 ms audio chunks per execution provider:")
    for ep in r.get("perEP") or [r]:
        say(f"  [{' + '.join(ep['providers'])}] session creation {ep['createMs']:.0f} ms; per run: first "
              f"{ep['firstRunMs']:.2f} ms, warm median {ep['warmMedianMs']:.2f} ms; whole clip {ep['clipMs']:.0f} ms "
              f"({r['audioSeconds'] * 1000 / ep['clipMs']:.1f}x real time)")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="worker", choices=["worker", "page"])
    ap.add_argument("--screenshot", default=None, help="PNG path for a full-page screenshot after the run")
    ap.add_argument("--timeout", type=int, default=180)
    ap.add_argument("--write", default=None, help="also write the report to this Markdown file (docs/browser.md)")
    args = ap.parse_args(argv)
    why = unavailable()
    if why:
        print(f"onnxide web demo skipped: {why}")
        return 1
    if not os.path.isfile(os.path.join(ROOT, "build", "web", "manifest.json")):
        print("onnxide web demo: build/web/ missing; run `bash .ci/setup_web.sh` first")
        return 1
    progress("starting headless Chromium; the bundled default CNN through the JS API (Pyodide boots in a Web "
             "Worker with numpy and onnxide first: a few seconds)")
    with Server() as server, Browser() as context:
        report_default_model(run_default_model(context, server.url))
        progress(f"the silero VAD demo page (web/demo/, host: {args.host}: a fresh Pyodide boot, then the clip on each "
                 f"execution provider)")
        demo = run_demo(context, server.url, args.host, args.timeout, args.screenshot)
    rc = report(demo)
    if args.screenshot and rc == 0:
        print(f"  screenshot: {args.screenshot}")
    if args.write and rc == 0:
        kept = _sections_after_report(args.write)
        with open(args.write, "w") as f:
            f.write("# onnxide in headless Chromium: results and timings\n\nWritten by `python3 web/main_job.py "
                    f"--write {args.write}` (the README's main job, browser half; host: {args.host}).\n\n```\n"
                    + "\n".join(_LINES) + "\n```\n" + kept)
    return rc


def _sections_after_report(path):
    """The written-by-hand sections (from the first `## ` heading) of the file --write replaces, kept below it."""
    if not os.path.isfile(path):
        return ""
    with open(path) as f:
        text = f.read()
    at = text.find("\n## ")
    return text[at:] if at >= 0 else ""


if __name__ == "__main__":
    sys.exit(main())
