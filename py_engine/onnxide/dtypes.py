"""The ONNX element-type table (codes, numpy dtypes, ORT type strings) and the exotic-dtype representation/codecs.

numpy has no bfloat16 / float8 / float4 / int4 / int2. onnxide holds them in one of two documented ways:

- With ml_dtypes installed (CPython, natively): arrays of ml_dtypes' dtypes (ml_dtypes.bfloat16, float8_e4m3fn, ...).
- Without it (Pyodide, or ONNXIDE_NO_ML_DTYPES=1 for testing): a numpy *structured* dtype with one field named
  after the ONNX type, one value per element (unpacked):
      bfloat16 -> [("bfloat16", "<u2")]   float8e4m3fn / e4m3fnuz / e5m2 / e5m2fnuz / e8m0 / float4e2m1 -> [(name, "u1")]
      int4 / int2 -> [(name, "i1")]       uint4 / uint2 -> [(name, "u1")]
  Float kinds hold the bit pattern (float4e2m1 in the low 4 bits), integer kinds hold the value. The dtype kind is
  'V', so numpy arithmetic on it raises rather than computing on bit patterns. Note numpy still lets `.astype()`
  read the field as a plain number, so kernels must convert with `to_float32` / `from_float32` / `raw` / `wrap`,
  never with `.astype`.

`np_dtype(code)` gives the mode's dtype; `code_of` maps both representations back (structured ones in every mode).
`to_float32(arr)` / `from_float32(values, code, saturate)` convert any exotic array to and from float32 exactly
(round to nearest even, ONNX Cast saturation rules); `to_user` turns structured arrays into ml_dtypes ones when
ml_dtypes is installed (outputs), `from_user` converts a fed array into this mode's representation.
"""
import functools
import importlib.util
import os

import numpy as np

# ml_dtypes: optional natively, absent in Pyodide; ONNXIDE_NO_ML_DTYPES=1 makes onnxide behave as if absent. It is
# imported when an exotic type is first met, by _ml_dtypes() (`python -X importtime -c "import onnxide"` put its
# import at ~0.8 s of ~1.2 s here, measured at the time; most models never use one).
HAVE_ML_DTYPES = os.environ.get("ONNXIDE_NO_ML_DTYPES", "") in ("", "0") and \
    importlib.util.find_spec("ml_dtypes") is not None

UNDEFINED = 0
FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL = 1, 2, 3, 4, 5, 6, 7, 8, 9
FLOAT16, DOUBLE, UINT32, UINT64, COMPLEX64, COMPLEX128, BFLOAT16 = 10, 11, 12, 13, 14, 15, 16
FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, UINT4, INT4, FLOAT4E2M1 = 17, 18, 19, 20, 21, 22, 23
FLOAT8E8M0 = 24
UINT2, INT2 = 25, 26

NAMES = {
    FLOAT: "float", UINT8: "uint8", INT8: "int8", UINT16: "uint16", INT16: "int16", INT32: "int32",
    INT64: "int64", STRING: "string", BOOL: "bool", FLOAT16: "float16", DOUBLE: "double", UINT32: "uint32",
    UINT64: "uint64", COMPLEX64: "complex64", COMPLEX128: "complex128", BFLOAT16: "bfloat16",
    FLOAT8E4M3FN: "float8e4m3fn", FLOAT8E4M3FNUZ: "float8e4m3fnuz", FLOAT8E5M2: "float8e5m2",
    FLOAT8E5M2FNUZ: "float8e5m2fnuz", UINT4: "uint4", INT4: "int4", FLOAT4E2M1: "float4e2m1",
    FLOAT8E8M0: "float8e8m0", UINT2: "uint2", INT2: "int2",
}

_STORAGE = {
    FLOAT: np.float32, UINT8: np.uint8, INT8: np.int8, UINT16: np.uint16, INT16: np.int16, INT32: np.int32,
    INT64: np.int64, STRING: np.object_, BOOL: np.bool_, FLOAT16: np.float16, DOUBLE: np.float64,
    UINT32: np.uint32, UINT64: np.uint64, COMPLEX64: np.complex64, COMPLEX128: np.complex128,
}
# Exotic types: plain numpy storage of the bit pattern (floats) or of the value (2/4-bit ints).
_RAW = {
    BFLOAT16: np.dtype("<u2"), FLOAT8E4M3FN: np.dtype(np.uint8), FLOAT8E4M3FNUZ: np.dtype(np.uint8),
    FLOAT8E5M2: np.dtype(np.uint8), FLOAT8E5M2FNUZ: np.dtype(np.uint8), FLOAT8E8M0: np.dtype(np.uint8),
    FLOAT4E2M1: np.dtype(np.uint8), UINT4: np.dtype(np.uint8), INT4: np.dtype(np.int8), UINT2: np.dtype(np.uint8),
    INT2: np.dtype(np.int8),
}
EXOTIC_FLOATS = frozenset((BFLOAT16, FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, FLOAT8E8M0,
                           FLOAT4E2M1))
