"""Browser benchmark driver: one headless Chromium run timing onnxide (WASM EP, CPU EP) and onnxruntime-web (wasm, 1 thread).

usage: python3 web/bench/run_browser_bench.py [--models resnet18,minilm,ppocr_det,silero_vad | all] [--no-gemm] [--profile]
                                              [--doc docs/benchmarks-browser.md] [--json out.json] [--budget 4]
Needs `bash .ci/setup_web.sh` (Pyodide, onnxide wheel, kernels in build/web/wasm/, onnxruntime-web in build/web/ort/)
and the model caches (`python tests/models/fetch.py`, `python tests/models/export.py`). Serves the repository on
127.0.0.1 (web/devserver.py), the inputs from a temp folder; nothing is fetched from elsewhere.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from chromium import Browser, bench_unavailable  # noqa: E402
from devserver import ROOT, Server  # noqa: E402

CACHE = os.path.join(ROOT, ".cache", "models")
BREADTH_SHAPES = {"yolov8n": (1, 3, 640, 640), "crnn": (1, 1, 32, 320), "vit_tiny": (1, 3, 224, 224),
                  "whisper_tiny_encoder": (1, 80, 1000), "mobilenetv3_small": (1, 3, 224, 224)}


def _native_bench():
    """tests/bench/run_bench.py as a module: the native benchmark's generated models (int8 encoder, MLP) are reused."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
    import run_bench
    return run_bench


def _readme_cnn():
    from onnxide.demo import default_model_bytes
    return default_model_bytes()


# name: (model file under CACHE, or a function returning the model's bytes or path; row label)
MODELS = {
    "resnet18": ("exported/resnet18_torchscript.onnx", "ResNet-18 (torchscript export), 1x3x224x224"),
    "minilm": ("exported/minilm_torchscript.onnx", "MiniLM-L6-size encoder (torchscript export), 1x128 tokens"),
    "minilm_int8": (lambda: _native_bench()._minilm_int8(os.path.join(CACHE, "exported", "minilm_torchscript.onnx")),
                    "same encoder, int8 dynamic (onnxide's quantize_dynamic), 1x128 tokens"),
    "ppocr_det": ("rapidocr_onnxruntime-1.4.4/ch_PP-OCRv4_det_infer.onnx", "PP-OCRv4 det, 1x3x320x320"),
    "silero_vad": ("silero_vad-6.2.3/silero_vad.onnx", "silero VAD 6.2.3, one 512-sample chunk at 16 kHz"),
    "ppocr_rec": ("rapidocr_onnxruntime-1.4.4/ch_PP-OCRv4_rec_infer.onnx", "PP-OCRv4 rec, 1x3x48x320"),
    "oww_melspec": ("openwakeword-0.5.1/melspectrogram.onnx", "openWakeWord melspectrogram, 1760 samples at 16 kHz"),
    "oww_embedding": ("openwakeword-0.5.1/embedding_model.onnx", "openWakeWord embedding, 1x76x32x1"),
    "yolov8n": ("exported/yolov8n.onnx", "YOLOv8n detector, 1x3x640x640"),
    "crnn": ("exported/crnn.onnx", "CRNN (conv + 2 BiLSTM + CTC), 1x1x32x320"),
    "vit_tiny": ("exported/vit_tiny.onnx", "ViT-Tiny/16, 1x3x224x224"),
    "whisper_tiny_encoder": ("exported/whisper_tiny_encoder.onnx", "Whisper-tiny encoder (10 s log-mel), 1x80x1000"),
    "mobilenetv3_small": ("exported/mobilenetv3_small.onnx", "MobileNetV3-small, 1x3x224x224"),
    "mlp": (lambda: _native_bench()._mlp_bytes(), "MLP 64-256-256-10"),
    "readme_cnn": (_readme_cnn, "default CNN (README main job), 1x3x64x64"),
}
FIRST_FOUR = "resnet18,minilm,ppocr_det,silero_vad"


