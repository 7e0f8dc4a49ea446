"""Type conversion kernels: Cast, CastLike, BitCast across every ONNX element type, with or without ml_dtypes."""
import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgument
from .inference import rule
from .registry import op

_FORMATS = _dt.FLOAT_FORMATS
_SMALL_INTS = _dt.SMALL_INTS
_EXOTIC = set(_FORMATS) | set(_SMALL_INTS) | {_dt.FLOAT8E8M0}
decode_float, encode_float = _dt.decode_float, _dt.encode_float  # the shared codecs (defined in dtypes.py)


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
    """ONNX element type of input i: from its dtype (exotic representations are self-describing), else from the
    declared input type."""
    # the dtype only (CastLike's target_type is a meta input: it may be a device value)
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    try:
        return _dt.code_of(dtype)
    except KeyError:
        code = _dt.exotic_code(dtype)  # an exotic array of the other representation
        if code:
            return code
    declared = _declared(ctx, i)
    if declared:
        return declared
    raise InvalidArgument(f"Cast: unsupported input dtype {dtype}")


def _bits_of(x, code):
    """Raw bit pattern (uint8/uint16) of an exotic float array (ml_dtypes or structured)."""
    return _dt.raw(x, code)


def _wrap_bits(bits, code):
    """Bits -> onnxide's array for `code` (ml_dtypes when installed, else the structured dtype)."""
    return _dt.wrap(np.array(bits, copy=True), code)


def _small_int_values(x, code):
    """int4/uint4/int2/uint2 array -> its integer values as int8/uint8."""
    return _dt.raw(x, code)


def _wrap_small_int(values, code):
    signed = _SMALL_INTS[code][1]
    return _dt.wrap(np.asarray(values).astype(np.int8 if signed else np.uint8), code)


# ---------------------------------------------------------------------------------------------------------------
# float codecs: shared, in dtypes.py
# ---------------------------------------------------------------------------------------------------------------

def encode_e8m0(v, saturate=True, round_mode="up"):
    """Float values -> float8e8m0 bits (see dtypes.encode_e8m0), refusing a bad round_mode as Cast's error."""
    try:
        return _dt.encode_e8m0(v, saturate, round_mode)
    except ValueError as e:
        raise InvalidArgument(f"Cast: {e}") from None


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


@rule("Cast")
def _cast_rule(f):
    """`to` with the input's dims; cast int shape entries stay shape entries."""
    to = _target_code(f.attr("to"))
    value = f.shape_value(0)
    if value is not None and to in (_dt.INT64, _dt.INT32):
        f.holds(*value)
    return [(to, f.dims(0))]


@op("CastLike", since=15, meta_inputs=(1,))
def cast_like_v15(x, target_type, *, ctx):
    return cast_array(x, elem_code(x, ctx, 0), elem_code(target_type, ctx, 1))


@op("CastLike", since=19, meta_inputs=(1,))
def cast_like_v19(x, target_type, *, saturate=1, ctx):
    return cast_array(x, elem_code(x, ctx, 0), elem_code(target_type, ctx, 1), saturate)


@op("CastLike", since=24, meta_inputs=(1,))
def cast_like(x, target_type, *, saturate=1, round_mode="up", ctx):
    return cast_array(x, elem_code(x, ctx, 0), elem_code(target_type, ctx, 1), saturate, round_mode)


@rule("CastLike")
def _cast_like_rule(f):
    return [(f.type(1), f.dims(0))]


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
        return (_dt.raw(x, code).view(np.uint8) & ((1 << w) - 1)).astype(np.uint8)
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


@rule("BitCast")
def _bit_cast_rule(f):
    return [(int(f.attr("to")), f.dims(0))]
