"""com.microsoft MatMulBnb4 and bnb4 (FP4 / NF4) quantization on onnxide against onnxruntime: random codes and
absmax, N x K odd or not, several block sizes; the quantizer's packed codes and absmax equal onnxruntime's
`quantize_matmul_bnb4`."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide
from onnxide.capi._pybind_state import quantize_matmul_bnb4

ort = pytest.importorskip("onnxruntime")


def _model(packed, absmax, k, n, block_size, quant_type):
    node = helper.make_node("MatMulBnb4", ["a", "b", "absmax"], ["y"], domain="com.microsoft", K=k, N=n,
                            block_size=block_size, quant_type=quant_type)
    g = helper.make_graph([node], "bnb4", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [None, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(packed, "b"), numpy_helper.from_array(absmax, "absmax")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                             ir_version=9).SerializeToString()


@pytest.mark.parametrize("quant_type", [0, 1])
@pytest.mark.parametrize("k,n,block_size", [(32, 16, 16), (52, 37, 64), (33, 7, 32)])
def test_matmul_bnb4_matches_onnxruntime(quant_type, k, n, block_size):
    rng = np.random.default_rng(k * n + quant_type)
    count = k * n
    packed = rng.integers(0, 256, (count + 1) // 2).astype(np.uint8)
    absmax = rng.uniform(0.1, 2.0, -(-count // block_size)).astype(np.float32)
    a = rng.standard_normal((5, k)).astype(np.float32)
    model = _model(packed, absmax, k, n, block_size, quant_type)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    got = onnxide.InferenceSession(model).run(None, {"a": a})[0]
    assert got.dtype == want.dtype and got.shape == want.shape == (5, n)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("quant_type", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("n,k,block_size", [(16, 32, 16), (37, 52, 64), (7, 33, 128)])
def test_quantize_matmul_bnb4_matches_onnxruntime(quant_type, dtype, n, k, block_size):
    ort_quantize = pytest.importorskip("onnxruntime.capi._pybind_state").quantize_matmul_bnb4
    rng = np.random.default_rng(n * k)
    w = rng.uniform(-3, 3, (n, k)).astype(dtype)
    w[0, :3] = 0  # exact zeros, and (below) a block of zeros
    w.reshape(-1)[-block_size:] = 0
    outs = []
    for fn in (ort_quantize, quantize_matmul_bnb4):
        packed = np.zeros((n * k + 1) // 2, np.uint8)
        absmax = np.zeros(-(-n * k // block_size), dtype)
        fn(packed, w, absmax, block_size, quant_type, n, k)
        outs.append((packed, absmax))
    np.testing.assert_array_equal(outs[1][0], outs[0][0])
    np.testing.assert_array_equal(outs[1][1], outs[0][1])


def test_bad_quant_type_and_shapes_raise():
    """A quant_type other than 0 / 1 and a B of the wrong size are refused with the node named."""
    packed, absmax = np.zeros(8, np.uint8), np.ones(1, np.float32)
    a = {"a": np.ones((1, 4), np.float32)}
    with pytest.raises(onnxide.InvalidArgument, match="quant_type must be 0"):
        onnxide.InferenceSession(_model(packed, absmax, 4, 4, 16, 2)).run(None, a)
    with pytest.raises(onnxide.InvalidArgument, match="B must be uint8 of shape"):
        onnxide.InferenceSession(_model(np.zeros(5, np.uint8), absmax, 4, 4, 16, 0)).run(None, a)
