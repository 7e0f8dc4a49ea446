"""quantize_dynamic beyond MatMul / Conv: an embedding Gather stored uint8, and a float16 model through Casts."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnxide
from onnxide.quantization import quantize_dynamic


def _embedding_model(path):
    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.standard_normal((50, 8)).astype(np.float32), "table")
    g = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["emb"], name="gather")], "emb",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
                          [helper.make_tensor_value_info("emb", TensorProto.FLOAT, [1, 6, 8])], [table])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def _fp16_matmul_model(path):
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array((rng.standard_normal((16, 4)) * 0.3).astype(np.float16), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 4])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_embedding_table_is_stored_uint8(tmp_path):
    src, dst = str(tmp_path / "emb.onnx"), str(tmp_path / "emb.q.onnx")
    _embedding_model(src)
    quantize_dynamic(src, dst)
    m = onnx.load(dst)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    assert "table" not in inits and inits["table_quantized"].dtype == np.uint8
    assert [n.op_type for n in m.graph.node] == ["Gather", "DequantizeLinear"]
    ids = np.array([[0, 3, 7, 49, 3, 12]], np.int64)
    want = onnxide.InferenceSession(src).run(None, {"ids": ids})[0]
    got = onnxide.InferenceSession(dst).run(None, {"ids": ids})[0]
    scale = float(inits["table_scale"])
    assert got.dtype == np.float32 and np.max(np.abs(got - want)) <= scale / 2 + 1e-6  # half a step at most


def test_float16_model_runs_through_casts(tmp_path):
    src, dst = str(tmp_path / "mm16.onnx"), str(tmp_path / "mm16.q.onnx")
    _fp16_matmul_model(src)
    quantize_dynamic(src, dst)
    ops = [n.op_type for n in onnx.load(dst).graph.node]
    assert "MatMulInteger" in ops and ops.count("Cast") >= 3  # to float, int32 to float, back to float16
    x = np.random.default_rng(2).uniform(-1, 1, (2, 16)).astype(np.float16)
    want = onnxide.InferenceSession(src).run(None, {"x": x})[0].astype(np.float32)
    got = onnxide.InferenceSession(dst).run(None, {"x": x})[0]
    assert got.dtype == np.float16
    assert np.max(np.abs(got.astype(np.float32) - want)) <= 0.05 * float(np.max(np.abs(want)))
