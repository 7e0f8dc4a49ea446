"""Exotic dtypes (bfloat16, float8, float4, int4, int2) in both representations: ml_dtypes arrays (when installed)
and the structured no-ml_dtypes form (ONNXIDE_NO_ML_DTYPES=1, run in a subprocess): round trips through the
tensor codec and float32, Cast, and kernels never computing on bit patterns."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxide import dtypes as dt
from onnxide import tensors

ml_dtypes = pytest.importorskip("ml_dtypes")

EXOTIC = sorted(dt.STRUCT_DTYPES)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _reference(code):
    """Every representable value of `code` as an ml_dtypes array (all bit patterns / all small-int values)."""
    ml = np.dtype(getattr(ml_dtypes, dt._ML_DTYPE_NAMES[code]))
    if code in dt.SMALL_INTS:
        bits, signed = dt.SMALL_INTS[code]
        lo = -(1 << (bits - 1)) if signed else 0
        return np.arange(lo, lo + (1 << bits)).astype(ml)
    n = 1 << 16 if code == dt.BFLOAT16 else (1 << 4 if code == dt.FLOAT4E2M1 else 1 << 8)
    return np.arange(n, dtype=np.uint16 if code == dt.BFLOAT16 else np.uint8).view(ml)


@pytest.mark.parametrize("code", EXOTIC)
def test_structured_round_trips_against_ml_dtypes(code):
    ref = _reference(code)
    s = dt.as_structured(ref)
    assert s.dtype == dt.STRUCT_DTYPES[code] and s.dtype.kind == "V" and s.dtype.names == (dt.NAMES[code],)
    assert dt.code_of(s.dtype) == code and dt.exotic_code(s.dtype) == code
    assert np.array_equal(dt.raw(s), dt.raw(ref))
    # float32 values match ml_dtypes' own conversion exactly (NaNs included)
    want = ref.astype(np.float32)
    assert np.array_equal(dt.to_float32(s), want, equal_nan=True)
    assert np.array_equal(dt.to_float32(ref), want, equal_nan=True)
    # from_float32 gives back the same values (bit patterns modulo NaN payloads); float8e8m0's smallest value
    # 2**-127 is a float32 subnormal, which Cast's round-up rule (encode_e8m0) rounds to 2**-126
    back = dt.to_float32(dt.from_float32(want, code, saturate=False))
    keep = slice(1, None) if code == dt.FLOAT8E8M0 else slice(None)
    assert np.array_equal(back[keep], want[keep], equal_nan=True)
    # the tensor codec agrees with onnx's, both ways
    tp = numpy_helper.from_array(ref)
    got = tensors.to_numpy(tp)
    assert got.dtype == dt.np_dtype(code) and np.array_equal(dt.raw(got), dt.raw(ref))
    assert tensors.from_numpy(s).SerializeToString() == tensors.from_numpy(ref).SerializeToString()


def test_structured_arithmetic_raises():
    s = dt.as_structured(np.array([1.0, 2.0], dtype=ml_dtypes.bfloat16))
    with pytest.raises(TypeError):
        s + s
    assert dt.is_exotic_float(s.dtype) and dt.is_exotic_float(np.dtype(ml_dtypes.float8_e5m2))
    assert not dt.is_exotic_float(np.dtype(np.float16)) and not dt.is_exotic_float(np.dtype(np.uint16))


def test_to_user_and_from_user():
    ref = np.array([1.5, -2.0, np.inf], dtype=ml_dtypes.bfloat16)
    s = dt.as_structured(ref)
    assert dt.to_user(s).dtype == np.dtype(ml_dtypes.bfloat16) and np.array_equal(dt.to_user(s), ref)
    assert dt.from_user(s).dtype == dt.np_dtype(dt.BFLOAT16)
    assert dt.to_user([s])[0].dtype == np.dtype(ml_dtypes.bfloat16)
    one = dt.asarray(1.5, dt.FLOAT8E4M3FN)
    assert float(dt.to_float32(one)) == 1.5


def test_from_float32_saturation_and_small_ints():
    big = np.array([1e6, -1e6, np.nan], np.float32)
    assert dt.to_float32(dt.from_float32(big, dt.FLOAT8E4M3FN)).tolist()[:2] == [448.0, -448.0]
    assert np.isnan(dt.to_float32(dt.from_float32(big, dt.FLOAT8E4M3FN, saturate=False))).all()
    assert dt.to_float32(dt.from_float32(np.array([2.5, -9.0, 7.6], np.float32), dt.INT4)).tolist() == [2, -8, 7]


_NO_ML_SCRIPT = textwrap.dedent(r"""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    import onnxide
    from onnxide import dtypes as dt, tensors

    assert not dt.HAVE_ML_DTYPES
    for code, s in dt.STRUCT_DTYPES.items():
        assert dt.np_dtype(code) == s and dt.code_of(s) == code and dt.is_exotic(code)
        vals = {dt.UINT4: [0, 1, 2, 3], dt.UINT2: [0, 1, 2, 3], dt.INT2: [0, 1, -2, -1],
                dt.FLOAT8E8M0: [0.5, 1, 2, 4]}.get(code, [0, 1, -2, 3])
        vals = np.array(vals, np.float32)
        a = dt.from_float32(vals, code)
        assert a.dtype == s and np.array_equal(dt.to_float32(a), vals), (code, dt.to_float32(a))
        b = tensors.to_numpy(tensors.from_numpy(a))
        assert b.dtype == s and np.array_equal(dt.raw(b), dt.raw(a)), code

    def run(nodes, inputs, outputs, feeds, opset=21):
        g = helper.make_graph(nodes, "g", inputs, outputs)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        return onnxide.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)

    BF = TensorProto.BFLOAT16
    x = dt.from_float32(np.array([[1.0, -2.0, 3.5], [0.25, 8.0, -1.0]], np.float32), dt.BFLOAT16)
    vi = lambda n, t, s: helper.make_tensor_value_info(n, t, s)
    # elementwise, reduction, softmax, matmul and Cast compute on values, not bit patterns
    (y,) = run([helper.make_node("Add", ["x", "x"], ["y"])], [vi("x", BF, [2, 3])], [vi("y", BF, [2, 3])], {"x": x})
    assert y.dtype == x.dtype and dt.to_float32(y).tolist() == [[2, -4, 7], [0.5, 16, -2]]
    (y,) = run([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], [vi("x", BF, [2, 3])], [vi("y", BF, [])],
               {"x": x}, opset=13)  # (ReduceSum takes bfloat16 from opset 13)
    assert dt.to_float32(y).tolist() == 9.75
    (y,) = run([helper.make_node("Softmax", ["x"], ["y"])], [vi("x", BF, [2, 3])], [vi("y", BF, [2, 3])], {"x": x})
    assert abs(float(dt.to_float32(y)[0].sum()) - 1.0) < 0.02
    (y,) = run([helper.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", BF, [2, 3]), vi("w", BF, [3, 1])],
               [vi("y", BF, [2, 1])], {"x": x, "w": dt.from_float32(np.ones((3, 1), np.float32), dt.BFLOAT16)})
    assert dt.to_float32(y).ravel().tolist() == [2.5, 7.25]
    (y,) = run([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], [vi("x", BF, [2, 3])],
               [vi("y", TensorProto.FLOAT, [2, 3])], {"x": x})
    assert y.dtype == np.float32 and y.tolist() == [[1, -2, 3.5], [0.25, 8, -1]]
    (y,) = run([helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)], [vi("x", BF, [2, 3])],
               [vi("y", TensorProto.INT64, [2])], {"x": x})
    assert y.tolist() == [2, 1]
    # data movement works on the structured values directly
    (y,) = run([helper.make_node("Transpose", ["x"], ["y"])], [vi("x", BF, [2, 3])], [vi("y", BF, [3, 2])], {"x": x})
    assert y.dtype == x.dtype and np.array_equal(dt.raw(y), dt.raw(x).T)
    # int4 initializer -> Cast to float
    w = numpy_helper.from_array(np.array([-8, 7, 3], np.int8), "w")
    w.data_type = TensorProto.INT4
    w.raw_data = bytes([0x78, 0x03])
    g = helper.make_graph([helper.make_node("Cast", ["w"], ["y"], to=TensorProto.FLOAT)], "g", [],
                          [vi("y", TensorProto.FLOAT, [3])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    (y,) = onnxide.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {})
    assert y.tolist() == [-8, 7, 3]
    print("NO_ML_OK")
""")


def test_without_ml_dtypes_in_a_subprocess():
    env = dict(os.environ, ONNXIDE_NO_ML_DTYPES="1",
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "py_engine"), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", _NO_ML_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "NO_ML_OK" in r.stdout, r.stderr[-3000:]


def test_ml_dtypes_mode_uses_ml_dtypes():
    assert dt.HAVE_ML_DTYPES
    assert dt.np_dtype(dt.BFLOAT16) == np.dtype(ml_dtypes.bfloat16)
    t = helper.make_tensor("t", TensorProto.BFLOAT16, [2], [1.0, 2.0])
    assert tensors.to_numpy(t).astype(np.float32).tolist() == [1.0, 2.0]


_LAZY_ML_SCRIPT = textwrap.dedent(r"""
    import sys
    import numpy as np
    import onnxide

    float_model, bf16_model = sys.argv[1:3]
    s = onnxide.InferenceSession(float_model, providers=["CPUExecutionProvider"])
    s.run(None, {"x": np.ones(2, np.float32)})
    assert "ml_dtypes" not in sys.modules, "a float32 model imported ml_dtypes"
    s = onnxide.InferenceSession(bf16_model, providers=["CPUExecutionProvider"])
    import ml_dtypes
    (y,) = s.run(None, {"x": np.array([1.5, -2], ml_dtypes.bfloat16)})
    assert y.dtype == np.dtype(ml_dtypes.bfloat16) and y.astype(np.float32).tolist() == [1.5, -2.0]
    print("LAZY_OK")
""")


def test_ml_dtypes_is_imported_only_for_a_model_that_needs_it(tmp_path):
    """`import onnxide` and a float32 model leave ml_dtypes unimported (`python -X importtime` put its import at
    ~0.8 s of ~1.2 s here, measured at the time; onnx, which imports it, stays out of the subprocess); a bfloat16
    model and an ml_dtypes feed still work."""
    paths = []
    for elem in (TensorProto.FLOAT, TensorProto.BFLOAT16):
        g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", elem, [2])],
                              [helper.make_tensor_value_info("y", elem, [2])])
        paths.append(str(tmp_path / f"{elem}.onnx"))
        with open(paths[-1], "wb") as f:
            f.write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]).SerializeToString())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "py_engine"),
                                                       os.environ.get("PYTHONPATH", "")]))
    env.pop("ONNXIDE_NO_ML_DTYPES", None)
    r = subprocess.run([sys.executable, "-c", _LAZY_ML_SCRIPT, *paths], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "LAZY_OK" in r.stdout, r.stderr[-3000:]
