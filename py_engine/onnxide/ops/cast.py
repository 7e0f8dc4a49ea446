"""Type conversion kernels: Cast, CastLike, BitCast across every ONNX element type, with or without ml_dtypes."""
import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgument
from .registry import op

# exotic float formats: code -> (exponent bits, mantissa bits, bias, family)
#   ieee: exponent all-ones encodes inf/NaN; fn: only S.1111.111 is NaN, no inf; fnuz: 0x80 is NaN, no -0, no inf;
#   e2m1: no inf, no NaN (always saturates)
_FORMATS = {
    _dt.BFLOAT16: (8, 7, 127, "ieee"),
    _dt.FLOAT8E4M3FN: (4, 3, 7, "fn"),
    _dt.FLOAT8E4M3FNUZ: (4, 3, 8, "fnuz"),
    _dt.FLOAT8E5M2: (5, 2, 15, "ieee"),
    _dt.FLOAT8E5M2FNUZ: (5, 2, 16, "fnuz"),
    _dt.FLOAT4E2M1: (2, 1, 1, "e2m1"),
}
_SMALL_INTS = {_dt.INT4: (4, True), _dt.UINT4: (4, False), _dt.INT2: (2, True), _dt.UINT2: (2, False)}
_EXOTIC = set(_FORMATS) | set(_SMALL_INTS) | {_dt.FLOAT8E8M0}


def _max_finite(code):
    e, m, bias, fam = _FORMATS[code]
    top = (1 << e) - 1
    if fam == "ieee":
        return float(np.ldexp(2.0 - 2.0 ** -m, top - 1 - bias))
    if fam == "fn":
        return float(np.ldexp(2.0 - 2.0 ** (1 - m), top - bias))
    return float(np.ldexp(2.0 - 2.0 ** -m, top - bias))  # fnuz, e2m1: every exponent is finite


# ---------------------------------------------------------------------------------------------------------------
# element-type detection and representation (ml_dtypes dtype when installed, else storage of bits/values)
# ---------------------------------------------------------------------------------------------------------------

def _declared(ctx, i):
    types = getattr(ctx, "input_types", None) if ctx is not None else None
    if not types or i >= len(types) or types[i] is None:
        return 0
    t = types[i]
    try:
        if t.WhichOneof("value") == "tensor_type":
            return t.tensor_type.elem_type
    except (AttributeError, ValueError):
        pass
    return 0


def elem_code(x, ctx=None, i=0):
    """ONNX element type of input i: its dtype, or the declared type when the array is exotic storage."""
    x = np.asarray(x)
    try:
        code = _dt.code_of(x.dtype)
    except KeyError:
        code = 0
    declared = _declared(ctx, i)
    if declared in _EXOTIC and code not in _EXOTIC:
        return declared  # storage representation (no ml_dtypes): trust the declared type
    if code == 0:
        if declared:
            return declared
        raise InvalidArgument(f"Cast: unsupported input dtype {x.dtype}")
    return code


def _bits_of(x, code):
    """Raw bit pattern (uint8/uint16) of an exotic float array, ml_dtypes or storage."""
    x = np.asarray(x)
    width = 16 if code == _dt.BFLOAT16 else 8
    ut = np.uint16 if width == 16 else np.uint8
    if x.dtype in (np.dtype(np.uint8), np.dtype(np.uint16)):
        return x.astype(ut, copy=False)  # storage representation (no ml_dtypes)
    return x.view(ut)


def _wrap_bits(bits, code):
    """Bits (storage) -> onnxide's array for `code` (an ml_dtypes view when installed)."""
    dt = _dt.np_dtype(code)
    if dt.itemsize == bits.dtype.itemsize and dt != bits.dtype:
        return bits.copy(order="C").view(dt)
    return bits.astype(dt, copy=False)


def _small_int_values(x, code):
    """int4/uint4/int2/uint2 array -> its integer values as int8/uint8."""
    signed = _SMALL_INTS[code][1]
    return np.asarray(x).astype(np.int8 if signed else np.uint8, copy=False)


