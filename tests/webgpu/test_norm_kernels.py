"""WebGPU Softmax / LogSoftmax / Hardmax and the normalisations (ops_norm.py) against the CPU EP."""
import numpy as np
import pytest

import onnxide
from webgpu.nodes import Const, check

rng = np.random.default_rng(11)
X = rng.standard_normal((3, 5, 40)).astype(np.float32)
X4 = rng.standard_normal((2, 6, 5, 7)).astype(np.float32)
C6 = rng.standard_normal(6).astype(np.float32)
H = rng.standard_normal(40).astype(np.float32)


def _f16():
    from onnxide.runtime.devices import get_device
    if not get_device("webgpu", 0).f16:
        pytest.skip("this WebGPU device has no shader-f16")


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset,axis", [(11, 1), (11, -1), (11, 0), (13, 1), (13, -1), (13, 0)])
def test_softmax_family(op, opset, axis):
    x = np.round(X * 4) / 4 if op == "Hardmax" else X  # (ties: the first maximum wins)
    check(op, [x], opset=opset, axis=axis, exact=op == "Hardmax")


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_inf_and_nan_rows(op):
    x = X[:, :4, :8].copy()
    x[0, 0] = -np.inf
    x[0, 1, 3] = np.inf
    x[1, 2, 1] = np.nan
    x[2, 3] = 1e30
    check(op, [x], opset=13, axis=-1)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_f16_rounds_each_step(op):
    """f16 rows round every step to f16 as the CPU EP does (computing in f32 throughout differs by an ulp)."""
    _f16()
    check(op, [(X * 3).astype(np.float16)], opset=13, rtol=1e-3, atol=0)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm_with_statistics(axis):
    scale = rng.standard_normal(X.shape[axis % 3:]).astype(np.float32)
    bias = rng.standard_normal(X.shape[axis % 3:]).astype(np.float32)
    check("LayerNormalization", [X, Const(scale), Const(bias)], ("y", "mean", "inv"), opset=17, axis=axis,
          epsilon=1e-3)


def test_layer_norm_broadcast_scale_and_f16():
    check("LayerNormalization", [X, Const(np.float32([1.5]))], opset=17)  # one scale for the whole block
    _f16()
    check("LayerNormalization", [X.astype(np.float16), Const(H.astype(np.float16)), Const(H.astype(np.float16))],
          ("y", "", "inv"), opset=17, rtol=2e-3, atol=2e-3)


def test_layer_norm_declines_double_stash():
    check("LayerNormalization", [X, Const(H)], opset=17, stash_type=11, on_device=False)


def test_rms_norms():
    check("RMSNormalization", [X, Const(rng.standard_normal((5, 40)).astype(np.float32))], opset=23, axis=1)
    check("SimplifiedLayerNormalization", [X, Const(H)], ("y", "inv"), opset=17)


@pytest.mark.parametrize("skip_shape", [(3, 5, 40), (5, 40)])
def test_skip_layer_norm(skip_shape):
    skip = rng.standard_normal(skip_shape).astype(np.float32)
    check("ms:SkipLayerNormalization", [X, skip, Const(H), Const(H * 0.5), Const(H * 2)],
          ("y", "mean", "inv", "sum"))
    check("ms:SkipLayerNormalization", [X, skip, Const(H)], ("y",), epsilon=1e-5)
    check("ms:SkipSimplifiedLayerNormalization", [X, skip, Const(H), Const(H * 2)], ("y", "mean", "inv", "sum"))


def test_batch_norm_inference():
    params = [Const(C6), Const(C6 * 2), Const(C6 * 0.1), Const(np.abs(C6) + 0.1)]
    check("BatchNormalization", [X4] + params, opset=15, epsilon=1e-3)
    check("BatchNormalization", [X4[:, :, 0, 0]] + params, opset=9)
    check("BatchNormalization", [X4] + params, ("y", "m", "v"), opset=15, training_mode=1, on_device=False)


def test_instance_and_group_norm():
    check("InstanceNormalization", [X4, Const(C6), Const(C6 * 2)], epsilon=1e-3)
    check("GroupNormalization", [X4, Const(C6[:3]), Const(C6[:3] * 2)], opset=18, num_groups=3)
    check("GroupNormalization", [X4, Const(C6), Const(C6 * 2)], opset=21, num_groups=2)
    with pytest.raises(onnxide.InvalidArgument):
        check("GroupNormalization", [X4, Const(C6[:4]), Const(C6[:4])], opset=18, num_groups=4)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_lp_norm(p, axis):
    x = X4.copy()
    x[0, 0] = 0  # an all-zero row gives zeros
    check("LpNormalization", [x], axis=axis, p=p)


@pytest.mark.parametrize("axes", [None, [1, 3], [0]])
def test_mvn(axes):
    kw = {} if axes is None else {"axes": axes}
    check("MeanVarianceNormalization", [X4], rtol=1e-4, atol=1e-4, **kw)
