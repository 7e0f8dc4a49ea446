"""WebGPU CumSum, Pad, Resize, ConstantOfShape, Trilu, bias activations, MultiHeadAttention and integer Div by zero
vs the CPU EP."""
import itertools

import numpy as np
import pytest
from onnx import helper

import onnxide as ort
from webgpu import nodes
from webgpu.nodes import Const, check

rng = np.random.default_rng(3)
X = rng.standard_normal((3, 5, 40)).astype(np.float32)
X4 = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
I64 = rng.integers(-2 ** 40, 2 ** 40, (3, 5, 6))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum(axis, exclusive, reverse):
    check("CumSum", [X, Const(np.array(axis, np.int64))], exclusive=exclusive, reverse=reverse)


def test_cumsum_rows_longer_than_a_workgroup():
    check("CumSum", [rng.standard_normal((2, 700)).astype(np.float32), Const(np.array([1], np.int32))],
          rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", [[0, 0, 1, 2, 0, 0, 3, 1], [0, 1, -1, 2, 1, 0, 2, -2], [0, 0, 4, 6, 0, 0, 4, 5]])
def test_pad(mode, pads):
    check("Pad", [X4, Const(np.array(pads, np.int64)), Const(np.float32(1.5))], mode=mode, exact=True)


def test_pad_axes_int64_and_attributes():
    check("Pad", [X4, Const(np.array([1, 2, 2, 1], np.int64)), None, Const(np.array([-1, 2], np.int64))],
          mode="reflect", exact=True)
    check("Pad", [I64, Const(np.array([0, 1, 2, 1, 0, 0], np.int64)), Const(np.int64(-7))], exact=True)
    check("Pad", [X4], opset=2, pads=[0, 0, 1, 1, 0, 0, 1, 2], value=2.0, exact=True)


RESIZE_MODES = [("nearest", c, n) for c, n in itertools.product(
    ["half_pixel", "asymmetric", "align_corners", "tf_half_pixel_for_nn", "pytorch_half_pixel"],
    ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])] + \
    [(m, c, "floor") for m, c in itertools.product(["linear", "cubic"], ["half_pixel", "half_pixel_symmetric",
                                                                          "pytorch_half_pixel", "align_corners",
                                                                          "asymmetric", "tf_crop_and_resize"])]


@pytest.mark.parametrize("mode,ctm,nearest", RESIZE_MODES)
def test_resize_modes(mode, ctm, nearest):
    roi = Const(np.float32([0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7]))
    check("Resize", [X4, roi, Const(np.float32([1, 1, 2.0, 0.6]))], mode=mode, coordinate_transformation_mode=ctm,
          nearest_mode=nearest, extrapolation_value=-3.0)
    check("Resize", [X4, None, None, Const(np.array([2, 3, 9, 4], np.int64))], mode=mode,
          coordinate_transformation_mode=ctm, nearest_mode=nearest, extrapolation_value=-3.0)


def test_resize_options():
    sizes = Const(np.array([8, 9], np.int64))
    check("Resize", [X4, None, None, sizes], mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_larger")
    check("Resize", [X4, None, Const(np.float32([1, 1, 0.5, 0.6]))], mode="cubic", antialias=1, exclude_outside=1)
    check("Resize", [X4, Const(np.float32([1, 1, 2, 0.5]))], opset=10, mode="linear")
    check("Upsample", [X4, Const(np.float32([1, 1, 2, 3]))], opset=9, exact=True)
    check("Resize", [X4, None, Const(np.float32([1, 1, 1, 1]))], exact=True)  # nothing to resize


@pytest.mark.parametrize("value", [np.float32(2.5), np.int64(-3), np.float32(0), np.int32(7), np.bool_(True)])
def test_constant_of_shape(value):
    from onnx import numpy_helper
    check("ConstantOfShape", [Const(np.array([4, 50, 3], np.int64))], value=numpy_helper.from_array(np.array([value])),
          exact=True)


def test_constant_of_shape_of_unknown_size_is_declined():
    check("ConstantOfShape", [np.array([4, 50, 3], np.int64)], exact=True, on_device=False)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-2, 0, 3])
