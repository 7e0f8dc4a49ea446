"""The MatMulInteger family on an 8-bit GEMM kernel, shared by the native and WASM EPs: which argument forms such a
kernel computes exactly (8-bit A of any rank by a 2-D 8-bit B; zero points of one value, A's per row of a 2-D A, B's
per column; float32 scales of one value or one per column) and how MatMulInteger, MatMulIntegerToFloat,
DynamicQuantizeMatMul and QLinearMatMul run on it with the numpy kernels' arithmetic. Anything else returns FALLBACK
(the numpy kernel computes it or reports the error).

An EP supplies `gemm(a, b, az, bz, mult, bias)`: int32 (..., N) = (a − az) · (b − bz) when `mult` is None, else the
float32 act-free epilogue float32(acc) · mult + bias (a product, then a sum); az None or int32 of 1 or M values, bz
None or int32 (N,), mult float32 of 1 or N values — and `quantize(x)`: DynamicQuantizeLinear of a float32 array as
(uint8 y, float32 scale, uint8 zero point), or FALLBACK (NaN or infinity)."""
import numpy as np

from .. import dtypes as D
from ..runtime.providers import FALLBACK
from . import quant

F32 = np.dtype(np.float32)
INT8 = (np.dtype(np.uint8), np.dtype(np.int8))

# |Σ (a − a_zero)(b − b_zero)| ≤ K · 255²: below 2³¹ the int32 sums equal the numpy kernel's exact float64 ones
EXACT_K = (2 ** 31 - 1) // (255 * 255)


def _zero_point(z, dtype, sizes):
    """A zero point as int32 values: None for none, the values when it is one value or one per `sizes` (row or
    column), else FALLBACK (other types, shapes, per-row on batched rows)."""
    if z is None:
        return None
    if type(z) is not np.ndarray or z.dtype != dtype or not (z.size == 1 or (z.ndim == 1 and z.size == sizes)):
        return FALLBACK
    return z.reshape(-1).astype(np.int32)


def _operands(a, b):
    return (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype in INT8 and b.dtype in INT8 and b.ndim == 2
            and a.ndim >= 2 and a.shape[-1] == b.shape[0])


def _b_zero_point(b, b_zero_point):
    """B's zero point as the kernel takes it (None when all zero, else int32 one per column), or FALLBACK."""
    n = b.shape[1]
    bz = _zero_point(b_zero_point, b.dtype, n)
    if bz is FALLBACK or bz is None:
        return bz
    return None if not bz.any() else np.broadcast_to(bz, (n,)).copy()


def _zero_points(a, b, a_zero_point, b_zero_point):
    """(az, bz) as the kernel takes them, or FALLBACK."""
    az = _zero_point(a_zero_point, a.dtype, a.shape[0] if a.ndim == 2 else -1)
    bz = _b_zero_point(b, b_zero_point)
    return FALLBACK if az is FALLBACK or bz is FALLBACK else (az, bz)


def matmul_integer(gemm, a, b, a_zero_point=None, b_zero_point=None):
    """MatMulInteger of an (..., M, K) 8-bit A by a 2-D 8-bit B."""
    if not _operands(a, b):
        return FALLBACK
    zps = _zero_points(a, b, a_zero_point, b_zero_point)
    return FALLBACK if zps is FALLBACK else gemm(a, b, *zps, None, None)


def _to_float(gemm, a, b, a_zero_point, b_zero_point, mult, bias):
    if not _operands(a, b) or b.shape[0] == 0:
        return FALLBACK
    zps = _zero_points(a, b, a_zero_point, b_zero_point)
    if zps is FALLBACK:
        return FALLBACK
    return gemm(a, b, *zps, np.ascontiguousarray(mult, F32).reshape(-1), _per_column_bias(bias, b.shape[1]))


def _per_column_bias(bias, n):
    """A bias of one value or one per column as the kernels read it: one per column (they index bias[n])."""
    return None if bias is None else np.ascontiguousarray(np.broadcast_to(bias.reshape(-1), (n,)), F32)


