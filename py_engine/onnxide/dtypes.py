"""The ONNX element-type table: enum codes, numpy dtypes, ORT type strings, and bit-packed/ML dtype representations.

numpy has no bfloat16 / float8 / int4. Their documented representation inside onnxide (here and in Pyodide):
- bfloat16 and the float8 kinds are held as numpy arrays of the *bit pattern* (uint16 / uint8) tagged by
  a tiny dtype subclass marker (see `BITS_DTYPES`); kernels that compute on them convert to float32 with
  `to_float32` and back with `from_float32` (round-to-nearest-even, saturation per ONNX Cast rules).
- When `ml_dtypes` is installed natively, arrays of its dtypes are accepted as feeds and outputs use them too.
- int4 / uint4 are held unpacked, one value per int8 / uint8 element.
"""
import numpy as np

try:  # optional natively; absent in Pyodide
    import ml_dtypes as _mld
except ImportError:  # pragma: no cover - depends on environment
    _mld = None

# name: (onnx code, ORT type string, storage numpy dtype)
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
# Exotic types: numpy storage of the bit pattern (or of the unpacked value for 2/4-bit ints).
_EXOTIC_STORAGE = {
    BFLOAT16: np.uint16, FLOAT8E4M3FN: np.uint8, FLOAT8E4M3FNUZ: np.uint8, FLOAT8E5M2: np.uint8,
    FLOAT8E5M2FNUZ: np.uint8, FLOAT8E8M0: np.uint8, FLOAT4E2M1: np.uint8,
    UINT4: np.uint8, INT4: np.int8, UINT2: np.uint8, INT2: np.int8,
}
_ML_DTYPE_NAMES = {
    BFLOAT16: "bfloat16", FLOAT8E4M3FN: "float8_e4m3fn", FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    FLOAT8E5M2: "float8_e5m2", FLOAT8E5M2FNUZ: "float8_e5m2fnuz", FLOAT8E8M0: "float8_e8m0fnu",
    FLOAT4E2M1: "float4_e2m1fn", UINT4: "uint4", INT4: "int4", UINT2: "uint2", INT2: "int2",
}

CODE_BY_NAME = {v: k for k, v in NAMES.items()}


def _ml(code):
    if _mld is None or code not in _ML_DTYPE_NAMES:
        return None
    return getattr(_mld, _ML_DTYPE_NAMES[code], None)


def np_dtype(code):
    """numpy dtype onnxide uses for an ONNX element type (ml_dtypes' when installed, else storage)."""
    if code in _STORAGE:
        return np.dtype(_STORAGE[code])
    ml = _ml(code)
    if ml is not None:
        return np.dtype(ml)
    if code in _EXOTIC_STORAGE:
        return np.dtype(_EXOTIC_STORAGE[code])
    raise KeyError(f"unknown ONNX element type {code}")


_CODE_BY_NP = {np.dtype(v): k for k, v in _STORAGE.items()}
_CODE_BY_NP[np.dtype(np.str_)] = STRING
if _mld is not None:
    for _c in _ML_DTYPE_NAMES:
        _t = _ml(_c)
        if _t is not None:
            _CODE_BY_NP[np.dtype(_t)] = _c


def code_of(dtype):
    """ONNX element type of a numpy dtype (strings of any kind map to STRING)."""
    dt = np.dtype(dtype)
    if dt.kind == "U" or dt.kind == "S":
        return STRING
    try:
        return _CODE_BY_NP[dt]
    except KeyError:
        raise KeyError(f"numpy dtype {dt} has no ONNX element type") from None


def type_string(code):
    """ORT's tensor type string, e.g. 'tensor(float)'."""
    return f"tensor({NAMES.get(code, 'undefined')})"


def is_exotic(code):
    """True for element types numpy cannot compute on natively (bfloat16, float8, float4, int4, int2)."""
    return code in _EXOTIC_STORAGE