def test_trilu(upper, k):
    check("Trilu", [X4, Const(np.array(k, np.int64))], upper=upper, exact=True)
    check("Trilu", [I64, Const(np.array(k, np.int64))], upper=upper, exact=True)


def test_bias_activations():
    bias = rng.standard_normal(40).astype(np.float32)
    check("ms:Gelu", [X])
    check("ms:BiasGelu", [X, Const(bias)])
    check("ms:FastGelu", [X, Const(bias)])
    check("ms:FastGelu", [X])
    check("ms:BiasAdd", [X, Const(bias), X * 2])


B, S, L, N, HEAD = 2, 5, 7, 3, 4


def _qkv(dv=6):
    return (rng.standard_normal((B, S, N * HEAD)).astype(np.float32),
            rng.standard_normal((B, L, N * HEAD)).astype(np.float32),
            rng.standard_normal((B, L, N * dv)).astype(np.float32))


def test_multi_head_attention():
    q, k, v = _qkv()
    bias = Const(rng.standard_normal(2 * N * HEAD + N * 6).astype(np.float32))
    attention_bias = rng.standard_normal((1, N, S, L)).astype(np.float32)
    check("ms:MultiHeadAttention", [q, k, v], num_heads=N)
    check("ms:MultiHeadAttention", [q, k, v, bias, None, attention_bias], ("y", "present_key", "present_value"),
          num_heads=N)
    check("ms:MultiHeadAttention", [q, k, v], num_heads=N, unidirectional=1, scale=0.3)
    k4 = rng.standard_normal((B, N, L, HEAD)).astype(np.float32)
    v4 = rng.standard_normal((B, N, L, 6)).astype(np.float32)
    check("ms:MultiHeadAttention", [q, k4, v4, bias], ("y", "present_key", "present_value"), num_heads=N)
    check("ms:MultiHeadAttention", [rng.standard_normal((B, S, N, 3, HEAD)).astype(np.float32)], num_heads=N)
    check("ms:MultiHeadAttention", [q, rng.standard_normal((B, L, N, 2, HEAD)).astype(np.float32)], num_heads=N)


def test_multi_head_attention_declines_key_padding_mask():
    q, k, v = _qkv()
    check("ms:MultiHeadAttention", [q, k, v, None, np.ones((B, L), np.int32)], num_heads=N, on_device=False)


def test_outputs_past_the_binding_size_are_declined(monkeypatch):
    from onnx import numpy_helper

    from onnxide.runtime.devices import get_device
    monkeypatch.setitem(get_device("webgpu", 0).limits, "max-storage-buffer-binding-size", 4096)
    value = numpy_helper.from_array(np.float32([2.5]))
    check("ConstantOfShape", [Const(np.array([64, 64], np.int64))], value=value, exact=True, on_device=False)
    check("ConstantOfShape", [Const(np.array([16, 64], np.int64))], value=value, exact=True)


def test_integer_div_by_zero_fails_as_on_the_cpu_ep():
    """WGSL's integer division by zero gives a value; the kernel raises the device's error flag instead, reported
    at the readback with the CPU EP's (onnxruntime's) Fail, and the flag is clear for the next run."""
    a = np.array([[7, -7, 9], [1, 2, 3]], np.int32)
    good, bad = np.array([2, -3, 4], np.int32), np.array([2, 0, 4], np.int32)
    check("Div", [a, good], exact=True)  # (on the device, equal to the CPU EP's truncating division)
    m = nodes.model(helper.make_node("Div", ["a", "b"], ["y"]), {"a": a, "b": bad})
    for provider in ("WebGpuExecutionProvider", "CPUExecutionProvider"):
        with pytest.raises(ort.Fail, match="Integer division by zero"):
            nodes.run(provider, m, {"a": a, "b": bad})
    sess = ort.InferenceSession(m, providers=["WebGpuExecutionProvider"])
    with pytest.raises(ort.Fail, match="Integer division by zero"):
        sess.run(None, {"a": a, "b": bad})
    np.testing.assert_array_equal(sess.run(None, {"a": a, "b": good})[0], [[3, 2, 2], [0, 0, 0]])