def _wrap_small_int(values, code):
    signed = _SMALL_INTS[code][1]
    v = np.asarray(values).astype(np.int8 if signed else np.uint8)
    return v.astype(_dt.np_dtype(code), copy=False)


# ---------------------------------------------------------------------------------------------------------------
# float codecs
# ---------------------------------------------------------------------------------------------------------------

def decode_float(bits, code):
    """Bit patterns of an exotic float format -> float32 values (exact)."""
    if code == _dt.BFLOAT16:
        return (bits.astype(np.uint32) << 16).view(np.float32)
    if code == _dt.FLOAT8E8M0:
        b = bits.astype(np.int32)
        out = np.ldexp(np.ones(b.shape), b - 127).astype(np.float32)
        return np.where(b == 0xFF, np.float32(np.nan), out).astype(np.float32)
    e, m, bias, fam = _FORMATS[code]
    b = bits.astype(np.int64)
    sign = (b >> (e + m)) & 1
    ex = (b >> m) & ((1 << e) - 1)
    man = b & ((1 << m) - 1)
    mag = np.where(ex == 0, np.ldexp(man.astype(np.float64), 1 - bias - m),
                   np.ldexp((man + (1 << m)).astype(np.float64), ex - bias - m))
    val = np.where(sign == 1, -mag, mag)
    top = (1 << e) - 1
    nan = np.where(sign == 1, -np.nan, np.nan)  # NaN keeps the pattern's sign bit
    if fam == "ieee":
        val = np.where(ex == top, np.where(man == 0, np.where(sign == 1, -np.inf, np.inf), nan), val)
    elif fam == "fn":
        val = np.where((ex == top) & (man == (1 << m) - 1), nan, val)
    elif fam == "fnuz":
        val = np.where(b == 0x80, nan, val)
    return val.astype(np.float32)


def encode_float(v, code, saturate=True):
    """Float values (any float dtype) -> bit patterns of `code`, rounding to nearest even, with ONNX's
    saturation / overflow rules (bfloat16 follows plain float rules: overflow gives inf)."""
    e, m, bias, fam = _FORMATS[code]
    v = np.asarray(v, dtype=np.float64)
    with np.errstate(all="ignore"):
        nan = np.isnan(v)
        neg = np.signbit(v)
        a = np.where(nan, 0.0, np.abs(v))
        emin = 1 - bias
        _, fe = np.frexp(np.where(np.isinf(a), 1.0, a))
        exu = np.maximum(fe.astype(np.int64) - 1, emin)
        q = np.ldexp(1.0, exu - m)
        r = np.round(a / q) * q  # exact scaling by powers of two; np.round is half-to-even
        r = np.where(np.isinf(a), np.inf, r)
        maxv = _max_finite(code)
        over = r > maxv
        sat = fam == "e2m1" or (code != _dt.BFLOAT16 and saturate)
        if sat:
            r = np.where(over, maxv, r)
            over = np.zeros_like(over)
        rr = np.where(over, 0.0, r)
        _, fe2 = np.frexp(rr)
        exu2 = np.maximum(fe2.astype(np.int64) - 1, emin)
        normal = rr >= np.ldexp(1.0, emin)
        exf = np.where(normal, exu2 + bias, 0)
        man = np.where(normal, rr / np.ldexp(1.0, exu2 - m) - (1 << m), rr / np.ldexp(1.0, emin - m))
        man = np.round(man).astype(np.int64)
        sign = neg.astype(np.int64)
        if fam == "fnuz":
            sign = np.where(rr == 0, 0, sign)
        bits = (sign << (e + m)) | (exf.astype(np.int64) << m) | man
        top = (1 << e) - 1
        sbit = sign << (e + m)
        if fam == "ieee":
            inf_bits = sbit | (top << m)
            nan_bits = (neg.astype(np.int64) << (e + m)) | (top << m) | (1 << (m - 1))
            bits = np.where(over, inf_bits, bits)
        elif fam == "fn":
            nan_bits = (neg.astype(np.int64) << (e + m)) | (top << m) | ((1 << m) - 1)
            bits = np.where(over, nan_bits, bits)
        elif fam == "fnuz":
            nan_bits = np.full(bits.shape, 0x80, dtype=np.int64)
            bits = np.where(over, nan_bits, bits)
        else:  # e2m1 has no NaN: NaN becomes a zero (ml_dtypes' choice: sign-inverted zero)
            nan_bits = np.where(neg, 0, 1 << (e + m))
        bits = np.where(nan, nan_bits, bits)
    return bits.astype(np.uint16 if code == _dt.BFLOAT16 else np.uint8)


