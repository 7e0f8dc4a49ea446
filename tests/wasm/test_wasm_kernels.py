"""Every wasm kernel (both builds, natively through wasmtime) against numpy / the CPU EP's kernels, across odd
shapes, transposes, strides, groups, pads and broadcasts. Skips when wasmtime or the build is absent."""
import itertools

import numpy as np
import pytest

from onnxide.eps import wasm_runtime as wrt

pytest.importorskip("wasmtime", reason="wasmtime (pip) runs the wasm kernels natively")

from onnxide.eps import wasm_ops as K  # noqa: E402
from onnxide.eps import wasm_ops_elem as E  # noqa: E402
from onnxide.eps.wasm import _Kernels  # noqa: E402
from onnxide.ops import conv as conv_ops, norm, pool, registry  # noqa: E402

RNG = np.random.default_rng(1234)


@pytest.fixture(scope="module", params=wrt.BUILDS)
def rt(request):
    build = request.param
    if wrt.find_build(build) is None:
        pytest.skip(f"wasm build '{build}' not built (run wasm_kernels/build.sh)")
    try:
        backend, got = wrt.load(build)
    except RuntimeError as e:
        pytest.skip(str(e))
    return _Kernels(backend, got)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(got, want, rtol=1e-5, atol=1e-5):
    assert got is not K.FALLBACK, "the wasm kernel declined"
    assert got.dtype == np.float32 and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---- GEMM ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 7, 5), (3, 1, 9), (4, 8, 4), (5, 9, 3), (13, 17, 19), (33, 65, 70),
                                   (64, 64, 257), (7, 515, 33), (70, 30, 600)])
def test_matmul_shapes(rt, m, n, k):
    a, b = rand(m, k), rand(k, n)
    close(K.matmul_fast(rt, a, b), a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))


@pytest.mark.parametrize("sa,sb", [((2, 3, 5, 7), (7, 4)), ((3, 5, 7), (3, 7, 4)), ((1, 5, 7), (3, 7, 4)),
                                   ((3, 5, 7), (1, 7, 4)), ((2, 1, 5, 7), (1, 3, 7, 4)), ((7,), (7, 4)),
                                   ((5, 7), (7,)), ((7,), (7,)), ((2, 5, 7), (7,)), ((6,), (2, 6, 3))])
def test_matmul_batched_broadcast(rt, sa, sb):
    a, b = rand(*sa), rand(*sb)
    close(K.matmul_fast(rt, a, b), np.matmul(a, b), rtol=1e-4, atol=1e-4)


