"""The pure-Python codec against onnx's protobuf: every node-case model round-trips; every dtype decodes."""
import re
import warnings

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from onnxide import dtypes, proto
from onnxide.errors import InvalidProtobuf
from onnxide.tensors import from_numpy, to_numpy


def _node_models():
    from onnx.backend.test.loader import load_node_model_tests
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return [c.model for c in load_node_model_tests()]


def _norm(text):  # proto2 presence of default scalars is not semantic
    return re.sub(r"\n\s*(\w+): (\"\"|0)(?=\n)", "", text)


def test_every_node_case_model_round_trips_through_onnx():
    models = _node_models()
    assert len(models) > 1800
    for m in models:
        ours = proto.parse(proto.ModelProto, m.SerializeToString())
        back = onnx.ModelProto()
        back.ParseFromString(ours.SerializeToString())
        assert _norm(str(back)) == _norm(str(m)), m.graph.name


@pytest.mark.parametrize("code", sorted(set(dtypes.NAMES) - {dtypes.UNDEFINED, 27, 28}))
def test_tensor_dtypes_decode_like_numpy_helper(code):
    rng = np.random.default_rng(code)
    if code == dtypes.STRING:
        values = np.array(["a", "bé", ""], dtype=object)
    elif code == dtypes.BOOL:
        values = np.array([True, False, True])
    elif code in (dtypes.COMPLEX64, dtypes.COMPLEX128):
        values = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(dtypes.np_dtype(code))
    elif code in (dtypes.INT4, dtypes.INT2):
        values = np.array([-1, 0, 1, -2, 1], dtype=np.int8)
    elif code in (dtypes.UINT4, dtypes.UINT2):
        values = np.array([0, 1, 2, 3, 1], dtype=np.uint8)
    else:
        values = (rng.random(5) * 4).astype(np.float32)
    t = helper.make_tensor("t", code, [len(values)], values.tolist() if code != dtypes.STRING else
                           [v.encode() for v in values])
    for raw in (False, True):
        if raw and code == dtypes.STRING:
            continue
        src = numpy_helper.from_array(numpy_helper.to_array(t), "t") if raw else t
        expected = numpy_helper.to_array(src)
        got = to_numpy(proto.parse(proto.TensorProto, src.SerializeToString()))
        assert got.shape == expected.shape
        if code != dtypes.STRING:
            assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
            assert got.view(np.uint8).tobytes() == expected.view(np.uint8).tobytes() or np.array_equal(
                got.astype(np.float64), expected.astype(np.float64), equal_nan=True)
        else:
            assert list(got) == list(expected)
        back = onnx.TensorProto()
        back.ParseFromString(from_numpy(got, "t").SerializeToString())
        again = numpy_helper.to_array(back)
        assert again.dtype == expected.dtype
        assert again.tobytes() == expected.tobytes() if code != dtypes.STRING else list(again) == list(expected)


def test_raw_data_is_a_view_over_the_model_bytes():
    arr = np.arange(1000, dtype=np.float32).reshape(10, 100)
    data = numpy_helper.from_array(arr, "w").SerializeToString()
    t = proto.parse(proto.TensorProto, data)
    got = to_numpy(t)
    assert np.array_equal(got, arr)
    assert not got.flags.owndata  # no copy


def test_typed_fields_and_packed_varints():
    t = helper.make_tensor("i", onnx.TensorProto.INT64, [4], [-(2 ** 62), -1, 0, 2 ** 40])
    assert to_numpy(proto.parse(proto.TensorProto, t.SerializeToString())).tolist() == [-(2 ** 62), -1, 0, 2 ** 40]
    t = helper.make_tensor("u", onnx.TensorProto.UINT64, [2], [2 ** 64 - 1, 3])
    assert to_numpy(proto.parse(proto.TensorProto, t.SerializeToString())).tolist() == [2 ** 64 - 1, 3]


def test_sparse_and_external_data(tmp_path):
    from onnxide.tensors import sparse_to_numpy
    st = helper.make_sparse_tensor(numpy_helper.from_array(np.array([5.0, 6.0], np.float32), "v"),
                                   numpy_helper.from_array(np.array([1, 4], np.int64), "idx"), [2, 3])
    dense = sparse_to_numpy(proto.parse(proto.SparseTensorProto, st.SerializeToString()))
    assert dense.tolist() == [[0, 5, 0], [0, 6, 0]]
    arr = np.arange(12, dtype=np.float32)
    (tmp_path / "w.bin").write_bytes(b"\0" * 8 + arr.tobytes())
    t = onnx.TensorProto(name="w", data_type=1, dims=[3, 4], data_location=onnx.TensorProto.EXTERNAL)
    for k, v in (("location", "w.bin"), ("offset", "8"), ("length", str(arr.nbytes))):
        t.external_data.add(key=k, value=v)
    got = to_numpy(proto.parse(proto.TensorProto, t.SerializeToString()), str(tmp_path))
    assert np.array_equal(got, arr.reshape(3, 4))
    t.external_data[0].value = "../outside.bin"
    with pytest.raises(Exception, match="leaves the model's folder"):
        to_numpy(proto.parse(proto.TensorProto, t.SerializeToString()), str(tmp_path))


@pytest.mark.parametrize("data", [b"\x0a\xff\xff", b"\x08", b"\xff" * 20, bytes(range(256))])
def test_malformed_bytes_raise_invalid_protobuf(data):
    with pytest.raises(InvalidProtobuf):
        proto.parse(proto.ModelProto, data)


def test_misaligned_raw_data_is_copied_once_while_the_copy_lives():
    """A misaligned view of model bytes is copied (aligned, read-only); loading the same bytes again (a specialized
    executor's second load of the model) gets the same copy back, other bytes their own."""
    from onnxide.tensors import _native_copy
    buf = bytearray(b"\x00" + np.arange(10, dtype=np.float32).tobytes())
    view = np.frombuffer(memoryview(buf)[1:], np.float32)
    assert not view.flags.aligned
    first = _native_copy(view, np.dtype(np.float32))
    assert first.flags.aligned and not first.flags.writeable
    np.testing.assert_array_equal(first, np.arange(10, dtype=np.float32))
    assert _native_copy(view, np.dtype(np.float32)) is first
    buf[1:5] = np.float32(7).tobytes()  # the same address with other values: not the old copy
    second = _native_copy(np.frombuffer(memoryview(buf)[1:], np.float32), np.dtype(np.float32))
    assert second is not first and second[0] == 7 and first[0] == 0
    buf[1:5] = np.float32(-0.0).tobytes()  # equal as a value to the 0.0 copied first, not as bytes
    third = _native_copy(np.frombuffer(memoryview(buf)[1:], np.float32), np.dtype(np.float32))
    assert np.signbit(third[0]) and not np.signbit(first[0])
