"""NativeCPUExecutionProvider's 8-bit integer kernels over libonnxide_cpu (nx_qgemm.c): MatMulInteger on a 2-D B
packed once, DynamicQuantizeLinear, and on them QLinearMatMul (requantized by the numpy kernel's own helpers) and
com.microsoft's DynamicQuantizeMatMul / MatMulIntegerToFloat (their float32 epilogue in the GEMM's pass, with the
numpy kernel's arithmetic). Each has the numpy kernel's calling
convention and returns FALLBACK for what it does not do exactly (other dtypes, batched B, zero points or scales of
other shapes or types, non-finite input)."""
import math

import numpy as np

from onnxide import dtypes as D
from onnxide.ops import quant
from onnxide.runtime.providers import FALLBACK

from .cpu_ops import _once_or_cached, threads

F32 = np.dtype(np.float32)
INT8 = (np.dtype(np.uint8), np.dtype(np.int8))


def packed_b(lib, b):
    """A 2-D uint8 / int8 B in nx_qgemm's int16 panels (cached for initializers)."""
    def pack(b):
        k, n = b.shape
        bp = np.empty(lib.nx_qgemm_packed_size(k, n), np.int16)
        bc = np.ascontiguousarray(b)  # (held: a copy's address is only good while the copy lives)
        lib.nx_qgemm_pack_b(k, n, bc.ctypes.data, int(b.dtype == np.int8), bp.ctypes.data)
        return bp
    return _once_or_cached(b, "nx_qgemm_b", pack)


def _zero_point(z, dtype, sizes):
    """A zero point as int32 values: None for none, (values, stride) when it is one value or one per `sizes[0]`
    (row or column), else FALLBACK (the numpy kernel decides: other types, shapes, per-row on batched rows)."""
    if z is None:
        return None
    if type(z) is not np.ndarray or z.dtype != dtype or not (z.size == 1 or (z.ndim == 1 and z.size == sizes)):
        return FALLBACK
    return z.reshape(-1).astype(np.int32)


def qgemm(lib, a, bp, az, bz, k, n):
    """int32 (..., N) = (a − az) · (B − bz) for packed B; az None / int32 of 1 or M values; bz None / int32 (N,)."""
    m = math.prod(a.shape[:-1])
    y = np.empty(a.shape[:-1] + (n,), np.int32)
    a = np.ascontiguousarray(a)  # (held while the kernel runs)
    if lib.nx_qgemm(m, n, k, a.ctypes.data, int(a.dtype == np.int8),
                    None if az is None else az.ctypes.data, 0 if az is None or az.size == 1 else 1, bp.ctypes.data,
                    None if bz is None else bz.ctypes.data, y.ctypes.data, threads()):
        raise MemoryError(f"MatMulInteger {m}x{k} @ {k}x{n}: no scratch memory")
    return y


def _operands(a, b):
    return (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype in INT8 and b.dtype in INT8 and b.ndim == 2
            and a.ndim >= 2 and a.shape[-1] == b.shape[0])


def _integer_operands(lib, a, b, a_zero_point, b_zero_point):
    """(a, packed B, az, bz, K, N) for nx_qgemm, or FALLBACK (zero points of other types or shapes)."""
    k, n = b.shape
    az = _zero_point(a_zero_point, a.dtype, a.shape[0] if a.ndim == 2 else -1)
    bz = _zero_point(b_zero_point, b.dtype, n)
    if az is FALLBACK or bz is FALLBACK:
        return FALLBACK
    if bz is not None:
        bz = None if not bz.any() else np.broadcast_to(bz, (n,)).copy()
    return np.ascontiguousarray(a), packed_b(lib, b), az, bz, k, n


def matmul_integer(lib, a, b, a_zero_point=None, b_zero_point=None, **_):
    """MatMulInteger of an (..., M, K) 8-bit A by a 2-D 8-bit B; zero points scalar, A's per row (2-D A), B's per
    column."""
    if not _operands(a, b):
        return FALLBACK
    ops = _integer_operands(lib, a, b, a_zero_point, b_zero_point)
    return FALLBACK if ops is FALLBACK else qgemm(lib, *ops)