def test_matmul_noncontiguous(rt):
    a = rand(9, 20)[:, ::2]           # strided view (9, 10)
    b = rand(12, 10).T                # transposed view (10, 12)
    close(K.matmul_fast(rt, a, b), a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ta,tb", list(itertools.product((0, 1), (0, 1))))
@pytest.mark.parametrize("cshape", [None, (), (1,), (11,), (1, 11), (6, 1), (6, 11)])
def test_gemm_trans_bias(rt, ta, tb, cshape):
    m, n, k = 6, 11, 13
    a = rand(k, m) if ta else rand(m, k)
    b = rand(n, k) if tb else rand(k, n)
    c = None if cshape is None else rand(*cshape)
    alpha, beta = 0.7, -1.3
    want = (a.T if ta else a) @ (b.T if tb else b) * alpha
    if c is not None:
        want = want + beta * c
    got = K.gemm_fast(rt, a, b, c, alpha=alpha, beta=beta, transA=ta, transB=tb)
    close(got, want.astype(np.float32), rtol=1e-4, atol=1e-4)


def test_gemm_strided_lda_and_batch_strides(rt):
    """The C interface itself: row strides larger than the row, batch strides, a full-matrix bias."""
    m, n, k, lda, ldb, ldc = 5, 9, 7, 12, 16, 10
    big_a, big_b = rand(3, m, lda), rand(k, ldb)
    c = np.zeros((3, m, ldc), np.float32)
    bias = rand(m, n)
    rt.call("ox_gemm", [3, m, n, k, wrt.In(big_a), lda, 1, m * lda, wrt.In(big_b), ldb, 1, 0, wrt.InOut(c), ldc,
                        m * ldc, 2.0, wrt.In(bias), n, 1, 0, 0.5, 0, 0.0, 0.0, wrt.Scratch(rt.gemm_scratch)])
    want = 2.0 * big_a[:, :, :k] @ big_b[:, :n] + 0.5 * bias
    np.testing.assert_allclose(c[:, :, :n], want, rtol=1e-4, atol=1e-4)
    assert not c[:, :, n:].any(), "wrote outside the leading dimension"


@pytest.mark.parametrize("act,a0,a1,ref", [
    (1, 0, 0, lambda y: np.maximum(y, 0)),
    (2, 0.1, 0, lambda y: np.where(y < 0, 0.1 * y, y)),
    (3, 0, 0, lambda y: 1 / (1 + np.exp(-y))),
    (7, -0.5, 0.5, lambda y: np.clip(y, -0.5, 0.5)),
])
def test_gemm_activation_epilogue(rt, act, a0, a1, ref):
    a, b, bias = rand(9, 300), rand(300, 21), rand(21)
    y = np.empty((9, 21), np.float32)
    K.gemm_call(rt, 1, 9, 21, 300, a, 300, 1, 0, b, 21, 1, 0, y, 21, 0, 1.0, bias, 0, 1, 0, 1.0, act, a0, a1)
    np.testing.assert_allclose(y, ref(a.astype(np.float64) @ b + bias), rtol=1e-4, atol=1e-4)


# ---- convolution --------------------------------------------------------------------------------------------------

CONV_CASES = [
    dict(x=(1, 3, 7, 9), w=(5, 3, 3, 3), pads=[1, 1, 1, 1]),
    dict(x=(2, 4, 10, 11), w=(6, 4, 3, 2), strides=[2, 1], pads=[0, 1, 2, 0]),
    dict(x=(1, 6, 9, 9), w=(4, 3, 3, 3), group=2, dilations=[2, 1]),
    dict(x=(1, 8, 13, 17), w=(8, 1, 3, 3), group=8, pads=[1, 1, 1, 1]),            # depthwise
    dict(x=(2, 5, 12, 10), w=(5, 1, 5, 3), group=5, strides=[2, 2], pads=[2, 1, 2, 1]),   # depthwise stride 2
    dict(x=(1, 3, 11, 14), w=(3, 1, 3, 3), group=3, strides=[3, 3], dilations=[1, 2]),    # depthwise stride 3
    dict(x=(1, 4, 6, 6), w=(8, 1, 3, 3), group=4, pads=[1, 1, 1, 1]),              # channel multiplier 2
    dict(x=(1, 16, 5, 7), w=(9, 16, 1, 1)),                                         # pointwise
    dict(x=(1, 3, 8, 8), w=(4, 3, 3, 3), auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(x=(1, 3, 8, 7), w=(4, 3, 4, 4), auto_pad="SAME_LOWER"),
    dict(x=(1, 2, 20), w=(3, 2, 5), pads=[2, 1], strides=[2]),                      # 1-D
    dict(x=(1, 70, 9, 9), w=(10, 70, 3, 3), pads=[1, 1, 1, 1]),                     # K > KC
    dict(x=(1, 2, 30, 30), w=(3, 2, 3, 3)),                                         # P > NC
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: str(c["x"]) + str(c["w"]))
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv(rt, case, with_bias):
    case = dict(case)
    x, w = rand(*case.pop("x")), rand(*case.pop("w"))
    b = rand(w.shape[0]) if with_bias else None
    want = conv_ops.conv(x, w, b, **case)
    close(K.conv_fast(rt, x, w, b, **case), want, rtol=1e-4, atol=1e-4)


# ---- pooling ------------------------------------------------------------------------------------------------------

POOL_CASES = [
    dict(kernel_shape=[2, 2], strides=[2, 2]),
    dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    dict(kernel_shape=[3, 2], strides=[2, 3], pads=[1, 0, 2, 1]),
    dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, pads=[1, 1, 1, 1]),
    dict(kernel_shape=[2, 2], dilations=[2, 2]),
    dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(kernel_shape=[4, 4], auto_pad="SAME_LOWER"),
    dict(kernel_shape=[5, 5], strides=[3, 3], pads=[2, 2, 2, 2]),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
@pytest.mark.parametrize("shape", [(1, 3, 9, 11), (2, 2, 6, 5)])
def test_maxpool(rt, case, shape):
    x = rand(*shape)
    close(K.pool_fast(rt, True, x, **case), pool.max_pool(x, **case), rtol=0, atol=0)


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
@pytest.mark.parametrize("cip", [0, 1])
def test_avgpool(rt, case, cip):
    x = rand(2, 3, 9, 11)
    close(K.pool_fast(rt, False, x, count_include_pad=cip, **case),
          pool.average_pool(x, count_include_pad=cip, **case), rtol=1e-5, atol=1e-6)


def test_pool_1d(rt):
    x = rand(2, 3, 17)
    for is_max, fn in ((True, pool.max_pool), (False, pool.average_pool)):
        kw = dict(kernel_shape=[3], strides=[2], pads=[1, 1])
        close(K.pool_fast(rt, is_max, x, **kw), fn(x, **kw), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(1, 3, 1, 1), (2, 5, 7, 9), (1, 4, 33), (1, 2, 3, 4, 5)])
def test_global_pool(rt, shape):
    x = rand(*shape)
    close(K.global_pool_fast(rt, False, x), pool.global_average_pool(x), rtol=1e-5, atol=1e-6)
    close(K.global_pool_fast(rt, True, x), pool.global_max_pool(x), rtol=0, atol=0)


# ---- softmax and norms ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 3, 5, 8, 13, 64, 1001])
@pytest.mark.parametrize("log", [False, True])
def test_softmax(rt, n, log):
    from onnxide.ops import softmax as sm

    x = rand(7, n) * 10
    x[0, 0] = 80.0  # large values stay finite after max subtraction
    want = (sm.log_softmax_along if log else sm.softmax_along)(x, 1)
    close(E.softmax_fast(rt, log, False, x, -1), want, rtol=2e-5, atol=2e-6)


def test_softmax_coerced_axis_and_edge_rows(rt):
    from onnxide.ops import softmax as sm

    x = rand(2, 3, 4, 5)
    close(E.softmax_fast(rt, False, True, x, 1), sm.softmax_1(x, axis=1), rtol=2e-5, atol=2e-6)
    edge = np.array([[-np.inf] * 4, [np.inf, 0, 1, 2], [np.nan, 0, 1, 2], [-1e30, 0, 1, 1e30]], np.float32)
    np.testing.assert_array_equal(np.isnan(E.softmax_fast(rt, False, False, edge, -1)),
                                  np.isnan(sm.softmax_13(edge)))
    assert E.softmax_fast(rt, False, False, x, 1) is K.FALLBACK  # inner axis (opset 13): numpy's


@pytest.mark.parametrize("shape,axis,sshape", [((4, 7), -1, (7,)), ((2, 3, 10), -1, (10,)), ((2, 3, 5), 1, (3, 5)),
                                               ((2, 3, 5), 1, (5,)), ((3, 33), 0, (3, 33)), ((1, 1), -1, (1,))])
def test_layernorm(rt, shape, axis, sshape):
    x, s, b = rand(*shape) * 3 + 1, rand(*sshape), rand(*sshape)

    class Ctx:
        num_outputs = 3
        node_name = "ln"

    want = norm.layer_norm(x, s, b, axis=axis, ctx=Ctx)
    got = E.layernorm_fast(rt, x, s, b, axis=axis, ctx=Ctx)
    for g, w in zip(got, want):
        close(g, w, rtol=1e-4, atol=1e-5)
    close(E.layernorm_fast(rt, x, s, axis=axis), norm.layer_norm(x, s, axis=axis), rtol=1e-4, atol=1e-5)


def test_instance_and_batch_norm(rt):
    x = rand(2, 5, 7, 3) * 2 + 0.5
    s, b, m, v = rand(5), rand(5), rand(5), np.abs(rand(5)) + 0.1
    close(E.instnorm_fast(rt, x, s, b, epsilon=1e-3), norm.instance_norm(x, s, b, epsilon=1e-3), rtol=1e-4, atol=1e-5)
    close(E.batchnorm_fast(rt, x, s, b, m, v, epsilon=1e-3), norm.batch_norm_9(x, s, b, m, v, epsilon=1e-3),
          rtol=1e-5, atol=1e-6)


# ---- elementwise --------------------------------------------------------------------------------------------------

def _unary_ref(name):
    return registry.lookup("", name, 24).kernel


UNARY_CASES = [("Relu", {}, 0), ("LeakyRelu", {"alpha": 0.2}, 0), ("Sigmoid", {}, 2e-7), ("Tanh", {}, 2e-7),
               ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 1e-7), ("HardSwish", {}, 1e-6),
               ("Elu", {"alpha": 0.5}, 1e-6),
               ("Selu", {}, 1e-6), ("Exp", {}, 0), ("Sqrt", {}, 0), ("Erf", {}, 3e-7), ("Abs", {}, 0), ("Neg", {}, 0),
               ("Gelu", {}, 1e-6), ("Gelu", {"approximate": "tanh"}, 1e-6), ("Swish", {"alpha": 1.5}, 1e-6),
               ("Clip", {"min": -0.5, "max": 0.7}, 0)]


