"""Direct conv paths (ops/conv_direct.py: depthwise, few output channels) and the gathered path of small convs
(ops/conv.py) against a float64 tap-by-tap reference and onnxruntime: strides 1-3, dilations, asymmetric and zero
pads, 1-D convs, batch > 1, with and without bias."""
import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide
from onnxide.ops import conv as conv_ops
from onnxide.ops import conv_direct
from onnxide.ops.conv import conv_nd
from onnxide.ops.conv_geometry import spatial_geometry

rng = np.random.default_rng(11)


def _reference(x, w, group, stride, dilation, pb, pe, out):
    """Correlation summed tap by tap in float64 (independent of every conv path)."""
    nd = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + list(zip(pb, pe)))
    n, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    y = np.zeros((n, m) + tuple(out))
    for tap in np.ndindex(*w.shape[2:]):
        sl = tuple(slice(k * d, k * d + (o - 1) * s + 1, s) for k, d, o, s in zip(tap, dilation, out, stride))
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(group):
            wt = w[g * mg:(g + 1) * mg, :, *tap].astype(np.float64)  # (mg, cg)
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch[:, g * cg:(g + 1) * cg], wt)
    return y


CASES = [  # n, c, m, group, spatial, kernel, stride, dilation, pads (begin..., end...)
    (1, 16, 16, 16, (20, 20), (3, 3), 1, 1, (1, 1, 1, 1)),
    (2, 8, 8, 8, (13, 9), (3, 3), 2, 1, (1, 1, 1, 1)),
    (1, 12, 12, 12, (11, 14), (5, 5), 1, 1, (2, 2, 2, 2)),
    (1, 6, 6, 6, (17, 17), (3, 3), 3, 1, (0, 1, 2, 0)),
    (1, 10, 10, 10, (15, 12), (3, 3), 1, 2, (2, 2, 2, 2)),
    (2, 7, 7, 7, (9, 9), (3, 3), 2, 2, (0, 0, 0, 0)),
    (1, 300, 300, 300, (4, 4), (3, 3), 1, 1, (1, 1, 1, 1)),  # several channel blocks
    (1, 32, 24, 1, (19, 23), (3, 3), 1, 1, (1, 1, 1, 1)),    # few outputs
    (2, 20, 8, 1, (12, 10), (3, 3), 2, 1, (1, 0, 0, 1)),
    (1, 16, 4, 1, (70, 70), (3, 3), 1, 1, (1, 1, 1, 1)),     # several column chunks
    (1, 24, 12, 1, (16, 16), (5, 5), 1, 2, (4, 4, 4, 4)),
    (2, 9, 9, 9, (40,), (3,), 1, 1, (1, 1)),                # 1-D depthwise
    (1, 18, 6, 1, (33,), (5,), 2, 1, (2, 1)),               # 1-D few outputs
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("case", CASES, ids=[str(c[:6]) for c in CASES])
def test_direct_paths_match_reference(case, bias, monkeypatch):
    n, c, m, group, spatial, kernel, s, d, pads = case
    nd = len(spatial)
    x = rng.standard_normal((n, c) + spatial).astype(np.float32)
    w = rng.standard_normal((m, c // group) + kernel).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32) if bias else None
    out, pb, pe, st, dil = spatial_geometry(list(spatial), list(kernel), [s] * nd, [d] * nd, list(pads), "NOTSET", "t")
    used = []
    monkeypatch.setattr(conv_ops, "SMALL_GATHER", 0)  # small cases would take the gathered path
    for name in ("depthwise", "few_outputs"):
        real = getattr(conv_direct, name)
        monkeypatch.setattr(conv_direct, name, lambda *a, _r=real, _n=name, **k: used.append(_n) or _r(*a, **k))
    y = conv_nd(x, w, group, list(kernel), st, dil, pb, pe, out, "t", fast=True, bias=b)
    assert used == ["depthwise" if group > 1 else "few_outputs"]
    ref = _reference(x, w, group, st, dil, pb, pe, out)
    if b is not None:
        ref += b.reshape((1, m) + (1,) * nd)
    assert y.dtype == np.float32 and y.shape == ref.shape and y.flags.c_contiguous
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-4)


def test_depthwise_float64_and_scratch_reuse():
    # the same per-thread scratch serves calls of other shapes and dtypes without leaking values
    for dt, shape in [(np.float64, (1, 5, 9, 9)), (np.float32, (2, 3, 30, 7)), (np.float64, (1, 5, 4, 4))]:
        x = rng.standard_normal(shape).astype(dt)
        w = rng.standard_normal((shape[1], 1, 3, 3)).astype(dt)
        out = [shape[2], shape[3]]
        y = conv_nd(x, w, shape[1], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1], out, "t")
        ref = _reference(x, w, shape[1], [1, 1], [1, 1], [1, 1], [1, 1], out)
        assert y.dtype == dt
        np.testing.assert_allclose(y, ref, rtol=1e-12 if dt == np.float64 else 1e-5, atol=1e-5)


def test_depthwise_session_matches_onnxruntime():
    c = 48
    w = rng.standard_normal((c, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], group=c, kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 33, 40])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    x = rng.standard_normal((1, c, 33, 40)).astype(np.float32)
    expect = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = onnxide.InferenceSession(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("case", [c for c in CASES if c[3] == 1] + [
    (1, 129, 128, 1, (3,), (3,), 1, 1, (1, 1)),             # silero VAD's encoder
    (1, 1, 258, 1, (576,), (256,), 128, 1, (0, 0)),         # its STFT
    (2, 3, 5, 1, (7, 6), (1, 1), 2, 1, (0, 0, 0, 0)),
    (1, 2, 3, 1, (4, 5), (3, 2), 1, 3, (3, 0, 2, 4))], ids=str)  # taps entirely in the padding
def test_small_convs_gather_their_columns(case, bias, monkeypatch):
    n, c, m, group, spatial, kernel, s, d, pads = case
    nd = len(spatial)
    x = rng.standard_normal((n, c) + spatial).astype(np.float32)
    w = rng.standard_normal((m, c) + kernel).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32) if bias else None
    out, pb, pe, st, dil = spatial_geometry(list(spatial), list(kernel), [s] * nd, [d] * nd, list(pads), "NOTSET", "t")
    used = []
    real = conv_ops._gathered
    monkeypatch.setattr(conv_ops, "SMALL_GATHER", 1 << 30)
    monkeypatch.setattr(conv_ops, "_gathered", lambda *a: used.append(1) or real(*a))
    y = conv_nd(x, w, 1, list(kernel), st, dil, pb, pe, out, "t", fast=True, bias=b)
    assert used == [1]
    ref = _reference(x, w, 1, st, dil, pb, pe, out)
    if b is not None:
        ref += b.reshape((1, m) + (1,) * nd)
    assert y.dtype == np.float32 and y.shape == ref.shape and y.flags.c_contiguous
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-4)