def make_inputs(name):
    """{input name: array} for a model: the export's own inputs (first batch row) or seeded synthetic data."""
    rng = np.random.default_rng(0)
    if name in ("resnet18", "minilm", "minilm_int8"):
        export = name.replace("_int8", "")
        with np.load(os.path.join(CACHE, "exported", f"{export}_torchscript.npz")) as z:
            return {k[3:]: np.ascontiguousarray(z[k][:1]) for k in z.files if k.startswith("in:")}
    if name == "ppocr_det":
        return {"x": (rng.standard_normal((1, 3, 320, 320)) * 0.5).astype(np.float32)}
    if name == "ppocr_rec":
        return {"x": rng.random((1, 3, 48, 320), dtype=np.float32) * 2 - 1}
    if name in BREADTH_SHAPES:
        return {"input": rng.standard_normal(BREADTH_SHAPES[name]).astype(np.float32)}
    if name == "mlp":
        return {"x": rng.standard_normal((1, 64)).astype(np.float32)}
    if name == "readme_cnn":
        from onnxide.demo import default_input
        return {"image": default_input()}
    if name.startswith("oww_"):
        return _native_bench().openwakeword_feeds(os.path.basename(MODELS[name][0]))
    return {"input": _native_bench().tone(512, rng), "state": np.zeros((2, 1, 128), np.float32),
            "sr": np.array(16000, np.int64)}


def model_url(base, folder, name):
    """URL the page fetches the model from: the cache mount for files there, the inputs mount for generated ones."""
    source = MODELS[name][0]
    if isinstance(source, str):
        return f"{base}_models/{source}"
    made = source()
    if isinstance(made, str):
        return f"{base}_models/{os.path.relpath(made, CACHE)}"
    with open(os.path.join(folder, f"{name}.onnx"), "wb") as f:
        f.write(made)
    return f"{base}_bench_inputs/{name}.onnx"


def write_inputs(folder, name, feeds):
    spec = []
    for i, (k, v) in enumerate(feeds.items()):
        fname = f"{name}_in{i}.bin"
        v.tofile(os.path.join(folder, fname))
        spec.append({"name": k, "type": str(v.dtype), "dims": list(v.shape), "file": fname})
    return spec


RUN_JS = """async (cfg) => {
  const { runBench } = await import(cfg.base + 'web/bench/bench.mjs');
  window.benchLog = [];
  return await runBench(cfg, (m) => { window.benchLog.push(m); console.log('[bench] ' + m); });
}"""


def run(args):
    names = list(MODELS) if args.models == "all" else [n.strip() for n in args.models.split(",") if n.strip()]
    tmp = tempfile.mkdtemp(prefix="onnxide-bench-")
    cfg_models = []
    for n in names:
        spec = write_inputs(tmp, n, make_inputs(n))
        cfg_models.append({"name": n, "spec": spec})
    with Server(mounts={"/_bench_inputs/": tmp, "/_models/": CACHE}) as server, Browser() as context:
        base = server.url
        cfg = {"base": base, "eps": args.eps.split(","), "gemm": not args.no_gemm, "profile": args.profile,
               "budgetS": args.budget, "cpuBudgetS": args.cpu_budget, "minRuns": args.min_runs, "cpuMinRuns": 3,
               "models": [{"name": m["name"], "model": model_url(base, tmp, m["name"]), "inputs": m["spec"],
                           "inputsURL": f"{base}_bench_inputs/"} for m in cfg_models]}
        page = context.new_page()
        page.set_default_timeout(args.timeout * 1000)
        page.on("console", lambda m: print(f"  [page] {m.text}", flush=True) if m.text.startswith("[bench]")
                or m.type == "error" else None)
        page.goto(f"{base}web/bench/index.html")
        t0 = time.time()
        res = page.evaluate(RUN_JS, cfg)
        res["wall_s"] = time.time() - t0
        page.close()
    return res


def _fmt(v, nd=1):
    return "—" if v is None else f"{v:.{nd}f}"