def encode_e8m0(v, saturate=True, round_mode="up"):
    """Float values -> float8e8m0 bits (an 8-bit power-of-two exponent, bias 127, 0xFF = NaN); the sign is ignored."""
    if round_mode not in ("up", "down", "nearest"):
        raise InvalidArgument(f"Cast: round_mode must be 'up', 'down' or 'nearest', got {round_mode!r}")
    f = np.asarray(v, dtype=np.float32)
    with np.errstate(all="ignore"):
        fbits = f.copy(order="C").view(np.uint32).astype(np.int64)
    exp = (fbits >> 23) & 0xFF
    frac = fbits & 0x7FFFFF
    isnan = np.isnan(f)
    isinf = np.isinf(f)
    finite = ~(isnan | isinf)
    if round_mode == "up":
        inc = frac > 0
    elif round_mode == "nearest":
        inc = ((fbits >> 22) & 1 == 1) & (((fbits & 0x3FFFFF) > 0) | (exp > 0))
    else:
        inc = np.zeros(exp.shape, dtype=bool)
    inc &= finite
    if saturate:
        inc &= exp != 0xFE
    out = exp + inc.astype(np.int64)
    if saturate:
        out = np.where(isinf, 0xFE, out)
    else:
        out = np.where(isinf | (finite & (exp == 0)), 0xFF, out)
    out = np.where(isnan, 0xFF, out)
    return np.minimum(out, 0xFF).astype(np.uint8)


# ---------------------------------------------------------------------------------------------------------------
# strings
# ---------------------------------------------------------------------------------------------------------------

def _to_str(v):
    """Values -> object array of Python str the way onnxruntime writes them: floats of every width as C's "%.8g"
    with NaN / INF / -INF spelled as ONNX reserves them, integers in decimal, bools as "1" / "0"."""
    v = np.asarray(v)
    if v.dtype.kind == "O":
        return np.array([x.decode("utf-8") if isinstance(x, bytes) else str(x) for x in v.ravel().tolist()],
                        dtype=object).reshape(v.shape)
    if v.dtype.kind == "b":
        return np.where(v, "1", "0").astype(object)
    if v.dtype.kind == "f":
        fin = np.isfinite(v)
        s = np.char.mod("%.8g", np.where(fin, v, 0).astype(np.float64)).astype(object)
        s = np.where(np.isnan(v), "NaN", s)
        s = np.where(np.isposinf(v), "INF", s)
        s = np.where(np.isneginf(v), "-INF", s)
        return np.asarray(s, dtype=object)
    return v.astype(np.str_).astype(object)


def _str_list(x):
    return [(s.decode("utf-8") if isinstance(s, bytes) else str(s)).strip() for s in np.asarray(x).ravel().tolist()]


def _parse_float(s):
    try:
        return float(s)
    except ValueError:
        low = s.lower()
        if low in ("+inf", "inf", "infinity", "+infinity"):
            return float("inf")
        if low in ("-inf", "-infinity"):
            return float("-inf")
        raise InvalidArgument(f"Cast: cannot parse {s!r} as a number") from None


