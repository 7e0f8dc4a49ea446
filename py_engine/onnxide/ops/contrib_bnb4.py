"""com.microsoft MatMulBnb4 and the bnb4 (bitsandbytes FP4 / NF4) blockwise 4-bit format it reads: the code tables,
the quantizer's decision thresholds, block quantization and dequantization."""
import numpy as np

from ..errors import InvalidArgument
from .inference import rule
from .math import lift32
from .registry import MS_DOMAIN, op

FP4, NF4 = 0, 1
# value of each 4-bit code (bitsandbytes' tables; FP4's top bit is the sign)
CODE_VALUES = {
    FP4: np.array([0.0, 5.208333333e-03, 0.66666667, 1.0, 0.33333333, 0.5, 0.16666667, 0.25,
                   -0.0, -5.208333333e-03, -0.66666667, -1.0, -0.33333333, -0.5, -0.16666667, -0.25], np.float32),
    NF4: np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                   -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                   0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                   0.7229568362236023, 1.0], np.float32),
}
# the quantizer's thresholds (bitsandbytes' constants, midpoints of neighbouring values): a value at most the i-th
# threshold and above the one before gets the i-th code of _INTERVAL_CODES (FP4 decides on |x|, then adds the sign)
_THRESHOLDS = {
    FP4: np.array([0.00260417, 0.0859375, 0.20833333, 0.29166667, 0.4166667, 0.583333, 0.8333333], np.float32),
    NF4: np.array([-0.8480964004993439, -0.6106329262256622, -0.4599952697753906, -0.33967943489551544,
                   -0.23460740596055984, -0.13791173323988914, -0.045525018125772476, 0.03979014977812767,
                   0.1202552504837513, 0.2035212516784668, 0.2920137718319893, 0.3893125355243683,
                   0.5016634166240692, 0.6427869200706482, 0.8614784181118011], np.float32),
}
_INTERVAL_CODES = {FP4: np.array([0, 1, 6, 7, 4, 5, 2, 3], np.uint8), NF4: np.arange(16, dtype=np.uint8)}


def check_quant_type(quant_type, block_size, name):
    if quant_type not in (FP4, NF4):
        raise InvalidArgument(f"{name}: quant_type must be 0 (FP4) or 1 (NF4), got {quant_type}")
    if block_size < 16 or block_size & (block_size - 1):
        raise InvalidArgument(f"{name}: block_size must be a power of 2 >= 16, got {block_size}")


def quantize_bnb4(values, block_size, quant_type):
    """(packed uint8 [(n + 1) / 2], absmax [blocks] in values' dtype) of a flat float array: each block is scaled by
    1 / its largest magnitude (in float32) and each value given its code by the thresholds; two codes a byte, the
    first in the high nibble (an odd count is padded with the code of 0)."""
    check_quant_type(quant_type, block_size, "bnb4 quantization")
    flat = np.asarray(values).reshape(-1)
    n = flat.size
    blocks = -(-n // block_size)
    x = np.zeros(blocks * block_size, np.float32)
    x[:n] = flat.astype(np.float32)
    x = x.reshape(blocks, block_size)
    absmax = np.abs(x).max(axis=1, initial=np.float32(0))
    with np.errstate(divide="ignore"):
        recip = np.where(absmax != 0, np.float32(1) / absmax, np.float32(0)).astype(np.float32)
    x = (x * recip[:, None]).reshape(-1)[:n + (n & 1)]
    if n & 1:
        x[n] = 0.0  # the pad value of an odd count (the zero-padded blocks already hold 0 there)
    if quant_type == FP4:
        codes = _INTERVAL_CODES[FP4][np.searchsorted(_THRESHOLDS[FP4], np.abs(x), side="left")]
        codes = codes + (x < 0).astype(np.uint8) * np.uint8(8)
    else:
        codes = np.searchsorted(_THRESHOLDS[NF4], x, side="left").astype(np.uint8)
    packed = (codes[0::2] << 4 | codes[1::2]).astype(np.uint8)
    return packed, absmax.astype(flat.dtype)


def dequantize_bnb4(packed, absmax, count, block_size, quant_type):
    """The first `count` values (float32) of a bnb4 array: code value x its block's absmax."""
    p = np.asarray(packed).reshape(-1).astype(np.uint8)
    codes = np.stack([p >> 4, p & 15], -1).reshape(-1)[:count]
    scale = lift32(np.asarray(absmax))[0].astype(np.float32).reshape(-1)
    return CODE_VALUES[quant_type][codes] * np.repeat(scale, block_size)[:count]


def _name(ctx):
    return f"MatMulBnb4 node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) \
        else "MatMulBnb4"


@op("MatMulBnb4", since=1, domain=MS_DOMAIN)
def matmul_bnb4(a, b, absmax, *, K, N, block_size, quant_type, ctx=None):
    """A [..., K] times the [K, N] weight stored transposed ([N, K]), flattened and bnb4-quantized in blocks."""
    name = _name(ctx)
    check_quant_type(quant_type, block_size, name)
    if a.shape[-1] != K:
        raise InvalidArgument(f"{name}: A's last dimension {a.shape[-1]} differs from K={K}")
    count = N * K
    if np.shape(b) != ((count + 1) // 2,) or np.asarray(b).dtype != np.uint8:
        raise InvalidArgument(f"{name}: B must be uint8 of shape [{(count + 1) // 2}] for N={N}, K={K}, got "
                              f"{np.asarray(b).dtype} {list(np.shape(b))}")
    if np.shape(absmax) != (-(-count // block_size),):
        raise InvalidArgument(f"{name}: absmax must have shape [{-(-count // block_size)}], got "
                              f"{list(np.shape(absmax))}")
    w = dequantize_bnb4(b, absmax, count, block_size, quant_type).reshape(N, K)
    af = lift32(a)[0].astype(np.float32, copy=False)
    return np.matmul(af, np.ascontiguousarray(w.T)).astype(a.dtype)


@rule("MatMulBnb4", domain=MS_DOMAIN)
def _matmul_bnb4_rule(f):
    """A's type; A's dims with the last one N."""
    d = f.dims(0)
    return [(f.type(0), None if d is None else d[:-1] + [f.attr("N")])]
