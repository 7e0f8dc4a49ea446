"""com.microsoft QAttention on onnxide against onnxruntime: uint8 input, int8 / uint8 weights with per-tensor or
per-column scales and zero points, with and without a mask; and onnxide's dynamic quantization of an Attention
writes the nodes and tensors onnxruntime's tool writes."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide
from same_quantized_files import assert_same_dynamic_quantization

ort = pytest.importorskip("onnxruntime")


def _model(rng, wdtype, per_column, mask):
    hidden, heads = 8, 2
    # int8 weights within 7 bits: onnxruntime's u8s8 GEMM saturates pairs of products beyond int16 (its tool quantizes
    # Attention weights with reduce_range for that reason)
    lo, hi = (-64, 64) if wdtype == np.int8 else (0, 256)
    cols = 3 * hidden if per_column else 1
    shape = [cols] if per_column else []
    inits = [numpy_helper.from_array(rng.integers(lo, hi, (hidden, 3 * hidden)).astype(wdtype), "w"),
             numpy_helper.from_array(rng.standard_normal(3 * hidden).astype(np.float32), "b"),
             numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
             numpy_helper.from_array(rng.uniform(0.001, 0.01, cols).astype(np.float32).reshape(shape), "ws"),
             numpy_helper.from_array(np.array(120, np.uint8), "xz"),
             numpy_helper.from_array(rng.integers(lo // 8, hi // 8, cols).astype(wdtype).reshape(shape), "wz")]
    node = helper.make_node("QAttention", ["x", "w", "b", "xs", "ws", "mask" if mask else "", "xz", "wz"], ["y"],
                            domain="com.microsoft", num_heads=heads)
    inputs = [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 4, hidden])]
    if mask:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.INT32, [2]))
    g = helper.make_graph([node], "qatt", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)],
                             ir_version=7).SerializeToString()


@pytest.mark.parametrize("wdtype,per_column,mask", [(np.int8, False, False), (np.int8, True, False),
                                                    (np.uint8, False, True), (np.uint8, True, True)])
def test_qattention_matches_onnxruntime(wdtype, per_column, mask):
    rng = np.random.default_rng(11)
    model = _model(rng, wdtype, per_column, mask)
    feeds = {"x": rng.integers(0, 256, (2, 4, 8)).astype(np.uint8)}
    if mask:
        feeds["mask"] = np.array([3, 4], np.int32)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = onnxide.InferenceSession(model).run(None, feeds)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("per_channel,reduce_range", [(False, False), (False, True), (True, False), (True, True)])
def test_dynamic_quantization_matches_onnxruntimes_tool(tmp_path, per_channel, reduce_range):
    """Attention then a MatMul: the same QAttention inputs and weight tensors (bit for bit) as onnxruntime's tool."""
    rng = np.random.default_rng(5)
    att = helper.make_node("Attention", ["x", "qkv_w", "qkv_b"], ["a"], domain="com.microsoft", num_heads=2)
    g = helper.make_graph([att], "att", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8])],
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3, 8])],
                          [numpy_helper.from_array(rng.normal(0, 0.1, (8, 24)).astype(np.float32), "qkv_w"),
                           numpy_helper.from_array(rng.normal(0, 0.1, 24).astype(np.float32), "qkv_b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)],
                          ir_version=8)
    src = tmp_path / "f.onnx"
    src.write_bytes(m.SerializeToString())
    assert_same_dynamic_quantization(src, tmp_path, per_channel=per_channel, reduce_range=reduce_range)
    if not reduce_range:
        return  # full-range int8 weights: onnxruntime's u8s8 GEMM may saturate, its outputs are no reference
    x = {"x": rng.standard_normal((1, 3, 8)).astype(np.float32)}
    want = ort.InferenceSession(str(tmp_path / "ort.onnx"), providers=["CPUExecutionProvider"]).run(None, x)[0]
    np.testing.assert_allclose(onnxide.InferenceSession(str(tmp_path / "ours.onnx")).run(None, x)[0], want,
                               rtol=1e-4, atol=1e-4)
