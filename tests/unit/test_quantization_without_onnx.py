"""The quantization toolkit without the `onnx` package (as in Pyodide): quantize_dynamic, quantize_static (QDQ,
MinMax over a CalibrationDataReader) and the 4-bit MatMulNBits quantizer run in a subprocess where `onnx` and
ml_dtypes cannot be imported, through onnxide's stand-in (proto/onnx_compat.py); their files load and run in onnxide
close to the float model, and hold the same nodes and initializers as the files made here with `onnx` installed.
Also the stand-in's builders against onnx's own (equal messages)."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide.errors
from onnxide.proto import onnx_compat, onnx_helper, parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import quant_case  # noqa: E402

@pytest.fixture(scope="module")
def runs():
    r = subprocess.run([sys.executable, os.path.join(HERE, "quant_case.py"), "--no-onnx"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout), quant_case.run()


@pytest.mark.parametrize("kind", ["dynamic", "static_qdq", "matmul4"])
def test_quantizes_without_onnx_as_with_it(runs, kind):
    without, with_onnx = runs
    assert without["have_onnx"] is False and with_onnx["have_onnx"] is True
    quant_case.check_against_float(without, kind)
    assert without[kind]["nodes"] == with_onnx[kind]["nodes"]
    assert without[kind]["inits"] == with_onnx[kind]["inits"]  # names, element types, dims, values
    np.testing.assert_array_equal(np.array(without[kind]["outputs"]), np.array(with_onnx[kind]["outputs"]))


def same(ours, theirs):
    """The stand-in's message equals onnx's, field by field (decoded from onnx's bytes: protobuf writes proto2's
    repeated numbers unpacked where onnxide packs them, the same values either way), also after onnx read ours."""
    back = type(theirs)()
    back.ParseFromString(ours.SerializeToString())
    return parse(type(ours), theirs.SerializeToString()) == ours == parse(type(ours), back.SerializeToString())


def test_other_entry_points_without_onnx():
    """Static QOperator, Entropy / Percentile / Distribution calibration, per-channel, 16-bit activations,
    get_qdq_config, quant_pre_process and external data run without onnx / ml_dtypes with the errors against float
    they have with
    onnx (within the 8-bit bound but Entropy's, whose KL threshold clips these 4 samples' ranges: 32% either way;
    quant_pre_process changes nothing here); int4 weights raise NotImplemented naming ml_dtypes."""
    r = subprocess.run([sys.executable, os.path.join(HERE, "quant_case.py"), "--no-onnx", "--more"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got, want = json.loads(r.stdout), quant_case.run_more()
    for name in ("qoperator", "entropy", "percentile", "distribution", "per_channel", "uint16_activations",
                 "qdq_config", "pre_process", "external_data"):
        assert got[name] == want[name], name
        assert name == "entropy" or got[name] <= quant_case.TOL["static_qdq"], (name, got[name])
    assert got["pre_process"] == 0.0
    assert got["int4_weights"][0] == "NotImplemented" and "needs the ml_dtypes package" in got["int4_weights"][1]
    assert isinstance(want["int4_weights"], float)


@pytest.mark.parametrize("value", [3, True, 2.5, np.float32(0.25), "nearest", b"x", [1, 2], [1, 2.5], ["a", "b"],
                                   np.int64(7)])
def test_make_attribute_matches_onnx(value):
    assert same(onnx_helper.make_attribute("a", value), helper.make_attribute("a", value))


@pytest.mark.parametrize("elem,vals", [
    (TensorProto.FLOAT, [1.5, -2.0]), (TensorProto.INT64, [3, -4]), (TensorProto.INT8, [-3, 4]),
    (TensorProto.UINT8, [0, 255]), (TensorProto.FLOAT16, [0.5, -1.25]), (TensorProto.INT4, [-8, 7, 3]),
    (TensorProto.UINT4, [15, 0, 9]), (TensorProto.FLOAT8E4M3FN, [1.0, 600.0]), (TensorProto.DOUBLE, [0.1, 2.0]),
    (TensorProto.INT32, [5, -6]), (TensorProto.BOOL, [1, 0])])
def test_make_tensor_matches_onnx(elem, vals):
    dims = [len(vals)]
    assert same(onnx_helper.make_tensor("t", elem, dims, vals), helper.make_tensor("t", elem, dims, vals))


def test_builders_and_methods_match_onnx():
    """make_node (attributes sorted, None left out), make_tensor_value_info (None / str / int dims), from_array,
    make_graph / make_model, and the protobuf methods the tool calls give onnx's bytes and answers."""
    a = onnx_helper.make_node("Conv", ["x", "w"], ["y"], name="c", pads=[1, 1, 1, 1], group=1, auto_pad=None)
    b = helper.make_node("Conv", ["x", "w"], ["y"], name="c", pads=[1, 1, 1, 1], group=1, auto_pad=None)
    assert same(a, b)
    vi = ("v", TensorProto.FLOAT, [None, "n", 3])
    assert same(onnx_helper.make_tensor_value_info(*vi), helper.make_tensor_value_info(*vi))
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert same(onnx_helper.from_array(arr, "w"), numpy_helper.from_array(arr, "w"))
    g = onnx_helper.make_graph([a], "g", [onnx_helper.make_tensor_value_info(*vi)], [])
    m = onnx_helper.make_model(g, opset_imports=[onnx_helper.make_opsetid("", 17)], ir_version=8)
    want = helper.make_model(helper.make_graph([b], "g", [helper.make_tensor_value_info(*vi)], []),
                             opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    assert same(m, want)
    for name in ("graph", "doc_string", "ir_version"):
        assert m.HasField(name) == want.HasField(name)
    assert m.graph.input[0].type.HasField("tensor_type") and m.ByteSize() == len(m.SerializeToString())
    copy = onnx_compat.ModelProto()
    copy.CopyFrom(m)
    copy.graph.node[0].input[0] = "z"
    assert m.graph.node[0].input[0] == "x" and copy.graph.node[0].input[0] == "z"
    copy.ClearField("graph")
    assert not copy.HasField("graph")
    copy.ParseFromString(want.SerializeToString())
    assert copy == m
    with pytest.raises(ValueError):
        m.HasField("opset_import")  # repeated, as protobuf


def test_shape_inference_types_intermediates(tmp_path):
    """infer_shapes adds the intermediate values' types, returns a copy and keeps declared types."""
    m = onnx_compat.load_model_from_string(onnx.load(quant_case_model(tmp_path)).SerializeToString())
    inferred = onnx_compat.shape_inference.infer_shapes(m)
    types = {v.name: v.type.tensor_type.elem_type for v in inferred.graph.value_info}
    assert types == {"conv": TensorProto.FLOAT, "relu": TensorProto.FLOAT, "flat": TensorProto.FLOAT,
                     "mm": TensorProto.FLOAT}
    assert not m.graph.value_info
    ref = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
           for v in onnx.shape_inference.infer_shapes(onnx.load(quant_case_model(tmp_path))).graph.value_info}
    assert {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.value_info} == ref


