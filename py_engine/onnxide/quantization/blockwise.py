"""onnxruntime's `capi` blockwise quantizers (quantize_matmul_2bits / 4bits / 8bits): fill MatMulNBits' packed
weight, scales and zero points in place from a [K, N] float matrix."""
import numpy as np

from ..errors import InvalidArgument
from .matmul_nbits_quantizer import pack, quantize_blocks


def quantize_matmul_nbits(bits, dst, src, scale, zero_point, block_size, N, K, is_symmetric):  # noqa: N803
    """dst [N, k_blocks, block_size * bits / 8] uint8, scale [N, k_blocks], zero_point [N, ceil(k_blocks * bits / 8)]
    uint8 (bytes past the last block keep their value)."""
    src = np.asarray(src)
    if src.shape != (K, N):
        raise InvalidArgument(f"the matrix has shape {list(src.shape)}, expected [K={K}, N={N}]")
    codes, s, zp = quantize_blocks(src.astype(np.float32), block_size, bits, bool(is_symmetric))
    k_blocks = codes.shape[1]
    if dst.shape != (N, k_blocks, block_size * bits // 8) or scale.shape != (N, k_blocks):
        raise InvalidArgument(f"output shapes {list(dst.shape)} / {list(scale.shape)} do not fit N={N}, K={K}, "
                              f"block_size={block_size}, bits={bits}")
    dst[...] = pack(codes, bits)
    scale[...] = s.astype(scale.dtype)
    if zero_point is not None:
        per = 8 // bits
        mask = (1 << bits) - 1
        z = zero_point.reshape(N, -1)
        for b in range(k_blocks):
            shift = bits * (b % per)
            col = z[:, b // per]
            z[:, b // per] = (col & ~np.uint8(mask << shift)) | (zp[:, b].astype(np.uint8) << shift)
