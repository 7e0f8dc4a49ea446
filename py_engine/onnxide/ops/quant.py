"""Quantization: QuantizeLinear / DequantizeLinear (per-tensor, per-axis, blocked; int2/4/8/16, float8, float4),
DynamicQuantizeLinear, QLinearMatMul, QLinearConv."""
import numpy as np

from .. import dtypes as D
from ..errors import InvalidArgument
from .conv import conv_nd
from .conv_geometry import _kernel_shape, spatial_geometry
from .inference import rule, unknown_dims
from .linalg import matmul_dims
from .math import via_float32
from .registry import op

_INT_RANGES = {
    D.UINT8: (0, 255), D.INT8: (-128, 127), D.UINT16: (0, 65535), D.INT16: (-32768, 32767),
    D.UINT4: (0, 15), D.INT4: (-8, 7), D.UINT2: (0, 3), D.INT2: (-2, 1), D.INT32: (-2 ** 31, 2 ** 31 - 1),
}
_FLOAT8 = {D.FLOAT8E4M3FN: 448.0, D.FLOAT8E4M3FNUZ: 240.0, D.FLOAT8E5M2: 57344.0, D.FLOAT8E5M2FNUZ: 57344.0}
_FLOAT4 = {D.FLOAT4E2M1: 6.0}
_HALF = (D.FLOAT16, D.BFLOAT16)


def _name(kind, ctx):
    return f"{kind} node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) else kind


def _code(arr, ctx, i):
    """ONNX element type of input i: from the declared input type when known (bit-pattern storage is ambiguous
    without ml_dtypes), else from the numpy dtype."""
    types = getattr(ctx, "input_types", None) if ctx is not None else None
    if types and i < len(types) and types[i] is not None:
        try:
            code = types[i].tensor_type.elem_type
        except AttributeError:
            code = 0
        if code:
            return code
    return D.code_of(arr.dtype)


def to_float(arr, code, dtype=np.float32):
    """Values of an array of ONNX type `code` as float32 (or `dtype`); exotic types decode through Cast's codecs,
    which work with or without ml_dtypes."""
    if not D.is_exotic(code):
        return arr.astype(dtype)
    from .cast import cast_array
    return np.asarray(cast_array(arr, code, D.FLOAT)).astype(dtype, copy=False)


def from_float(arr, code, saturate=True):
    """Float values to an array of ONNX type `code` (round to nearest even; Cast's saturation rules)."""
    if not D.is_exotic(code):
        return arr.astype(D.np_dtype(code))
    from .cast import cast_array
    src = D.DOUBLE if arr.dtype == np.float64 else D.FLOAT
    return cast_array(arr.astype(D.np_dtype(src), copy=False), src, code, saturate=int(bool(saturate)))


def _expand(v, shape, axis, block_size, name, what):
    """Reshape/replicate a scale or zero point so it broadcasts against an input of `shape`."""
    if v.ndim == 0:
        return v
    if v.size == 1 and not block_size:
        return v.reshape(())
    rank = len(shape)
    if not -rank <= axis < rank:
        raise InvalidArgument(f"{name}: axis {axis} out of range for rank {rank}")
    axis %= rank
    if not block_size:
        if v.ndim != 1 or v.shape[0] != shape[axis]:
            raise InvalidArgument(f"{name}: {what} shape {v.shape} does not match input dim {axis} ({shape[axis]})")
        return v.reshape([shape[axis] if a == axis else 1 for a in range(rank)])
    if block_size < 0:
        raise InvalidArgument(f"{name}: block_size must be positive")
    if v.ndim != rank or v.shape[axis] != -(-shape[axis] // block_size) or any(
            v.shape[a] != shape[a] for a in range(rank) if a != axis):
        raise InvalidArgument(f"{name}: {what} shape {v.shape} is not a blocking of {tuple(shape)} on axis {axis} "
                              f"with block_size {block_size}")
    v = np.repeat(v, block_size, axis=axis)
    if v.shape[axis] != shape[axis]:
        v = np.take(v, np.arange(shape[axis]), axis=axis)
    return v


def _float_rank(code):
    return {D.FLOAT16: 1, D.BFLOAT16: 1, D.FLOAT: 2, D.DOUBLE: 3}.get(code, 0)


