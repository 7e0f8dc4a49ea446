"""Elementwise arithmetic: unary math, trig, binary arithmetic, variadic Sum/Mean/Max/Min, bitwise, Clip, Where."""
import functools

import math

import numpy as np

from .. import dtypes as _dt
from ..errors import Fail, InvalidArgument
from .inference import broadcast, broadcast_inputs, elementwise, fixed_type, rule, same_as_input
from .registry import op
from .util import broadcasting, not_broadcastable

# ---------------------------------------------------------------------------------------------------------------
# shared helpers (also imported by logic.py / activation.py)
# ---------------------------------------------------------------------------------------------------------------

def is_exotic_float(dtype):
    """True for bfloat16 / float8 / float4 dtypes, ml_dtypes' or the structured no-ml_dtypes ones (dtypes.py)."""
    return _dt.is_exotic_float(dtype)


def lift(x):
    """(x as a computable array, original dtype or None): exotic floats become their float32 values."""
    x = np.asarray(x)
    if is_exotic_float(x.dtype):
        return _dt.to_float32(x), x.dtype
    return x, None


def lower(y, dtype):
    """Undo `lift` on a result / cast float values to any dtype exactly: a structured exotic dtype rounds through
    dtypes.from_float32 (nearest even, no saturation, like ml_dtypes' astype); any other dtype is a numpy cast."""
    if dtype is None:
        return y
    dtype = np.dtype(dtype)
    if dtype.names is not None and _dt.exotic_code(dtype):  # structured: numpy's astype would store bit patterns
        return _dt.from_float32(y, _dt.exotic_code(dtype), saturate=False)
    return np.asarray(y).astype(dtype)


def lift32(x):
    """Like `lift`, but float16 is also computed in float32 (composite activations)."""
    x = np.asarray(x)
    if x.dtype == np.float16:
        return x.astype(np.float32), x.dtype
    return lift(x)