@pytest.mark.parametrize("name,attrs,atol", UNARY_CASES, ids=lambda v: str(v))
def test_unary(rt, name, attrs, atol):
    x = np.concatenate([rand(1001) * 4, np.linspace(-30, 30, 77, dtype=np.float32),
                        np.array([0, -0.0, 1e-6, -1e-6, 1e-30, 88, 89, -100, -104, np.inf, -np.inf, np.nan],
                                 np.float32)])
    if name == "Sqrt":
        x = np.abs(x)
    since, allowed, params = E.UNARY[name]
    vals = {**allowed, **attrs}
    act, a0, a1 = params(vals)
    got = E.unary_fast(rt, x, E.ACT[act], a0, a1)
    with np.errstate(all="ignore"):
        if name == "Clip":
            want = np.clip(x, attrs["min"], attrs["max"])
        else:
            want = _unary_ref(name)(x, **attrs)
    close(got, want, rtol=2e-6, atol=atol)


def test_unary_odd_sizes_and_clip11(rt):
    for n in (0, 1, 3, 4, 5, 9):
        x = rand(n)
        close(E.unary_fast(rt, x, E.ACT["relu"]), np.maximum(x, 0), rtol=0, atol=0)
    x = rand(3, 5)
    close(E.clip11_fast(rt, x, np.array(-0.1, np.float32), None), np.maximum(x, np.float32(-0.1)), rtol=0, atol=0)


