"""WebGPU Reduce* and ArgMax / ArgMin (ops_reduce.py) against the CPU EP, edge cases included."""
import numpy as np
import pytest

from webgpu.nodes import Const, check

rng = np.random.default_rng(7)
X = rng.standard_normal((3, 4, 37)).astype(np.float32)
REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


def _data(op):
    return np.abs(X) + 0.5 if op in ("ReduceLogSum", "ReduceProd") else X


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, 2], 0), ([-1], 1), (None, 0)])
def test_reduce_axes_input(op, axes, keepdims):
    check(op, [_data(op), None if axes is None else Const(np.array(axes, np.int64))], keepdims=keepdims)


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceMax", "ReduceLogSumExp"])
def test_reduce_axes_attribute(op):
    check(op, [_data(op)], opset=13, axes=[0, 2], keepdims=1)


def test_reduce_sum_long_rows_and_wide_outputs():
    check("ReduceSum", [rng.standard_normal((2, 3000)).astype(np.float32), Const(np.array([1], np.int64))],
          rtol=1e-4, atol=1e-4)
    check("ReduceMax", [rng.standard_normal((64, 64, 3)).astype(np.float32), Const(np.array([0, 1], np.int64))])


def test_empty_axes():
    check("ReduceSum", [X, Const(np.zeros(0, np.int64))], noop_with_empty_axes=1)  # the input itself
    check("ReduceSum", [X, Const(np.zeros(0, np.int64))], keepdims=0)  # all axes


@pytest.mark.parametrize("op", REDUCE)
def test_empty_reduction(op):
    """Reducing an axis of length 0 gives each op's identity (sum 0, max -inf, log 0 = -inf, mean NaN...)."""
    check(op, [np.zeros((3, 0, 2), np.float32), Const(np.array([1], np.int64))], keepdims=1)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum"])
def test_reduce_nan(op):
    x = X.copy()
    x[1, 2, 5] = np.nan
    check(op, [x, Const(np.array([2], np.int64))])


def test_reduce_f16():
    check("ReduceMean", [X.astype(np.float16), Const(np.array([2], np.int64))], rtol=2e-3, atol=2e-3)


def test_reduce_declines_int64():
    check("ReduceSum", [rng.integers(-5, 5, (3, 4)), Const(np.array([1], np.int64))], on_device=False, exact=True)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis,keepdims,last", [(0, 1, 0), (1, 0, 1), (-1, 1, 1), (2, 0, 0)])
def test_arg(op, axis, keepdims, last):
    x = np.round(X * 2) / 2  # many ties
    x[0, 1, 3] = x[2, 3, 30] = np.nan
    check(op, [x], axis=axis, keepdims=keepdims, select_last_index=last, exact=True)
