"""com.microsoft GatherBlockQuantized on onnxide against onnxruntime: int4 / uint4 tables, packed uint8 tables,
with and without zero points, float and float16 scales, negative indices."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide

ort = pytest.importorskip("onnxruntime")


def _model(data, scales, zp, elem, bits, block_size):
    inits = [helper.make_tensor("data", elem, list(data.shape), data.ravel().tolist()) if elem != TensorProto.UINT8
             else numpy_helper.from_array(data, "data"), numpy_helper.from_array(scales, "scales")]
    ins = ["data", "idx", "scales"]
    if zp is not None:
        inits.append(helper.make_tensor("zp", elem, list(zp.shape), zp.ravel().tolist())
                     if elem != TensorProto.UINT8 else numpy_helper.from_array(zp, "zp"))
        ins.append("zp")
    node = helper.make_node("GatherBlockQuantized", ins, ["y"], domain="com.microsoft", gather_axis=0,
                            quantize_axis=1, block_size=block_size, bits=bits)
    out_t = helper.np_dtype_to_tensor_dtype(scales.dtype)
    g = helper.make_graph([node], "gbq", [helper.make_tensor_value_info("idx", TensorProto.INT64, [4])],
                          [helper.make_tensor_value_info("y", out_t, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
                             ir_version=10).SerializeToString()


@pytest.mark.parametrize("case", ["int4", "uint4_zp", "uint8_packed", "uint8_packed_zp", "uint4_fp16"])
def test_gather_block_quantized_matches_onnxruntime(case):
    rng = np.random.default_rng(0)
    rows, cols, bs = 10, 64, 16
    blocks = cols // bs
    sdt = np.float16 if case.endswith("fp16") else np.float32
    scales = rng.uniform(0.01, 0.1, (rows, blocks)).astype(sdt)
    if case == "int4":
        elem, data, zp = TensorProto.INT4, rng.integers(-8, 8, (rows, cols)), None
    elif case.startswith("uint4"):
        elem, data, zp = TensorProto.UINT4, rng.integers(0, 16, (rows, cols)), rng.integers(0, 16, (rows, blocks))
    else:
        codes = rng.integers(0, 16, (rows, cols)).astype(np.uint8)
        elem, data = TensorProto.UINT8, (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
        zcodes = rng.integers(0, 16, (rows, blocks)).astype(np.uint8)
        zp = (zcodes[:, 0::2] | (zcodes[:, 1::2] << 4)).astype(np.uint8) if case.endswith("_zp") else None
    model = _model(data, scales, zp, elem, 4, bs)
    idx = np.array([0, -1, 3, 3], np.int64)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"idx": idx})[0]
    got = onnxide.InferenceSession(model).run(None, {"idx": idx})[0]
    assert got.dtype == want.dtype and got.shape == want.shape == (4, cols)
    np.testing.assert_array_equal(got, want)


def test_out_of_range_indices_raise():
    """Indices beyond the table raise onnxide's InvalidArgument with the node named."""
    rng = np.random.default_rng(1)
    model = _model(rng.integers(-8, 8, (4, 32)), np.ones((4, 2), np.float32), None, TensorProto.INT4, 4, 16)
    with pytest.raises(onnxide.InvalidArgument, match="indices must be within"):
        onnxide.InferenceSession(model).run(None, {"idx": np.array([0, 1, 4, 2], np.int64)})
