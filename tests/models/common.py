"""Helpers shared by the real-model tests: reference sessions, output comparison, clean skips."""
import importlib

import numpy as np
import pytest

import onnxide

ATOL = 1e-3  # every model: |onnxide - reference| <= 1e-3 elementwise, absolute (tighter where noted)


def need(module, reason=None):
    """Import `module` or skip the test with a reason (the package could not be installed)."""
    try:
        return importlib.import_module(module)
    except Exception as e:  # ImportError, or a broken install raising something else at import
        pytest.skip(reason or f"{module} is not installed ({type(e).__name__}: {e})")


def ort_session(path):
    ort = need("onnxruntime", "onnxruntime (the second reference) is not installed")
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


def onnxide_session(path):
    return onnxide.InferenceSession(path, providers=["CPUExecutionProvider"])


def as_array(value):
    """An output as a numpy array; ZipMap's list of {label: probability} dicts becomes a (N, labels) array."""
    if isinstance(value, list) and value and isinstance(value[0], dict):
        keys = sorted(value[0])
        return np.array([[d[k] for k in keys] for d in value], dtype=np.float64)
    return np.asarray(value)


def max_err(got, want):
    got, want = as_array(got), as_array(want)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    if got.size == 0:
        return 0.0
    if got.dtype.kind in "iubOSU" or want.dtype.kind in "iubOSU":
        return 0.0 if np.array_equal(got, want) else float("inf")
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))


def check_outputs(got, want, atol=ATOL, what="", rtol=0.0):
    """Assert each output matches: dtype, shape, values with |got - want| <= atol + rtol * |want| elementwise
    (exact for integers, strings and bools). Returns the largest absolute difference."""
    assert len(got) == len(want), f"{what}: {len(got)} outputs, expected {len(want)}"
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        g_arr, w_arr = as_array(g), as_array(w)
        if not (isinstance(g, list) or isinstance(w, list)):
            assert g_arr.dtype == w_arr.dtype, f"{what} output {i}: dtype {g_arr.dtype} != {w_arr.dtype}"
        e = max_err(g_arr, w_arr)
        if e > atol and np.isfinite(e) and rtol:
            diff = np.abs(g_arr.astype(np.float64) - w_arr.astype(np.float64))
            bad = diff > atol + rtol * np.abs(w_arr.astype(np.float64))
            assert not bad.any(), (f"{what} output {i}: {int(bad.sum())} values beyond {atol} + {rtol}*|ref| "
                                   f"(max abs error {e:.3g})")
        else:
            assert e <= atol, f"{what} output {i}: max abs error {e:.3g} > {atol}"
        worst = max(worst, e)
    return worst
