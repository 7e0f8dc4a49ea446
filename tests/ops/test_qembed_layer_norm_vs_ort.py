"""com.microsoft QEmbedLayerNormalization on onnxide against onnxruntime: uint8 tables, gamma and beta with their
scales and zero points, with and without segment embeddings and a mask; and onnxide's dynamic quantization of an
EmbedLayerNormalization writes the tensors onnxruntime's tool writes."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide
from same_quantized_files import assert_same_dynamic_quantization

ort = pytest.importorskip("onnxruntime")
NAMES = ["word", "pos", "seg", "gamma", "beta"]


def _model(rng, hidden, segment, mask):
    shapes = {"word": [32, hidden], "pos": [16, hidden], "seg": [2, hidden], "gamma": [hidden], "beta": [hidden]}
    inits, q, s, z = [], [], [], []
    for n in NAMES:
        if n == "seg" and not segment:
            q.append(""), s.append(""), z.append("")
            continue
        inits += [numpy_helper.from_array(rng.integers(0, 256, shapes[n]).astype(np.uint8), n + "_q"),
                  numpy_helper.from_array(np.array(rng.uniform(0.001, 0.01), np.float32), n + "_s"),
                  numpy_helper.from_array(np.array(rng.integers(0, 256), np.uint8), n + "_z")]
        q.append(n + "_q"), s.append(n + "_s"), z.append(n + "_z")
    ins = ["ids", "segs" if segment else ""] + q + ["mask" if mask else ""] + s + z
    node = helper.make_node("QEmbedLayerNormalization", ins, ["y", "mask_index"], domain="com.microsoft",
                            epsilon=1e-5)
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT32, [2, 5])
              for n in ["ids"] + (["segs"] if segment else []) + (["mask"] if mask else [])]
    g = helper.make_graph([node], "qeln", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                                   helper.make_tensor_value_info("mask_index", TensorProto.INT32,
                                                                                 None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)],
                             ir_version=7).SerializeToString()


@pytest.mark.parametrize("segment,mask", [(True, False), (False, False), (True, True)])
def test_qembed_layer_norm_matches_onnxruntime(segment, mask):
    rng = np.random.default_rng(7)
    model = _model(rng, 8, segment, mask)
    feeds = {"ids": rng.integers(0, 32, (2, 5)).astype(np.int32)}
    if segment:
        feeds["segs"] = rng.integers(0, 2, (2, 5)).astype(np.int32)
    if mask:
        feeds["mask"] = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = onnxide.InferenceSession(model).run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1], want[1])


def test_dynamic_quantization_matches_onnxruntimes_tool(tmp_path):
    """The same QEmbedLayerNormalization inputs and initializers (bit for bit) as onnxruntime's quantize_dynamic."""
    rng = np.random.default_rng(3)
    tables = {"word": rng.random((32, 4)), "pos": rng.random((16, 4)), "seg": rng.random((2, 4)),
              "gamma": rng.random(4), "beta": rng.random(4) - 0.5}
    node = helper.make_node("EmbedLayerNormalization", ["ids", "segs", "word", "pos", "seg", "gamma", "beta"],
                            ["y", "mask_index"], domain="com.microsoft")
    g = helper.make_graph([node], "eln", [helper.make_tensor_value_info(n, TensorProto.INT32, [1, 4])
                                          for n in ("ids", "segs")],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4]),
                           helper.make_tensor_value_info("mask_index", TensorProto.INT32, [1])],
                          [numpy_helper.from_array(v.astype(np.float32), k) for k, v in tables.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)],
                          ir_version=7)
    src = tmp_path / "f.onnx"
    src.write_bytes(m.SerializeToString())
    assert_same_dynamic_quantization(src, tmp_path)
