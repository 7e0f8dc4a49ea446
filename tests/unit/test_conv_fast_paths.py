"""Conv fast paths (Winograd F(4×4,3×3) / F(2×2,3×3), reused im2col buffers) against the plain im2col path and
onnxruntime, on random shapes: odd sizes, pad variants, batch > 1, float64."""
import gc

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide as ort
from onnxide.ops import conv_winograd as cw
from onnxide.ops.conv import conv_nd
from onnxide.ops.conv_geometry import spatial_geometry

rng = np.random.default_rng(7)


def _plain(x, w, pb, pe, out):
    """The im2col + GEMM path (Winograd off), computed in float64 as the reference."""
    return conv_nd(x.astype(np.float64), w.astype(np.float64), 1, [3, 3], [1, 1], [1, 1], pb, pe, out, "ref")


def _data(n, c, m, h, wd, dtype=np.float32):
    x = rng.standard_normal((n, c, h, wd)).astype(dtype)
    w = (rng.standard_normal((m, c, 3, 3)) / np.sqrt(9 * c)).astype(dtype)  # He-like scale, as trained weights
    return x, w


def _rel(y, ref):
    return float(np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-30))


SHAPES = [  # n, c, m, h, w, pads (begin h, begin w, end h, end w)
    (1, 3, 5, 7, 9, (1, 1, 1, 1)),
    (2, 8, 4, 13, 6, (1, 1, 1, 1)),
    (1, 16, 16, 5, 5, (0, 0, 0, 0)),
    (3, 7, 9, 11, 17, (0, 1, 2, 0)),
    (1, 5, 6, 3, 3, (2, 2, 2, 2)),
    (2, 33, 35, 10, 15, (1, 0, 0, 1)),
    (1, 64, 64, 23, 19, (1, 1, 1, 1)),
    (1, 4, 4, 1, 1, (1, 1, 1, 1)),
]


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s[:5]) for s in SHAPES])
def test_winograd_matches_im2col(m, shape):
    n, c, mo, h, wd, pads = shape
    x, w = _data(n, c, mo, h, wd)
    pb, pe = list(pads[:2]), list(pads[2:])
    out, _, _, _, _ = spatial_geometry([h, wd], [3, 3], None, None, list(pads), "NOTSET", "t")
    ref = _plain(x, w, pb, pe, out)
    y = cw.winograd_conv3x3(x, w, pb, pe, out, m)
    assert y.dtype == np.float32 and y.shape == ref.shape and y.flags.c_contiguous
    assert _rel(y, ref) < (1e-4 if m == 4 else 2e-5)
    y64 = cw.winograd_conv3x3(x.astype(np.float64), w.astype(np.float64), pb, pe, out, m)
    assert y64.dtype == np.float64 and _rel(y64, ref) < 1e-12


def test_resnet_sized_layers_f4_accuracy():
    # the layer shapes the dispatcher sends to F(4×4,3×3): relative error stays well inside 1e-4
    for c, h in [(64, 56), (128, 28)]:
        x, w = _data(1, c, c, h, h)
        ref = _plain(x, w, [1, 1], [1, 1], [h, h])
        direct = conv_nd(x, w, 1, [3, 3], [1, 1], [1, 1], [1, 1], [1, 1], [h, h], "t")
        y = conv_nd(x, w, 1, [3, 3], [1, 1], [1, 1], [1, 1], [1, 1], [h, h], "t", fast=True)
        assert cw.winograd_tile(x, w, 1, [3, 3], [1, 1], [1, 1], [1, 1], [1, 1], [h, h]) == 4
        assert _rel(y, ref) < 1e-4
        assert _rel(y, ref) < 20 * max(_rel(direct, ref), 1e-7)


def test_dispatch_rules():
    def tile(n, c, m, h, **kw):
        x, w = np.zeros((n, c, h, h), np.float32), np.zeros((m, c, 3, 3), np.float32)
        args = dict(group=1, kernel=[3, 3], strides=[1, 1], dilations=[1, 1], pb=[1, 1], pe=[1, 1], out=[h, h])
        args.update(kw)
        return cw.winograd_tile(x, w, **args)

    assert tile(1, 64, 64, 56) == 4
    assert tile(1, 128, 128, 28) == 4
    assert tile(1, 256, 256, 14) == 2
    assert tile(1, 512, 512, 7) == 0          # too few tiles for the larger transformed weights
    assert tile(1, 16, 16, 56) == 0           # too few channels
    assert tile(1, 64, 64, 56, strides=[2, 2]) == 0
    assert tile(1, 64, 64, 56, dilations=[2, 2]) == 0
    assert tile(1, 64, 64, 56, pb=[-1, 0]) == 0
    x16 = np.zeros((1, 64, 56, 56), np.float16)
    assert cw.winograd_tile(x16, x16[:, :, :3, :3], 1, [3, 3], [1, 1], [1, 1], [1, 1], [1, 1], [56, 56]) == 0


