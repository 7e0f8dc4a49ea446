"""`onnxruntime.capi._pybind_state`: the native module's names (capi/onnxruntime_pybind11_state.py)."""
import numpy as np

from ..errors import InvalidArgument
from .onnxruntime_pybind11_state import *  # noqa: F401,F403


def _blockwise(bits):
    def quantize(dst, src, scale, zero_point, block_size, N, K, is_symmetric):  # noqa: N803 - onnxruntime's names
        from ..quantization.blockwise import quantize_matmul_nbits
        return quantize_matmul_nbits(bits, dst, src, scale, zero_point, block_size, N, K, is_symmetric)
    quantize.__name__ = quantize.__qualname__ = f"quantize_matmul_{bits}bits"
    quantize.__doc__ = f"Blockwise {bits}-bit quantization of a [K, N] matrix into MatMulNBits' layout, in place."
    return quantize


quantize_matmul_2bits, quantize_matmul_4bits, quantize_matmul_8bits = (_blockwise(b) for b in (2, 4, 8))


def quantize_matmul_bnb4(dst, src, absmax, block_size, quant_type, N, K):  # noqa: N803 - onnxruntime's names
    """bnb4 (FP4 / NF4) blockwise quantization of a [N, K] matrix (a MatMul weight already transposed), flattened,
    into MatMulBnb4's packed B [(N * K + 1) / 2] and absmax [blocks], in place."""
    from ..ops.contrib_bnb4 import quantize_bnb4
    src = np.asarray(src)
    if src.size != N * K:
        raise InvalidArgument(f"the matrix has {src.size} values, expected N={N} x K={K}")
    packed, amax = quantize_bnb4(src, block_size, quant_type)
    if dst.shape != packed.shape or absmax.shape != amax.shape:
        raise InvalidArgument(f"output shapes {list(dst.shape)} / {list(absmax.shape)} do not fit N={N}, K={K}, "
                              f"block_size={block_size}: expected {list(packed.shape)} / {list(amax.shape)}")
    dst[...] = packed
    absmax[...] = amax.astype(absmax.dtype)
