"""com.microsoft GatherBlockQuantized: Gather from a blockwise-quantized table (4 / 8-bit codes, a scale and zero
point per block of `block_size` values along `quantize_axis`), returning the dequantized rows."""
import numpy as np

from .. import dtypes as D
from ..errors import InvalidArgument
from .inference import rule
from .math import lift32
from .quant import _code, to_float
from .registry import MS_DOMAIN, op


def _name(ctx):
    return f"GatherBlockQuantized node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) \
        else "GatherBlockQuantized"


def _nibbles(a):
    """uint8 bytes holding two 4-bit codes each (low nibble first) along the last axis, as float32 codes."""
    u = np.asarray(a).astype(np.uint8)
    return np.stack([u & 15, u >> 4], -1).reshape(u.shape[:-1] + (-1,)).astype(np.float32)


def _axis(axis, rank, what, name):
    if not -rank <= axis < rank:
        raise InvalidArgument(f"{name}: {what} {axis} is out of range for data of rank {rank}")
    return axis % rank


@op("GatherBlockQuantized", since=1, domain=MS_DOMAIN)
def gather_block_quantized(data, indices, scales, zero_points=None, *, bits=4, block_size=128, gather_axis=0,
                           quantize_axis=1, ctx=None):
    """(code − zero point) × scale of the gathered rows. uint8 data with bits=4 packs two codes a byte along the
    last axis (which must be the quantize axis) and defaults its zero point to 8; int4 / uint4 data default to 0."""
    name = _name(ctx)
    if bits not in (4, 8) or block_size < 16 or block_size & (block_size - 1):
        raise InvalidArgument(f"{name}: bits must be 4 or 8 and block_size a power of 2 >= 16, got {bits} and "
                              f"{block_size}")
    code = _code(np.asarray(data), ctx, 0)
    packed = code == D.UINT8 and bits == 4
    vals = _nibbles(data) if packed else to_float(np.asarray(data), code)
    rank = vals.ndim
    ga = _axis(gather_axis, rank, "gather_axis", name)
    qa = _axis(quantize_axis, rank, "quantize_axis", name)
    if packed and qa != rank - 1:
        raise InvalidArgument(f"{name}: packed uint8 data needs quantize_axis to be the last axis")
    sc = lift32(np.asarray(scales))[0].astype(np.float32)
    want = list(vals.shape)
    want[qa] = -(-vals.shape[qa] // block_size)
    if list(sc.shape) != want:
        raise InvalidArgument(f"{name}: scales shape {tuple(sc.shape)} must be {tuple(want)}")
    if zero_points is None:
        zp = np.full(sc.shape, 2 ** (bits - 1) if code == D.UINT8 else 0, np.float32)
    else:
        zcode = _code(np.asarray(zero_points), ctx, 3)
        zp = _nibbles(zero_points)[..., :want[-1]] if zcode == D.UINT8 and bits == 4 \
            else to_float(np.asarray(zero_points), zcode)
        if list(zp.shape) != want:
            raise InvalidArgument(f"{name}: zero_points shape {tuple(zp.shape)} must be {tuple(want)}")
    idx = np.asarray(indices).astype(np.int64)
    n = vals.shape[ga]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise InvalidArgument(f"{name}: indices must be within [-{n}, {n - 1}]")
    idx = np.where(idx < 0, idx + n, idx)
    if ga != qa:  # gather first: only the chosen rows are dequantized
        vals, sc, zp = (np.take(a, idx, axis=ga) for a in (vals, sc, zp))
        qa = qa + idx.ndim - 1 if qa > ga else qa
    keep = np.arange(vals.shape[qa])
    out = (vals - np.take(np.repeat(zp, block_size, axis=qa), keep, axis=qa)) * \
        np.take(np.repeat(sc, block_size, axis=qa), keep, axis=qa)
    if ga == qa:
        out = np.take(out, idx, axis=ga)
    return out.astype(np.float16 if np.asarray(scales).dtype == np.float16 else np.float32)


@rule("GatherBlockQuantized", domain=MS_DOMAIN)
def _gather_block_quantized_rule(f):
    """The scales' type; data's dims with the gather axis replaced by the indices' dims (unknown for packed data)."""
    d, i = f.dims(0), f.dims(1)
    if d is None or i is None or (f.type(0) == D.UINT8 and f.attr("bits", 4) == 4):
        return [(f.type(2), None)]
    ga = f.attr("gather_axis", 0) % len(d)
    return [(f.type(2), d[:ga] + i + d[ga + 1:])]
