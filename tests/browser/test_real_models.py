"""The real models of tests/models/ give in the page (onnxide's JS API, Pyodide in a Web Worker) the same outputs as
onnxide natively: every .onnx of rapidocr_onnxruntime 1.4.4, silero-vad 6.2.3 and openwakeword 0.5.1, and the
exported torch (ResNet-18, MiniLM; both exporters) and scikit-learn models, on the same realistic inputs (small
batches), compared within 1e-4. Models that are not cached (fetch.py / export.py could not make them) skip.

One page for the whole file; each model is loaded once. Streaming models carry their state as the JS Tensors the
previous run returned, exactly as an app does, and natively as numpy arrays.
"""
import base64
import json
import os
import time

import numpy as np
import pytest

import onnxide
from models import export, fetch, inputs

ATOL = 1e-4  # |page - native| <= ATOL + RTOL * |native|, elementwise; integers and labels exact
RTOL = 1e-5  # float32 rounding grows with the value (logits ~35, embeddings ~64, mel dB ~96)
# openWakeWord's melspectrogram: 10*log10 of power spectra turns float32 rounding of cancelling sums into up to
# ~5e-4 dB (both onnxruntime and onnxide are that far from a float64 evaluation, see tests/models/test_pretrained.py);
# the page's numpy (no BLAS) sums in another order than native numpy (OpenBLAS), so it is held to 1e-3 here
LOOSER_ATOL = {"openwakeword/melspectrogram": 1e-3}
PAGE_MODULE = "/tests/browser/pages/real_models.mjs"
OCR = ("ch_PP-OCRv4_det_infer", "ch_PP-OCRv4_rec_infer", "ch_ppocr_mobile_v2.0_cls_infer")
VAD = ("silero_vad", "silero_vad_16k_op15", "silero_vad_16k_sequence", "silero_vad_half", "silero_vad_op18_ifless",
       "silero_vad_openvino_16k")
OWW = ("alexa_v0.1", "embedding_model", "hey_jarvis_v0.1", "hey_mycroft_v0.1", "hey_rhasspy_v0.1", "melspectrogram",
       "silero_vad", "timer_v0.1", "weather_v0.1")
PACKAGE_MODELS = {"rapidocr_onnxruntime": OCR, "silero-vad": VAD, "openwakeword": OWW}
# ZipMap's seq(map(int64, tensor(float))) output has no Tensor form in onnxruntime-web's API: only the labels come back
ZIPMAP = {"rf_zipmap": "output_label", "pca_svc": "output_label"}
CASES = ([f"{pkg}/{m}" for pkg, ms in PACKAGE_MODELS.items() for m in ms]
         + [f"exported/{m}" for m in export.TORCH_MODELS + export.SKLEARN_MODELS])
RESULTS = {}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --------------------------------------------------------------------------------------------------- inputs
def _pretrained(pkg, name):
    """The cached model's path; skips (never downloads: that is tests/models/'s job) when it is not cached."""
    if not os.path.isfile(os.path.join(fetch.model_dir(pkg), ".complete")):
        pytest.skip(f"{pkg}=={fetch.PACKAGES[pkg][0]} is not cached (python tests/models/fetch.py)")
    path = os.path.join(fetch.model_dir(pkg), name + ".onnx")
    assert os.path.isfile(path), f"{name}.onnx is not in {pkg}"
    return path


def _pil():
    try:
        from PIL import Image
    except ImportError:
        pytest.skip("Pillow is not installed (needed to render the OCR input)")
    return Image