def _quantize(x, y_scale, y_zero_point, axis, saturate, block_size, output_dtype, precision, ctx):
    name = _name("QuantizeLinear", ctx)
    x_code, s_code = _code(x, ctx, 0), _code(y_scale, ctx, 1)
    out_code = output_dtype or 0
    if y_zero_point is not None:
        zp_code = _code(y_zero_point, ctx, 2)
        if out_code and out_code != zp_code:
            raise InvalidArgument(f"{name}: output_dtype {out_code} differs from y_zero_point type {zp_code}")
        out_code = zp_code
    out_code = out_code or D.UINT8
    if out_code not in _INT_RANGES and out_code not in _FLOAT8 and out_code not in _FLOAT4:
        raise InvalidArgument(f"{name}: unsupported quantized type {D.NAMES.get(out_code, out_code)}")
    # precision of x / y_scale: the `precision` attribute, else numpy's promotion of the two types
    if precision:
        prec = precision
    elif _float_rank(x_code) == 0:  # integer x promotes to double
        prec = D.DOUBLE
    elif x_code == s_code:
        prec = x_code
    else:
        rank = max(_float_rank(x_code), _float_rank(s_code))
        prec = {1: D.FLOAT, 2: D.FLOAT, 3: D.DOUBLE}[rank]
    ct = np.float64 if prec == D.DOUBLE else np.float32
    xf = to_float(x, x_code, ct) if x_code not in _INT_RANGES else x.astype(ct)
    sf = _expand(to_float(y_scale, s_code, ct), x.shape, axis, block_size, name, "y_scale")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = xf / sf
    if prec in _HALF:  # the division happens in half precision: round its result there
        q = to_float(from_float(q, prec), prec, np.float32)
    zp = None
    if y_zero_point is not None:
        zp = _expand(to_float(y_zero_point, out_code, np.float64), x.shape, axis, block_size, name, "y_zero_point")
    if out_code in _INT_RANGES:
        lo, hi = _INT_RANGES[out_code]
        q = np.rint(q.astype(np.float64))
        if zp is not None:
            q = q + zp
        q = np.clip(np.nan_to_num(q, nan=0.0), lo, hi)
        return from_float(q, out_code) if D.is_exotic(out_code) else q.astype(D.np_dtype(out_code))
    if zp is not None:
        q = q + zp
    if out_code in _FLOAT8 and saturate:
        m = _FLOAT8[out_code]
        q = np.clip(q, -m, m)  # NaN stays NaN, +-inf saturate
    return from_float(np.asarray(q, dtype=np.float32), out_code, saturate=bool(saturate))


@op("QuantizeLinear", since=10)
def quantize_linear(x, y_scale, y_zero_point=None, *, axis=1, saturate=1, block_size=0, output_dtype=0,
                    precision=0, ctx=None):
    if y_scale.ndim > 1 and not block_size:
        raise InvalidArgument(f"{_name('QuantizeLinear', ctx)}: y_scale must be a scalar or 1-D")
    return _quantize(x, y_scale, y_zero_point, axis, saturate, block_size, output_dtype, precision, ctx)


@rule("QuantizeLinear")
def quantize_rule(f):
    """The zero point's type, else `output_dtype`, else uint8; x's dims."""
    return [(f.type(2) if f.has(2) else f.attr("output_dtype", 0) or D.UINT8, f.dims(0))]


