"""com.microsoft QGemm / QLinearAveragePool / QLinearSoftmax / QLinearWhere (what onnxide.quantization emits)
against onnxruntime's kernels: equal codes, or one step apart where onnxruntime rounds through a lookup table."""
import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide

U8, F = TensorProto.UINT8, TensorProto.FLOAT


def _run_both(node, feeds, inits, out_type, out_shape):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype),
                                                                      v.shape) for k, v in feeds.items()],
                          [helper.make_tensor_value_info("y", out_type, out_shape)],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    data = m.SerializeToString()
    return [mod.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
            for mod in (onnxruntime, onnxide)]


def _scale(v):
    return np.array(v, np.float32)


@pytest.mark.parametrize("trans_b,with_y,dtype", [(0, True, np.uint8), (1, True, np.uint8), (1, False, np.uint8),
                                                  (0, True, np.int8)])
def test_qgemm(trans_b, with_y, dtype):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (5, 12), endpoint=True).astype(dtype)
    # 7-bit B (reduce_range): onnxruntime's u8 x s8 kernel on AVX2 saturates pair sums of full-range values
    b = rng.integers(-64, 63, (7, 12) if trans_b else (12, 7), endpoint=True).astype(np.int8)
    c = rng.integers(-2000, 2000, 7).astype(np.int32)
    inits = dict(a_s=_scale(0.02), a_z=np.array(3 if dtype == np.uint8 else -2, dtype), b_s=_scale(0.01),
                 b_z=np.array(0, np.int8), c=c)
    names = ["a", "a_s", "a_z", "b", "b_s", "b_z", "c"]
    if with_y:
        inits.update(y_s=_scale(0.05), y_z=np.array(10 if dtype == np.uint8 else 1, dtype))
        names += ["y_s", "y_z"]
    node = helper.make_node("QGemm", names, ["y"], domain="com.microsoft", transB=trans_b)
    inits["b"] = b
    ort, ours = _run_both(node, {"a": a}, inits, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)) if with_y else F,
                          [5, 7])
    if with_y:
        assert np.abs(ort.astype(int) - ours.astype(int)).max() <= 1
    else:
        np.testing.assert_allclose(ours, ort, rtol=1e-5, atol=1e-4)


def test_qlinear_average_pool_softmax_where():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 255, (1, 3, 6, 6), endpoint=True).astype(np.uint8)
    q = dict(x_s=_scale(0.03), x_z=np.array(100, np.uint8), y_s=_scale(0.02), y_z=np.array(90, np.uint8))
    node = helper.make_node("QLinearAveragePool", ["x", "x_s", "x_z", "y_s", "y_z"], ["y"], domain="com.microsoft",
                            kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    ort, ours = _run_both(node, {"x": x}, q, U8, None)
    assert ort.shape == ours.shape and np.abs(ort.astype(int) - ours.astype(int)).max() <= 1

    s = dict(x_s=_scale(0.05), x_z=np.array(128, np.uint8), y_s=_scale(1 / 256), y_z=np.array(0, np.uint8))
    node = helper.make_node("QLinearSoftmax", ["x", "x_s", "x_z", "y_s", "y_z"], ["y"], domain="com.microsoft",
                            axis=-1, opset=13)
    ort, ours = _run_both(node, {"x": x.reshape(3, 36)}, s, U8, [3, 36])
    assert np.abs(ort.astype(int) - ours.astype(int)).max() <= 1

    cond = rng.integers(0, 1, (3, 36), endpoint=True).astype(bool)
    w = dict(x_s=_scale(0.03), x_z=np.array(100, np.uint8), yy_s=_scale(0.04), yy_z=np.array(20, np.uint8),
             z_s=_scale(0.05), z_z=np.array(70, np.uint8), yy=x.reshape(3, 36)[::-1].copy())
    node = helper.make_node("QLinearWhere", ["c", "x", "x_s", "x_z", "yy", "yy_s", "yy_z", "z_s", "z_z"], ["y"],
                            domain="com.microsoft")
    ort, ours = _run_both(node, {"c": cond, "x": x.reshape(3, 36)}, w, U8, [3, 36])
    assert np.abs(ort.astype(int) - ours.astype(int)).max() <= 1
