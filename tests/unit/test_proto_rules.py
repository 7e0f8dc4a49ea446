"""The codec follows protobuf's parsing rules as onnx's protobuf does: a message's bytes concatenated with another's
parse as their merge (singular messages merge, repeated fields append, oneofs keep the last member); unknown fields
(groups too) are skipped; a known field with the wrong wire type, or field number 0, raises InvalidProtobuf."""
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxide as ort
from onnxide import proto
from onnxide.errors import InvalidProtobuf


def _model(op, name):
    g = helper.make_graph([helper.make_node(op, ["x"], [name])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n"])],
                          [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name=op)


def _norm(text):  # proto2 presence of default scalars is not semantic
    return re.sub(r"\n\s*(\w+): (\"\"|0)(?=\n)", "", text)


def _same_as_onnx(data):
    want = onnx.ModelProto()
    want.ParseFromString(data)
    want.DiscardUnknownFields()
    got = onnx.ModelProto()
    got.ParseFromString(proto.parse(proto.ModelProto, data).SerializeToString())
    assert _norm(str(got)) == _norm(str(want))


def test_concatenated_models_parse_as_their_merge():
    a, b = _model("Relu", "y").SerializeToString(), _model("Neg", "z").SerializeToString()
    _same_as_onnx(a + b)
    merged = proto.parse(proto.ModelProto, a + b)
    assert [n.op_type for n in merged.graph.node] == ["Relu", "Neg"]  # graph merged, not replaced
    assert merged.producer_name == "Neg"  # a scalar present again replaces


def test_oneof_keeps_the_last_member():
    t = helper.make_tensor_type_proto(TensorProto.FLOAT, [1])
    s = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.INT64, None))
    data = t.SerializeToString() + s.SerializeToString()
    got = proto.parse(proto.TypeProto, data)
    assert got.tensor_type is None and got.sequence_type is not None
    d = proto.parse(proto.Dimension, onnx.TensorShapeProto.Dimension(dim_value=3).SerializeToString()
                    + onnx.TensorShapeProto.Dimension(dim_param="n").SerializeToString())
    assert (d.dim_value, d.dim_param) == (None, "n")


def test_unknown_fields_and_groups_are_skipped():
    base = _model("Relu", "y").SerializeToString()
    unknown = bytes([99 << 3 & 0x7F | 0x80, 99 >> 4, 5])  # field 99 varint 5 (two-byte key)
    group = bytes([(98 << 3 | 3) & 0x7F | 0x80, 98 >> 4, 1 << 3, 7, (98 << 3 | 4) & 0x7F | 0x80, 98 >> 4])
    _same_as_onnx(unknown + group + base)
    assert proto.parse(proto.ModelProto, unknown + group + base).graph.node[0].op_type == "Relu"


@pytest.mark.parametrize("data", [
    bytes([7 << 3 | 0, 1]),          # ModelProto.graph (a message) as a varint
    bytes([1 << 3 | 2, 1, 0]),       # ModelProto.ir_version (a varint) as bytes
    bytes([1 << 3 | 5, 0, 0, 0, 0]),  # ir_version as a 32-bit value
    bytes([0 << 3 | 0, 1]),          # field number 0
    bytes([99 << 3 & 0x7F | 0x80, 99 >> 4 | 0, 0x80] * 1),  # truncated varint
    bytes([0x08] + [0xFF] * 11),     # an 11-byte varint
], ids=["message-as-varint", "varint-as-bytes", "varint-as-fixed32", "field-0", "truncated", "long-varint"])
def test_malformed_wire_data_is_invalid_protobuf(data):
    with pytest.raises(InvalidProtobuf):
        proto.parse(proto.ModelProto, data)


def test_session_reports_a_message_field_sent_as_a_varint():
    m = _model("Relu", "y")
    data = bytearray(m.SerializeToString())
    # the graph input's ValueInfoProto.type (field 2, a message) sent as varint 1 (an unknown field pads it to its
    # old length): onnxide's error, not an AttributeError from get_inputs()
    vi = m.graph.input[0].SerializeToString()
    bad = bytes([1 << 3 | 2, 1]) + b"x" + bytes([2 << 3 | 0, 1])
    bad += bytes([15 << 3 | 2, len(vi) - len(bad) - 2]) + bytes(len(vi) - len(bad) - 2)
    i = data.index(vi)
    data[i:i + len(vi)] = bad
    with pytest.raises(InvalidProtobuf):
        ort.InferenceSession(bytes(data), providers=["CPUExecutionProvider"])


def test_packed_and_unpacked_repeated_numbers_both_decode():
    t = onnx.TensorProto(dims=[2, 3], data_type=TensorProto.FLOAT, float_data=[1.0, 2.0])
    packed = t.SerializeToString()
    unpacked = bytes([1 << 3, 2, 1 << 3, 3, 8 << 3 | 2, 0]) + bytes([4 << 3 | 5]) + np.float32(1).tobytes() + \
        bytes([4 << 3 | 5]) + np.float32(2).tobytes() + bytes([2 << 3, 1])
    for data in (packed, unpacked):
        got = proto.parse(proto.TensorProto, data)
        assert (got.dims, got.float_data, got.data_type) == ([2, 3], [1.0, 2.0], 1)
