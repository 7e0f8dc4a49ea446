"""NativeCPUExecutionProvider's 8-bit integer kernels over libonnxide_cpu (nx_qgemm.c): MatMulInteger on a 2-D B
packed once, DynamicQuantizeLinear. Each has the numpy kernel's calling convention and returns FALLBACK for what it
does not do exactly (other dtypes, batched B, zero points of other shapes or types, non-finite input)."""
import math

import numpy as np

from onnxide.runtime.providers import FALLBACK

from .cpu_ops import _once_or_cached, threads

F32 = np.dtype(np.float32)
INT8 = (np.dtype(np.uint8), np.dtype(np.int8))


def packed_b(lib, b):
    """A 2-D uint8 / int8 B in nx_qgemm's int16 panels (cached for initializers)."""
    def pack(b):
        k, n = b.shape
        bp = np.empty(lib.nx_qgemm_packed_size(k, n), np.int16)
        lib.nx_qgemm_pack_b(k, n, np.ascontiguousarray(b).ctypes.data, int(b.dtype == np.int8), bp.ctypes.data)
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
    if lib.nx_qgemm(m, n, k, np.ascontiguousarray(a).ctypes.data, int(a.dtype == np.int8),
                    None if az is None else az.ctypes.data, 0 if az is None or az.size == 1 else 1, bp.ctypes.data,
                    None if bz is None else bz.ctypes.data, y.ctypes.data, threads()):
        raise MemoryError(f"MatMulInteger {m}x{k} @ {k}x{n}: no scratch memory")
    return y


def matmul_integer(lib, a, b, a_zero_point=None, b_zero_point=None, **_):
    """MatMulInteger of an (..., M, K) 8-bit A by a 2-D 8-bit B; zero points scalar, A's per row (2-D A), B's per
    column."""
    if (type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype not in INT8 or b.dtype not in INT8
            or b.ndim != 2 or a.ndim < 2 or a.shape[-1] != b.shape[0]):
        return FALLBACK
    k, n = b.shape
    az = _zero_point(a_zero_point, a.dtype, a.shape[0] if a.ndim == 2 else -1)
    bz = _zero_point(b_zero_point, b.dtype, n)
    if az is FALLBACK or bz is FALLBACK:
        return FALLBACK
    if bz is not None:
        bz = None if not bz.any() else np.broadcast_to(bz, (n,)).copy()
    return qgemm(lib, a, packed_b(lib, b), az, bz, k, n)


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
