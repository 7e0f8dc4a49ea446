"""Symbolic shapes through the shape arithmetic batch-dynamic torch exports write: shape values through Slice,
1-D Reshape, Equal and Where (torch's expand(-1)), a -1 whose symbolic factors cancel, a broadcast against an unknown
dim; and the attention those exports hold fuses once their shapes are known."""
import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxide
from onnxide import proto as P
from onnxide.ir import load_model
from onnxide.ir.infer import infer_shapes
from onnxide.ops.inference import broadcast


def _infer(nodes, inputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, [onnx.ValueInfoProto(name=nodes[-1].output[0])],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    mp = P.parse(P.ModelProto, helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return infer_shapes(load_model(mp))


def _i64(*v):
    return np.array(v, np.int64)


def test_expand_minus_one_keeps_the_batch_symbol():
    """cls.expand(x.shape[0], -1, -1) as torch exports it: Where(Equal(s, -1), 1, s) gives [batch, 1, 1]."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "zero", "one"], ["b"]),
             helper.make_node("Concat", ["b", "m1", "m1"], ["t"], axis=0),
             helper.make_node("Reshape", ["t", "flat"], ["t1"]),
             helper.make_node("Equal", ["t1", "m1x3"], ["eq"]),
             helper.make_node("Where", ["eq", "ones", "t1"], ["shape"]),
             helper.make_node("Expand", ["cls", "shape"], ["y"])]
    types, sv = _infer(nodes, [helper.make_tensor_value_info("x", 1, ["batch", 196, 192])],
                       [("zero", _i64(0)), ("one", _i64(1)), ("m1", _i64(-1)), ("flat", _i64(-1)),
                        ("m1x3", _i64(-1, -1, -1)), ("ones", _i64(1, 1, 1)),
                        ("cls", np.zeros((1, 1, 192), np.float32))])
    assert sv["b"] == (["batch"], False)
    assert sv["t1"] == (["batch", -1, -1], False)
    assert sv["eq"] == ([0, 1, 1], False)
    assert sv["shape"] == (["batch", 1, 1], False)
    assert types["y"][1] == ["batch", 1, 192]


def test_equal_of_unknown_entries_stays_unknown():
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Equal", ["s", "c"], ["eq"])]
    _, sv = _infer(nodes, [helper.make_tensor_value_info("x", 1, ["n", None, 4])], [("c", _i64(5, -1, 4))])
    assert sv["eq"] == ([None, None, 1], False)  # n vs 5 unknown; an unknown dim vs -1 not assumed


def test_minus_one_with_cancelling_symbols():
    nodes = [helper.make_node("Reshape", ["x", "t"], ["y"])]
    types, _ = _infer(nodes, [helper.make_tensor_value_info("x", 1, ["batch", 192, 14, 14])],
                      [("t", _i64(0, 192, -1))])
    assert types["y"][1] == ["batch", 192, 196]
    types, _ = _infer(nodes, [helper.make_tensor_value_info("x", 1, ["batch", "seq", 14, 14])],
                      [("t", _i64(0, 192, -1))])
    assert types["y"][1] == ["batch", 192, None]  # seq does not cancel


def test_broadcast_against_an_unknown_dim():
    assert broadcast([["b", None, 384], [None, 384]]) == ["b", None, 384]
    assert broadcast([[None, 197, 192], [1, 197, 192]]) == [None, 197, 192]
    assert broadcast([[None], ["n"]]) == [None]


@pytest.mark.parametrize("name, heads", [("vit_tiny", 12), ("whisper_tiny_encoder", 4)])
def test_batch_dynamic_exports_fuse_their_attention(tmp_path, name, heads):
    from models import export
    why = export.available(name)
    if why:
        pytest.skip(why)
    so = onnxide.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    onnxide.InferenceSession(export.path_of(name), so, providers=["CPUExecutionProvider"])
    ops = [n.op_type for n in onnx.load(os.fspath(tmp_path / "opt.onnx")).graph.node]
    assert ops.count("MultiHeadAttention") == heads
    assert ops.count("Softmax") == 0