def floatwise(fn):
    """Decorate a kernel so exotic-float inputs are computed in float32 and cast back to the first input's dtype."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        orig = None
        new = []
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray) and is_exotic_float(a.dtype):
                if i == 0:
                    orig = a.dtype
                a = _dt.to_float32(a)
            new.append(a)
        out = fn(*new, **kwargs)
        if orig is not None:
            if isinstance(out, tuple):
                return tuple(lower(o, orig) if o.dtype.kind == "f" else o for o in out)
            if out.dtype.kind == "f":
                out = lower(out, orig)
        return out

    wrapper.lifts_structured = True  # see unlifted
    return wrapper


def unlifted(kernel):
    """`kernel` without its floatwise / via_float32 lifting wrappers, for callers that know no argument is a
    structured exotic float (the executor, where the model's types say so; fused kernels, already lifted)."""
    while getattr(kernel, "lifts_structured", False):
        kernel = kernel.__wrapped__
    return kernel


def _structured(a):
    return type(a) is np.ndarray and a.dtype.names is not None


def _structured_float(a):
    return isinstance(a, np.ndarray) and a.dtype.names is not None and is_exotic_float(a.dtype)


def via_float32(fn=None, *, outputs=None):
    """Kernel decorator for float kernels: exotic-float inputs in the structured (no-ml_dtypes) form are handed to
    the kernel as their float32 values, and its float results are rounded back with `lower` (compute in float32,
    round once). ml_dtypes arrays pass through untouched: numpy computes on those natively, as the kernel expects.
    `outputs` says which results go back: None = every float result to the first exotic input's dtype; a tuple of
    result indices (to that dtype); or a dict {result index: input index} (to that input's dtype, when it was
    exotic). Structured tensor attributes are lifted too (they set no output type). A call without structured
    exotic-float inputs runs the kernel unchanged."""

    def deco(kernel):
        @functools.wraps(kernel)
        def wrapper(*args, **kwargs):
            if not any(_structured(a) for a in args) and not any(_structured(v) for v in kwargs.values()):
                return kernel(*args, **kwargs)  # the common case: nothing to convert
            dts = [a.dtype if _structured_float(a) else None for a in args]
            first = next((d for d in dts if d is not None), None)
            if any(_structured_float(v) for v in kwargs.values()):  # tensor attributes (e.g. tree thresholds)
                kwargs = {k: _dt.to_float32(v) if _structured_float(v) else v for k, v in kwargs.items()}
            if first is None:
                return kernel(*args, **kwargs)
            out = kernel(*[_dt.to_float32(a) if d is not None else a for a, d in zip(args, dts)], **kwargs)
            if isinstance(outputs, dict):
                plan = {o: dts[i] if i < len(dts) else None for o, i in outputs.items()}
            else:
                n = len(out) if isinstance(out, tuple) else 1
                plan = {o: first for o in (range(n) if outputs is None else outputs)}

            def back(o, v):
                d = plan.get(o)
                if d is None or not isinstance(v, np.ndarray) or v.dtype.kind != "f":
                    return v
                return lower(v, d)

            if isinstance(out, tuple):
                return tuple(back(o, v) for o, v in enumerate(out))
            return back(0, out)

        wrapper.lifts_structured = True  # see unlifted
        return wrapper

    return deco(fn) if fn is not None else deco


def step_rounder(dtype):
    """For kernels that compute step by step in their input's float type (so results round like the reference,
    which computes in that type): None when numpy computes in `dtype` natively (float16/32/64, ml_dtypes), else
    -- a structured exotic float, lifted to float32 -- a function rounding float32 values onto dtype's grid, to
    apply after every step the way ml_dtypes' ufuncs round."""
    dt = np.dtype(dtype)
    if dt.names is None or not is_exotic_float(dt):
        return None
    code = _dt.exotic_code(dt)

    def rnd(v):
        return _dt.to_float32(_dt.from_float32(v, code, saturate=False))

    return rnd


def step_sum(x, axis, rnd):
    """np.sum(x, axis, keepdims=True), accumulated in order with `rnd` after every addition when rnd is given
    (numpy reduces an ml_dtypes array sequentially, rounding each partial sum)."""
    if rnd is None:
        return np.sum(x, axis=axis, keepdims=True)
    xs = np.moveaxis(np.asarray(x), axis, -1)
    if xs.shape[-1] == 0:
        return np.expand_dims(np.zeros(xs.shape[:-1], xs.dtype), axis)
    acc = xs[..., 0].copy()
    for i in range(1, xs.shape[-1]):
        acc = rnd(acc + xs[..., i])
    return np.expand_dims(acc, axis)


def legacy_broadcast(a, b, broadcast, axis, name):
    """Opset<7 binary broadcasting: B is broadcast onto A (suffix-aligned, or aligned at `axis`) when broadcast=1."""
    a, b = np.asarray(a), np.asarray(b)
    if not broadcast:
        if a.shape != b.shape:
            raise InvalidArgument(f"{name}: input shapes {a.shape} and {b.shape} differ and broadcast=0")
        return a, b
    if axis is not None and b.ndim > 0:
        ax = axis + a.ndim if axis < 0 else axis
        trailing = a.ndim - ax - b.ndim
        if trailing < 0:
            raise InvalidArgument(f"{name}: cannot broadcast shape {b.shape} onto {a.shape} at axis {axis}")
        b = b.reshape(b.shape + (1,) * trailing)
    return a, b


def _as(x, dtype):
    return np.asarray(x).astype(dtype, copy=False)


# ---------------------------------------------------------------------------------------------------------------
# unary math
# ---------------------------------------------------------------------------------------------------------------

def _unary(name, fn, since, legacy=False, errstate=True):
    """Register `fn` (numpy array -> array, dtype preserving) as op `name` from each opset in `since`."""

    @floatwise
    def kernel(x):
        if errstate:
            with np.errstate(all="ignore"):
                return _as(fn(x), x.dtype)
        return _as(fn(x), x.dtype)

    if legacy:
        @floatwise
        def kernel_v1(x, *, consumed_inputs=None):
            return kernel(x)

        op(name, since=1, infer=same_as_input)(kernel_v1)
        op(name, since=6, infer=same_as_input)(kernel)
    else:
        op(name, since=since, infer=same_as_input)(kernel)
    return kernel


def _neg(x):
    return np.negative(x)


def _reciprocal(x):
    if x.dtype.kind in "iu":
        with np.errstate(all="ignore"):
            return np.where(x == 0, 0, 1 // np.where(x == 0, 1, x))
    return np.reciprocal(x)


_unary("Abs", np.abs, 1, legacy=True)
_unary("Neg", _neg, 1, legacy=True)
_unary("Reciprocal", _reciprocal, 1, legacy=True)
_unary("Sqrt", np.sqrt, 1, legacy=True)
_unary("Exp", np.exp, 1, legacy=True)
_unary("Log", np.log, 1, legacy=True)
_unary("Ceil", np.ceil, 1, legacy=True)
_unary("Floor", np.floor, 1, legacy=True)
_unary("Round", np.round, 11)  # numpy rounds half to even, as ONNX requires
_unary("Sign", np.sign, 9)
for _name, _fn in (("Sin", np.sin), ("Cos", np.cos), ("Tan", np.tan), ("Asin", np.arcsin), ("Acos", np.arccos),
                   ("Atan", np.arctan)):
    _unary(_name, _fn, 7)
for _name, _fn in (("Sinh", np.sinh), ("Cosh", np.cosh), ("Asinh", np.arcsinh), ("Acosh", np.arccosh),
                   ("Atanh", np.arctanh)):
    _unary(_name, _fn, 9)


# --- erf: no scipy; Taylor series near 0, piecewise Chebyshev interpolants (built at import from math.erf) beyond.
def _build_erf_tables():
    import math
    width, deg, hi = 0.5, 17, 6.0
    n = int(round((hi - width) / width))
    k = np.arange(deg + 1)
    nodes = np.cos(np.pi * (k + 0.5) / (deg + 1))  # Chebyshev nodes on [-1, 1]
    tables = np.empty((n, deg + 1))
    for i in range(n):
        lo = width * (i + 1)
        xs = lo + (nodes + 1.0) * (width / 2)
        ys = np.array([math.erf(v) for v in xs])
        cheb = np.polynomial.chebyshev.chebfit(nodes, ys, deg)
        poly = np.polynomial.chebyshev.cheb2poly(cheb)  # numpy 2.0 (Pyodide) may drop a trailing zero
        tables[i] = np.pad(poly, (0, deg + 1 - len(poly)))[::-1]  # highest power first (Horner order)
    # Taylor coefficients of erf(x)/x in t = x*x, highest first
    taylor = []
    fact = 1.0
    for j in range(20):
        if j:
            fact *= j
        taylor.append((-1) ** j / (fact * (2 * j + 1)) * 2.0 / math.sqrt(math.pi))
    return width, hi, tables, np.array(taylor[::-1])


_erf_tables = functools.lru_cache(maxsize=1)(_build_erf_tables)  # built on the first float64 erf, not at import


# erfc(z) ≈ t·exp(-z² + P(t)), t = 1/(1 + z/2): Chebyshev fit with fractional error < 1.2e-7 (Numerical Recipes)
_ERFC_P = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
           1.00002368, -1.26551223)
_ERF_SMALL = 0.5


def half_erfc_single(z):
    """0.5·erfc(z) for z >= 0 as a fresh float32 array, fractional error < 1.2e-7 (the fit above), in ~25 in-place
    vector ops and no masks (masked numpy loops cost ~40x a plain one on mixed data)."""
    z = np.minimum(z, np.float32(9))          # erfc(9)/2 ≈ 2e-37: beyond, exp would make slow subnormals
    t = z * np.float32(0.5)
    t += np.float32(1)
    np.reciprocal(t, out=t)
    acc = np.full_like(t, _ERFC_P[0])
    for c in _ERFC_P[1:]:
        acc *= t
        acc += np.float32(c)
    acc -= np.square(z)
    with np.errstate(over="ignore", under="ignore"):
        np.exp(acc, out=acc)
    acc *= t
    acc *= np.float32(0.5)
    return acc


def _erf_single(x):
    """erf to float32 accuracy: sign(x)·(1 - erfc|x|), blended with a 7-term Maclaurin series below |x| = 0.5
    (where 1 - erfc would lose relative precision) through a 0/1 weight instead of a mask."""
    xs = x.astype(np.float32)
    ax = np.abs(xs)
    acc = half_erfc_single(ax)
    acc *= np.float32(-2)
    acc += np.float32(1)                      # erf(|x|) for |x| >= 0.5
    np.copysign(acc, xs, out=acc)
    xc = np.minimum(np.maximum(xs, np.float32(-_ERF_SMALL)), np.float32(_ERF_SMALL))  # keeps ±inf out of the
    z = np.square(xc)                                                                       # weighted-away series
    series = np.full_like(z, 1.0 / (720 * 13))  # 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1)), 7 terms below 0.5
    np.negative(z, out=z)
    for n in range(5, -1, -1):
        series *= z
        series += np.float32(1.0 / (math.factorial(n) * (2 * n + 1)))
    series *= xc
    series *= np.float32(2.0 / math.sqrt(math.pi))
    small = np.less(ax, np.float32(_ERF_SMALL)).view(np.uint8).astype(np.float32)
    series -= acc
    series *= small
    acc += series                             # acc + small·(series - acc)
    return acc.astype(x.dtype, copy=False)


def erf_array(x):
    """Vectorised erf: double accuracy for float64, a fast float32-accurate path for narrower floats."""
    x = np.asarray(x)
    if x.dtype in (np.float32, np.float16):
        return _erf_single(x)
    _ERF_W, _ERF_HI, _ERF_TAB, _ERF_TAYLOR = _erf_tables()
    xd = x.astype(np.float64)
    ax = np.abs(xd)
    out = np.empty_like(xd)
    small = ax < _ERF_W
    if small.any():
        xs = xd[small]
        t = xs * xs
        acc = np.zeros_like(t)
        for c in _ERF_TAYLOR:
            acc = acc * t + c
        out[small] = xs * acc
    big = ~small
    if big.any():
        ab = ax[big]
        with np.errstate(invalid="ignore"):
            idx = np.floor(np.nan_to_num(ab, nan=0.0, posinf=_ERF_HI) / _ERF_W).astype(np.int64) - 1
        res = np.ones_like(ab)  # |x| >= _ERF_HI: erf is 1 to double precision
        for i in range(len(_ERF_TAB)):
            sel = idx == i
            if not sel.any():
                continue
            u = (ab[sel] - _ERF_W * (i + 1)) * (2.0 / _ERF_W) - 1.0
            acc = np.zeros_like(u)
            for c in _ERF_TAB[i]:
                acc = acc * u + c
            res[sel] = np.minimum(acc, 1.0)
        res[np.isnan(ab)] = np.nan
        out[big] = np.copysign(res, xd[big])
    return out.astype(x.dtype if x.dtype.kind == "f" else np.float64, copy=False)


@op("Erf", since=9, infer=same_as_input)
@floatwise
def erf(x):
    return _as(erf_array(x), x.dtype)


# ---------------------------------------------------------------------------------------------------------------
# binary arithmetic
# ---------------------------------------------------------------------------------------------------------------

def _int_div(a, b):
    """Integer division truncating toward zero (C semantics); a zero divisor anywhere in b (an empty output too) is
    onnxruntime's Fail."""
    dt = np.result_type(a, b)
    if np.any(b == 0):
        raise Fail("Integer division by zero")
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        if dt.kind == "i":
            fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
            q = q + fix.astype(dt)
        return q.astype(dt, copy=False)


def _add(a, b):
    return np.add(a, b)


def _sub(a, b):
    return np.subtract(a, b)


def _mul(a, b):
    return np.multiply(a, b)


def _div(a, b):
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return _int_div(a, b)
    return np.true_divide(a, b)


def _arith(name, fn):
    @floatwise
    def kernel(a, b):
        a, b = np.asarray(a), np.asarray(b)
        try:
            with np.errstate(all="ignore"):
                out = fn(a, b)
        except ValueError:
            e = not_broadcastable(name, (a, b))
            if e is None:
                raise
            raise e from None
        return _as(out, a.dtype)

    @floatwise
    def kernel_v6(a, b, *, broadcast=0, axis=None):
        a, b = legacy_broadcast(a, b, broadcast, axis, name)
        return kernel(a, b)

    @floatwise
    def kernel_v1(a, b, *, broadcast=0, axis=None, consumed_inputs=None):
        return kernel_v6(a, b, broadcast=broadcast, axis=axis)

    op(name, since=1, infer=elementwise)(kernel_v1)
    op(name, since=6, infer=elementwise)(kernel_v6)
    op(name, since=7, infer=elementwise)(kernel)
    return kernel


add = _arith("Add", _add)
sub = _arith("Sub", _sub)
mul = _arith("Mul", _mul)
div = _arith("Div", _div)


def _pow(x, y):
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(all="ignore"):
        if x.dtype.kind in "iu" and y.dtype.kind in "iub":
            yi = y.astype(np.int64)
            out = np.power(x, np.maximum(yi, 0).astype(x.dtype))
            neg = yi < 0
            if neg.any():  # integer base, negative exponent: pow in double, truncated (only |x| == 1 survives)
                fl = np.trunc(np.power(x.astype(np.float64), yi.astype(np.float64)))
                fl = np.nan_to_num(fl, nan=0.0, posinf=0.0, neginf=0.0)
                out = np.where(neg, fl.astype(x.dtype), out)
            return out.astype(x.dtype, copy=False)
        if x.dtype.kind in "iu":
            return np.trunc(np.power(x.astype(np.float64), y.astype(np.float64))).astype(x.dtype)
        if y.dtype.kind in "iub" or y.dtype.itemsize <= x.dtype.itemsize:
            return np.power(x, y.astype(x.dtype)).astype(x.dtype, copy=False)
        return np.power(x.astype(y.dtype), y).astype(x.dtype)


@op("Pow", since=1)
@floatwise
@broadcasting("Pow")
def pow_v1(x, y, *, broadcast=0, axis=None):
    x, y = legacy_broadcast(x, y, broadcast, axis, "Pow")
    return _pow(x, y)


@op("Pow", since=7)
@floatwise
@broadcasting("Pow")
def pow_(x, y):
    return _pow(x, y)


@rule("Pow")
def _pow_rule(f):
    """The base's type (the exponent may be of another type), broadcast dims."""
    return [(f.type(0), broadcast_inputs(f))]


def _mod(a, b, fmod, float_floor):
    """Integer division remainder (fmod: C's sign of the dividend; else the divisor's sign, as Python's %); a float
    remainder takes fmod=1 before opset 28, an integer one a divisor without zeros (onnxruntime: Fail for both)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" and not fmod and not float_floor:
        raise Fail(f"Mod: fmod must be 1 for floating-point inputs ({a.dtype}) before opset 28")
    if a.dtype.kind in "iu" and np.any(b == 0):
        raise Fail("Integer modulo by zero")
    with np.errstate(all="ignore"):
        return (np.fmod(a, b) if fmod else np.remainder(a, b)).astype(a.dtype, copy=False)


@op("Mod", since=10, infer=elementwise)
@floatwise
@broadcasting("Mod")
def mod(a, b, *, fmod=0):
    return _mod(a, b, fmod, False)


@op("Mod", since=28, infer=elementwise)
@floatwise
@broadcasting("Mod")
def mod_28(a, b, *, fmod=0):
    return _mod(a, b, fmod, True)


# ---------------------------------------------------------------------------------------------------------------
# variadic
# ---------------------------------------------------------------------------------------------------------------

def _variadic(name, fn, finish=None):
    @floatwise
    def kernel(*inputs):
        if not inputs:
            raise InvalidArgument(f"{name}: needs at least one input")
        arrs = [np.asarray(x) for x in inputs]
        dt = arrs[0].dtype
        e = not_broadcastable(name, arrs) if len(arrs) > 1 and len({a.shape for a in arrs}) > 1 else None
        if e is not None:
            raise e
        with np.errstate(all="ignore"):
            out = functools.reduce(fn, arrs)
            if finish is not None:
                out = finish(out, len(arrs))
        return _as(out, dt)

    def same_shapes(*inputs):  # (before opset 8 the inputs do not broadcast)
        if len({np.shape(x) for x in inputs}) > 1:
            raise Fail(f"{name}: all inputs must have the same shape before opset 8, got "
                       f"{[list(np.shape(x)) for x in inputs]}")
        return kernel(*inputs)

    def kernel_v1(*inputs, consumed_inputs=None):
        return same_shapes(*inputs)

    op(name, since=1, infer=elementwise)(kernel_v1)
    op(name, since=6, infer=elementwise)(same_shapes)
    op(name, since=8, infer=elementwise)(kernel)
    return kernel


def _mean_finish(s, n):
    if s.dtype.kind in "iu":
        return _int_div(s, np.asarray(n, s.dtype))
    return s / np.asarray(n, s.dtype)


sum_ = _variadic("Sum", np.add)
mean = _variadic("Mean", np.add, _mean_finish)
max_ = _variadic("Max", np.maximum)
min_ = _variadic("Min", np.minimum)


# ---------------------------------------------------------------------------------------------------------------
# bitwise
# ---------------------------------------------------------------------------------------------------------------

@op("BitShift", since=11, infer=elementwise)
@broadcasting("BitShift")
def bit_shift(x, y, *, direction):
    """Shifts wrap within the type's width; a shift count < 0 or >= width gives 0 (or -1 for a right shift of a
    negative value: arithmetic shift fills with the sign bit)."""
    x, y = np.asarray(x), np.asarray(y)
    bits = x.dtype.itemsize * 8
    oor = (y < 0) | (y >= bits) if y.dtype.kind == "i" else (y >= bits)
    ys = np.where(oor, np.zeros((), y.dtype), y).astype(x.dtype)
    zero = np.zeros((), x.dtype)
    if direction == "LEFT":
        out = np.left_shift(x, ys)
        fill = zero
    elif direction == "RIGHT":
        out = np.right_shift(x, ys)
        fill = np.where(x < 0, np.asarray(-1).astype(x.dtype), zero) if x.dtype.kind == "i" else zero
    else:
        raise InvalidArgument(f"BitShift: direction must be LEFT or RIGHT, got {direction!r}")
    return np.where(oor, fill, out).astype(x.dtype, copy=False)


def _bitwise(name, fn):
    def kernel(a, b):
        a, b = np.asarray(a), np.asarray(b)
        return _as(fn(a, b), a.dtype)

    op(name, since=18, infer=elementwise)(broadcasting(name)(kernel))
    return kernel


bitwise_and = _bitwise("BitwiseAnd", np.bitwise_and)
bitwise_or = _bitwise("BitwiseOr", np.bitwise_or)
bitwise_xor = _bitwise("BitwiseXor", np.bitwise_xor)


@op("BitwiseNot", since=18, infer=same_as_input)
def bitwise_not(x):
    x = np.asarray(x)
    return _as(np.invert(x), x.dtype)


# ---------------------------------------------------------------------------------------------------------------
# predicates, Clip, Where
# ---------------------------------------------------------------------------------------------------------------

@op("IsInf", since=10, infer=fixed_type(_dt.BOOL))
def is_inf(x, *, detect_negative=1, detect_positive=1):
    x, _ = lift(x)
    if x.dtype.kind not in "fc":
        return np.zeros(x.shape, dtype=bool)
    inf = np.isinf(x)
    if not detect_negative:
        inf &= x > 0
    if not detect_positive:
        inf &= x < 0
    return np.asarray(inf, dtype=bool)


@op("IsNaN", since=9, infer=fixed_type(_dt.BOOL))
def is_nan(x):
    x, _ = lift(x)
    if x.dtype.kind not in "fc":
        return np.zeros(x.shape, dtype=bool)
    return np.asarray(np.isnan(x), dtype=bool)


def _clip(x, lo, hi):
    x = np.asarray(x)
    out = x
    if lo is not None:
        out = np.maximum(out, _as(lo, x.dtype))
    if hi is not None:
        out = np.minimum(out, _as(hi, x.dtype))
    return _as(out, x.dtype)


@op("Clip", since=1)
@floatwise
def clip_v1(x, *, min=None, max=None, consumed_inputs=None):  # noqa: A002 - ONNX attribute names
    return _clip(x, min, max)


@op("Clip", since=6)
@floatwise
def clip_v6(x, *, min=-3.4028234663852886e+38, max=3.4028234663852886e+38):  # noqa: A002
    return _clip(x, min, max)


@op("Clip", since=11, host_inputs=(1, 2))
@floatwise
def clip(x, lo=None, hi=None):
    if lo is not None and np.asarray(lo).size != 1 or hi is not None and np.asarray(hi).size != 1:
        raise InvalidArgument("Clip: min and max must be scalars")
    lo = None if lo is None else np.asarray(lo).reshape(())
    hi = None if hi is None else np.asarray(hi).reshape(())
    return _clip(x, lo, hi)


rule("Clip")(same_as_input)


@op("Where", since=9)
@broadcasting("Where")
def where(condition, x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype != y.dtype and not (x.dtype.kind in "OSU" and y.dtype.kind in "OSU"):
        raise InvalidArgument(f"Where: X ({x.dtype}) and Y ({y.dtype}) must be of one type")
    out = np.where(np.asarray(condition, dtype=bool), x, y)
    if x.dtype.kind == "O" or y.dtype.kind in "OUS":
        return np.asarray(out, dtype=object)
    return _as(out, x.dtype)


@rule("Where")
def _where_rule(f):
    """X's (and Y's) type, all three inputs broadcast; shape entries picked where the condition's are known (torch's
    expand(-1) writes Where(Equal(shape, -1), 1, shape))."""
    held = [f.shape_value(i) for i in range(3)]
    if all(h is not None for h in held):
        n = max(len(h[0]) for h in held)
        if all(len(h[0]) in (1, n) for h in held):
            c, x, y = ([h[0][i if len(h[0]) > 1 else 0] for i in range(n)] for h in held)
            if all(isinstance(ci, int) for ci in c):
                f.holds([xi if ci else yi for ci, xi, yi in zip(c, x, y)], all(h[1] for h in held))
    return [(f.common_type([1, 2]), broadcast([d for _, d in f.ins]))]
