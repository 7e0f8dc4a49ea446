"""ConvGeometry (ops/conv.py), the Conv-family geometry every EP reads: auto_pad variants, strides, dilations,
ceil_mode, ConvTranspose's output rule, the 1-D-as-2-D view, the inference shape rule, and one-line InvalidArgument
messages naming the problem (the WASM and native kernels decline those, so the numpy kernel reports them)."""
import numpy as np
import pytest

from onnxide.errors import InvalidArgument
from onnxide.ops import conv as C, pool
from onnxide.ops.conv_geometry import ConvGeometry, conv_output_shape


@pytest.mark.parametrize("auto_pad,strides,out,pb,pe", [
    ("NOTSET", [1, 1], (8, 6), (1, 0), (1, 2)),
    ("VALID", [1, 1], (6, 4), (0, 0), (0, 0)),
    ("VALID", [2, 3], (3, 2), (0, 0), (0, 0)),
    ("SAME_UPPER", [1, 1], (8, 6), (1, 1), (1, 1)),
    ("SAME_UPPER", [2, 2], (4, 3), (0, 0), (1, 1)),   # total 1 per axis: the extra pad at the end
    ("SAME_LOWER", [2, 2], (4, 3), (1, 1), (0, 0)),   # ... at the beginning
    ("SAME_UPPER", [3, 4], (3, 2), (0, 0), (1, 1)),
])
def test_conv_auto_pad(auto_pad, strides, out, pb, pe):
    g = ConvGeometry.conv((1, 4, 8, 6), (6, 2, 3, 3), "t", auto_pad=auto_pad, strides=strides, group=2,
                          pads=[1, 0, 1, 2] if auto_pad == "NOTSET" else None)
    assert (g.out, g.pads_begin, g.pads_end) == (out, pb, pe)
    assert g.kernel == (3, 3) and g.group == 2 and g.in_shape == (8, 6)
    if auto_pad.startswith("SAME"):
        assert g.out == tuple(-(-i // s) for i, s in zip((8, 6), strides))


def test_dilations_and_strides():
    g = ConvGeometry.conv((1, 1, 10), (1, 1, 3), "t", dilations=[3], strides=[2], pads=[1, 0])
    assert g.out == ((10 + 1 - 7) // 2 + 1,) == (3,)
    s = ConvGeometry.conv((1, 1, 10), (1, 1, 3), "t", dilations=[2], auto_pad="SAME_LOWER")
    assert s.out == (10,) and (s.pads_begin, s.pads_end) == ((2,), (2,))


@pytest.mark.parametrize("ceil_mode,out", [(0, (3, 3)), (1, (4, 4))])
def test_pool_ceil_mode(ceil_mode, out):
    g = ConvGeometry.pool((1, 1, 8, 8), "t", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=ceil_mode)
    assert g.out == out and g.ceil_mode == bool(ceil_mode)
    assert g.pads_end == (0, 0)
    assert g.window_pads_end == ((1, 1) if ceil_mode else (0, 0))  # the last ceil window overruns by one
    y = pool.max_pool(np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8), kernel_shape=[3, 3], strides=[2, 2],
                      ceil_mode=ceil_mode)
    assert y.shape[2:] == out


def test_ceil_mode_drops_a_window_starting_in_the_end_pad():
    # 5 + 1 + 1 padded, k 2, s 2: ceil gives 4 windows, the 4th starting at 6 >= 5 + 1 (inside the end pad): dropped
    g = ConvGeometry.pool((1, 1, 5), "t", kernel_shape=[2], strides=[2], pads=[1, 1], ceil_mode=1)
    assert g.out == (3,)


def test_ceil_mode_keeps_one_window_a_kernel_larger_than_the_input():
    g = ConvGeometry.pool((1, 1, 2), "t", kernel_shape=[3], strides=[2], ceil_mode=1)
    assert g.out == (1,) and g.window_pads_end == (1,)


@pytest.mark.parametrize("attrs,out,pb,pe", [
    ({"strides": [2, 2]}, (7, 9), (0, 0), (0, 0)),
    ({"strides": [2, 2], "pads": [1, 0, 1, 2]}, (5, 7), (1, 0), (1, 2)),
    ({"strides": [2, 2], "output_padding": [1, 0]}, (8, 9), (0, 0), (0, 0)),
    ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, (6, 8), (0, 0), (1, 1)),
    ({"strides": [2, 2], "auto_pad": "SAME_LOWER"}, (6, 8), (1, 1), (0, 0)),
    ({"strides": [2, 2], "output_shape": [5, 6]}, (5, 6), (1, 2), (1, 1)),  # NOTSET splits as SAME_LOWER
    ({"strides": [2, 2], "output_shape": [1, 2, 8, 10]}, (8, 10), (0, 0), (-1, -1)),  # larger by < stride: grows at end
    ({"dilations": [2, 1]}, (7, 6), (0, 0), (0, 0)),
])
def test_conv_transpose(attrs, out, pb, pe):
    g = ConvGeometry.conv_transpose((1, 2, 3, 4), (2, 3, 3, 3), "t", **attrs)
    assert (g.out, g.pads_begin, g.pads_end) == (out, pb, pe)
    x = np.ones((1, 2, 3, 4), np.float32)
    assert C.conv_transpose(x, np.ones((2, 3, 3, 3), np.float32), **attrs).shape == (1, 3) + out


def test_as_2d():
    g = ConvGeometry.conv((1, 3, 9), (4, 3, 3), "t", strides=[2], pads=[1, 2], dilations=[2])
    g2 = g.as_2d()
    assert (g2.in_shape, g2.kernel, g2.strides, g2.dilations, g2.pads_begin, g2.pads_end, g2.out) == \
        ((1, 9), (1, 3), (1, 2), (1, 2), (0, 1), (0, 2), (1, g.out[0]))
    two = ConvGeometry.conv((1, 3, 9, 9), (4, 3, 3, 3), "t")
    assert two.as_2d() is two


ERRORS = [  # (constructor, args, attrs, the words the message must hold)
    ("conv", ((1, 3, 8, 8), (4, 3, 3, 3)), {"kernel_shape": [3, 2]}, "kernel_shape [3, 2] does not match W shape"),
    ("conv", ((1, 3, 8, 8), (4, 3, 3, 3)), {"dilations": [0, 1]}, "dilations must be positive, got [0, 1]"),
    ("conv", ((1, 3, 8, 8), (4, 3, 3, 3)), {"strides": [1, -2]}, "strides must be positive, got [1, -2]"),
    ("conv", ((1, 3, 8, 8), (4, 3, 3, 3)), {"pads": [0, -1, 0, 0]}, "pads must be non-negative, got [0, -1, 0, 0]"),
    ("conv", ((1, 3, 2, 8), (4, 3, 3, 3)), {}, "the kernel [3, 3] (dilated: [3, 3]) is larger than the padded input"),
    ("conv", ((1, 3, 4, 8), (4, 3, 3, 3)), {"dilations": [2, 1]}, "(dilated: [5, 3]) is larger than the padded input"),
    ("conv", ((1, 3, 8, 8), (4, 3, 3, 3)), {"strides": [1]}, "attribute 'strides' has 1 values, expected 2"),
    ("conv", ((1, 3, 8, 8), (4, 3, 3, 3)), {"pads": [1, 1]}, "attribute 'pads' has 2 values, expected 4"),
    ("conv", ((1, 3, 8, 8), (4, 3, 3, 3)), {"auto_pad": "SAME"}, "unsupported auto_pad 'SAME'"),
    ("conv", ((1, 3, 8, 8), (4, 3, 3, 3)), {"group": 2}, "X channels 3, W shape (4, 3, 3, 3) and group 2"),
    ("conv", ((1, 3, 8, 8), (4, 3, 3)), {}, "W shape (4, 3, 3) does not have X's rank 4"),
    ("conv", ((3, 8), (4, 3)), {}, "X must be at least 3-D"),
    ("pool", ((1, 3, 8, 8),), {}, "attribute 'kernel_shape' is required"),
    ("pool", ((1, 3, 8, 8),), {"kernel_shape": [3]}, "kernel_shape [3] does not match the input's 2 spatial dims"),
    ("pool", ((1, 3, 8, 8),), {"kernel_shape": [3, 0]}, "kernel_shape must be positive, got [3, 0]"),
    ("pool", ((1, 3, 2, 2),), {"kernel_shape": [3, 3]}, "is larger than the padded input [2, 2]"),
    ("conv_transpose", ((1, 2, 3, 4), (2, 3, 3, 3)), {"pads": [5, 5, 5, 5]}, "computed output shape [-5, -4]"),
    ("conv_transpose", ((1, 2, 3, 4), (2, 3, 3, 3)), {"output_shape": [5]},
     "output_shape attribute has 1 elements, expected 2 or 4"),
    ("conv_transpose", ((1, 2, 3, 4), (3, 3, 3, 3)), {}, "X channels 2, W shape (3, 3, 3, 3) and group 1"),
    ("conv_transpose", ((1, 2, 3, 4), (2, 3, 3, 3)), {"output_padding": [-1, 0]}, "output_padding must be non-neg"),
]


@pytest.mark.parametrize("kind,args,attrs,words", ERRORS, ids=[e[3][:40] for e in ERRORS])
def test_errors_are_one_line_and_name_the_problem(kind, args, attrs, words):
    with pytest.raises(InvalidArgument) as e:
        getattr(ConvGeometry, kind)(*args, "Conv node 'c1'", **attrs)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("Conv node 'c1': ") and words in msg, msg


def test_kernels_report_the_geometry_error():
    x, w = np.ones((1, 3, 8, 8), np.float32), np.ones((4, 3, 3, 3), np.float32)
    with pytest.raises(InvalidArgument, match="strides must be positive"):
        C.conv(x, w, strides=[0, 1])
    with pytest.raises(InvalidArgument, match="pads must be non-negative"):
        pool.average_pool(x, kernel_shape=[2, 2], pads=[-1, 0, 0, 0])


def test_eps_decline_what_the_geometry_rejects():
    """The WASM and native kernels hand an invalid geometry to the numpy kernel (which reports it)."""
    from onnxide.runtime.providers import FALLBACK
    x, w = np.ones((1, 3, 8, 8), np.float32), np.ones((4, 3, 3, 3), np.float32)
    try:
        from onnxide_native import cpu_ops, lib
        nx = lib.load()
    except (ImportError, RuntimeError):
        nx = None
    if nx is not None:
        assert cpu_ops.conv(nx, x, w, dilations=[0, 1]) is FALLBACK
        assert cpu_ops.max_pool(nx, x, kernel_shape=[9, 9]) is FALLBACK
    pytest.importorskip("wasmtime")
    from onnxide.eps import wasm_ops, wasm_runtime
    from onnxide.eps.wasm import _Kernels
    build = next((b for b in wasm_runtime.BUILDS if wasm_runtime.find_build(b)), None)
    if build is None:
        pytest.skip("no wasm kernel build")
    rt = _Kernels(*wasm_runtime.load(build))
    assert wasm_ops.conv_fast(rt, x, w, pads=[-1, 0, 0, 0]) is FALLBACK
    assert wasm_ops.pool_fast(rt, True, x, kernel_shape=[2, 2], strides=[0, 2]) is FALLBACK


@pytest.mark.parametrize("op,attrs,x,w,want", [
    ("Conv", {"pads": [1, 1, 1, 1]}, [1, 3, 8, 8], [4, 3, 3, 3], [1, 4, 8, 8]),
    ("Conv", {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, ["N", 3, 7, 9], [4, 3, 3, 3], ["N", 4, 4, 5]),
    ("FusedConv", {"activation": "Relu"}, [1, 3, 8, "W"], [4, 3, 3, 3], [1, 4, 6, None]),  # per axis
    ("Conv", {"kernel_shape": [3, 3]}, [1, 3, 8, 8], None, [1, None, 6, 6]),
    ("Conv", {}, [1, 3, 8, 8], None, [1, None, None, None]),
    ("Conv", {"strides": [0, 1]}, [1, 3, 8, 8], [4, 3, 3, 3], [1, 4, None, None]),  # invalid: the kernel reports
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, [2, 5, 8, 8], None, [2, 5, 4, 4]),
    ("AveragePool", {"kernel_shape": [2], "auto_pad": "VALID"}, [2, 5, 9], None, [2, 5, 8]),
    ("LpPool", {"kernel_shape": [2, 2], "strides": [2, 2]}, [1, 1, 5, 5], None, [1, 1, 2, 2]),
    ("ConvTranspose", {"strides": [2, 2], "group": 2}, [1, 4, 3, 4], [4, 3, 3, 3], [1, 6, 7, 9]),
    ("ConvTranspose", {"output_shape": [10, 6]}, [1, 4, "H", 4], [4, 3, 3, 3], [1, 3, 10, 6]),
])
def test_inference_shape_rule(op, attrs, x, w, want):
    assert conv_output_shape(op, attrs, x, w) == want
    assert conv_output_shape(op, attrs, None, w) is None


def test_inference_rule_agrees_with_the_kernels():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 11, 9)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    for attrs in ({"group": 2}, {"group": 2, "auto_pad": "SAME_LOWER", "strides": [2, 3]},
                  {"group": 2, "dilations": [2, 3], "pads": [0, 1, 2, 3]}):
        assert conv_output_shape("Conv", attrs, list(x.shape), list(w.shape)) == list(C.conv(x, w, **attrs).shape)
    for attrs in ({"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 1, 1, 1]},
                  {"kernel_shape": [2, 3], "auto_pad": "SAME_UPPER", "strides": [3, 2]}):
        assert conv_output_shape("MaxPool", attrs, list(x.shape)) == list(pool.max_pool(x, **attrs).shape)
