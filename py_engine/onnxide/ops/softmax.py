"""Softmax, LogSoftmax and Hardmax: the opset<13 coerce-to-2D semantics and the opset>=13 single-axis semantics."""
import numpy as np

from ..errors import InvalidArgument
from .registry import op


def compute_dtype(dt):
    """The numpy dtype to compute in for a floating dtype: float32 for narrow floats (f16, bf16, f8), else itself."""
    dt = np.dtype(dt)
    if dt == np.float64 or dt == np.float32:
        return dt
    return np.dtype(np.float32)


def work_dtype(dt):
    """The dtype to compute in, step by step like the ONNX spec: the input's own float type when numpy can compute on
    it (float16/32/64, ml_dtypes bfloat16), so results round exactly like the reference; float32 otherwise."""
    dt = np.dtype(dt)
    if dt.kind == "f" or (dt.kind == "V" and dt.name == "bfloat16"):
        return dt
    return np.dtype(np.float32)


def _axis(axis, rank, name):
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise InvalidArgument(f"{name}: axis {axis} is out of range for an input of rank {rank}")
    return axis % max(rank, 1)


def softmax_along(x, axis):
    """Numerically stable softmax of float array `x` along `axis` (rows of all -inf give NaN like the spec)."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, np.zeros_like(m))
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax_along(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, np.zeros_like(m))
    s = x - m
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def _hardmax_along(x, axis):
    if x.size == 0:
        return x.copy()
    idx = np.expand_dims(np.argmax(x, axis=axis), axis)
    out = np.zeros(x.shape, dtype=x.dtype)
    np.put_along_axis(out, idx, np.asarray(1, dtype=x.dtype), axis=axis)
    return out


def _coerced(fn, x, axis, name):
    """Opset<13 semantics: flatten to 2D [prod(shape[:axis]), prod(shape[axis:])] and apply along dim 1."""
    x = np.asarray(x)
    rank = x.ndim
    a = axis + rank if axis < 0 else axis
    if not 0 <= a <= rank:
        raise InvalidArgument(f"{name}: axis {axis} is out of range for an input of rank {rank}")
    n = int(np.prod(x.shape[:a], dtype=np.int64))
    x2 = x.reshape(n, -1) if x.size else x.reshape(n, int(np.prod(x.shape[a:], dtype=np.int64)))
    return fn(x2, 1).reshape(x.shape)


def _float_apply(fn, x):
    def run(arr, axis):
        if arr.size == 0:
            return arr.copy()
        cd = work_dtype(arr.dtype)
        return fn(arr.astype(cd, copy=False), axis).astype(arr.dtype, copy=False)
    return run


@op("Softmax", since=1)
def softmax_1(x, *, axis=1):
    return _coerced(_float_apply(softmax_along, x), x, axis, "Softmax")


@op("Softmax", since=13)
def softmax_13(x, *, axis=-1):
    return _float_apply(softmax_along, x)(x, _axis(axis, x.ndim, "Softmax"))


@op("LogSoftmax", since=1)
def log_softmax_1(x, *, axis=1):
    return _coerced(_float_apply(log_softmax_along, x), x, axis, "LogSoftmax")


@op("LogSoftmax", since=13)
def log_softmax_13(x, *, axis=-1):
    return _float_apply(log_softmax_along, x)(x, _axis(axis, x.ndim, "LogSoftmax"))


@op("Hardmax", since=1)
def hardmax_1(x, *, axis=1):
    return _coerced(_hardmax_along, x, axis, "Hardmax")


@op("Hardmax", since=13)
def hardmax_13(x, *, axis=-1):
    return _hardmax_along(x, _axis(axis, x.ndim, "Hardmax"))
