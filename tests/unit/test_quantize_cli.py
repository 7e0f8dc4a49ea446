"""`onnxide quantize`: dynamic and static (from .npy samples or flagged random inputs) models load, run and stay
close to the float model; calibration prints progress; bad flags give one-line errors."""
import os
import re
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide
from onnxide.cli import main
from onnxide.quantization.cli import CALIBRATION_KEY

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quant_case  # noqa: E402


def _model(path):
    """quant_case's seeded Conv 3→8 → Relu → Flatten → MatMul 512→10 → Add, input x 1×3×8×8, saved at `path`."""
    onnx.save(quant_case._model(helper, numpy_helper, TensorProto, np), path)
    return path


def _samples(n, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32) for _ in range(n)]


@pytest.fixture
def model(tmp_path):
    return _model(str(tmp_path / "float.onnx"))


def _close_to_float(float_path, quant_path, tol, inputs):
    """The quantized model's outputs are within tol × the float outputs' range (static models are given inputs
    their calibration covers: outputs beyond the calibrated range saturate, by design)."""
    f, q = onnxide.InferenceSession(float_path), onnxide.InferenceSession(quant_path)
    for x in inputs:
        want, got = f.run(None, {"x": x})[0], q.run(None, {"x": x})[0]
        assert got.shape == want.shape and got.dtype == np.float32
        span = float(want.max() - want.min())
        assert np.max(np.abs(got - want)) <= tol * span, (np.max(np.abs(got - want)), span)


def _op_types(path):
    return {n.op_type for n in onnx.load(path).graph.node}


def test_dynamic(model, tmp_path, capsys):
    out = str(tmp_path / "dyn.onnx")
    assert main(["quantize", model, out]) == 0
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= _op_types(out)
    assert "dynamic, QInt8 weights" in capsys.readouterr().err
    _close_to_float(model, out, 0.05, _samples(8, seed=99))


def test_static_qdq_from_npy_folder_prints_progress(model, tmp_path, capsys):
    cal = tmp_path / "cal"
    cal.mkdir()
    for k, x in enumerate(_samples(40, seed=1)):
        np.save(cal / f"{k:03d}.npy", x[0] if k % 2 else x)  # with and without the batch axis
    out = str(tmp_path / "qdq.onnx")
    assert main(["quantize", model, out, "--mode", "static", "--calibration-data", str(cal), "--per-channel"]) == 0
    err = capsys.readouterr().err
    done = [tuple(map(int, m)) for m in re.findall(r"calibration: (\d+)/(\d+) samples, [\d.]+ samples/s", err)]
    assert done and done[-1] == (40, 40) and all(t == 40 for _, t in done), err
    assert [d for d, _ in done] == sorted(d for d, _ in done)
    assert "static QDQ" in err and "40 samples from" in err
    m = onnx.load(out)
    assert {"QuantizeLinear", "DequantizeLinear"} <= _op_types(out)
    assert {p.key: p.value for p in m.metadata_props}[CALIBRATION_KEY].startswith("40 samples from")
    _close_to_float(model, out, 0.05, _samples(40, seed=1)[::5])


def test_static_qoperator_random_calibration_is_flagged(model, tmp_path, capsys):
    out = str(tmp_path / "qop.onnx")
    assert main(["quantize", model, out, "--mode", "static", "--random-calibration", "16", "--format", "QOperator",
                 "--activation-type", "uint8", "--weight-type", "int8"]) == 0
    err = capsys.readouterr().err
    assert "calibrating on 16 random inputs" in err and "16/16 samples" in err
    assert "QLinearConv" in _op_types(out)
    meta = {p.key: p.value for p in onnx.load(out).metadata_props}
    assert meta[CALIBRATION_KEY].startswith("RANDOM inputs (16 samples)")
    # random calibration inputs are standard normal: the model still runs; its accuracy is not the point here
    y = onnxide.InferenceSession(out).run(None, {"x": _samples(1, 5)[0]})[0]
    assert y.shape == (1, 10) and np.all(np.isfinite(y))


def test_static_int16_activations_subfolder_samples(model, tmp_path):
    cal = tmp_path / "cal"
    for k, x in enumerate(_samples(6, seed=2)):
        (cal / f"s{k}").mkdir(parents=True)
        np.save(cal / f"s{k}" / "x.npy", x)
    out = str(tmp_path / "q16.onnx")
    assert main(["quantize", model, out, "--mode", "static", "--calibration-data", str(cal),
                 "--activation-type", "int16"]) == 0
    zps = [numpy_helper.to_array(t) for t in onnx.load(out).graph.initializer if t.name.endswith("_zero_point")]
    assert any(z.dtype == np.int16 for z in zps)
    _close_to_float(model, out, 0.01, _samples(6, seed=2))  # 16-bit activations: tighter


@pytest.mark.parametrize("argv, message", [
    (["--mode", "static"], "--mode static needs --calibration-data DIR or --random-calibration N"),
    (["--mode", "static", "--calibration-data", "/nonexistent/cal"], "NoSuchFile: --calibration-data"),
    (["--weight-type", "int7"], "--weight-type 'int7' is not a quantized type"),
    (["--random-calibration", "4"], "--random-calibration applies to --mode static"),
])
def test_errors_are_one_line(model, tmp_path, capsys, argv, message):
    assert main(["quantize", model, str(tmp_path / "o.onnx"), *argv]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not os.path.exists(tmp_path / "o.onnx")


def test_missing_model(tmp_path, capsys):
    assert main(["quantize", str(tmp_path / "none.onnx"), str(tmp_path / "o.onnx")]) == 1
    assert "NoSuchFile: model" in capsys.readouterr().err