SMALL_INTS = {INT4: (4, True), UINT4: (4, False), INT2: (2, True), UINT2: (2, False)}  # bits, signed
STRUCT_DTYPES = {c: np.dtype([(NAMES[c], r)]) for c, r in _RAW.items()}
_ML_DTYPE_NAMES = {
    BFLOAT16: "bfloat16", FLOAT8E4M3FN: "float8_e4m3fn", FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    FLOAT8E5M2: "float8_e5m2", FLOAT8E5M2FNUZ: "float8_e5m2fnuz", FLOAT8E8M0: "float8_e8m0fnu",
    FLOAT4E2M1: "float4_e2m1fn", UINT4: "uint4", INT4: "int4", UINT2: "uint2", INT2: "int2",
}
_CODE_BY_ML_NAME = {v: k for k, v in _ML_DTYPE_NAMES.items()}

CODE_BY_NAME = {v: k for k, v in NAMES.items()}


@functools.lru_cache(maxsize=None)
def _ml_dtypes():
    """The ml_dtypes module, imported on first use with its dtypes added to the code table; None without it."""
    if not HAVE_ML_DTYPES:
        return None
    import ml_dtypes
    for code, name in _ML_DTYPE_NAMES.items():
        if hasattr(ml_dtypes, name):
            _CODE_BY_NP[np.dtype(getattr(ml_dtypes, name))] = code
    return ml_dtypes


def _ml(code):
    mld = _ml_dtypes() if code in _ML_DTYPE_NAMES else None
    return None if mld is None else getattr(mld, _ML_DTYPE_NAMES[code], None)


def np_dtype(code):
    """numpy dtype onnxide uses for an ONNX element type (ml_dtypes' when installed, else the structured one)."""
    if code in _STORAGE:
        return np.dtype(_STORAGE[code])
    ml = _ml(code)
    if ml is not None:
        return np.dtype(ml)
    if code in STRUCT_DTYPES:
        return STRUCT_DTYPES[code]
    raise KeyError(f"unknown ONNX element type {code}")


_CODE_BY_NP = {np.dtype(v): k for k, v in _STORAGE.items()}
_CODE_BY_NP[np.dtype(np.str_)] = STRING
_CODE_BY_NP.update({d: c for c, d in STRUCT_DTYPES.items()})


def code_of(dtype):
    """ONNX element type of a numpy dtype (strings of any kind map to STRING)."""
    dt = np.dtype(dtype)
    if dt.kind == "U" or dt.kind == "S":
        return STRING
    code = _CODE_BY_NP.get(dt)
    if code is None and _ml_dtypes() is not None:  # (an ml_dtypes array fed before onnxide needed the module)
        code = _CODE_BY_NP.get(dt)
    if code is None:
        raise KeyError(f"numpy dtype {dt} has no ONNX element type")
    return code


def type_string(code):
    """ORT's tensor type string, e.g. 'tensor(float)'."""
    return f"tensor({NAMES.get(code, 'undefined')})"


def is_exotic(code):
    """True for element types numpy cannot compute on natively (bfloat16, float8, float4, int4, int2)."""
    return code in _RAW


_EXOTIC_CODE_CACHE = {}  # dtype -> code: kernels ask on every call


def exotic_code(dtype):
    """The ONNX code of an exotic dtype (ml_dtypes or structured, in either mode), else 0. Never guesses from kind."""
    code = _EXOTIC_CODE_CACHE.get(dtype)
    if code is None:
        dt = np.dtype(dtype)
        if dt.kind not in "Vf" or dt in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)):
            code = 0
        else:
            code = _foreign_code(dt)
        _EXOTIC_CODE_CACHE[dtype] = code
    return code


def is_exotic_float(dtype):
    """True for bfloat16 / float8 / float4 dtypes (ml_dtypes or structured): compute on them via to_float32."""
    return exotic_code(dtype) in EXOTIC_FLOATS


