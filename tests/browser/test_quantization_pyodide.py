"""The quantization toolkit in Chromium, in plain Pyodide (no `onnx` package, no ml_dtypes there): the onnxide wheel
installed with micropip builds a seeded float model with onnxide.proto.onnx_api, quantizes it dynamically,
statically (QDQ, MinMax calibration over a CalibrationDataReader) and 4-bit weight-only (MatMulNBits), and runs the
quantized models in onnxide (tests/unit/quant_case.py, the script the no-onnx unit test runs natively). Each result
must be close to the float model's and equal (node types, nodes, initializers) to the same run here, natively with
`onnx`, and its outputs close to the native ones."""
import json
import os

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CASE = os.path.join(os.path.dirname(HERE), "unit", "quant_case.py")

KINDS = ("dynamic", "static_qdq", "matmul4")


@pytest.fixture(scope="module")
def pyodide_run(plain_pyodide):
    with open(CASE) as f:
        source = f.read()
    got = plain_pyodide.evaluate("""async (source) => {
        await pyodide.loadPackage('micropip');
        await pyodide.pyimport('micropip').install(window.wheelURL);
        pyodide.globals.set('case_source', source);
        return pyodide.runPython(`
import json, sys, types
case = types.ModuleType("quant_case")
exec(compile(case_source, "quant_case.py", "exec"), case.__dict__)
try:
    import onnx  # noqa: F401
    has_onnx = True
except ImportError:
    has_onnx = False
try:
    import ml_dtypes  # noqa: F401
    has_ml = True
except ImportError:
    has_ml = False
r = case.run()
r["env"] = {"onnx": has_onnx, "ml_dtypes": has_ml, "platform": sys.platform}
json.dumps(r)
`);
    }""", source)
    return json.loads(got)


@pytest.fixture(scope="module")
def native_run():
    import sys
    sys.path.insert(0, os.path.dirname(CASE))
    import quant_case
    r = quant_case.run()
    assert r["have_onnx"] is True
    return r


def test_pyodide_has_neither_onnx_nor_ml_dtypes(pyodide_run):
    assert pyodide_run["env"] == {"onnx": False, "ml_dtypes": False, "platform": "emscripten"}
    assert pyodide_run["have_onnx"] is False


@pytest.mark.parametrize("kind", KINDS)
def test_quantizes_in_pyodide_as_natively(pyodide_run, native_run, kind):
    import quant_case  # (tests/unit, on the path since native_run: the tolerances and op sets)
    quant_case.check_against_float(pyodide_run, kind)
    mine, want = pyodide_run[kind], native_run[kind]
    assert [n[0] for n in mine["nodes"]] == [n[0] for n in want["nodes"]]  # node types, in order
    assert mine["nodes"] == want["nodes"]
    assert mine["inits"].keys() == want["inits"].keys()
    for name, (elem, dims, values) in want["inits"].items():
        assert mine["inits"][name][:2] == [elem, dims], name
        if elem == 1:  # float scales: a calibrated range comes from running the float model, an ulp apart there
            np.testing.assert_allclose(mine["inits"][name][2], values, rtol=1e-6, atol=0, err_msg=name)
        else:  # quantized weights, zero points, shapes: equal
            assert mine["inits"][name][2] == values, name
    # the same model and inputs; only summation order (BLAS here, numpy's loops in Pyodide) differs
    np.testing.assert_allclose(np.array(pyodide_run["float"]), np.array(native_run["float"]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(mine["outputs"]), np.array(want["outputs"]), rtol=1e-5, atol=1e-5)