def _normalize(img):
    return ((img.astype(np.float32) / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)  # PaddleOCR's, HWC uint8 -> CHW


def _ocr_runs(name):
    Image = _pil()
    if inputs.text_image() is None:
        pytest.skip("Pillow cannot render text here")
    if name == "ch_PP-OCRv4_det_infer":  # the rendered page, long side 320 (rapidocr uses up to 736)
        img = inputs.text_image()
        h, w = img.shape[:2]
        nh, nw = (max(32, int(round(d * 320 / max(h, w) / 32)) * 32) for d in (h, w))
        return [{"x": _normalize(np.asarray(Image.fromarray(img).resize((nw, nh), Image.BILINEAR)))[None]}]
    height, width = 48, (192 if name.endswith("cls_infer") else 320)
    lines = [inputs.text_image([t], pad=6) for t in inputs.TEXT_LINES]
    batch = np.zeros((len(lines), 3, height, width), np.float32)
    for i, line in enumerate(lines):
        w = min(width, int(np.ceil(height * line.shape[1] / line.shape[0])))
        batch[i, :, :, :w] = _normalize(np.asarray(Image.fromarray(line).resize((w, height), Image.BILINEAR)))
    runs = [{"x": batch}]
    if name.endswith("cls_infer"):
        runs.append({"x": batch[:, :, ::-1, ::-1].copy()})  # upside-down lines: the other class
    return runs


def _vad_frames(sr, n, frame, ctx, seconds=3.0):
    audio, _ = inputs.speech_like(seconds, layout=((0.4, 0), (1.6, 1), (1.0, 0)))
    if sr == 8000:
        audio = audio[::2].copy()
    audio = np.concatenate([np.zeros(ctx, np.float32), audio])
    step = max(1, (len(audio) - ctx - frame) // frame // n) * frame  # n frames spread over the clip
    return [audio[i * step: i * step + ctx + frame].astype(np.float32) for i in range(n)]


def _silero_runs(name):
    """Streams of 12 chunks (8 at 8 kHz) with the recurrent state carried; the sequence model takes 2 blocks."""
    if name == "silero_vad_16k_sequence":
        frames = np.stack(_vad_frames(16000, 24, 512, 64))
        z = np.zeros((1, 1, 128), np.float32)
        return [{"feeds": {"input": frames[:12], "h": z, "c": z}},
                {"feeds": {"input": frames[12:]}, "carry": {"h": "hn", "c": "cn"}}]
    rates = [16000, 8000] if name in ("silero_vad", "silero_vad_op18_ifless") else [16000]
    runs = []
    for sr in rates:
        frame, ctx = (512, 64) if sr == 16000 else (256, 32)
        for i, f in enumerate(_vad_frames(sr, 12 if sr == 16000 else 8, frame, ctx)):
            feeds = {"input": f[None]}
            if name not in ("silero_vad_half", "silero_vad_openvino_16k"):
                feeds["sr"] = np.array(sr, np.int64)
            if i == 0:
                feeds["state"] = np.zeros((2, 1, 128), np.float32)
            runs.append({"feeds": feeds, "carry": {} if i == 0 else {"state": "stateN"}})
    return runs


_OWW = {}


def _oww_audio():
    """4.5 s of openWakeWord's phrases (espeak-ng; synthetic speech without it) at 16-bit scale, as float32: 47
    embeddings, enough for the longest wake-word head (timer, 34)."""
    if "audio" not in _OWW:
        audio, _ = inputs.wake_word_audio()
        _OWW["audio"] = inputs.to_int16_range(audio[:72000]).astype(np.float32)
    return _OWW["audio"]


def _oww_embeddings():
    """melspectrogram -> embedding windows -> embeddings, computed natively (the inputs of the wake-word heads)."""
    if "emb" not in _OWW:
        mel_sess = _native(_pretrained("openwakeword", "melspectrogram"))
        mel = mel_sess.run(None, {"input": _oww_audio()[None]})[0].squeeze() / 10 + 2  # as openWakeWord does
        windows = np.stack([mel[i: i + 76] for i in range(0, mel.shape[0] - 76 + 1, 8)])[..., None]
        emb_sess = _native(_pretrained("openwakeword", "embedding_model"))
        _OWW["windows"] = windows.astype(np.float32)
        _OWW["emb"] = emb_sess.run(None, {"input_1": _OWW["windows"]})[0].squeeze().astype(np.float32)
    return _OWW["windows"], _OWW["emb"]


def _oww_runs(name, path):
    if name == "melspectrogram":  # a 1 s clip, and openWakeWord's streaming chunk (1280 new + 480 old samples)
        audio = _oww_audio()
        return [{"input": audio[None, :16000]}, {"input": audio[None, 8000: 8000 + 1760]}]
    if name == "embedding_model":
        windows, _ = _oww_embeddings()
        return [{"input_1": windows[:4]}, {"input_1": windows[4:5]}]
    if name == "silero_vad":  # openWakeWord's bundled v4 VAD: 480-sample frames, h/c carried
        frames = (_oww_audio() / 32767.0)[: 24 * 480].reshape(24, 480)[::2].astype(np.float32)
        z = np.zeros((2, 1, 64), np.float32)
        runs = [{"feeds": {"input": f[None], "sr": np.array(16000, np.int64)}, "carry": {"h": "hn", "c": "cn"}}
                for f in frames]
        runs[0] = {"feeds": dict(runs[0]["feeds"], h=z, c=z)}
        return runs
    sess = _native(path)
    feed, n = sess.get_inputs()[0].name, sess.get_inputs()[0].shape[1]
    _, emb = _oww_embeddings()
    starts = np.linspace(0, len(emb) - n, 3).astype(int)
    return [{feed: emb[s: s + n][None]} for s in starts]


def _exported_runs(name):
    if not export._done(name):  # never exports here (minutes of torch): tests/models/ or export.py does
        pytest.skip(f"{name} is not exported (python tests/models/export.py)")
    _, feeds, _, _ = export.load(name)
    if name.startswith("resnet18"):  # one image
        return [{k: v[:1] for k, v in feeds.items()}]
    if name.startswith("minilm"):  # two sentences of 32 tokens, the second padded from token 24
        ids, mask, types = (feeds[k][:, :32].copy() for k in ("input_ids", "attention_mask", "token_type_ids"))
        ids[1, 24:], mask[1, 24:], types[:, 16:] = 0, 0, 1
        return [{"input_ids": ids, "attention_mask": mask, "token_type_ids": types}]
    return [feeds]  # scikit-learn: the 200 held-out rows


def case_of(key):
    """(model path, runs [{feeds, carry}], fetches or None) of a case key like 'silero-vad/silero_vad'."""
    group, name = key.split("/", 1)
    if group == "exported":
        path, runs = export.path_of(name), _exported_runs(name)
    else:
        path = _pretrained(group, name)
        runs = (_ocr_runs(name) if group == "rapidocr_onnxruntime" else _silero_runs(name) if group == "silero-vad"
                else _oww_runs(name, path))
    runs = [r if "feeds" in r else {"feeds": r} for r in runs]
    fetches = [ZIPMAP[name]] if group == "exported" and name in ZIPMAP else None
    return path, runs, fetches


# --------------------------------------------------------------------------------------------------- running
JS_TYPE = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64", np.dtype(np.int64): "int64",
           np.dtype(np.int32): "int32", np.dtype(np.uint8): "uint8", np.dtype(np.bool_): "bool"}
NP_TYPE = {v: k for k, v in JS_TYPE.items()}


def _native(path):
    so = onnxide.SessionOptions()
    so.graph_optimization_level = onnxide.GraphOptimizationLevel.ORT_ENABLE_ALL  # the JS API's default 'all'
    return onnxide.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def run_native(path, runs, fetches):
    sess = _native(path)
    names = fetches or [o.name for o in sess.get_outputs()]
    outs, prev = [], None
    for r in runs:
        feeds = dict(r["feeds"], **{i: prev[o] for i, o in r.get("carry", {}).items()})
        prev = dict(zip(names, sess.run(names, feeds)))
        outs.append(prev)
    return outs


def write_feeds(scratch, key, runs):
    """All feeds of a case in one file under /_scratch/real/; returns the runs as the page's spec wants them."""
    folder = scratch / "real"
    folder.mkdir(exist_ok=True)
    fname = key.replace("/", "__") + ".bin"
    spec, offset = [], 0
    with open(folder / fname, "wb") as f:
        for r in runs:
            feeds = {}
            for name, arr in r["feeds"].items():
                arr = np.asarray(arr)  # (np.ascontiguousarray would make a scalar 1-D)
                data = arr.astype(np.uint8).tobytes() if arr.dtype == np.bool_ else arr.tobytes()
                feeds[name] = {"type": JS_TYPE[arr.dtype], "dims": list(arr.shape), "offset": offset,
                               "length": len(data)}
                f.write(data)
                offset += len(data)
            spec.append({"feeds": feeds, "carry": r.get("carry", {})})
    return f"/_scratch/real/{fname}", spec


def decode(out):
    if "strings" in out:
        return np.array(out["strings"], dtype=object).reshape(out["dims"])
    arr = np.frombuffer(base64.b64decode(out["b64"]), dtype=NP_TYPE[out["type"]])
    return arr.reshape(out["dims"])


def compare(got, want, what, atol=ATOL):
    """(max abs diff, max diff / (atol + RTOL |want|)) after checking dtype and shape; integers must be equal."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if want.dtype.kind not in "fc":
        assert np.array_equal(got, want), f"{what}: {int((got != want).sum())} values differ"
        return 0.0, 0.0
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaNs differ"
    g, w = got.astype(np.float64), want.astype(np.float64)
    diff = np.where(np.isnan(w), 0.0, np.abs(g - w))
    return float(diff.max(initial=0.0)), float((diff / (atol + RTOL * np.abs(w))).max(initial=0.0))


@pytest.fixture(scope="module")
def models_url(server):
    """The model cache, mounted on the session's server."""
    server.mount("/_models/", os.path.abspath(fetch.CACHE))
    return "/_models/"


@pytest.fixture(scope="module", autouse=True)
def _write_results():
    yield
    if RESULTS:
        os.makedirs(fetch.CACHE, exist_ok=True)
        with open(os.path.join(fetch.CACHE, "browser_results.json"), "w") as f:
            json.dump(RESULTS, f, indent=1, sort_keys=True)


def run_in_page(page, spec, fn="runModel"):
    return page.evaluate(f"async (spec) => (await import('{PAGE_MODULE}')).{fn}(window.ort, spec)", spec)


@pytest.mark.parametrize("key", CASES)
def test_model_in_page_matches_native(api_page, scratch, models_url, key):
    """The model's runs in the page (one session, state carried as JS Tensors) == onnxide natively."""
    path, runs, fetches = case_of(key)
    data_url, spec_runs = write_feeds(scratch, key, runs)
    model_url = models_url + os.path.relpath(path, fetch.CACHE).replace(os.sep, "/")
    t0 = time.perf_counter()
    got = run_in_page(api_page, {"model": model_url, "data": data_url, "runs": spec_runs, "fetches": fetches})
    page_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    want = run_native(path, runs, fetches)
    native_s = time.perf_counter() - t0
    assert len(got["runs"]) == len(want)
    worst_abs = worst_ratio = 0.0
    atol = LOOSER_ATOL.get(key, ATOL)
    for i, (g, w) in enumerate(zip(got["runs"], want)):
        assert sorted(g) == sorted(w), f"run {i}: outputs {sorted(g)} != {sorted(w)}"
        for name in w:
            a, r = compare(decode(g[name]), np.asarray(w[name]), f"{key} run {i} output {name!r}", atol)
            worst_abs, worst_ratio = max(worst_abs, a), max(worst_ratio, r)
    floats = [np.abs(v).max(initial=0.0) for w in want for v in w.values() if np.asarray(v).dtype.kind == "f"]
    RESULTS[key] = {"runs": len(want), "atol": atol, "max_abs_diff": worst_abs, "max_ratio": worst_ratio,
                    "page_s": round(page_s, 2), "native_s": round(native_s, 2),
                    "run_ms": [round(x, 1) for x in got["runMs"]], "fetches": fetches,
                    "output_max_abs": float(max(floats, default=0.0))}
    assert worst_ratio <= 1.0, (f"{key}: max |page - native| = {worst_abs:.3g} beyond {atol} + {RTOL}*|native| "
                                f"(ratio {worst_ratio:.3g})")


# the real models on the WebGPU EP in the page (SwiftShader: slow, so the CNNs above a few GFLOP stay out of CI)
WEBGPU_CASES = [k for k in CASES if k.startswith(("silero-vad/", "openwakeword/")) and k != "openwakeword/embedding_model"]
WEBGPU_CASES += ["rapidocr_onnxruntime/ch_ppocr_mobile_v2.0_cls_infer", "exported/minilm_dynamo"]
WEBGPU_ATOL, WEBGPU_RTOL = 1e-3, 1e-3  # GPU float32 math against numpy's, as tests/webgpu/test_models.py


@pytest.mark.parametrize("key", WEBGPU_CASES)
def test_model_on_webgpu_in_page_matches_native(api_page, scratch, models_url, key):
    """executionProviders: ['webgpu'] (SwiftShader in a Worker or the page): the model's runs, recurrent state carried
    as the Tensors the GPU session returned, match onnxide's CPU EP natively."""
    if "WebGpuExecutionProvider" not in onnxide.get_available_providers():
        pytest.skip("wgpu-py is not installed natively (the page's results are compared with the CPU EP only)")
    path, runs, fetches = case_of(key)
    data_url, spec_runs = write_feeds(scratch, key, runs)
    model_url = models_url + os.path.relpath(path, fetch.CACHE).replace(os.sep, "/")
    got = run_in_page(api_page, {"model": model_url, "data": data_url, "runs": spec_runs, "fetches": fetches,
                                 "eps": ["webgpu"]})
    assert got["providers"][0] == "WebGpuExecutionProvider", got["providers"]
    want = run_native(path, runs, fetches)
    for i, (g, w) in enumerate(zip(got["runs"], want)):
        assert sorted(g) == sorted(w), f"run {i}: outputs {sorted(g)} != {sorted(w)}"
        for name in w:
            got_v, want_v = decode(g[name]), np.asarray(w[name])
            if want_v.dtype.kind == "f":
                np.testing.assert_allclose(got_v, want_v, rtol=WEBGPU_RTOL, atol=WEBGPU_ATOL,
                                           err_msg=f"{key} run {i} output {name!r}")
            else:
                np.testing.assert_array_equal(got_v, want_v)


@pytest.mark.parametrize("name", sorted(ZIPMAP))
def test_zipmap_output_rejects_clearly(api_page, scratch, models_url, name):
    """Asking for ZipMap's list-of-dicts output rejects with onnxruntime-web's message (labels come back above)."""
    path, runs, _ = case_of(f"exported/{name}")
    data_url, spec_runs = write_feeds(scratch, f"exported/{name}", runs)
    msg = run_in_page(api_page, {"model": models_url + f"exported/{name}.onnx", "data": data_url, "runs": spec_runs},
                      "runExpectingError")
    assert msg == ("Can't access output tensor data on index 1. ERROR_CODE: 9, ERROR_MESSAGE: Reading data from "
                   "non-tensor typed value is not supported."), msg


def test_zipmap_as_onnxruntime_web_does(api_page, server, scratch, models_url):
    """onnxruntime-web 1.31.1 (build/web/ort/, when set up for web/bench/) on the ZipMap model: it cannot return the
    seq(map) output either (run() rejects), and with only the labels fetched it gives native onnxide's labels."""
    if not os.path.isfile(os.path.join(ROOT, "build", "web", "ort", "ort.wasm.min.mjs")):
        pytest.skip("build/web/ort/ (onnxruntime-web for web/bench/) is not set up")
    path, runs, _ = case_of("exported/rf_zipmap")
    data_url, spec_runs = write_feeds(scratch, "exported/rf_zipmap", runs)
    got = api_page.evaluate(f"async (spec) => (await import('{PAGE_MODULE}')).runOrtWeb(spec.base, spec)",
                            {"base": server.url, "model": models_url + "exported/rf_zipmap.onnx", "data": data_url,
                             "runs": spec_runs})
    RESULTS["onnxruntime-web/rf_zipmap"] = {k: got.get(k) for k in ("version", "error", "fetchedError")}
    RESULTS["onnxruntime-web/rf_zipmap"]["outputs"] = {k: v.get("notTensor") or v.get("type")
                                                      for k, v in (got.get("outputs") or {}).items()}
    want = run_native(path, runs, ["output_label"])[0]["output_label"]
    assert "non-tensor" in got.get("error", ""), got  # what onnxide's NotImplemented rejection mirrors
    assert "fetched" in got, got
    np.testing.assert_array_equal(decode(got["fetched"]), want)