def test_weight_cache_identity_and_invalidation():
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    u1 = cw.weight_transform(w, 4)
    assert cw.weight_transform(w, 4) is u1
    assert cw.weight_transform(w, 2) is not u1 and cw.weight_transform(w, 2).shape == (16, 8, 4)
    w[...] = rng.standard_normal(w.shape)      # mutated in place: recomputed, not served stale
    u2 = cw.weight_transform(w, 4)
    assert u2 is not u1
    ref = np.einsum("ik,mckl,jl->ijmc", cw._G4, w.astype(np.float64), cw._G4).reshape(36, 8, 4)
    np.testing.assert_allclose(u2, ref, rtol=1e-6, atol=1e-7)
    from onnxide.ops import weight_cache
    keys = [(id(w), ("winograd", 4)), (id(w), ("winograd", 2))]
    assert all(k in weight_cache._CACHE for k in keys)
    del w, u1, u2
    gc.collect()
    assert not any(k in weight_cache._CACHE and weight_cache._CACHE[k][0]() is None for k in keys)


def test_im2col_scratch_reuse_between_shapes():
    # the reused column buffer must not leak values between calls of different shapes / dtypes
    for (n, c, m, h, k, s, p, dt) in [(2, 3, 4, 11, 3, 2, 1, np.float32), (1, 5, 2, 9, 5, 1, 2, np.float64),
                                      (3, 3, 4, 11, 3, 2, 0, np.float32), (1, 2, 3, 8, 7, 2, 3, np.float32)]:
        x = rng.standard_normal((n, c, h, h)).astype(dt)
        w = rng.standard_normal((m, c, k, k)).astype(dt)
        out = [(h + 2 * p - k) // s + 1] * 2
        y = conv_nd(x, w, 1, [k, k], [s, s], [1, 1], [p, p], [p, p], out, "t", fast=True)
        xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p, p), (p, p)))
        ref = np.zeros((n, m) + tuple(out))
        for a in range(k):
            for b in range(k):
                patch = xp[:, :, a:a + s * (out[0] - 1) + 1:s, b:b + s * (out[1] - 1) + 1:s]
                ref += np.einsum("nchw,mc->nmhw", patch, w[:, :, a, b].astype(np.float64))
        assert y.dtype == dt
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def _conv_model(x_shape, w, b, pads=None, auto_pad=None, elem=TensorProto.FLOAT):
    attrs = {"kernel_shape": [3, 3]}
    if pads is not None:
        attrs["pads"] = list(pads)
    if auto_pad is not None:
        attrs["auto_pad"] = auto_pad
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, list(x_shape))],
                          [helper.make_tensor_value_info("y", elem, None)],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


ORT_CASES = [  # n, c, m, h, w, pads or auto_pad, dtype, the Winograd tile the dispatcher must pick
    (1, 64, 64, 29, 31, (1, 1, 1, 1), np.float32, 4),      # odd sizes
    (2, 48, 40, 33, 22, (0, 1, 1, 0), np.float32, 4),      # batch 2, asymmetric pads
    (1, 160, 144, 14, 13, (1, 1, 1, 1), np.float32, 2),
    (3, 32, 32, 15, 15, "SAME_UPPER", np.float32, 4),
    (1, 40, 36, 31, 22, "VALID", np.float64, 4),
    (1, 512, 64, 7, 7, (1, 1, 1, 1), np.float32, 0),       # im2col
]


@pytest.mark.parametrize("case", ORT_CASES, ids=[str(c[:5]) for c in ORT_CASES])
def test_against_onnxruntime(case, monkeypatch):
    n, c, m, h, wd, pads, dt, tile = case
    used = []
    real = cw.winograd_conv3x3
    monkeypatch.setattr(cw, "winograd_conv3x3", lambda *a: used.append(a[5]) or real(*a))
    x, w = _data(n, c, m, h, wd, dt)
    b = rng.standard_normal(m).astype(dt)
    kw = dict(pads=None if isinstance(pads, str) else pads, auto_pad=pads if isinstance(pads, str) else None)
    model = _conv_model(x.shape, w, b, elem=TensorProto.DOUBLE if dt == np.float64 else TensorProto.FLOAT, **kw)
    # onnxruntime has no float64 Conv on CPU: compare a float64 run with its float32 result at float32 tolerance
    model32 = _conv_model(x.shape, w.astype(np.float32), b.astype(np.float32), **kw)
    expect = onnxruntime.InferenceSession(model32, providers=["CPUExecutionProvider"]).run(
        None, {"x": x.astype(np.float32)})[0]
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])  # the numpy paths under test
    got = sess.run(None, {"x": x})[0]
    assert got.dtype == dt and got.shape == expect.shape
    assert _rel(got, expect) < 1e-4
    assert used == ([tile] if tile else [])
    tol = 1e-4 if dt == np.float32 else 1e-12
    cw.ENABLED = False
    try:
        plain = sess.run(None, {"x": x})[0]
    finally:
        cw.ENABLED = True
    assert _rel(got, plain) < tol
