"""Softmax, LogSoftmax and Hardmax: the opset<13 coerce-to-2D semantics and the opset>=13 single-axis semantics."""
import numpy as np

from ..errors import Fail, InvalidArgument
from .inference import rule, same_as_input
from .math import is_exotic_float, lift, lower, step_rounder, step_sum
from .registry import op
from .util import norm_axis


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
    if dt.names is None and (dt.kind == "f" or dt.name == "bfloat16"):
        return dt  # (float8_e5m2 has kind 'f' too: ml_dtypes computes on it natively, like on bfloat16)
    return np.dtype(np.float32)


def _id(v):
    return v


# Rows of all -inf (a fully masked attention row), +inf or NaN give NaN as the spec says: numpy's warnings about
# those steps (0 / 0, log(0), inf - inf) are expected, not news for the user.
_quiet = np.errstate(divide="ignore", invalid="ignore", over="ignore")


@_quiet
def softmax_along(x, axis, rnd=None):
    """Numerically stable softmax of float array `x` along `axis` (rows of all -inf give NaN like the spec).
    `rnd` (see math.step_rounder) rounds every step when emulating a narrower float type."""
    r = rnd or _id
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, np.zeros_like(m))
    e = r(np.exp(r(x - m)))
    return r(e / step_sum(e, axis, rnd))


@_quiet
def log_softmax_along(x, axis, rnd=None):
    r = rnd or _id
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, np.zeros_like(m))
    s = r(x - m)
    return r(s - r(np.log(step_sum(r(np.exp(s)), axis, rnd))))


def _hardmax_along(x, axis):
    if x.size == 0:
        return x.copy()
    xf, orig = lift(x)  # exotic floats: argmax on their values, the result back in their type
    idx = np.expand_dims(np.argmax(xf, axis=axis), axis)
    out = np.zeros(xf.shape, dtype=xf.dtype)
    np.put_along_axis(out, idx, np.asarray(1, dtype=xf.dtype), axis=axis)
    return lower(out, orig)


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
        if arr.dtype.names is not None and is_exotic_float(arr.dtype):  # structured: float32, rounded each step
            return lower(fn(lift(arr)[0], axis, step_rounder(arr.dtype)), arr.dtype)
        cd = work_dtype(arr.dtype)
        return fn(arr.astype(cd, copy=False), axis).astype(arr.dtype, copy=False)
    return run


def _not_scalar(x, name):
    """Softmax, LogSoftmax and Hardmax need an axis: a 0-d input fails (onnxruntime: Fail)."""
    if np.ndim(x) == 0:
        raise Fail(f"{name}: input rank must be >= 1, got a scalar")


@op("Softmax", since=1)
def softmax_1(x, *, axis=1):
    _not_scalar(x, "Softmax")
    return _coerced(_float_apply(softmax_along, x), x, axis, "Softmax")


@op("Softmax", since=13)
def softmax_13(x, *, axis=-1):
    _not_scalar(x, "Softmax")
    return _float_apply(softmax_along, x)(x, norm_axis(axis, x.ndim, "Softmax"))


@op("LogSoftmax", since=1)
def log_softmax_1(x, *, axis=1):
    _not_scalar(x, "LogSoftmax")
    return _coerced(_float_apply(log_softmax_along, x), x, axis, "LogSoftmax")


@op("LogSoftmax", since=13)
def log_softmax_13(x, *, axis=-1):
    _not_scalar(x, "LogSoftmax")
    return _float_apply(log_softmax_along, x)(x, norm_axis(axis, x.ndim, "LogSoftmax"))


@op("Hardmax", since=1)
def hardmax_1(x, *, axis=1):
    _not_scalar(x, "Hardmax")
    return _coerced(_hardmax_along, x, axis, "Hardmax")


@op("Hardmax", since=13)
def hardmax_13(x, *, axis=-1):
    _not_scalar(x, "Hardmax")
    return _hardmax_along(x, norm_axis(axis, x.ndim, "Hardmax"))


@rule("Softmax", "LogSoftmax", "Hardmax")
def _softmax_rule(f):
    """Like the input; a 0-d input fails at load where its rank is known (onnxruntime's shape inference)."""
    if f.rank(0) == 0:
        raise Fail(f"Node ({f.node.name}) Op ({f.node.op_type}) [ShapeInferenceError] Input rank must be >= 1 for "
                   f"{f.node.op_type}.")
    return same_as_input(f)