@op("DequantizeLinear", since=10)
def dequantize_linear(x, x_scale, x_zero_point=None, *, axis=1, block_size=0, output_dtype=0, ctx=None):
    name = _name("DequantizeLinear", ctx)
    if output_dtype not in (0, D.FLOAT, D.DOUBLE, D.FLOAT16, D.BFLOAT16):
        raise InvalidArgument(f"{name}: output_dtype {output_dtype} is not a floating-point type")
    if x_scale.ndim > 1 and not block_size:
        raise InvalidArgument(f"{name}: x_scale must be a scalar or 1-D")
    x_code, s_code = _code(x, ctx, 0), _code(x_scale, ctx, 1)
    if x_code in _INT_RANGES:
        dx = x.astype(np.int64) if not D.is_exotic(x_code) else to_float(x, x_code, np.float64).astype(np.int64)
        if x_zero_point is not None:
            zp_code = _code(x_zero_point, ctx, 2)
            if zp_code != x_code:
                raise InvalidArgument(f"{name}: x_zero_point type {D.NAMES.get(zp_code)} differs from x's "
                                      f"{D.NAMES.get(x_code)}")
            zp = x_zero_point.astype(np.int64) if not D.is_exotic(zp_code) else \
                to_float(x_zero_point, zp_code, np.float64).astype(np.int64)
            dx = dx - _expand(zp, x.shape, axis, block_size, name, "x_zero_point")
        dx = dx.astype(np.float64)
    elif x_code in _FLOAT8 or x_code in _FLOAT4:
        dx = to_float(x, x_code, np.float64)
        if x_zero_point is not None:
            dx = dx - _expand(to_float(x_zero_point, x_code, np.float64), x.shape, axis, block_size, name,
                              "x_zero_point")
    else:
        raise InvalidArgument(f"{name}: unsupported input type {D.NAMES.get(x_code, x_code)}")
    scale = _expand(to_float(x_scale, s_code, np.float64), x.shape, axis, block_size, name, "x_scale")
    y = dx * scale
    if s_code != D.DOUBLE:
        y = y.astype(np.float32)
    out_code = output_dtype or s_code
    if out_code in (D.FLOAT, D.DOUBLE):
        return y.astype(D.np_dtype(out_code), copy=False)
    return from_float(y.astype(np.float32, copy=False), out_code)


@rule("DequantizeLinear")
def dequantize_rule(f):
    """`output_dtype`, else the scale's type; x's dims."""
    return [(f.attr("output_dtype", 0) or f.type(1), f.dims(0))]


@op("DynamicQuantizeLinear", since=11)
@via_float32
def dynamic_quantize_linear(x):
    xf = x.astype(np.float32, copy=False)
    maxx = np.float32(max(0.0, float(xf.max()))) if xf.size else np.float32(0)
    minx = np.float32(min(0.0, float(xf.min()))) if xf.size else np.float32(0)
    scale = np.float32(1.0 if maxx == minx else (maxx - minx)) / np.float32(255)
    zp = np.rint(np.clip(np.float32(0) - minx / scale, 0, 255))
    y = np.clip(np.rint(xf / scale) + zp, 0, 255).astype(np.uint8)
    return y, np.asarray(scale, dtype=x.dtype), np.asarray(zp, dtype=np.uint8)


@rule("DynamicQuantizeLinear")
def _dynamic_quantize_rule(f):
    """uint8 y of x's dims, a scale of x's type, a uint8 zero point (both scalars)."""
    return [(D.UINT8, f.dims(0)), (f.type(0), []), (D.UINT8, [])]


def _int_values(a, code):
    return a.astype(np.float64) if not D.is_exotic(code) else to_float(a, code, np.float64)


def _requantize(acc, multiplier, y_zero_point, out_code, name):
    if out_code not in _INT_RANGES:
        raise InvalidArgument(f"{name}: unsupported output type {D.NAMES.get(out_code, out_code)}")
    r = acc * multiplier
    if y_zero_point is not None:
        r = r + y_zero_point
    lo, hi = _INT_RANGES[out_code]
    r = np.clip(np.rint(r), lo, hi)
    return from_float(r, out_code) if D.is_exotic(out_code) else r.astype(D.np_dtype(out_code))


def _scale_product(s1, s2, sy):
    """a_scale * b_scale / y_scale in the scales' own precision (float32, or float16 for half scales)."""
    dt = s1.dtype if s1.dtype in (np.float16, np.float32, np.float64) else np.float32
    s1, s2, sy = (D.to_float32(s) if D.is_exotic_float(s.dtype) else s for s in (s1, s2, sy))  # bf16 scales
    with np.errstate(divide="ignore", invalid="ignore"):
        m = s1.astype(dt) * s2.astype(dt) / sy.astype(dt)
    return m.astype(np.float64)