def _float_params(*vs, n):
    """Whether each of `vs` is None or a float32 array of one value or `n` (one per column of B)."""
    return all(v is None or (type(v) is np.ndarray and v.dtype == F32 and (v.size == 1 or v.shape == (n,)))
               for v in vs)


def _multiplier(a_scale, b_scale):
    """a_scale · b_scale in float32, as the numpy kernels form it (one value, or one per column)."""
    return a_scale.reshape(()) * b_scale.reshape(-1 if b_scale.size > 1 else ())


def matmul_integer_to_float(gemm, a, b, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
    """com.microsoft MatMulIntegerToFloat: MatMulInteger with the float32 epilogue in the same pass."""
    n = b.shape[-1] if type(b) is np.ndarray and b.ndim else 0
    if not _float_params(a_scale, b_scale, bias, n=n) or a_scale.size != 1:
        return FALLBACK
    return _to_float(gemm, a, b, a_zero_point, b_zero_point, _multiplier(a_scale, b_scale), bias)


def dynamic_quantize_matmul_constants(b, b_scale, b_zero_point, bias, k):
    """DynamicQuantizeMatMul's operands other than A (B of K rows, its scale and zero point, the bias) as the kernels
    take them — (bz, b_scale flat, bias per column), None where absent — or FALLBACK for the forms they do not run.
    (The per-node kernel below and the WASM chains' instruction, whose operands are constants, both start here.)"""
    if type(b) is not np.ndarray or b.dtype not in INT8 or b.ndim != 2 or b.shape[0] != k or k == 0 or \
            not _float_params(b_scale, bias, n=b.shape[1]):
        return FALLBACK
    bz = _b_zero_point(b, b_zero_point)
    if bz is FALLBACK:
        return FALLBACK
    return bz, np.ascontiguousarray(b_scale, F32).reshape(-1), _per_column_bias(bias, b.shape[1])


def dynamic_quantize_matmul(gemm, quantize, a, b, b_scale, b_zero_point=None, bias=None):
    """com.microsoft DynamicQuantizeMatMul: DynamicQuantizeLinear of float32 A, then MatMulInteger with the float32
    epilogue in the same pass."""
    if type(a) is not np.ndarray or a.dtype != F32 or a.ndim < 2:
        return FALLBACK
    operands = dynamic_quantize_matmul_constants(b, b_scale, b_zero_point, bias, a.shape[-1])
    q = FALLBACK if operands is FALLBACK else quantize(a)
    if q is FALLBACK:
        return FALLBACK
    aq, a_scale, a_zp = q
    bz, _, bias = operands
    mult = np.ascontiguousarray(_multiplier(a_scale, b_scale), F32).reshape(-1)
    return gemm(aq, b, a_zp.reshape(-1).astype(np.int32), bz, mult, bias)


def qlinear_matmul(gemm, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    """QLinearMatMul of 8-bit A (one scale / zero point) by a 2-D 8-bit B (per-tensor or per-column), requantized by
    the numpy kernel's own helpers (scale product in the scales' precision, round half to even, saturate)."""
    if not _operands(a, b) or b.shape[0] > EXACT_K or type(y_zero_point) is not np.ndarray or \
            y_zero_point.dtype not in INT8 or y_zero_point.size != 1 or \
            not _float_params(a_scale, y_scale, n=1) or not _float_params(b_scale, n=b.shape[1]):
        return FALLBACK
    for z, x in ((a_zero_point, a), (b_zero_point, b)):
        if z is None or type(z) is not np.ndarray or z.dtype != x.dtype:
            return FALLBACK
    if a_zero_point.size != 1 or b_zero_point.size not in (1, b.shape[1]):
        return FALLBACK
    acc = matmul_integer(gemm, a, b, a_zero_point, b_zero_point)
    if acc is FALLBACK:
        return FALLBACK
    mult = quant._scale_product(a_scale, b_scale, y_scale)
    return quant._requantize(acc.astype(np.float64), mult, y_zero_point.astype(np.float64),
                             D.code_of(y_zero_point.dtype), "QLinearMatMul")