def _parse_strings(x, to):
    """String tensor -> numeric values for target code `to` (floats as float64, ints as exact int64/uint64)."""
    x = np.asarray(x)
    items = _str_list(x)
    target = _dt.np_dtype(to) if to not in _EXOTIC else None
    if to == _dt.BOOL:
        vals = [s.lower() == "true" or (s.lower() != "false" and _parse_float(s) != 0) for s in items]
        return np.array(vals, dtype=bool).reshape(x.shape)
    if target is not None and target.kind in "iu":
        out = []
        bits = target.itemsize * 8
        for s in items:
            try:
                n = int(s, 10)
            except ValueError:
                fv = _parse_float(s)
                n = int(fv) if np.isfinite(fv) else 0
            n &= (1 << bits) - 1
            if target.kind == "i" and n >= 1 << (bits - 1):
                n -= 1 << bits
            out.append(n)
        return np.array(out, dtype=target).reshape(x.shape)
    if to in _SMALL_INTS:
        return np.array([int(_parse_float(s)) for s in items], dtype=np.int64).reshape(x.shape)
    return np.array([_parse_float(s) for s in items], dtype=np.float64).reshape(x.shape)


# ---------------------------------------------------------------------------------------------------------------
# the conversion
# ---------------------------------------------------------------------------------------------------------------

def _values(x, code):
    """Input array of element type `code` -> numpy-computable values (exotic floats as float32)."""
    if code in _FORMATS or code == _dt.FLOAT8E8M0:
        return decode_float(_bits_of(x, code), code)
    if code in _SMALL_INTS:
        return _small_int_values(x, code)
    return np.asarray(x)


def _float_to_small_int(v, nbits, signed):
    """Float -> int4/int2 family: truncate toward zero; NaN and out-of-range values give 0."""
    lo, hi = (-(1 << (nbits - 1)), (1 << (nbits - 1)) - 1) if signed else (0, (1 << nbits) - 1)
    with np.errstate(invalid="ignore"):
        t = np.trunc(np.asarray(v, dtype=np.float64))
        ok = (t >= lo) & (t <= hi)
        return np.where(ok, np.nan_to_num(t), 0).astype(np.int64)


def cast_array(x, src, to, saturate=1, round_mode="up"):
    """Convert array `x` of ONNX element type `src` to element type `to` per the ONNX Cast rules."""
    x = np.asarray(x)
    if src == to:
        return x.copy() if to != _dt.STRING else _to_str(x)
    if src == _dt.STRING:
        v = _parse_strings(x, to)
    else:
        v = _values(x, src)
    if to == _dt.STRING:
        return _to_str(v)
    if to in _SMALL_INTS:
        nbits, signed = _SMALL_INTS[to]
        if v.dtype.kind == "f":
            iv = _float_to_small_int(v, nbits, signed)
        else:
            iv = v.astype(np.int64) & ((1 << nbits) - 1)
            if signed:
                iv = np.where(iv >= 1 << (nbits - 1), iv - (1 << nbits), iv)
        return _wrap_small_int(iv, to)
    if to == _dt.FLOAT8E8M0:
        return _wrap_bits(encode_e8m0(v.astype(np.float32) if v.dtype != np.float32 else v, bool(saturate),
                                      round_mode), to)
    if to in _FORMATS:
        vv = v if v.dtype.kind == "f" else v.astype(np.float64)
        return _wrap_bits(encode_float(vv, to, bool(saturate)), to)
    target = _dt.np_dtype(to)
    if target == np.bool_:
        return np.asarray(v != 0, dtype=bool) if v.dtype.kind != "b" else v.copy()
    with np.errstate(all="ignore"):
        if v.dtype.kind == "f" and target.kind in "iu":
            # floats to ints: truncate; out-of-range is undefined by ONNX (numpy's wrap/sentinel is kept)
            return v.astype(target)
        return v.astype(target)


def _target_code(to):
    if isinstance(to, str):  # Cast-1: the type's name
        code = _dt.CODE_BY_NAME.get(to.lower())
        if code is None:
            raise InvalidArgument(f"Cast: unknown type name {to!r}")
        return code
    return int(to)


