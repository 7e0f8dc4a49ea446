"""`onnxruntime.capi._pybind_state`: the native module's names (capi/onnxruntime_pybind11_state.py)."""
from .onnxruntime_pybind11_state import *  # noqa: F401,F403


def _blockwise(bits):
    def quantize(dst, src, scale, zero_point, block_size, N, K, is_symmetric):  # noqa: N803 - onnxruntime's names
        from ..quantization.blockwise import quantize_matmul_nbits
        return quantize_matmul_nbits(bits, dst, src, scale, zero_point, block_size, N, K, is_symmetric)
    quantize.__name__ = quantize.__qualname__ = f"quantize_matmul_{bits}bits"
    quantize.__doc__ = f"Blockwise {bits}-bit quantization of a [K, N] matrix into MatMulNBits' layout, in place."
    return quantize


quantize_matmul_2bits, quantize_matmul_4bits, quantize_matmul_8bits = (_blockwise(b) for b in (2, 4, 8))