def render(res, args):
    """Markdown for docs/benchmarks-browser.md."""
    ua = res.get("userAgent", "")
    chrome = next((p for p in ua.split() if p.startswith(("Chrome/", "HeadlessChrome/"))), ua)
    info = res.get("info", {})
    builds = {r["runs"]["wasm"].get("build") for r in res["models"] if "wasm" in r["runs"] and "build" in r["runs"]["wasm"]}
    lines = [
        "# onnxide in the browser vs onnxruntime-web (wasm, 1 thread)",
        "",
        f"Measured by `python3 web/bench/run_browser_bench.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
        f"one headless Chromium run ({chrome}), page served from 127.0.0.1, not cross-origin isolated "
        f"(crossOriginIsolated = {res.get('crossOriginIsolated')}), so **threads = 1** everywhere. onnxide "
        f"{info.get('onnxide')} on Pyodide 0.27.7 (numpy {info.get('numpy')}) in the page; WASM EP kernel build: "
        f"**{', '.join(sorted(b for b in builds if b)) or '?'}** (relaxed SIMD validated: {info.get('relaxed')}). "
        f"onnxruntime-web {res.get('ortVersion')} (npm, `ort.wasm.min.mjs`, `numThreads = 1`, local `wasmPaths`). "
        "Same model bytes and inputs for all three; times are medians of warm `run` calls after one warm-up run, "
        "taken round-robin (one run of each engine per round, so load from other processes hits all alike; "
        "onnxide timed in Python around `InferenceSession.run`, ort-web in JS around `session.run`). "
        "2-core shared machine: expect ±10-20 % run to run.",
        "",
        "| model | onnxide WASM EP ms | onnxide CPU EP ms | ort-web wasm ms | WASM / ort | CPU / ort | max abs diff WASM vs ort | CPU vs ort |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in res["models"]:
        r = m["runs"]
        w, c, o = (r.get(k, {}) for k in ("wasm", "cpu", "ort"))
        wm, cm, om = w.get("medianMs"), c.get("medianMs"), o.get("medianMs")
        desc = MODELS[m["name"]][1]
        diff = lambda x: "—" if not x.get("maxAbsDiff") else f"{max(x['maxAbsDiff']):.1e}"  # noqa: E731
        lines.append(f"| {desc} | {_fmt(wm, 2)} | {_fmt(cm, 1)} | {_fmt(om, 2)} | "
                     f"{_fmt(wm / om if wm and om else None, 2)} | {_fmt(cm / om if cm and om else None, 1)} | "
                     f"{diff(w)} | {diff(c)} |")
        for k in ("wasm", "cpu", "ort"):
            if r.get(k, {}).get("error"):
                lines.append(f"|  ↳ {k} error: {r[k]['error'][:200]} | | | | | | | |")
    lines += ["", "Ratios < 1 mean onnxide is faster. Samples per cell: " + "; ".join(
        f"{m['name']} " + "/".join(str(len(m['runs'].get(k, {}).get('times', []))) for k in ('wasm', 'cpu', 'ort'))
        + (f" of {m['repsPerSample']} runs each" if m.get("repsPerSample", 1) > 1 else "")
        for m in res["models"]) + " (WASM/CPU/ort). A sample of a small model is the mean of back-to-back runs "
        "filling ~5 ms: the page's clock ticks in 0.1 ms steps (not cross-origin isolated)."]
    lines += ["", "Session creation / first run (ms):", "",
              "| model | WASM create | WASM first | CPU create | CPU first | ort create | ort first |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for m in res["models"]:
        r = m["runs"]
        cells = [_fmt(r.get(k, {}).get(f), 0) for k in ("wasm", "cpu", "ort") for f in ("createMs", "firstMs")]
        lines.append(f"| {m['name']} | " + " | ".join(cells) + " |")
    if res.get("gemm"):
        lines += ["", "## GEMM GFLOP/s in Chromium (single thread)", "",
                  "`onnxide.eps.wasm_bench.gemm_gflops` run in the same page through the ctypes route (square float32 "
                  "C = A·B, operands in place on Pyodide's heap; kernel time only; median and best of ≥ 3 runs "
                  "within ~1 s after a warm-up call). `numpy` = Pyodide's numpy (no BLAS).", "",
                  "| build | n | median ms | median GFLOP/s | best GFLOP/s |", "|---|---:|---:|---:|---:|"]
        for g in res["gemm"]:
            if "error" in g:
                lines.append(f"| {g['build']} | — | unavailable: {g['error'][:120]} | | |")
            else:
                lines.append(f"| {g['build']} | {g['n']} | {g['ms']:.2f} | {g['gflops']:.1f} | {g['best_gflops']:.1f} |")
    prof = [m for m in res["models"] if m["runs"].get("wasm", {}).get("profile")]
    if prof:
        lines += ["", "## Where the WASM EP's time goes (one warm run with `enable_profiling`, top ops)", ""]
        for m in prof:
            w = m["runs"]["wasm"]
            lines.append(f"- **{m['name']}** (profiled total {w['profileTotalMs']:.1f} ms): " + ", ".join(
                f"{p['op']}[{p['provider'].replace('ExecutionProvider', '')}] {p['ms']:.1f} ms ×{p['count']}"
                for p in w["profile"]))
    lines += ["", "## Notes", "",
              "- Outputs are checked in the same run: the max abs diff columns compare every output of onnxide with "
              "ort-web's on the same inputs (silero VAD's 8e-5 is its LSTM state path; YOLOv8n's 1.2e-4 is on box "
              "coordinates up to ~640 (float32's step there is 6e-5); the float models' others ≤ 2.3e-5).",
              "- onnxide-CPU is Pyodide's numpy without BLAS; onnxide-WASM runs float32 Conv (im2col GEMM, Winograd "
              "F(2x2,3x3) for dense 3x3 stride-1 layers with ≥ 16 channels and ≥ 100 tiles, direct depthwise), "
              "ConvTranspose, MatMul/Gemm (constant B packed once), MultiHeadAttention, pooling, Resize (nearest, "
              "integer factors), softmax, norms (SkipLayerNormalization too), elementwise ops, the plain LSTM and the "
              "8-bit GEMM family (MatMulInteger, DynamicQuantizeLinear, DynamicQuantizeMatMul, MatMulIntegerToFloat, "
              "QLinearMatMul) in the wasm kernels; everything else (shape ops, If/Loop bodies) stays on the CPU EP.",
              "- The int8 encoder's WASM result equals onnxide's numpy kernels bit for bit "
              "(tests/wasm/test_wasm_int8.py); its difference from onnxruntime-web's is not explained here (a few "
              "quantization steps of a hidden state; natively, on an AVX2 host, onnxruntime's kernel saturates, see "
              "docs/benchmarks.md).",
              "- Silero VAD is a graph of ~100 tiny ops inside an If: much of its time is Python dispatch per node. "
              "Runs of consecutive kernels on fixed shapes run as one ox_chain_run call (WASM chains: its STFT, "
              "magnitude and conv stack are one call per branch); the LSTM (ox_lstm) and the shape ops around it "
              "still dispatch per node (ort-web runs it all in C++). `--eps wasm,wasm-nochains` times chains on / off.",
              "- The machine is shared (2 cores): other jobs can inflate single cells; the round-robin order keeps "
              "the ratios of one run comparable."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=FIRST_FOUR, help=f"comma list of {', '.join(MODELS)}, or 'all'")
    ap.add_argument("--eps", default="wasm,cpu", help="onnxide EPs to time (wasm, cpu, wasm-nochains)")
    ap.add_argument("--no-gemm", action="store_true")
    ap.add_argument("--profile", action="store_true", help="per-op profile of the WASM EP (one extra session)")
    ap.add_argument("--budget", type=float, default=4.0, help="seconds of warm runs per WASM / ort cell")
    ap.add_argument("--cpu-budget", type=float, default=4.0, help="seconds of warm runs per CPU-EP cell (min 3)")
    ap.add_argument("--min-runs", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--doc", default=None, help="write the markdown report here (e.g. docs/benchmarks-browser.md)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    why = bench_unavailable(ROOT)
    if why:
        print(f"browser bench skipped: {why}")
        return 1
    res = run(args)
    text = render(res, args)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if args.doc:
        from cold_start import split_section  # the section web/bench/cold_start.py writes is kept
        kept = split_section(open(args.doc).read())[1] if os.path.isfile(args.doc) else ""
        with open(args.doc, "w") as f:
            f.write(text + ("\n" + kept if kept else ""))
        print(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