def is_exotic_dtype(dtype):
    """True for any exotic dtype (floats and 2/4-bit ints, either representation)."""
    return exotic_code(dtype) != 0


def _foreign_code(dt):
    """Code of an exotic dtype in either representation, whatever the mode (ml_dtypes recognised by name)."""
    code = _CODE_BY_NP.get(dt, 0)
    if code in _RAW:
        return code
    if dt.names is None and dt.kind in "Vf" and dt.name in _CODE_BY_ML_NAME and dt.itemsize == _RAW[
            _CODE_BY_ML_NAME[dt.name]].itemsize:
        return _CODE_BY_ML_NAME[dt.name]
    return 0


# ---------------------------------------------------------------------------------------------------------------
# raw storage <-> representation
# ---------------------------------------------------------------------------------------------------------------

def raw(arr, code=None):
    """Exotic array (ml_dtypes or structured, any mode) -> plain numpy storage: uint16/uint8 bit patterns for the
    float kinds, int8/uint8 values for int4/uint4/int2/uint2. A view where possible."""
    arr = np.asarray(arr)
    code = code or _foreign_code(arr.dtype)
    if not code:
        raise TypeError(f"dtype {arr.dtype} is not an exotic ONNX type")
    r = _RAW[code]
    if arr.dtype.names is not None:
        return arr.view(r)
    if code in SMALL_INTS:  # ml_dtypes keeps the low bits of the value
        bits, signed = SMALL_INTS[code]
        u = arr.view(np.uint8) & np.uint8((1 << bits) - 1)
        if not signed:
            return u
        s = u.astype(np.int8)
        return np.where(s >= (1 << (bits - 1)), s - np.int8(1 << bits), s).astype(np.int8)
    return arr.view(r)


def wrap(storage, code):
    """Plain storage (bit patterns / small-int values, as `raw` returns) -> this mode's array for `code`."""
    s = np.asarray(storage)
    r = _RAW[code]
    if s.dtype != r:
        s = s.astype(r)
    ml = _ml(code)
    if ml is None:
        return s.view(STRUCT_DTYPES[code])
    if code in SMALL_INTS:
        return s.astype(ml)
    return s.view(ml)


def as_structured(arr):
    """Any exotic array (ml_dtypes or structured) -> the structured representation (mode-independent)."""
    arr = np.asarray(arr)
    code = _foreign_code(arr.dtype)
    if not code or arr.dtype.names is not None:
        return arr
    return raw(arr, code).view(STRUCT_DTYPES[code])


def to_user(value):
    """Output hand-off: structured exotic arrays become ml_dtypes arrays when ml_dtypes is installed (lists too)."""
    if isinstance(value, list):
        return [to_user(v) for v in value]
    if not isinstance(value, np.ndarray) or value.dtype.names is None or _ml_dtypes() is None:
        return value
    code = _CODE_BY_NP.get(value.dtype, 0)
    return wrap(raw(value, code), code) if code in _RAW else value


def from_user(value):
    """Feed hand-off: an exotic array in the other representation (ml_dtypes arrays in a no-ml_dtypes run,
    structured arrays when ml_dtypes is installed) becomes this mode's array; anything else is unchanged."""
    if isinstance(value, list):
        return [from_user(v) for v in value]
    if not isinstance(value, np.ndarray) or value.dtype.isbuiltin == 1:  # numpy's own types: never exotic
        return value
    code = _foreign_code(value.dtype)
    if not code or value.dtype == np_dtype(code):
        return value
    return wrap(raw(value, code), code)


# ---------------------------------------------------------------------------------------------------------------
# float codecs (bit patterns <-> float values), shared by Cast, QuantizeLinear and every kernel via to/from_float32
# ---------------------------------------------------------------------------------------------------------------

# code -> (exponent bits, mantissa bits, bias, family)
#   ieee: exponent all-ones encodes inf/NaN; fn: only S.1111.111 is NaN, no inf; fnuz: 0x80 is NaN, no -0, no inf;
#   e2m1: no inf, no NaN (always saturates)
FLOAT_FORMATS = {
    BFLOAT16: (8, 7, 127, "ieee"),
    FLOAT8E4M3FN: (4, 3, 7, "fn"),
    FLOAT8E4M3FNUZ: (4, 3, 8, "fnuz"),
    FLOAT8E5M2: (5, 2, 15, "ieee"),
    FLOAT8E5M2FNUZ: (5, 2, 16, "fnuz"),
    FLOAT4E2M1: (2, 1, 1, "e2m1"),
}


