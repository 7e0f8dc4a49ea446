"""NativeCPUExecutionProvider (native_eps/): every op it claims gives the CPU EP's (numpy oracle's) results on float32
— special values, conv / pool geometries (strides, dilations, asymmetric pads, ceil mode, 1-D), fused epilogues —
the claimed node really runs natively, other dtypes fall back, one and two threads agree."""
import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxide

NATIVE = "NativeCPUExecutionProvider"
pytestmark = pytest.mark.skipif(NATIVE not in onnxide.get_available_providers(),
                                reason="native CPU kernels not built (native_eps/cpu_kernels/build.sh)")
rng = np.random.default_rng(5)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 80.0, -80.0, 100.0, -100.0, 3.0, -3.0,
                    0.4999, 0.5, -0.5001, 1e-4], np.float32)


@pytest.fixture(autouse=True)
def native_for_any_size(monkeypatch, request):
    """Small work normally stays in numpy (cpu_ops.SMALL_*); these tests' small inputs must reach the kernels."""
    if "keep_thresholds" in request.keywords:
        return
    from onnxide_native import cpu_ops
    for name in ("SMALL_GEMM", "SMALL_N", "SMALL_ACT"):
        monkeypatch.setattr(cpu_ops, name, 1)


def _model(op, inputs, attrs=None, n_out=1, domain="", opset=20):
    names = [f"i{k}" if a is not None else "" for k, a in enumerate(inputs)]
    outs = [f"o{k}" for k in range(n_out)]
    node = helper.make_node(op, names, outs, domain=domain, **(attrs or {}))
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT if a.dtype == np.float32
                                                         else TensorProto.DOUBLE, a.shape)
                           for n, a in zip(names, inputs) if n],
                          [helper.ValueInfoProto(name=o) for o in outs])  # (typed as the node gives them)
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(g, opset_imports=ops, ir_version=10).SerializeToString(), \
        {n: a for n, a in zip(names, inputs) if n}


def _check(op, inputs, attrs=None, n_out=1, domain="", opset=20, rtol=2e-5, atol=2e-6, threads=1):
    model, feeds = _model(op, inputs, attrs, n_out, domain, opset)
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = threads  # convs take other paths with one thread than with more
    native = onnxide.InferenceSession(model, so, providers=[NATIVE, "CPUExecutionProvider"])
    assert native._executor.main_plan.steps[0].ep.name == NATIVE, f"{op} not claimed"
    cpu = onnxide.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    got, want = native.run(None, feeds), cpu.run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got


def _x(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("op,attrs,opset", [
    ("Relu", {}, 14), ("LeakyRelu", {"alpha": 0.3}, 16), ("Sigmoid", {}, 13), ("Tanh", {}, 13),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 6), ("HardSwish", {}, 14), ("Erf", {}, 13),
    ("Gelu", {}, 20), ("Gelu", {"approximate": "tanh"}, 20)])
def test_unary(op, attrs, opset):
    x = np.concatenate([SPECIAL, _x(5000) * 4])  # several vector lengths plus a tail
    _check(op, [x], attrs, opset=opset)
    _check(op, [_x(3, 1, 7)], attrs, opset=opset)


def test_log():
    """Log natively: within an ulp of numpy's, and its special values (-inf at +-0, NaN below 0, +inf at +inf)."""
    x = np.concatenate([SPECIAL, np.abs(_x(5000)) * 10, _x(33)])
    with np.errstate(divide="ignore", invalid="ignore"):
        got = _check("Log", [x], opset=13, rtol=3e-7, atol=0)[0]
    assert np.array_equal(np.isnan(got), np.isnan(x) | (x < 0)) and got[x == 0].tolist() == [-np.inf] * int(
        (x == 0).sum())


