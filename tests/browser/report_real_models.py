"""Renders docs/browser-models.md from what tests/browser/test_real_models.py measured
(.cache/models/browser_results.json).

    python3 -m pytest tests/browser/test_real_models.py && python3 tests/browser/report_real_models.py > docs/browser-models.md
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from models.fetch import CACHE  # noqa: E402

HEAD = """# Real models in the page vs natively

Every .onnx of rapidocr_onnxruntime 1.4.4, silero-vad 6.2.3 and openwakeword 0.5.1, and the models of
tests/models/export.py, loaded once each through the JS API in headless Chromium (`InferenceSession.create(url)`
with the default options: graph optimization 'all', the default 'wasm' backend = the WASM EP with the CPU EP for
the rest), run on the realistic inputs of tests/models/ and compared with native onnxide (CPU EP). Streaming models
carry their state as the JS Tensors the previous `run()` returned. Outputs come back as raw bytes, so the comparison
sees exact float32 values. Bound: |page − native| ≤ atol + 1e-5·|native| elementwise (atol below), labels equal.
openWakeWord's melspectrogram has atol 1e-3: its output is 10·log10 of power spectra, where float32 rounding in
low-power bins reaches ~5e-4 dB (onnxruntime and onnxide natively are each that far from float64).

Written by `python3 tests/browser/report_real_models.py` from the last run of
`python3 -m pytest tests/browser/test_real_models.py`.

| model | runs | outputs compared | max \\|output\\| | max \\|page − native\\| | atol |
|---|---|---|---|---|---|
"""

TAIL = """
**ZipMap.** skl2onnx's default ZipMap output, `seq(map(int64, tensor(float)))`, has no Tensor form in
onnxruntime-web's API: onnxruntime-web 1.31.1 rejects `run()` when it is requested and returns the labels with
`fetches: ['output_label']`. onnxide's page does the same (asking for all outputs rejects with "NotImplemented:
Output 'output_probability' is a list: only tensors can be returned to JS"); rf_zipmap and pca_svc are compared on
their labels, and the probabilities come from the `zipmap: False` exports.
"""


def main():
    with open(os.path.join(CACHE, "browser_results.json")) as f:
        results = json.load(f)
    rows = []
    for key, r in sorted(results.items()):
        if "runs" not in r:  # the onnxruntime-web ZipMap check: described in the text below
            continue
        fetched = ", ".join(r["fetches"]) if r.get("fetches") else "all"
        rows.append(f"| {key} | {r['runs']} | {fetched} | {r['output_max_abs']:.3g} | {r['max_abs_diff']:.1e} | "
                    f"{r['atol']:g} |")
    sys.stdout.write(HEAD + "\n".join(rows) + "\n" + TAIL)


if __name__ == "__main__":
    main()