BROADCASTS = [((3, 4, 5), (3, 4, 5)), ((3, 4, 5), ()), ((), (3, 4, 5)), ((3, 4, 5), (5,)), ((3, 4, 5), (4, 1)),
              ((2, 3, 4, 5), (1, 3, 1, 1)), ((1, 3, 1, 5), (2, 1, 4, 1)), ((7,), (7,)), ((6, 1), (1, 9)),
              ((2, 3, 4, 5, 6), (3, 1, 5, 1)), ((1,), (2, 3)), ((2, 1, 3, 1, 5), (1, 4, 1, 6, 1))]


@pytest.mark.parametrize("sa,sb", BROADCASTS, ids=str)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min", "PRelu"])
def test_binary(rt, op, sa, sb):
    a, b = rand(*sa), rand(*sb)
    ref = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Max": np.maximum,
           "Min": np.minimum, "PRelu": lambda x, s: np.where(x < 0, x * s, x)}[op]
    got = E.binary_fast(rt, E.BINOP[op], a, b, op == "PRelu")
    plan = E.broadcast_plan(sa, sb)
    if plan is None or (op == "PRelu" and plan[0] != sa):
        assert got is K.FALLBACK
        return
    close(got, ref(a, b).astype(np.float32), rtol=1e-6, atol=0)


