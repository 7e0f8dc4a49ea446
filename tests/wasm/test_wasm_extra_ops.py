"""The WASM EP's ConvTranspose, nearest Resize and com.microsoft Gelu kernels and the 3x3 depthwise path (both builds,
natively through wasmtime) against the CPU EP's kernels across odd shapes, strides, pads, dilations and groups."""
import itertools

import numpy as np
import pytest

from onnxide.eps import wasm_runtime as wrt

pytest.importorskip("wasmtime", reason="wasmtime (pip) runs the wasm kernels natively")

from onnxide.eps import wasm_ops as K  # noqa: E402
from onnxide.eps import wasm_ops_extra as X  # noqa: E402
from onnxide.eps.wasm import _Kernels  # noqa: E402
from onnxide.ops import contrib_activation as ca, conv as conv_ops, resize  # noqa: E402

RNG = np.random.default_rng(99)


@pytest.fixture(scope="module", params=wrt.BUILDS)
def rt(request):
    if wrt.find_build(request.param) is None:
        pytest.skip(f"wasm build '{request.param}' not built (run wasm_kernels/build.sh)")
    try:
        backend, got = wrt.load(request.param)
    except RuntimeError as e:
        pytest.skip(str(e))
    return _Kernels(backend, got)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(got, want, tol=1e-4):
    assert got is not K.FALLBACK, "the wasm kernel declined"
    assert got.dtype == np.float32 and got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("n,c,h,w,m,k,s,g,pads,dil,opad", [
    (1, 24, 20, 20, 24, 2, 2, 1, None, None, None), (2, 6, 7, 5, 4, 3, 2, 2, [1, 0, 1, 2], None, [1, 0]),
    (1, 4, 9, 1, 3, 3, 1, 1, None, [2, 1], None), (2, 6, 5, 6, 3, 2, 2, 3, None, None, None),
    (1, 3, 4, 7, 2, 4, 3, 1, [2, 1, 0, 3], [1, 2], [2, 1])])
def test_conv_transpose(rt, n, c, h, w, m, k, s, g, pads, dil, opad):
    x, wt, b = rand(n, c, h, w), rand(c, m, k, k), rand(m * g)
    kw = dict(group=g, pads=pads, strides=[s, s], dilations=dil, output_padding=opad)
    close(X.conv_transpose_fast(rt, x, wt, b, **kw), conv_ops.conv_transpose(x, wt, b, **kw))
    x1 = rand(n, c, h)
    kw1 = dict(group=g, strides=[s], kernel_shape=[k])
    close(X.conv_transpose_fast(rt, x1, wt[..., 0], None, **kw1), conv_ops.conv_transpose(x1, wt[..., 0], **kw1))


@pytest.mark.parametrize("fh,fw,ctm,nm", [(2, 2, "asymmetric", "floor"), (1, 2, "half_pixel", "round_prefer_floor"),
                                          (3, 1, "asymmetric", "floor"), (4, 3, "asymmetric", "floor"),
                                          (2, 2, "align_corners", "round_prefer_floor")])
def test_resize_nearest_integer(rt, fh, fw, ctm, nm):
    x = rand(2, 3, 5, 7)
    sc = np.array([1, 1, fh, fw], np.float32)
    want = resize.resize_11(x, None, sc, coordinate_transformation_mode=ctm, nearest_mode=nm)
    got = X.resize_fast(rt, x, None, sc, coordinate_transformation_mode=ctm, nearest_mode=nm)
    if got is K.FALLBACK:  # declined: only where i // f is not the spec's index
        assert not X._int_factor_index_ok(ctm, nm, 5, fh) or not X._int_factor_index_ok(ctm, nm, 7, fw)
        return
    close(got, want, 0)


def test_ms_gelu_family(rt):
    x, b = rand(3, 5, 17), rand(17)
    close(X._bias_act(rt, x, None, K.ACT["gelu"]), ca.ms_gelu(x))
    close(X._bias_act(rt, x, b, K.ACT["gelu"]), ca.bias_gelu(x, b))
    close(X._bias_act(rt, x, b, K.ACT["gelu_tanh"]), ca.fast_gelu(x, b))


def test_depthwise_3x3_and_other_kernels(rt):
    for h, w, k, s, d, p in itertools.product([1, 6, 9], [1, 5, 8, 13, 21], [3, 5], [1, 2, 3], [1, 2], [0, 1]):
        x, wt, b = rand(2, 3, h, w), rand(3, 1, k, k), rand(3)
        kw = dict(group=3, strides=[s, s], dilations=[d, d], pads=[p, p, p + 1, p])
        try:
            want = conv_ops.conv(x, wt, b, **kw)
        except Exception:
            continue
        close(K.conv_fast(rt, x, wt, b, **kw), want)


