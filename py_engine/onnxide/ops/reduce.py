"""Reduction kernels: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare (attribute and input `axes`)."""
import numpy as np

from ..errors import InvalidArgument
from .inference import positive_axis, unknown_dims
from .math import is_exotic_float, via_float32
from .registry import op


def _work_dtype(dt):
    """dtype to accumulate in: float32 for float16 and the ml_dtypes floats, the input dtype otherwise (structured
    exotic floats arrive as float32, see via_float32)."""
    if dt == np.float16 or is_exotic_float(dt):
        return np.dtype(np.float32)
    return dt


def norm_axes(r, axes, noop, name):
    """Tuple of normalized axes to reduce over a rank-`r` input, or None when the reduction is the identity
    (noop_with_empty_axes)."""
    if axes is None or len(axes) == 0:
        return None if noop else tuple(range(r))
    out = []
    for a in axes:
        a = int(a)
        if not -r <= a < max(r, 1):
            raise InvalidArgument(f"{name}: axis {a} is out of range for rank {r}")
        out.append(a + r if a < 0 and r else a)
    if len(set(out)) != len(out):
        raise InvalidArgument(f"{name}: repeated axes {list(axes)}")
    return tuple(a for a in out if a < r) if r else ()


def _finish(res, dtype):
    return np.asarray(res).astype(dtype, copy=False)


def _reduce(kind, data, axes, keepdims, noop, name):
    ax = norm_axes(data.ndim, axes, noop, name)
    if ax is None:
        return data
    kd = bool(keepdims)
    dt = data.dtype
    wdt = _work_dtype(dt)
    x = data.astype(wdt, copy=False)
    empty = any(data.shape[a] == 0 for a in ax)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if kind == "sum":
            res = np.sum(x, axis=ax, keepdims=kd, dtype=wdt)
        elif kind == "mean":
            res = np.mean(x, axis=ax, keepdims=kd, dtype=wdt if wdt.kind in "fc" else np.float64)
        elif kind in ("max", "min"):
            if dt == np.bool_:
                fn = np.any if kind == "max" else np.all
                return fn(data, axis=ax, keepdims=kd)
            fn = np.max if kind == "max" else np.min
            if empty:
                if wdt.kind == "f":
                    init = -np.inf if kind == "max" else np.inf
                else:
                    info = np.iinfo(wdt)
                    init = info.min if kind == "max" else info.max
                res = fn(x, axis=ax, keepdims=kd, initial=init)
            else:
                res = fn(x, axis=ax, keepdims=kd)
        elif kind == "prod":
            res = np.prod(x, axis=ax, keepdims=kd, dtype=wdt)
        elif kind == "l1":
            res = np.sum(np.abs(x), axis=ax, keepdims=kd, dtype=wdt)
        elif kind == "l2":
            xf = x if wdt.kind in "fc" else x.astype(np.float64)
            res = np.sqrt(np.sum(xf * xf, axis=ax, keepdims=kd))
        elif kind == "sumsquare":
            res = np.sum(x * x, axis=ax, keepdims=kd, dtype=wdt)
        elif kind == "logsum":
            xf = x if wdt.kind in "fc" else x.astype(np.float64)
            res = np.log(np.sum(xf, axis=ax, keepdims=kd))
        elif kind == "logsumexp":
            xf = x if wdt.kind in "fc" else x.astype(np.float64)
            if empty:
                res = np.log(np.sum(np.exp(xf), axis=ax, keepdims=kd))
            else:
                m = np.max(xf, axis=ax, keepdims=True)
                m = np.where(np.isfinite(m), m, np.zeros((), m.dtype))
                res = np.log(np.sum(np.exp(xf - m), axis=ax, keepdims=True)) + m
                if not kd:
                    res = np.squeeze(res, axis=ax)
        else:  # pragma: no cover - programming error
            raise AssertionError(kind)
    return _finish(res, dt)


def _reduce_rule(f):
    """The input's type; its dims reduced over the attribute's or the constant input's axes (all axes when none,
    or none with noop_with_empty_axes), kept as 1s with keepdims."""
    t0, s0 = f.type(0), f.dims(0)
    keep = f.attr("keepdims", 1)
    if s0 is None:
        return [(t0, None)]
    axes = f.attr("axes")
    if axes is None and f.has(1):
        axes = f.ints(1)
        if axes is None:
            return [(t0, unknown_dims(len(s0)) if keep else None)]
    if not axes:
        if f.attr("noop_with_empty_axes", 0):
            return [(t0, s0)]
        axes = range(len(s0))
    ax = {positive_axis(x, len(s0)) for x in axes}
    return [(t0, [1 if i in ax else d for i, d in enumerate(s0)] if keep else
             [d for i, d in enumerate(s0) if i not in ax])]


def _register(op_type, kind, input_axes_since):
    def attr_form(data, *, axes=None, keepdims=1):
        return _reduce(kind, data, axes, keepdims, 0, op_type)

    def input_form(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
        ax = None if axes is None else np.asarray(axes).astype(np.int64).reshape(-1).tolist()
        return _reduce(kind, data, ax, keepdims, noop_with_empty_axes, op_type)

    attr_form.__name__ = f"{kind}_attr_axes"
    input_form.__name__ = f"{kind}_input_axes"
    op(op_type, since=1, infer=_reduce_rule)(via_float32(attr_form))
    op(op_type, since=input_axes_since, host_inputs=(1,), infer=_reduce_rule)(via_float32(input_form))


for _op_type, _kind, _since in [
    ("ReduceSum", "sum", 13), ("ReduceMean", "mean", 18), ("ReduceMax", "max", 18), ("ReduceMin", "min", 18),
    ("ReduceProd", "prod", 18), ("ReduceL1", "l1", 18), ("ReduceL2", "l2", 18), ("ReduceLogSum", "logsum", 18),
    ("ReduceLogSumExp", "logsumexp", 18), ("ReduceSumSquare", "sumsquare", 18),
]:
    _register(_op_type, _kind, _since)
