"""Every real model optimized by onnxide (level all, written through optimized_model_filepath) passes onnx.checker
and loads in onnxruntime, with outputs equal to the original model's on onnxruntime (issue 6)."""
import os

import numpy as np
import pytest

import onnxide
from models import export, fetch
from models.export import BREADTH_MODELS
from models.common import need
from models.test_pretrained import PACKAGE_MODELS

def _models():
    paths = []
    for pkg in sorted(PACKAGE_MODELS):
        paths += fetch.model_paths(pkg)
    return sorted(paths)


def _feeds(sess, rng):
    feeds = {}
    for a in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in a.shape]
        if a.name == "input" and len(shape) == 2 and not isinstance(a.shape[1], int):
            shape = [1, 512]  # silero VAD: one 512-sample chunk at 16 kHz
        if a.type == "tensor(float)":
            feeds[a.name] = (rng.standard_normal(shape) * 0.5).astype(np.float32)
        elif a.type == "tensor(int64)":
            feeds[a.name] = np.full(shape, 16000, np.int64) if a.name == "sr" else np.zeros(shape, np.int64)
        else:
            pytest.skip(f"input {a.name} of type {a.type} needs hand-made data")
    return feeds


@pytest.mark.parametrize("path", _models(), ids=os.path.basename)
def test_optimized_model_loads_in_onnxruntime_with_equal_outputs(path, tmp_path):
    onnx = need("onnx")
    ort = need("onnxruntime")
    out = str(tmp_path / "optimized.onnx")
    so = onnxide.SessionOptions()
    so.optimized_model_filepath = out
    onnxide.InferenceSession(path, so)
    onnx.checker.check_model(out)
    oso = ort.SessionOptions()
    oso.log_severity_level = 3
    optimized = ort.InferenceSession(out, oso, providers=["CPUExecutionProvider"])
    original = ort.InferenceSession(path, oso, providers=["CPUExecutionProvider"])
    if "melspectrogram" in path:
        feeds = {original.get_inputs()[0].name: np.random.default_rng(0).standard_normal((1, 1280)).astype(
            np.float32)}
    else:
        feeds = _feeds(original, np.random.default_rng(0))
    for a, b in zip(optimized.run(None, feeds), original.run(None, feeds)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _op_sequence(graph):
    from onnxide.ir.model import subgraphs
    return [(n.domain, n.op_type, [_op_sequence(g) for g in subgraphs(n)]) for n in graph.nodes]


FUSED = ("resnet18_torchscript", "minilm_torchscript") + BREADTH_MODELS  # (residual convs, attention, LSTMs ...)


@pytest.mark.parametrize("model", _models() + list(FUSED), ids=os.path.basename)
def test_optimizer_shortcuts_change_nothing(model, monkeypatch):
    """The optimizer's two shortcuts — a fusion pass skipped on graphs without the op types it declares
    (optimizer.graph.needs), a control-flow body not re-optimized while the outer constants it reads are the same
    objects (optimizer._at_fixed_point) — change no result: with every pass run on every graph and every body
    re-optimized each sweep, each real model (and each exported one the fusions target) optimizes to the same graph,
    op for op."""
    from onnxide import optimizer
    path = model
    if model in FUSED:
        why = export.available(model)
        if why:
            pytest.skip(why)
        path = export.path_of(model)

    def optimized():
        return _op_sequence(onnxide.InferenceSession(path, providers=["CPUExecutionProvider"])._executor.model.graph)
    shortcut = optimized()
    for p in optimizer.passes_for(99):
        if getattr(p, "needs", None):
            monkeypatch.setattr(p, "needs", None)
    monkeypatch.setattr(optimizer, "_at_fixed_point", lambda *a: False)
    assert optimized() == shortcut
