"""The WASM EP's 8-bit kernels (wasm_kernels/ox_qgemm.c): MatMulInteger, DynamicQuantizeLinear, QLinearMatMul and
com.microsoft DynamicQuantizeMatMul / MatMulIntegerToFloat on the module's int8 GEMM, in the argument forms of
onnxide.ops.qgemm_forms (same claim / fallback contract as wasm_ops.py)."""
import functools
import math

import numpy as np

from ..ops import qgemm_forms as forms, weight_cache
from .wasm_ops import F32, FALLBACK, guarded, scratch_floats
from .wasm_runtime import In, Out, Scratch


def packed_b(rt, b):
    """A 2-D uint8 / int8 B in ox_qgemm's int16 panels (cached for initializers)."""
    def pack(b):
        k, n = b.shape
        bp = np.empty(rt.call("ox_qgemm_packed_size", [k, n]), np.int16)
        rt.call("ox_qgemm_pack_b", [k, n, In(np.ascontiguousarray(b)), int(b.dtype == np.int8), Out(bp)])
        return bp
    return weight_cache.derived(b, "ox_qgemm_b", pack)


def _gemm(rt):
    """qgemm_forms' gemm on ox_qgemm."""
    def gemm(a, b, az, bz, mult, bias):
        k, n = b.shape
        m = math.prod(a.shape[:-1])
        a = np.ascontiguousarray(a)
        head = [m, n, k, In(a), int(a.dtype == np.int8), 0 if az is None else In(az),
                int(az is not None and az.size > 1), In(packed_b(rt, b)), 0 if bz is None else In(bz)]
        scratch = Scratch(scratch_floats(rt, "ox_qgemm_scratch_floats", (m, k)))
        if mult is None:
            y = np.empty(a.shape[:-1] + (n,), np.int32)
            rt.call("ox_qgemm", head + [Out(y), 0, 0, 0, 0, scratch])
        else:
            y = np.empty(a.shape[:-1] + (n,), F32)
            rt.call("ox_qgemm", head + [0, In(mult), int(mult.size > 1), 0 if bias is None else In(bias), Out(y),
                                        scratch])
        return y
    return gemm


def dynamic_quantize_linear(rt, x):
    """(uint8 y, float32 scale, uint8 zero point) of float32 x; NaN / infinity: the numpy kernel."""
    if type(x) is not np.ndarray or x.dtype != F32:
        return FALLBACK
    x = np.ascontiguousarray(x)
    y = np.empty(x.shape, np.uint8)
    scale, zero = np.zeros((), F32), np.zeros((), np.uint8)
    if rt.call("ox_dynamic_quantize", [x.size, In(x), Out(y), Out(scale), Out(zero)]):
        return FALLBACK
    return y, scale, zero


def _claim(kernel_of):
    """A claim whose kernel is kernel_of(rt), made once per node (none of these ops has attributes to check)."""
    def claim(rt, node, opdef, attrs):
        if attrs:
            return None
        run = kernel_of(rt)
        return guarded(lambda *xs, **_: run(*xs), opdef.kernel)
    return claim


def _on_gemm(op):
    """kernel_of for a qgemm_forms op: op on this module's GEMM."""
    return lambda rt: functools.partial(op, _gemm(rt))


CLAIMS = {
    "MatMulInteger": _claim(_on_gemm(forms.matmul_integer)),
    "DynamicQuantizeLinear": _claim(lambda rt: functools.partial(dynamic_quantize_linear, rt)),
    "QLinearMatMul": _claim(_on_gemm(forms.qlinear_matmul)),
}
MS_CLAIMS = {
    "MatMulIntegerToFloat": _claim(_on_gemm(forms.matmul_integer_to_float)),
    "DynamicQuantizeMatMul": _claim(lambda rt: functools.partial(
        forms.dynamic_quantize_matmul, _gemm(rt), functools.partial(dynamic_quantize_linear, rt))),
}
