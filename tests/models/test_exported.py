"""Models exported here (tests/models/export.py) run in onnxide and match the framework that made them (torch,
scikit-learn) and onnxruntime, within 1e-3: a ResNet-18 and a MiniLM-size encoder from both torch exporters, the
benchmarks' breadth set (YOLOv8n, CRNN, ViT-Tiny, Whisper-tiny encoder, MobileNetV3-small) on the CPU and native EPs,
and scikit-learn pipelines through skl2onnx. Skips with the reason when torch / scikit-learn cannot be installed.
"""
import json
import os

import numpy as np
import pytest

import onnxide
from models import export
from models.common import ATOL, as_array, check_outputs, max_err, ort_session

LEVELS = {"optimized": onnxide.GraphOptimizationLevel.ORT_ENABLE_ALL,
          "unoptimized": onnxide.GraphOptimizationLevel.ORT_DISABLE_ALL}


def _load(name):
    why = export.available(name)
    if why:
        pytest.skip(why)
    return export.load(name)


def _session(path, level="optimized"):
    so = onnxide.SessionOptions()
    so.graph_optimization_level = LEVELS[level]
    return onnxide.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("level", sorted(LEVELS))
@pytest.mark.parametrize("name", export.TORCH_MODELS)
def test_torch_model(record, name, level):
    path, feeds, want, meta = _load(name)
    got = _session(path, level).run(None, feeds)
    ref = ort_session(path).run(None, feeds)
    err_fw = check_outputs(got, want, ATOL, f"{name} vs torch")
    err_ort = check_outputs(got, ref, ATOL, f"{name} vs onnxruntime")
    record(f"exported/{name}/{level}", max_abs_err_vs_framework=err_fw, max_abs_err_vs_ort=err_ort, atol=ATOL,
           ort_vs_framework=max(max_err(r, w) for r, w in zip(ref, want)),
           output_max_abs=max(float(np.abs(w).max()) for w in want), **meta)


@pytest.mark.parametrize("name", export.TORCH_MODELS)
def test_torch_model_dynamic_shapes(record, name):
    """The exports keep batch (and sequence) dynamic: other sizes than the exported ones match onnxruntime."""
    path, feeds, _, _ = _load(name)
    if name.startswith("resnet18"):
        variants = [{k: v[:1] for k, v in feeds.items()}]
    else:
        variants = [{k: v[1:, :64] for k, v in feeds.items()}, {k: v[:, :17] for k, v in feeds.items()}]
    sess, ref = _session(path), ort_session(path)
    worst = max(check_outputs(sess.run(None, f), ref.run(None, f), ATOL, f"{name} {[v.shape for v in f.values()]}")
                for f in variants)
    record(f"exported/{name}/dynamic", max_abs_err_vs_ort=worst, atol=ATOL)


NATIVE = "NativeCPUExecutionProvider"
# a second size per breadth model, along its dynamic axes (compared with onnxruntime only)
BREADTH_VARIANTS = {"yolov8n": (1, 3, 96, 128), "crnn": (2, 1, 32, 64), "vit_tiny": (2, 3, 224, 224),
                    "whisper_tiny_encoder": (1, 80, 120), "mobilenetv3_small": (2, 3, 64, 80)}


def _native_node_count(sess):
    """How many node events of one profiled run the native EP ran (onnxruntime's profile format)."""
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    os.remove(f.name)
    return sum(e.get("cat") == "Node" and e["args"].get("provider") == NATIVE for e in events)


@pytest.mark.parametrize("provider", ["CPUExecutionProvider", NATIVE])
@pytest.mark.parametrize("name", export.BREADTH_MODELS)
def test_breadth_model(record, tmp_path, name, provider):
    if provider not in onnxide.get_available_providers():
        pytest.skip("native CPU kernels not built (native_eps/cpu_kernels/build.sh)")
    path, feeds, want, meta = _load(name)
    so = onnxide.SessionOptions()
    so.enable_profiling = provider == NATIVE
    so.profile_file_prefix = str(tmp_path / "prof")
    providers = [provider] + (["CPUExecutionProvider"] if provider == NATIVE else [])
    sess, ref_sess = onnxide.InferenceSession(path, sess_options=so, providers=providers), ort_session(path)
    got, ref = sess.run(None, feeds), ref_sess.run(None, feeds)
    if provider == NATIVE:
        assert _native_node_count(sess) > 0, f"{name}: no node ran on {NATIVE}"
    err_fw = check_outputs(got, want, ATOL, f"{name} vs torch")
    err_ort = check_outputs(got, ref, ATOL, f"{name} vs onnxruntime")
    x = np.random.default_rng(7).standard_normal(BREADTH_VARIANTS[name]).astype(np.float32)
    err_dyn = check_outputs(sess.run(None, {"input": x}), ref_sess.run(None, {"input": x}), ATOL,
                            f"{name} {x.shape} vs onnxruntime")
    level = "optimized" if provider == "CPUExecutionProvider" else "native"  # report.py lists the CPU EP's row
    record(f"exported/{name}/{level}", max_abs_err_vs_framework=err_fw, max_abs_err_vs_ort=err_ort, atol=ATOL,
           ort_vs_framework=max(max_err(r, w) for r, w in zip(ref, want)),
           output_max_abs=max(float(np.abs(w).max()) for w in want), **meta)
    record(f"exported/{name}/dynamic" + ("" if level == "optimized" else "_native"), max_abs_err_vs_ort=err_dyn,
           atol=ATOL)


@pytest.mark.parametrize("name", export.SKLEARN_MODELS)
def test_sklearn_model(record, name):
    path, feeds, want, meta = _load(name)
    got = _session(path).run(None, feeds)
    ref = ort_session(path).run(None, feeds)
    # labels exact, probabilities / scores within 1e-3 of scikit-learn (float64 inside) and of onnxruntime
    err_fw = check_outputs(got, want, ATOL, f"{name} vs scikit-learn")
    err_ort = check_outputs(got, ref, ATOL, f"{name} vs onnxruntime")
    if name in ("rf_zipmap", "pca_svc"):  # skl2onnx's default ZipMap: a list of {class: score} dicts
        probs = got[1]
        assert isinstance(probs, list) and len(probs) == len(want[1])
        assert all(isinstance(d, dict) for d in probs)
        assert sorted(probs[0]) == sorted(ref[1][0]) == [0, 1, 2]  # int64 class labels as keys, like onnxruntime
        assert all(type(k) is type(rk) for k, rk in zip(sorted(probs[0]), sorted(ref[1][0])))
    record(f"exported/{name}", max_abs_err_vs_framework=err_fw, max_abs_err_vs_ort=err_ort, atol=ATOL,
           ort_vs_framework=max(max_err(as_array(r), as_array(w)) for r, w in zip(ref, want)), **meta)