def _matmul_to_float(lib, a, b, a_zero_point, b_zero_point, multiplier, bias):
    """float32 (..., N) = float32(MatMulInteger) · multiplier + bias in one native pass: the numpy kernels' epilogue
    (contrib_quant._finish: a float32 product, then a float32 sum)."""
    if not _operands(a, b):
        return FALLBACK
    ops = _integer_operands(lib, a, b, a_zero_point, b_zero_point)
    if ops is FALLBACK or ops[4] == 0:
        return FALLBACK
    a, bp, az, bz, k, n = ops
    mult = np.ascontiguousarray(multiplier, F32).reshape(-1)
    bias = None if bias is None else np.ascontiguousarray(bias, F32)
    y = np.empty(a.shape[:-1] + (n,), F32)
    if lib.nx_qgemm_f32(math.prod(a.shape[:-1]), n, k, a.ctypes.data, int(a.dtype == np.int8),
                        None if az is None else az.ctypes.data, 0 if az is None or az.size == 1 else 1, bp.ctypes.data,
                        None if bz is None else bz.ctypes.data, mult.ctypes.data, int(mult.size > 1),
                        None if bias is None else bias.ctypes.data, 0, 0.0, 0.0, y.ctypes.data, threads()):
        raise MemoryError(f"MatMulIntegerToFloat {a.shape} @ {k}x{n}: no scratch memory")
    return y


def dynamic_quantize_linear(lib, x, **_):
    """(uint8 y, float32 scale, uint8 zero point) of float32 x; NaN / infinity: the numpy kernel."""
    if type(x) is not np.ndarray or x.dtype != F32:
        return FALLBACK
    x = np.ascontiguousarray(x)
    y = np.empty(x.shape, np.uint8)
    scale, zero = np.zeros((), F32), np.zeros((), np.uint8)
    if lib.nx_dynamic_quantize(x.size, x.ctypes.data, y.ctypes.data, scale.ctypes.data, zero.ctypes.data, threads()):
        return FALLBACK
    return y, scale, zero


def _float_params(*vs, n):
    """Whether each of `vs` is None or a float32 array of one value or `n` (one per column of B)."""
    return all(v is None or (type(v) is np.ndarray and v.dtype == F32 and (v.size == 1 or v.shape == (n,)))
               for v in vs)


def _multiplier(a_scale, b_scale):
    """a_scale · b_scale in float32, as the numpy kernels form it (one value, or one per column)."""
    return a_scale.reshape(()) * b_scale.reshape(-1 if b_scale.size > 1 else ())


def matmul_integer_to_float(lib, a, b, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None, ctx=None):
    """com.microsoft MatMulIntegerToFloat: the native MatMulInteger with the float32 epilogue in the same pass."""
    n = b.shape[-1] if type(b) is np.ndarray and b.ndim else 0
    if not _float_params(a_scale, b_scale, bias, n=n) or a_scale.size != 1:
        return FALLBACK
    return _matmul_to_float(lib, a, b, a_zero_point, b_zero_point, _multiplier(a_scale, b_scale), bias)


def dynamic_quantize_matmul(lib, a, b, b_scale, b_zero_point=None, bias=None, ctx=None):
    """com.microsoft DynamicQuantizeMatMul: native DynamicQuantizeLinear of float32 A, then MatMulInteger with the
    float32 epilogue in the same pass."""
    if type(a) is not np.ndarray or a.dtype != F32 or type(b) is not np.ndarray or b.ndim != 2 or \
            not _float_params(b_scale, bias, n=b.shape[-1]):
        return FALLBACK
    q = dynamic_quantize_linear(lib, a)
    if q is FALLBACK:
        return FALLBACK
    aq, a_scale, a_zp = q
    return _matmul_to_float(lib, aq, b, a_zp, b_zero_point, _multiplier(a_scale, b_scale), bias)


# |Σ (a − a_zero)(b − b_zero)| ≤ K · 255²: below 2³¹ the int32 sums equal the numpy kernel's exact float64 ones
_EXACT_K = (2 ** 31 - 1) // (255 * 255)


def qlinear_matmul(lib, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, ctx=None):
    """QLinearMatMul of 8-bit A (one scale / zero point) by a 2-D 8-bit B (per-tensor or per-column), requantized by
    the numpy kernel's own helpers (scale product in the scales' precision, round half to even, saturate)."""
    if not _operands(a, b) or b.shape[0] > _EXACT_K or type(y_zero_point) is not np.ndarray or \
            y_zero_point.dtype not in INT8 or y_zero_point.size != 1 or \
            not _float_params(a_scale, y_scale, n=1) or not _float_params(b_scale, n=b.shape[1]):
        return FALLBACK
    for z, x in ((a_zero_point, a), (b_zero_point, b)):
        if z is None or type(z) is not np.ndarray or z.dtype != x.dtype:
            return FALLBACK
    if a_zero_point.size != 1 or b_zero_point.size not in (1, b.shape[1]):
        return FALLBACK
    acc = matmul_integer(lib, a, b, a_zero_point, b_zero_point)
    if acc is FALLBACK:
        return FALLBACK
    mult = quant._scale_product(a_scale, b_scale, y_scale)
    return quant._requantize(acc.astype(np.float64), mult, y_zero_point.astype(np.float64),
                             D.code_of(y_zero_point.dtype), "QLinearMatMul")