def test_binary_nan_and_noncontiguous(rt):
    a = rand(4, 6)[:, ::2]
    b = np.array([np.nan, 1, -np.inf], np.float32)
    for op, ref in (("Max", np.maximum), ("Min", np.minimum), ("Add", np.add)):
        got = E.binary_fast(rt, E.BINOP[op], a, b)
        np.testing.assert_array_equal(got, ref(a, b))


def test_declines_other_dtypes(rt):
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    d = np.ones((2, 3), np.float64)
    assert K.matmul_fast(rt, i, i.T) is K.FALLBACK
    assert E.binary_fast(rt, 0, d, d) is K.FALLBACK
    assert E.unary_fast(rt, d, 1) is K.FALLBACK
    assert K.conv_fast(rt, d.reshape(1, 1, 2, 3), d.reshape(1, 1, 2, 3)) is K.FALLBACK


# ---- com.microsoft fused ops ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("act,params", [("Relu", []), ("LeakyRelu", [0.3]), ("Sigmoid", []), ("Tanh", []),
                                        ("HardSigmoid", [0.25, 0.4]), ("Clip", [-0.2, 0.9]), ("", [])])
def test_fused_conv_and_gemm(rt, act, params):
    from onnxide.ops import fused

    x, w, b = rand(1, 6, 9, 10), rand(4, 3, 3, 3), rand(4)
    code = K.fused_act(act, params)
    want = fused.fused_conv(x, w, b, activation=act, activation_params=params, group=2, pads=[1, 0, 1, 2])
    close(K.conv_fast(rt, x, w, b, group=2, pads=[1, 0, 1, 2], act=code), want, rtol=1e-4, atol=1e-5)
    xd, wd = rand(2, 5, 8, 8), rand(5, 1, 3, 3)
    want = fused.fused_conv(xd, wd, None, activation=act, activation_params=params, group=5, strides=[2, 2])
    close(K.conv_fast(rt, xd, wd, None, group=5, strides=[2, 2], act=code), want, rtol=1e-4, atol=1e-5)
    if act != "Clip":
        a, bm, c = rand(7, 19), rand(11, 19), rand(11)
        kw = dict(transB=1, activation=act, activation_alpha=(params + [0.01])[0],
                  activation_beta=(params + [0.2, 0.5])[1])
        want = fused.fused_gemm(a, bm, c, **kw)
        close(K.gemm_fast(rt, a, bm, c, transB=1, act=code), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("sa,sb,ta,tb", [((5, 7), (7, 3), 0, 0), ((7, 5), (7, 3), 1, 0), ((5, 7), (3, 7), 0, 1),
                                         ((2, 7, 5), (2, 3, 7), 1, 1), ((2, 4, 7, 5), (7, 3), 1, 0),
                                         ((2, 4, 5, 7), (3, 7), 0, 1), ((1, 7, 5), (3, 3, 7), 1, 1)])
def test_fused_matmul(rt, sa, sb, ta, tb):
    from onnxide.ops import fused

    a, b = rand(*sa), rand(*sb)
    want = fused.fused_matmul(a, b, alpha=0.5, transA=ta, transB=tb)
    close(K.matmul_fast(rt, a, b, ta, tb, 0.5), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("n,k", [(1, 1), (7, 9), (32, 16), (45, 67), (100, 300)])
@pytest.mark.parametrize("ta,tb", list(itertools.product((0, 1), (0, 1))))
def test_gemm_few_rows(rt, m, n, k, ta, tb):
    """M < 4 takes the unpacked GEMV paths (axpy over B rows, or dot products for a transposed B)."""
    a = rand(k, m) if ta else rand(m, k)
    b = rand(n, k) if tb else rand(k, n)
    c = rand(n)
    want = 1.5 * (a.T if ta else a).astype(np.float64) @ (b.T if tb else b) + 0.5 * c
    got = K.gemm_fast(rt, a, b, c, alpha=1.5, beta=0.5, transA=ta, transB=tb, act=(1, 0.0, 0.0))
    close(got, np.maximum(want, 0).astype(np.float32), rtol=1e-4, atol=1e-4)