@op("Cast", since=1)
def cast_v1(x, *, to, ctx):
    return cast_array(x, elem_code(x, ctx, 0), _target_code(to))


@op("Cast", since=6)
def cast_v6(x, *, to, ctx):
    return cast_array(x, elem_code(x, ctx, 0), int(to))


@op("Cast", since=19)
def cast_v19(x, *, to, saturate=1, ctx):
    return cast_array(x, elem_code(x, ctx, 0), int(to), saturate)


@op("Cast", since=24)
def cast(x, *, to, saturate=1, round_mode="up", ctx):
    return cast_array(x, elem_code(x, ctx, 0), int(to), saturate, round_mode)


@op("CastLike", since=15)
def cast_like_v15(x, target_type, *, ctx):
    return cast_array(x, elem_code(x, ctx, 0), elem_code(target_type, ctx, 1))


@op("CastLike", since=19)
def cast_like_v19(x, target_type, *, saturate=1, ctx):
    return cast_array(x, elem_code(x, ctx, 0), elem_code(target_type, ctx, 1), saturate)


@op("CastLike", since=24)
def cast_like(x, target_type, *, saturate=1, round_mode="up", ctx):
    return cast_array(x, elem_code(x, ctx, 0), elem_code(target_type, ctx, 1), saturate, round_mode)


# ---------------------------------------------------------------------------------------------------------------
# BitCast
# ---------------------------------------------------------------------------------------------------------------

def _bit_width(code):
    if code in _SMALL_INTS:
        return _SMALL_INTS[code][0]
    if code == _dt.FLOAT4E2M1:
        return 4
    if code == _dt.BFLOAT16:
        return 16
    if code in _FORMATS or code == _dt.FLOAT8E8M0:
        return 8
    if code == _dt.STRING:
        raise InvalidArgument("BitCast: string tensors cannot be bit-cast")
    return _dt.np_dtype(code).itemsize * 8


_UINT = {2: np.uint8, 4: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64, 128: None}


def _raw_bits(x, code):
    """Array -> unsigned integers holding each element's bit pattern (little-endian value order)."""
    x = np.asarray(x)
    w = _bit_width(code)
    if code in _SMALL_INTS:
        plain = x.dtype in (np.dtype(np.int8), np.dtype(np.uint8))
        raw = x.astype(np.int16).astype(np.uint8) if plain else x.view(np.uint8)
        return (raw & ((1 << w) - 1)).astype(np.uint8)
    if code in _FORMATS or code == _dt.FLOAT8E8M0:
        raw = _bits_of(x, code)
        return raw & np.asarray((1 << w) - 1, raw.dtype) if w == 4 else raw
    ut = _UINT.get(w)
    if ut is None:
        raise InvalidArgument(f"BitCast: unsupported element type {_dt.NAMES.get(code, code)}")
    xc = x.astype(x.dtype.newbyteorder("<"), order="C")
    return xc.view(ut)


def _from_raw(bits, code):
    w = _bit_width(code)
    if code in _SMALL_INTS:
        v = bits.astype(np.int64)
        if _SMALL_INTS[code][1]:
            v = np.where(v >= 1 << (w - 1), v - (1 << w), v)
        return _wrap_small_int(v, code)
    if code in _FORMATS or code == _dt.FLOAT8E8M0:
        return _wrap_bits(bits.astype(np.uint16 if w == 16 else np.uint8), code)
    target = _dt.np_dtype(code)
    if target == np.bool_:
        return np.asarray(bits != 0, dtype=bool)
    return bits.copy(order="C").view(target.newbyteorder("<")).astype(target, copy=False)


@op("BitCast", since=26)
def bit_cast(x, *, to, ctx):
    src = elem_code(x, ctx, 0)
    to = int(to)
    if _bit_width(src) != _bit_width(to):
        raise InvalidArgument(f"BitCast: {_dt.NAMES.get(src, src)} and {_dt.NAMES.get(to, to)} differ in bit width")
    if src == to:
        return np.asarray(x).copy()
    return _from_raw(_raw_bits(x, src), to)