def max_finite(code):
    """Largest finite value of an exotic float format."""
    e, m, bias, fam = FLOAT_FORMATS[code]
    top = (1 << e) - 1
    if fam == "ieee":
        return float(np.ldexp(2.0 - 2.0 ** -m, top - 1 - bias))
    if fam == "fn":
        return float(np.ldexp(2.0 - 2.0 ** (1 - m), top - bias))
    return float(np.ldexp(2.0 - 2.0 ** -m, top - bias))  # fnuz, e2m1: every exponent is finite


def decode_float(bits, code):
    """Bit patterns of an exotic float format -> float32 values (exact)."""
    bits = np.asarray(bits)
    if code == BFLOAT16:
        return (bits.astype(np.uint32) << 16).view(np.float32)
    if code == FLOAT8E8M0:
        b = bits.astype(np.int32)
        out = np.ldexp(np.ones(b.shape), np.minimum(b, 254) - 127).astype(np.float32)
        return np.where(b == 0xFF, np.float32(np.nan), out).astype(np.float32)
    e, m, bias, fam = FLOAT_FORMATS[code]
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
    e, m, bias, fam = FLOAT_FORMATS[code]
    with np.errstate(all="ignore"):
        v = np.asarray(v, dtype=np.float64)
        nan = np.isnan(v)
        neg = np.signbit(v)
        a = np.where(nan, 0.0, np.abs(v))
        emin = 1 - bias
        _, fe = np.frexp(np.where(np.isinf(a), 1.0, a))
        exu = np.maximum(fe.astype(np.int64) - 1, emin)
        q = np.ldexp(1.0, exu - m)
        r = np.round(a / q) * q  # exact scaling by powers of two; np.round is half-to-even
        r = np.where(np.isinf(a), np.inf, r)
        maxv = max_finite(code)
        over = r > maxv
        sat = fam == "e2m1" or (code != BFLOAT16 and saturate)
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
    return bits.astype(np.uint16 if code == BFLOAT16 else np.uint8)


def encode_e8m0(v, saturate=True, round_mode="up"):
    """Float values -> float8e8m0 bits (an 8-bit power-of-two exponent, bias 127, 0xFF = NaN); the sign is ignored.
    round_mode is ONNX Cast's: 'up', 'down' or 'nearest'."""
    if round_mode not in ("up", "down", "nearest"):
        raise ValueError(f"round_mode must be 'up', 'down' or 'nearest', got {round_mode!r}")
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


def to_float32(arr):
    """Any array of an exotic type (ml_dtypes or structured, either mode) -> its exact float32 values; other
    numeric arrays are simply cast to float32."""
    arr = np.asarray(arr)
    code = _foreign_code(arr.dtype)
    if not code:
        return arr.astype(np.float32)
    r = raw(arr, code)
    if code in SMALL_INTS:
        return r.astype(np.float32)
    return decode_float(r, code)


def from_float32(values, code, saturate=True):
    """Float values -> this mode's array of element type `code`. Exotic floats round to nearest even with ONNX
    Cast's saturation rules (saturate only affects float8; float8e8m0 rounds up, like Cast's default); int4/uint4/
    int2/uint2 round half to even and clamp to their range; other codes are a plain numpy cast."""
    v = np.asarray(values)
    if code in FLOAT_FORMATS:
        return wrap(encode_float(v, code, bool(saturate)), code)
    if code == FLOAT8E8M0:
        return wrap(encode_e8m0(v, bool(saturate)), code)
    if code in SMALL_INTS:
        bits, signed = SMALL_INTS[code]
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        with np.errstate(invalid="ignore"):
            q = np.clip(np.nan_to_num(np.round(v.astype(np.float64))), lo, hi)
        return wrap(q.astype(_RAW[code]), code)
    return v.astype(np_dtype(code))


def asarray(value, code):
    """Python/numpy value -> an array of ONNX element type `code` in this mode's representation. Exotic codes take
    numbers through `from_float32` (np.asarray(value, dtype=structured) would store the number as a bit pattern);
    arrays already of that type (either representation) are passed through `from_user`."""
    if isinstance(value, np.ndarray) and _foreign_code(value.dtype) == code:
        return from_user(value)
    if code in _RAW:
        return from_float32(np.asarray(value, dtype=np.float64), code)
    return np.asarray(value, dtype=np_dtype(code))
