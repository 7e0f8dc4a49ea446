"""WebGPU Conv, FusedConv and ConvTranspose (ops_conv.py: implicit GEMM, direct, Winograd) against the CPU EP."""
import numpy as np
import pytest

from webgpu.nodes import Const, check

rng = np.random.default_rng(12)
TOL = dict(rtol=1e-4, atol=1e-4)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _random_convs(count):
    """(X shape, W shape, attributes): 1-3 spatial dims, groups, strides, dilations, pads, odd sizes ≤ 64."""
    out = []
    for _ in range(count):
        nd = int(rng.integers(1, 4))
        group = int(rng.choice([1, 1, 2, 3]))
        cg, mg = int(rng.integers(1, 9)), int(rng.integers(1, 13))
        kernel = [int(v) for v in rng.integers(1, 4, nd)]
        dil = [int(v) for v in rng.integers(1, 3, nd)]
        size = [int(v) for v in rng.integers(6, 64 if nd == 1 else 20 if nd == 2 else 9, nd)]
        attrs = {"strides": [int(v) for v in rng.integers(1, 3, nd)], "dilations": dil, "group": group,
                 "pads": [int(v) for v in rng.integers(0, 3, 2 * nd)]}
        out.append(((2, cg * group) + tuple(size), (mg * group, cg) + tuple(kernel), attrs))
    return out


@pytest.mark.parametrize("xs,ws,attrs", _random_convs(10))
def test_conv_random(xs, ws, attrs):
    check("Conv", [rand(*xs), Const(rand(*ws)), Const(rand(ws[0]))], **attrs, **TOL)


@pytest.mark.parametrize("xs,ws,attrs", [
    ((1, 8, 13, 11), (8, 1, 3, 3), {"group": 8, "pads": [1, 1, 1, 1]}),                   # depthwise (direct)
    ((1, 6, 14, 9), (12, 1, 3, 3), {"group": 6, "strides": [2, 2], "pads": [1, 0, 1, 2]}),  # depthwise multiplier
    ((2, 16, 12, 10), (24, 16, 3, 3), {"pads": [1, 1, 1, 1]}),                              # Winograd
    ((1, 9, 17, 16), (17, 9, 3, 3), {"auto_pad": "SAME_LOWER"}),                            # Winograd, odd output
    ((1, 16, 15, 15), (20, 16, 3, 3), {"pads": [0, 2, 1, 0]}),                              # Winograd, asymmetric
    ((1, 4, 17), (9, 4, 3), {"auto_pad": "SAME_UPPER", "strides": [2]}),
    ((1, 5, 9, 10), (40, 5, 2, 3), {"auto_pad": "VALID", "dilations": [2, 3]}),
    ((1, 2, 5, 6, 7), (10, 2, 2, 3, 2), {"auto_pad": "SAME_LOWER"}),
    ((1, 16, 9, 9), (70, 16, 1, 1), {}),
])
def test_conv_cases(xs, ws, attrs):
    check("Conv", [rand(*xs), Const(rand(*ws)), Const(rand(ws[0]))], **attrs, **TOL)


def test_conv_no_bias_weights_fed_and_f16():
    check("Conv", [rand(1, 3, 10, 10), rand(16, 3, 3, 3)], pads=[1, 1, 1, 1], **TOL)
    h = np.float16
    check("Conv", [rand(1, 8, 9, 9, dtype=h), Const(rand(12, 8, 3, 3, dtype=h)), Const(rand(12, dtype=h))],
          rtol=3e-3, atol=3e-3)
    check("Conv", [rand(1, 16, 12, 12, dtype=h), Const(rand(16, 16, 3, 3, dtype=h))], pads=[1, 1, 1, 1],
          rtol=3e-3, atol=3e-3)


@pytest.mark.parametrize("act,params", [("Relu", None), ("LeakyRelu", [0.2]), ("Clip", [-0.5, 0.75]),
                                        ("HardSigmoid", [0.3, 0.4]), ("Sigmoid", None), ("Tanh", None)])
@pytest.mark.parametrize("xs,ws,attrs", [((1, 8, 10, 10), (16, 8, 3, 3), {"pads": [1, 1, 1, 1]}),
                                         ((1, 6, 9, 9), (6, 1, 3, 3), {"group": 6}),
                                         ((1, 4, 9, 8), (12, 4, 1, 2), {})])
def test_fused_conv(act, params, xs, ws, attrs):
    extra = {"activation_params": params} if params else {}
    check("ms:FusedConv", [rand(*xs), Const(rand(*ws)), Const(rand(ws[0]))], activation=act, **extra, **attrs,
          **TOL)


@pytest.mark.parametrize("xs,ws,attrs", [((1, 8, 10, 10), (16, 8, 3, 3), {"pads": [1, 1, 1, 1]}),
                                         ((1, 6, 9, 9), (6, 1, 3, 3), {"group": 6})])
def test_fused_conv_with_residual(xs, ws, attrs):
    y_shape = (xs[0], ws[0]) + tuple(xs[2:]) if attrs.get("pads") else (xs[0], ws[0], 7, 7)
    check("ms:FusedConv", [rand(*xs), Const(rand(*ws)), Const(rand(ws[0])), rand(*y_shape)], activation="Relu",
          **attrs, **TOL)


@pytest.mark.parametrize("xs,ws,attrs", [
    ((2, 4, 5, 6), (4, 3, 3, 3), {"strides": [2, 2], "output_padding": [1, 0]}),
    ((1, 4, 5, 6), (4, 6, 3, 3), {"group": 2, "strides": [2, 3], "pads": [1, 0, 0, 2], "dilations": [2, 1]}),
    ((1, 3, 5), (3, 8, 4), {"output_shape": [14], "strides": [3]}),
    ((1, 3, 4, 4), (3, 12, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 3, 4, 4), (3, 5, 3, 3), {"auto_pad": "SAME_LOWER", "strides": [2, 2]}),
    ((1, 3, 4, 4, 3), (3, 2, 2, 2, 2), {"strides": [2, 2, 2]}),
    ((1, 16, 6, 7), (16, 24, 2, 2), {"strides": [2, 2]}),
    ((1, 6, 7, 7), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}),
])
def test_conv_transpose(xs, ws, attrs):
    m = ws[1] * attrs.get("group", 1)
    check("ConvTranspose", [rand(*xs), Const(rand(*ws)), Const(rand(m))], **attrs, **TOL)


def test_conv_declines_four_spatial_dims():
    check("Conv", [rand(1, 2, 3, 4, 3, 4), Const(rand(3, 2, 2, 2, 2, 2))], on_device=False, **TOL)