def test_missing_parts_name_the_onnx_package():
    with pytest.raises(onnxide.errors.NotImplemented, match="needs the `onnx` package"):
        onnx_compat.version_converter.convert_version(onnx_compat.ModelProto(), 11)


def test_external_data_round_trip(tmp_path):
    """save_model with external data: the initializers of size_threshold bytes or more go to the .data file (onnx
    and onnxide read the model back equal, outputs unchanged); the saved ModelProto is left as it was."""
    m = onnx_compat.load(quant_case_model(tmp_path))
    before = m.__deepcopy__(None)
    path = str(tmp_path / "ext.onnx")
    onnx_compat.save(m, path, save_as_external_data=True, size_threshold=1024)
    assert m == before
    placed = {t.name: t.data_location for t in onnx.load(path, load_external_data=False).graph.initializer}
    assert placed == {"w": 0, "b": 0, "m": 1, "c": 0}  # m: 512 x 10 float32, the others under 1024 bytes
    assert os.path.getsize(path + ".data") == 512 * 10 * 4
    ref = onnx.load(str(tmp_path / "float.onnx"))
    for a, b in zip(onnx.load(path).graph.initializer, ref.graph.initializer):
        np.testing.assert_array_equal(numpy_helper.to_array(a), numpy_helper.to_array(b))
    assert onnx_compat.load(path) == before


def quant_case_model(folder):
    path = str(folder / "float.onnx")
    onnx.save(quant_case._model(helper, numpy_helper, TensorProto, np), path)
    return path