@pytest.mark.parametrize("lo,hi", [(0.5, None), (None, -0.25), (-1.0, 2.0), (1.0, 1.0)])
def test_clip_with_constant_bounds_in_a_chain(lo, hi):
    """Clip-11+ whose bounds are initializers: the clip activation inside a chain (an absent bound open)."""
    from onnx import numpy_helper
    x = np.concatenate([SPECIAL, _x(300) * 3]).reshape(1, -1)
    names = ["x", "lo" if lo is not None else "", "hi" if hi is not None else ""]
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("lo", lo), ("hi", hi)) if v is not None]
    nodes = [helper.make_node("Mul", ["x", "two"], ["d"]), helper.make_node("Clip", ["d"] + names[1:], ["y"])]
    inits.append(numpy_helper.from_array(np.array(2.0, np.float32), "two"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)], inits)
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=9).SerializeToString()
    native = onnxide.InferenceSession(data, providers=[NATIVE, "CPUExecutionProvider"])
    assert [s.node.op_type for s in native._executor.main_plan.steps] == ["NativeChain"]
    want = onnxide.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(native.run(None, {"x": x})[0], want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op", ["Gelu", "BiasGelu", "FastGelu"])
def test_contrib_gelu(op):
    x, b = _x(2, 50, 48) * 3, _x(48)  # above cpu_ops.SMALL_ACT
    _check(op, [x] if op == "Gelu" else [x, b], domain="com.microsoft")


@pytest.mark.parametrize("attrs", [{}, {"alpha": 1.0}, {"alpha": -0.5}])
def test_quick_gelu(attrs):
    """com.microsoft QuickGelu, x · sigmoid(alpha · x), alpha 1.702 when absent (the registered kernel's default,
    not the table's Swish default of 1)."""
    x = _x(2, 50, 48) * 4
    got = _check("QuickGelu", [x], attrs, domain="com.microsoft")[0]
    alpha = attrs.get("alpha", 1.702)
    np.testing.assert_allclose(got, x / (1 + np.exp(-alpha * x.astype(np.float64))), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,axis,bias,n_out", [((4, 7, 32), -1, True, 1), ((4, 7, 32), 1, False, 3),
                                                   ((3, 1000), -1, True, 3), ((2, 3), 0, True, 1)])
def test_layer_norm(shape, axis, bias, n_out):
    x = _x(*shape) * 5 + 2
    norm = shape[axis % len(shape):]
    _check("LayerNormalization", [x, _x(*norm)] + ([_x(*norm)] if bias else []), {"axis": axis, "epsilon": 1e-3},
           n_out=n_out, opset=17, atol=1e-5)


@pytest.mark.parametrize("n_out,beta,bias", [(1, True, True), (4, True, False), (1, False, False)])
def test_skip_layer_norm(n_out, beta, bias):
    x, s = _x(2, 9, 64), _x(2, 9, 64)
    ins = [x, s, _x(64), _x(64) if beta else None] + ([_x(64)] if bias else [])
    _check("SkipLayerNormalization", ins, {"epsilon": 1e-5}, n_out=n_out, domain="com.microsoft", atol=1e-5)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset,axis", [(13, -1), (11, 1), (11, -1)])
def test_softmax(op, opset, axis):
    x = _x(3, 4, 50) * 10
    x[0, 0, :5] = -np.inf
    x[1, 1, :] = -np.inf   # a fully masked row: NaN in both
    x[2, 2, 3] = np.nan
    _check(op, [x], {"axis": axis}, opset=opset)