@op("QLinearMatMul", since=10)
def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, *, ctx=None):
    name = _name("QLinearMatMul", ctx)
    a_code, b_code = _code(a, ctx, 0), _code(b, ctx, 3)
    rows, cols = (a.shape[-2] if a.ndim > 1 else 1), (b.shape[-1] if b.ndim > 1 else 1)
    for what, v, n in (("a_scale", a_scale, rows), ("a_zero_point", a_zero_point, rows), ("b_scale", b_scale, cols),
                       ("b_zero_point", b_zero_point, cols), ("y_scale", y_scale, 1),
                       ("y_zero_point", y_zero_point, 1)):
        if v is not None and np.size(v) not in (1, n):
            raise InvalidArgument(f"{name}: {what} has {np.size(v)} values, expected 1" + (f" or {n}" if n > 1 else ""))
    af, bf = _int_values(a, a_code), _int_values(b, b_code)
    if a_zero_point is not None:
        az = _int_values(np.asarray(a_zero_point), a_code)
        af = af - (az.reshape(-1, 1) if az.ndim == 1 and az.size > 1 else az)
    if b_zero_point is not None:
        bf = bf - _int_values(np.asarray(b_zero_point), b_code)
    if af.ndim < 1 or bf.ndim < 1 or af.shape[-1] != (bf.shape[-2] if bf.ndim > 1 else bf.shape[0]) or \
            any(x != y and 1 not in (x, y) for x, y in zip(a.shape[-3::-1], b.shape[-3::-1])):
        raise InvalidArgument(f"{name}: shapes {a.shape} and {b.shape} cannot be multiplied")
    acc = np.matmul(af, bf)
    sa = np.asarray(a_scale)
    if sa.ndim == 1 and sa.size > 1:
        sa = sa.reshape(-1, 1)
    mult = _scale_product(sa, np.asarray(b_scale), np.asarray(y_scale))
    out_code = _code(y_zero_point, ctx, 7) if y_zero_point is not None else a_code
    yz = _int_values(np.asarray(y_zero_point), out_code) if y_zero_point is not None else None
    return _requantize(acc, mult, yz, out_code, name)


@rule("QLinearMatMul")
def _qlinear_matmul_rule(f):
    """y_zero_point's type (a's without one); matmul dims."""
    return [(f.type(7) if f.has(7) else f.type(0), matmul_dims(f.dims(0), f.dims(3)))]


@op("QLinearConv", since=10)
def qlinear_conv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, b=None, *,
                 auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None, ctx=None):
    name = _name("QLinearConv", ctx)
    x_code, w_code = _code(x, ctx, 0), _code(w, ctx, 3)
    ks = _kernel_shape(kernel_shape, w, name)
    out, pb, pe, st, dil = spatial_geometry(x.shape[2:], ks, strides, dilations, pads, auto_pad, name)
    xf = _int_values(x, x_code)
    if x_zero_point is not None:
        xf -= _int_values(np.asarray(x_zero_point), x_code).reshape(())  # padding then reads the zero point
    wf = _int_values(w, w_code)
    if w_zero_point is not None:
        wz = _int_values(np.asarray(w_zero_point), w_code)
        wf -= wz.reshape((-1,) + (1,) * (w.ndim - 1)) if wz.size > 1 else wz.reshape(())
    acc = conv_nd(xf, wf, group, ks, st, dil, pb, pe, out, name)
    if b is not None:
        acc = acc + b.astype(np.float64).reshape((1, -1) + (1,) * len(ks))
    ws = np.asarray(w_scale)
    if ws.size > 1:
        if ws.ndim != 1 or ws.size != w.shape[0]:
            raise InvalidArgument(f"{name}: w_scale must be scalar or have one value per output channel")
        ws = ws.reshape((-1,) + (1,) * len(ks))
    mult = _scale_product(np.asarray(x_scale), ws, np.asarray(y_scale))
    out_code = _code(y_zero_point, ctx, 7) if y_zero_point is not None else x_code
    yz = _int_values(np.asarray(y_zero_point), out_code) if y_zero_point is not None else None
    return _requantize(acc, mult, yz, out_code, name)


@rule("QLinearConv")
def qlinear_conv_rule(f):
    """y_zero_point's type (x's without one); x's rank."""
    return [(f.type(7) if f.has(7) else f.type(0), unknown_dims(f.rank(0)))]
