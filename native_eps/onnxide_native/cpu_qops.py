"""NativeCPUExecutionProvider's 8-bit integer kernels over libonnxide_cpu (nx_qgemm.c): the GEMM (B packed once into
int16 panels, the float32 epilogue in the same pass) and DynamicQuantizeLinear, under the MatMulInteger family's
argument forms (onnxide.ops.qgemm_forms: MatMulInteger, QLinearMatMul, com.microsoft DynamicQuantizeMatMul /
MatMulIntegerToFloat). Each has the numpy kernel's calling convention and returns FALLBACK for what it does not do
exactly (other dtypes, batched B, zero points or scales of other shapes or types, non-finite input)."""
import math

import numpy as np

from onnxide.ops import conv_winograd, qgemm_forms as forms
from onnxide.runtime.providers import FALLBACK

from .cpu_ops import _once_or_cached, threads

F32 = np.dtype(np.float32)


def packed_b(lib, b):
    """A 2-D uint8 / int8 B in nx_qgemm's panels (cached for initializers, per library: the AVX-512 build on a VNNI
    CPU packs byte quads, the others int16 pairs)."""
    def pack(b):
        k, n = b.shape
        bp = conv_winograd.aligned_empty(lib.nx_qgemm_packed_size(k, n), np.int16)
        bc = np.ascontiguousarray(b)  # (held: a copy's address is only good while the copy lives)
        lib.nx_qgemm_pack_b(k, n, bc.ctypes.data, int(b.dtype == np.int8), bp.ctypes.data)
        return bp
    return _once_or_cached(b, ("nx_qgemm_b", lib.path), pack)


def _gemm(lib):
    """qgemm_forms' gemm on nx_qgemm / nx_qgemm_f32."""
    def gemm(a, b, az, bz, mult, bias):
        k, n = b.shape
        m = math.prod(a.shape[:-1])
        a = np.ascontiguousarray(a)  # (held while the kernel runs)
        bp = packed_b(lib, b)
        azp, az_step = (None, 0) if az is None else (az.ctypes.data, int(az.size > 1))
        bzp = None if bz is None else bz.ctypes.data
        if mult is None:
            y = np.empty(a.shape[:-1] + (n,), np.int32)
            failed = lib.nx_qgemm(m, n, k, a.ctypes.data, int(a.dtype == np.int8), azp, az_step, bp.ctypes.data,
                                  bzp, y.ctypes.data, threads())
        else:
            y = np.empty(a.shape[:-1] + (n,), F32)
            failed = lib.nx_qgemm_f32(m, n, k, a.ctypes.data, int(a.dtype == np.int8), azp, az_step, bp.ctypes.data,
                                      bzp, mult.ctypes.data, int(mult.size > 1),
                                      None if bias is None else bias.ctypes.data, 0, 0.0, 0.0, y.ctypes.data,
                                      threads())
        if failed:
            raise MemoryError(f"MatMulInteger {a.shape} @ {k}x{n}: no scratch memory")
        return y
    return gemm


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


def matmul_integer(lib, a, b, a_zero_point=None, b_zero_point=None, **_):
    return forms.matmul_integer(_gemm(lib), a, b, a_zero_point, b_zero_point)


def matmul_integer_to_float(lib, a, b, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None, ctx=None):
    return forms.matmul_integer_to_float(_gemm(lib), a, b, a_scale, b_scale, a_zero_point, b_zero_point, bias)


def dynamic_quantize_matmul(lib, a, b, b_scale, b_zero_point=None, bias=None, ctx=None):
    return forms.dynamic_quantize_matmul(_gemm(lib), lambda x: dynamic_quantize_linear(lib, x), a, b, b_scale,
                                         b_zero_point, bias)


def qlinear_matmul(lib, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, ctx=None):
    return forms.qlinear_matmul(_gemm(lib), a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
                                y_zero_point)