@pytest.mark.parametrize("m,k,n", [(1, 7, 5), (3, 300, 9), (37, 260, 530), (128, 64, 17)])
def test_prepacked_constant_b(rt, m, k, n):
    """Second call with the same B object runs on the packed copy: same results, also transposed and with bias."""
    a, b, bt, bias = rand(2, m, k), rand(k, n), rand(n, k), rand(n)
    b.setflags(write=False)  # initializers are read-only; writeable B (a refillable feed) is never cached
    bt.setflags(write=False)
    pack = K.PackedB()
    first = K.matmul_fast(rt, a, b, pack=pack)
    assert pack.packed is None
    again = K.matmul_fast(rt, a, b, pack=pack)
    assert pack.packed is not None
    close(again, a @ b)
    np.testing.assert_array_equal(again, first)
    pack_t = K.PackedB()
    for _ in range(3):
        got = K.gemm_fast(rt, a[0], bt, bias, transB=1, alpha=0.5, beta=2.0, pack=pack_t)
    assert pack_t.packed is not None
    close(got, 0.5 * a[0] @ bt.T + 2.0 * bias)
    other = rand(k, n)  # a different B object: not the cached packing
    close(K.matmul_fast(rt, a, other, pack=pack), a @ other)
    feed, wpack = rand(k, n), K.PackedB()  # writeable: refilled in place between calls, never stale
    K.matmul_fast(rt, a, feed, pack=wpack)
    feed[...] = rand(k, n)
    close(K.matmul_fast(rt, a, feed, pack=wpack), a @ feed)
    assert wpack.packed is None


@pytest.mark.parametrize("k,n", [(7, 5), (64, 256), (300, 37), (260, 530)])
def test_prepacked_b_few_rows(rt, k, n):
    """Fewer rows than a tile (an MLP at batch 1) on a packed B take their own path: near the float64 product, and
    each row bit-identical to the same row computed inside a full tile (the same sums in the same order), across K
    blocks (K > 256), column blocks (N > 512) and part panels, with alpha, bias and an activation."""
    b, bias = rand(k, n), rand(n)
    b.setflags(write=False)
    pack = K.PackedB()
    many = rand(12, k)
    for _ in range(2):
        tiled = K.gemm_fast(rt, many, b, bias, alpha=0.5, beta=2.0, act=(1, 0.0, 0.0), pack=pack)
    assert pack.packed is not None
    for m in (1, 2, 3, 5):
        got = K.gemm_fast(rt, many[:m], b, bias, alpha=0.5, beta=2.0, act=(1, 0.0, 0.0), pack=pack)
        want = np.maximum(0.5 * many[:m].astype(np.float64) @ b + 2.0 * bias, 0)
        np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(got, tiled[:m])


@pytest.mark.parametrize("n,c,m,h,w,pads,act", [
    (1, 16, 16, 20, 20, [1, 1, 1, 1], 0), (2, 17, 19, 21, 19, [1, 1, 1, 1], 1), (1, 16, 32, 15, 33, [0, 0, 0, 0], 0),
    (1, 20, 16, 24, 18, [1, 0, 2, 1], 0), (1, 16, 16, 9, 60, [1, 2, 0, 1], 0), (1, 32, 24, 23, 17, [2, 2, 2, 2], 0)])
def test_winograd_3x3(rt, n, c, m, h, w, pads, act):
    oh, ow = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    assert K.use_winograd(2, 3, 3, 1, 1, 1, 1, 1, c, m, oh, ow)
    x, wt, b = rand(n, c, h, w), rand(m, c, 3, 3), rand(m)
    want = conv_ops.conv(x, wt, b, pads=pads)
    if act:
        want = np.maximum(want, 0)
    close(K.conv_fast(rt, x, wt, b, pads=pads, act=(act, 0.0, 0.0)), want, 2e-4)


@pytest.mark.parametrize("b,s,t,n,h,hv,bias_shape,scale", [
    (1, 7, 7, 3, 4, 4, None, 0.0), (2, 5, 9, 2, 8, 3, (2, 1, 5, 9), 0.0), (1, 16, 16, 4, 8, 8, (1, 4, 16, 16), 0.3),
    (2, 3, 4, 1, 5, 5, (1, 1, 3, 4), 0.0)])
def test_multi_head_attention(rt, b, s, t, n, h, hv, bias_shape, scale):
    from onnxide.ops.contrib_attention import multi_head_attention
    q, k, v = rand(b, s, n * h), rand(b, t, n * h), rand(b, t, n * hv)
    ab = rand(*bias_shape) if bias_shape else None
    want = multi_head_attention(q, k, v, None, None, ab, num_heads=n, scale=scale)
    close(X.mha_fast(rt, q, k, v, None, None, ab, num_heads=n, scale=scale), want)


def test_stride2_im2col_vector_path(rt):
    """Stride-2 convolutions whose im2col panels take the 16-lane shuffle path (wide rows) and the scalar edges."""
    for c, h, w, k, p in itertools.product([1, 3], [9, 33], [17, 40], [1, 3, 7], [0, 3]):
        x, wt = rand(1, c, h, w), rand(9, c, k, k)
        kw = dict(pads=[p] * 4, strides=[2, 2])
        close(K.conv_fast(rt, x, wt, **kw), conv_ops.conv(x, wt, **kw), 1e-4)