@pytest.mark.parametrize("threads", [1, 2])  # numpy's GEMMs around the native softmax; nx_attention
@pytest.mark.parametrize("bias_shape", [None, (1, 1, 7, 11), (2, 1, 7, 11), (1, 4, 7, 11), (2, 4, 7, 11)])
def test_multi_head_attention(bias_shape, threads):
    q, k = _x(2, 7, 48), _x(2, 11, 48)
    for v in (_x(2, 11, 48), _x(2, 11, 64)):  # value heads as wide as the query heads, and wider
        extra = [] if bias_shape is None else [None, None, _x(*bias_shape) * 3]
        _check("MultiHeadAttention", [q, k, v] + extra, {"num_heads": 4}, domain="com.microsoft", atol=1e-5,
               threads=threads)
        _check("MultiHeadAttention", [q, k, v] + extra, {"num_heads": 4, "scale": 0.2}, domain="com.microsoft",
               atol=1e-5, threads=threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_multi_head_attention_in_query_row_blocks(threads):
    """Long key sequences: nx_attention takes the queries in blocks whose scores fit its buffer (16 rows for 4,100
    keys: three blocks of 40 queries, the last one 8 rows), bias rows following their queries."""
    q, k, v = _x(2, 40, 16), _x(2, 4100, 16), _x(2, 4100, 8)
    bias = _x(2, 2, 40, 4100) * 3
    _check("MultiHeadAttention", [q, k, v, None, None, bias], {"num_heads": 2}, domain="com.microsoft", atol=1e-5,
           threads=threads)


CONVS = [  # c, m, group, spatial, kernel, strides, dilations, pads
    (3, 8, 1, (23, 19), (7, 7), (2, 2), (1, 1), (3, 3, 3, 3)),      # stem: stride 2, four phase planes
    (16, 16, 16, (20, 20), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),   # depthwise, flat taps
    (8, 8, 8, (13, 9), (3, 3), (2, 2), (1, 1), (1, 0, 2, 1)),       # depthwise strided, asymmetric pads
    (12, 12, 12, (11, 14), (5, 5), (1, 1), (2, 2), (4, 4, 4, 4)),   # depthwise dilated
    (6, 6, 6, (17, 17), (3, 3), (3, 3), (1, 1), (0, 1, 2, 0)),      # depthwise stride 3
    (32, 64, 1, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),    # Winograd size
    (32, 24, 1, (19, 23), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),    # few outputs
    (16, 40, 1, (9, 9), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),      # 1x1: plain GEMM
    (3, 8, 1, (40, 36), (7, 7), (2, 2), (1, 1), (3, 2, 3, 1)),      # stem-like, asymmetric pads
    (5, 7, 1, (10, 12), (3, 2), (2, 1), (2, 1), (2, 0, 1, 1)),      # mixed stride / dilation per axis
    (6, 4, 1, (30,), (5,), (2,), (1,), (2, 1)),                     # 1-D
    (6, 6, 6, (31,), (4,), (1,), (3,), (0, 5)),                     # 1-D depthwise dilated
    (24, 24, 24, (7, 7), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2)),     # depthwise on a small map: 8 channels at a time
    (16, 16, 16, (16, 16), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),   # the largest map done so (256 positions)
    (4, 4, 4, (40, 45), (3, 3), (2, 2), (1, 1), (1, 2, 0, 1)),      # depthwise stride 2, odd width: channels blocked
    (2, 2, 2, (262, 270), (3, 3), (2, 2), (1, 1), (1, 2, 0, 1)),    # ... a block past 2 MB: phase planes, vectors
    (16, 16, 16, (10, 13), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2)),   # small map, 5 wide: a row's groups overlapping
    (10, 10, 10, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),     # ... 3 wide, rows of 7, a block of 2 channels
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("c,m,group,spatial,kernel,strides,dilations,pads", CONVS)
def test_conv(c, m, group, spatial, kernel, strides, dilations, pads, threads):
    x, w, b = _x(2, c, *spatial), _x(m, c // group, *kernel), _x(m)
    attrs = {"group": group, "strides": list(strides), "dilations": list(dilations), "pads": list(pads)}
    got = _check("Conv", [x, w, b], attrs, opset=11, rtol=1e-4, atol=1e-4, threads=threads)
    model, feeds = _model("Conv", [x, w, b], attrs, opset=11)
    want = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
    _check("Conv", [x, w], attrs, opset=11, rtol=1e-4, atol=1e-4, threads=threads)  # no bias


@pytest.mark.parametrize("threads", [1, 2])
def test_conv_shifted_rows_without_winograd(monkeypatch, threads):
    """Every non-1×1 group-1 conv reads its taps in place from stride-phase planes (nx_conv_shifted); with native
    Winograd off the 3×3 stride-1 ones do too. Larger shapes: several K blocks, row panels and position panels."""
    from onnxide_native import cpu_ops
    monkeypatch.setattr(cpu_ops, "WINOGRAD_F4", False)
    results, real = [], cpu_ops.conv
    monkeypatch.setattr(cpu_ops, "conv", lambda *a, **kw: results.append(real(*a, **kw)) or results[-1])
    for c, m, group, spatial, kernel, strides, dilations, pads in CONVS + [
            (40, 20, 1, (50, 47), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
            (64, 33, 1, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
            (24, 36, 1, (61, 58), (5, 3), (2, 1), (1, 2), (2, 1, 2, 1)),
            (3, 5, 1, (44, 47), (5, 5), (1, 1), (10, 10), (2, 2, 2, 2)),  # rows reaching far past the planes
            (16, 20, 1, (13, 11), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0)),  # 1×1 stride 2: one phase of four read
            (8, 6, 1, (7, 7), (1, 1), (1, 1), (1, 1), (1, 0, 2, 1)),      # a padded 1×1
            # stride 1 padded left and right: rows share their pad columns (lead zeros before each plane)
            (16, 32, 1, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
            (4, 6, 1, (9, 8), (3, 3), (1, 1), (1, 1), (1, 2, 1, 1)),
            (6, 5, 1, (12, 11), (3, 3), (1, 1), (2, 2), (2, 2, 2, 2)),
            (5, 4, 1, (1, 9), (1, 3), (1, 1), (1, 1), (0, 2, 0, 1)),     # one row: the shared rows would not fit
            # output rows a multiple of 8 wide: tiles of output positions, whole ones written in place
            (20, 21, 1, (12, 24), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # rows of a tile from 2 output rows
            (70, 16, 1, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),    # 3 K blocks summed in the output
            (8, 16, 1, (5, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),     # a last tile of 8 positions
            (8, 16, 1, (6, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),     # ... of 16
            (8, 17, 1, (7, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),     # ... of 24, and a row panel of 1
            (6, 16, 1, (15, 32), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1))]:  # stride 2
        x, w, b = _x(2, c, *spatial), _x(m, c // group, *kernel), _x(m)
        attrs = {"group": group, "strides": list(strides), "dilations": list(dilations), "pads": list(pads),
                 "activation": "Relu"}
        y = _check("FusedConv", [x, w, b], attrs, domain="com.microsoft", opset=11, rtol=1e-4, atol=1e-4,
                   threads=threads)[0]
        _check("FusedConv", [x, w, b, _x(*y.shape)], attrs, domain="com.microsoft", opset=11, rtol=1e-4, atol=1e-4,
               threads=threads)
    assert len(results) == 2 * len(CONVS) + 32 and not any(r is cpu_ops.FALLBACK for r in results)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("act", ["relu", "hardswish"])
@pytest.mark.parametrize("c,m", [(3, 16), (32, 32), (70, 20)])
def test_shifted_conv_epilogue_in_registers_is_the_same(monkeypatch, c, m, act, threads):
    """Whole tiles of grouped positions store bias + activation straight from the registers (nx_gemm.c
    grouped_whole_fused); the bits are those of the plain conv with the bias added after in float32 and the
    activation kernel run on that (ReLU: v < 0 ? 0 : v, NaN kept). 3 and 32 channels: one and two K blocks; 20
    output channels: a partial row panel, its epilogue after."""
    from onnxide_native import cpu_ops, lib
    monkeypatch.setattr(cpu_ops, "WINOGRAD_F4", False)
    monkeypatch.setattr(cpu_ops, "threads", lambda: threads)
    library = lib.load()
    x, w, b = _x(1, c, 16, 16), _x(m, c, 3, 3), _x(m)
    b[::3] = 0.0
    x[0, 0, 3, 5] = np.nan
    assert cpu_ops.conv_plan(library, x.shape, w, b.shape, pads=[1, 1, 1, 1]).kind == "shifted"
    fused = cpu_ops.conv(library, x, w, b, pads=[1, 1, 1, 1], act_code=cpu_ops.ACT[act])
    want = cpu_ops.conv(library, x, w, None, pads=[1, 1, 1, 1]) + b[None, :, None, None]
    if act == "relu":
        want = np.where(want < 0, np.float32(0), want)
    else:
        library.nx_act(want.size, want.ctypes.data, want.ctypes.data, None, cpu_ops.ACT[act], 0.0, 0.0, 1)
    assert np.isnan(want).any()
    np.testing.assert_array_equal(fused, want)
    assert np.array_equal(np.signbit(fused), np.signbit(want))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("act", ["relu", "hardswish"])
@pytest.mark.parametrize("c,m", [(16, 72), (300, 32)])
def test_gemm_conv_epilogue_in_registers_is_the_same(monkeypatch, c, m, act, threads):
    """A 1×1 conv's whole GEMM tiles store row bias + activation straight from the registers on the AVX-512 build
    (nx_gemm.c tile_epilogue16); the bits are those of the conv without bias, the bias added after in float32 and
    the activation kernel run on that, NaN and zeros' signs included. K = 16: one K block, 72 channels: a partial row
    panel too; K = 300: two K blocks."""
    from onnxide_native import cpu_ops, lib
    monkeypatch.setattr(cpu_ops, "threads", lambda: threads)
    library = lib.load()
    x, w, b = _x(1, c, 12, 12), _x(m, c, 1, 1), _x(m)
    b[::3] = 0.0
    x[0, :, 0, 0] = 0.0
    x[0, 0, 3, 5] = np.nan
    assert cpu_ops.conv_plan(library, x.shape, w, b.shape, pads=[0, 0, 0, 0]).kind == "gemm"
    fused = cpu_ops.conv(library, x, w, b, pads=[0, 0, 0, 0], act_code=cpu_ops.ACT[act])
    want = cpu_ops.conv(library, x, w, None, pads=[0, 0, 0, 0]) + b[None, :, None, None]
    library.nx_act(want.size, want.ctypes.data, want.ctypes.data, None, cpu_ops.ACT[act], 0.0, 0.0, 1)
    assert np.isnan(want).any() and (want == 0).any()
    np.testing.assert_array_equal(fused, want)
    assert np.array_equal(np.signbit(fused), np.signbit(want))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m", [20, 48, 70])
def test_conv_of_one_position(m, threads):
    """A 1×1 conv of a 1×1 map (squeeze-and-excite's FCs) is a matrix-vector product over the packed weights: row
    panels side by side (here 2, 3 and 4 + 1 of them), bias, residual and activation per row."""
    x, w, b = _x(2, 50, 1, 1), _x(m, 50, 1, 1), _x(m)
    _check("Conv", [x, w, b], {}, opset=11, threads=threads)
    for attrs in ({"activation": "Relu"}, {"activation": "HardSigmoid", "activation_params": [0.2, 0.5]}):
        _check("FusedConv", [x, w, b, _x(2, m, 1, 1)], attrs, domain="com.microsoft", opset=11, threads=threads)


@pytest.mark.parametrize("activation,params", [("Relu", None), ("LeakyRelu", [0.2]), ("Sigmoid", None),
                                               ("Tanh", None), ("HardSigmoid", [0.25, 0.4]), ("Clip", [-0.5, 0.7])])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("conv", [CONVS[0], CONVS[2], CONVS[5], CONVS[6]])
def test_fused_conv(activation, params, conv, threads):
    c, m, group, spatial, kernel, strides, dilations, pads = conv
    x, w, b = _x(1, c, *spatial), _x(m, c // group, *kernel), _x(m)
    attrs = {"group": group, "strides": list(strides), "dilations": list(dilations), "pads": list(pads),
             "activation": activation}
    if params:
        attrs["activation_params"] = params
    y = _check("FusedConv", [x, w, b], attrs, domain="com.microsoft", opset=11, rtol=1e-4, atol=1e-4,
               threads=threads)[0]
    _check("FusedConv", [x, w, b, _x(*y.shape)], attrs, domain="com.microsoft", opset=11, rtol=1e-4, atol=1e-4,
           threads=threads)


@pytest.mark.parametrize("shape,attrs", [
    ((2, 3, 15, 16), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 4, 9, 10), {"kernel_shape": [3, 2], "strides": [2, 3], "ceil_mode": 1}),
    ((1, 2, 12, 12), {"kernel_shape": [2, 2], "dilations": [2, 3], "pads": [0, 1, 1, 0]}),
    ((1, 2, 8, 8), {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"}),
    ((2, 3, 20), {"kernel_shape": [4], "strides": [3], "pads": [1, 2]}),
    ((1, 3, 10, 9), {"kernel_shape": [2, 2], "strides": [2, 2]}),  # 2×2 stride 2: its own row and window passes
    ((1, 3, 9, 9), {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 2, 8, 8), {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((2, 3, 6, 37), {"kernel_shape": [2, 2], "strides": [2, 2]}),  # 2×2 stride 2 in vectors of 8 windows, a tail
])
def test_max_pool(shape, attrs):
    x = _x(*shape)
    x.reshape(-1)[::7] = np.nan
    _check("MaxPool", [x], attrs, opset=12)


def test_max_pool_special_values():
    """NaN in either row or column of a window wins, infinities and signed zeros compare as floats do."""
    x = rng.permutation(np.resize(SPECIAL, 2 * 4 * 8 * 34)).reshape(2, 4, 8, 34).astype(np.float32)
    for attrs in ({"kernel_shape": [2, 2], "strides": [2, 2]}, {"kernel_shape": [3, 3], "strides": [2, 2]}):
        _check("MaxPool", [x], attrs, opset=12, rtol=0, atol=0)


def test_other_dtypes_fall_back_to_numpy():
    x = rng.standard_normal((3, 5))
    model, feeds = _model("Relu", [x], opset=14)
    sess = onnxide.InferenceSession(model, providers=[NATIVE, "CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, feeds)[0], np.maximum(x, 0))


def test_two_threads_give_the_same_bits():
    """Kernels split over the pool's threads (rows, planes, GEMM tiles) compute each value as one thread would."""
    cases = [("Conv", [_x(1, 16, 40, 40), _x(16, 1, 3, 3), _x(16)], {"group": 16, "pads": [1, 1, 1, 1]}, 11, ""),
             ("Gelu", [_x(64, 1500)], {}, 20, ""), ("Softmax", [_x(300, 200)], {}, 13, ""),
             ("MatMul", [_x(300, 200), _x(200, 500)], {}, 13, ""),
             ("Add", [_x(8, 64, 96), _x(96)], {}, 14, ""), ("Mul", [_x(2, 64, 40, 40), _x(1, 64, 1, 1)], {}, 14, ""),
             ("Sub", [_x(8, 64, 96), _x(1)], {}, 14, ""),
             ("MaxPool", [_x(1, 32, 60, 60)], {"kernel_shape": [3, 3], "strides": [2, 2]}, 12, ""),
             ("SkipLayerNormalization", [_x(64, 384), _x(64, 384), _x(384), _x(384)], {}, 20, "com.microsoft")]
    for op, ins, attrs, opset, domain in cases:  # (closeness to numpy as in the per-op tests; the point is 1 == 2)
        one = _check(op, ins, attrs, opset=opset, domain=domain, threads=1, rtol=1e-4, atol=1e-4)
        two = _check(op, ins, attrs, opset=opset, domain=domain, threads=2, rtol=1e-4, atol=1e-4)
        for a, b in zip(one, two):
            np.testing.assert_array_equal(a, b)


def test_bad_conv_input_reports_like_the_cpu_ep():
    x, w = _x(1, 4, 8, 8), _x(6, 3, 3, 3)
    model, feeds = _model("Conv", [x, w], opset=11)
    sess = onnxide.InferenceSession(model, providers=[NATIVE, "CPUExecutionProvider"])
    with pytest.raises(onnxide.InvalidArgument, match="inconsistent"):
        sess.run(None, feeds)


@pytest.mark.parametrize("sa,sb", [((7, 33), (33, 50)), ((2, 37, 384), (384, 100)), ((1, 5, 300), (300, 5)),
                                   ((130, 600), (600, 70))])  # edges of the 14×32 tiles, K past one 256 block
def test_matmul(sa, sb):
    _check("MatMul", [_x(*sa), _x(*sb)], opset=13, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("trans_b,c_shape", [(0, None), (1, (50,)), (1, (1, 50)), (0, (20, 1)), (0, (20, 50))])
def test_gemm(trans_b, c_shape):
    a, b = _x(20, 300), (_x(50, 300) if trans_b else _x(300, 50))
    ins = [a, b] + ([_x(*c_shape)] if c_shape else [])
    _check("Gemm", ins, {"transB": trans_b}, opset=13, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("activation,attrs", [("Relu", {}), ("LeakyRelu", {"activation_alpha": 0.2}),
                                              ("HardSigmoid", {}), ("Tanh", {})])
def test_fused_gemm(activation, attrs):
    _check("FusedGemm", [_x(9, 40), _x(33, 40), _x(33)], {"transB": 1, "activation": activation, **attrs},
           domain="com.microsoft", opset=13, rtol=1e-4, atol=1e-4)


def test_constant_weights_are_packed_once_and_stay_right():
    from onnxide.runtime.threads import blas_threads
    from onnxide_native import cpu_ops
    w = _x(64, 96)
    w.flags.writeable = False                                                  # as the executor marks initializers
    lib = onnxide.InferenceSession(_model("Relu", [_x(4)], opset=14)[0],
                                   providers=[NATIVE, "CPUExecutionProvider"])._providers[0].lib
    x = _x(40, 64)                                                             # above cpu_ops.SMALL_GEMM
    with blas_threads(1):                                                      # a one-thread session's run
        first = cpu_ops.matmul(lib, x, w)
        np.testing.assert_allclose(first, x @ w, rtol=1e-5, atol=1e-5)
        assert cpu_ops.packed_b(lib, w, False) is cpu_ops.packed_b(lib, w, False)   # cached: read-only weight
        np.testing.assert_array_equal(cpu_ops.matmul(lib, x, w), first)
        v = w.copy()                                                           # writeable: packed per call
        assert cpu_ops.packed_b(lib, v, False) is not cpu_ops.packed_b(lib, v, False)
        v[...] = 0
        np.testing.assert_array_equal(cpu_ops.matmul(lib, x, v), np.zeros((40, 96), np.float32))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("c,m,spatial,pads", [(32, 40, (17, 22), (1, 1, 1, 1)), (48, 32, (30, 9), (0, 1, 2, 0)),
                                              (32, 32, (11, 11), (2, 2, 2, 2))])
def test_winograd_f4(c, m, spatial, pads, threads):
    """nx_winograd_f4 (chosen where conv_winograd picks 4×4 tiles) against a float64 reference and the CPU EP."""
    from onnxide_native import cpu_ops
    x, w, b = _x(2, c, *spatial), _x(m, c, 3, 3), _x(m)
    w.flags.writeable = False
    z = _x(2, m, spatial[0] + pads[0] + pads[2] - 2, spatial[1] + pads[1] + pads[3] - 2)
    lib = onnxide.InferenceSession(_model("Relu", [_x(4)], opset=14)[0],
                                   providers=[NATIVE, "CPUExecutionProvider"])._providers[0].lib
    with onnxide.runtime.threads.blas_threads(threads, True):
        y = cpu_ops.winograd_f4(lib, x, w, b, np.ascontiguousarray(z), pads[:2], list(z.shape[2:]),
                                (cpu_ops.ACT["relu"], 0.0, 0.0))
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    ref = np.zeros(z.shape)
    for kh in range(3):
        for kw in range(3):
            ref += np.einsum("nchw,mc->nmhw", xp[:, :, kh:kh + z.shape[2], kw:kw + z.shape[3]], w[:, :, kh, kw])
    ref = np.maximum(ref + b[None, :, None, None] + z, 0)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("xs,ws,strides", [((2, 1, 1760), (257, 1, 512), [160]),
                                           ((1, 1, 1, 700), (9, 1, 1, 64), [1, 32])])
def test_windows_conv_per_node(xs, ws, strides, threads):
    """A one-channel unpadded conv claimed alone (no chain): the GEMM over the input's windows, then transposed."""
    from onnxide_native import cpu_ops, lib
    w = _x(*ws) * 0.05
    assert cpu_ops.conv_plan(lib.load(), xs, w, strides=strides).kind == "windows"  # (the path under test)
    _check("Conv", [_x(*xs), w, _x(ws[0])], {"strides": strides}, opset=17, rtol=1e-4, atol=1e-5, threads=threads)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("sa,sb", [((2, 16, 30, 30), (2, 16, 30, 30)), ((2, 16, 30, 30), (1, 16, 1, 1)),
                                   ((1, 16, 1, 1), (2, 16, 30, 30)), ((4, 128, 96), (96,)), ((96,), (4, 128, 96)),
                                   ((3, 40, 50), ()), ((), (3, 40, 50)), ((2, 16, 30, 30), (2, 16, 1, 1)),
                                   ((5, 30, 40), (5, 30, 1)), ((3, 40, 50), (1,))])
@pytest.mark.parametrize("threads", [1, 2])
def test_binary(op, sa, sb, threads):
    a, b = _x(*sa), _x(*sb) + (3.0 if op == "Div" else 0.0)
    _check(op, [a, b], opset=14, threads=threads)


@pytest.mark.parametrize("op,pick", [("Max", np.maximum), ("Min", np.minimum)])
@pytest.mark.parametrize("const_first", [False, True])
@pytest.mark.parametrize("const", [0.0, -0.0, np.nan, np.inf, 0.5])
def test_max_min_special_values_bit_for_bit(op, pick, const_first, const):
    """Max / Min with a constant (a clamp), natively: the bits numpy's maximum / minimum give — the first operand's
    NaN (payload and all) where it is NaN, else the second's; the second operand on a tie of +0 and -0."""
    specials = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 0.5, -0.5, 1e-40], np.float32)
    x = np.resize(specials, (3, 7, 37)).astype(np.float32)
    x.view(np.uint32)[0, 0, 2] = 0x7FC01234  # (a NaN payload of its own)
    c = np.array(const, np.float32)
    inputs = [c, x] if const_first else [x, c]
    got = _check(op, inputs, opset=13)[0]
    want = pick(*inputs)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_variadic_max_stays_with_numpy():
    model, feeds = _model("Max", [_x(4, 5), _x(4, 5), _x(4, 5)], opset=13)
    sess = onnxide.InferenceSession(model, providers=[NATIVE, "CPUExecutionProvider"])
    assert sess._executor.main_plan.steps[0].ep.name == "CPUExecutionProvider"
    np.testing.assert_array_equal(sess.run(None, feeds)[0], np.maximum(np.maximum(*list(feeds.values())[:2]),
                                                                       list(feeds.values())[2]))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("scales,ctm,nearest", [((1, 1, 2, 2), "asymmetric", "floor"),
                                                ((1, 1, 4, 4), "half_pixel", "round_prefer_floor"),
                                                ((1, 1, 3, 2), "asymmetric", "floor"),
                                                ((1, 1, 2, 2), "align_corners", "round_prefer_floor")])
def test_resize_nearest(scales, ctm, nearest, threads):
    """Integer nearest upsampling natively where the index map is i // f; other maps (align_corners) go to numpy."""
    x = _x(2, 8, 13, 17)
    _check("Resize", [x, None, np.array(scales, np.float32)],
           {"mode": "nearest", "coordinate_transformation_mode": ctm, "nearest_mode": nearest}, opset=13,
           threads=threads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(2, 6, 30, 31), (1, 24, 700)])
def test_batch_normalization_inference(shape, threads):
    c = shape[1]
    stats = [_x(c), _x(c), _x(c), np.abs(_x(c)) + 0.1]  # scale, bias, mean, variance
    _check("BatchNormalization", [_x(*shape)] + stats, {"epsilon": 1e-3}, opset=15, rtol=1e-5, atol=1e-5,
           threads=threads)
    model, feeds = _model("BatchNormalization", [_x(*shape)] + stats, {"training_mode": 1}, n_out=3, opset=15)
    sess = onnxide.InferenceSession(model, providers=[NATIVE, "CPUExecutionProvider"])
    assert sess._executor.main_plan.steps[0].ep.name == "CPUExecutionProvider"  # training statistics: numpy


@pytest.mark.parametrize("shape", [(2, 16, 20, 30), (1, 64, 9, 9), (3, 40, 300)])
def test_global_average_pool(shape):
    _check("GlobalAveragePool", [_x(*shape)], opset=13, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("c,m,k,bias,group", [(24, 24, 2, True, 1), (16, 8, 3, False, 1), (32, 5, 2, True, 1),
                                              (24, 1, 2, True, 24), (12, 1, 3, False, 12)])  # last two: depthwise
def test_conv_transpose_kernel_equals_stride(c, m, k, bias, group, threads):
    ins = [_x(2, c, 20, 23), _x(c, m, k, k)] + ([_x(m * group)] if bias else [])
    attrs = {"strides": [k, k], "group": group}
    got = _check("ConvTranspose", ins, attrs, opset=11, rtol=1e-4, atol=1e-4, threads=threads)
    model, feeds = _model("ConvTranspose", ins, attrs, opset=11)
    want = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)


@pytest.mark.keep_thresholds
def test_small_work_stays_in_numpy():
    """Where the graph fixes shapes, work under cpu_ops.SMALL_* is planned on the CPU EP (no per-run checks); larger
    work, and work of unknown size, on the native EP. (Chains off: a heavy op alone is chained whatever EP has it.)"""
    def planned(op, inputs, opset, **attrs):
        model, _ = _model(op, inputs, attrs, opset=opset)
        sess = onnxide.InferenceSession(model, providers=[(NATIVE, {"chains": "0"}), "CPUExecutionProvider"])
        return sess._executor.main_plan.steps[0].ep.name
    assert planned("Relu", [_x(3, 7)], 14) == "CPUExecutionProvider"
    assert planned("Relu", [_x(64, 100)], 14) == NATIVE
    assert planned("MatMul", [_x(2, 8), _x(8, 16)], 13) == "CPUExecutionProvider"
    assert planned("MatMul", [_x(64, 128), _x(128, 64)], 13) == NATIVE
    assert planned("Conv", [_x(1, 2, 5, 5), _x(2, 2, 3, 3)], 11) == "CPUExecutionProvider"
    assert planned("Conv", [_x(1, 32, 40, 40), _x(32, 32, 3, 3)], 11) == NATIVE
    # much work but three output positions (silero VAD's STFT): the kernel would decline it on every run
    assert planned("Conv", [_x(1, 1, 576), _x(258, 1, 256)], 11, strides=[128]) == "CPUExecutionProvider"



@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 8, 9, 13, 14, 15, 16, 18, 22, 28, 29, 32, 46])
@pytest.mark.parametrize("threads", [1, 2])
def test_row_panel_heights(rows, threads):
    """A GEMM's and a conv's last 14-row panel computes only its real rows (4, 8 or 14 of them): every height of the
    last panel gives the CPU EP's result."""
    if rows >= 4:  # (fewer rows take the EP's row-by-row path or numpy)
        _check("MatMul", [_x(rows, 37), _x(37, 45)], threads=threads, rtol=1e-4, atol=1e-4)
    _check("Conv", [_x(1, 5, 9, 11), _x(rows, 5, 3, 3)], {"pads": [1, 1, 1, 1]}, threads=threads, rtol=1e-4,
           atol=1e-4)
