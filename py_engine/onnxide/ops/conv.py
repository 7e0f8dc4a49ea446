"""Convolutions: Conv, ConvTranspose, ConvInteger, DeformConv, Col2Im, CausalConvWithState; conv_nd picks Winograd
(conv_winograd), the direct paths (conv_direct) or im2col on strided views."""
import itertools
import math

import numpy as np

from .. import dtypes as dt
from ..errors import Fail, InvalidArgument
from ..runtime import limits
from . import conv_direct as _direct_paths
from . import conv_winograd as _wino
from .conv_geometry import ConvGeometry, conv_output_shape
from .math import via_float32
from .inference import rule, unknown_dims
from .registry import op


def compute_dtype(dtype):
    """The dtype a float kernel computes in: float64 stays, everything else (float16, bfloat16, ...) is float32."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def pad_spatial(x, pb, pe, value=0):
    """Pad the spatial axes (2..) of x; negative pads crop."""
    if not any(pb) and not any(pe):
        return x
    if min(pb) < 0 or min(pe) < 0:
        sl = (slice(None), slice(None)) + tuple(
            slice(max(0, -b), x.shape[2 + i] - max(0, -e) or None) for i, (b, e) in enumerate(zip(pb, pe)))
        x = x[sl]
        pb, pe = [max(0, b) for b in pb], [max(0, e) for e in pe]
    shape = x.shape[:2] + tuple(d + b + e for d, b, e in zip(x.shape[2:], pb, pe))
    xp = np.full(shape, value, dtype=x.dtype) if value else np.zeros(shape, dtype=x.dtype)
    xp[(slice(None), slice(None)) + tuple(slice(b, b + d) for b, d in zip(pb, x.shape[2:]))] = x
    return xp


def windows(xp, kernel, strides, dilations, out):
    """Read-only strided view (N, C, *out, *kernel) of the windows of padded xp."""
    nd = len(kernel)
    st = xp.strides
    shape = xp.shape[:2] + tuple(out) + tuple(kernel)
    strides_ = st[:2] + tuple(st[2 + i] * strides[i] for i in range(nd)) + tuple(
        st[2 + i] * dilations[i] for i in range(nd))
    if xp.flags.c_contiguous and xp.flags.writeable:  # the ndarray constructor costs ~1 µs, as_strided ~10 µs
        view = np.ndarray(shape, xp.dtype, buffer=xp, strides=strides_)
        view.flags.writeable = False
        return view
    return np.lib.stride_tricks.as_strided(xp, shape=shape, strides=strides_, writeable=False)


def conv_nd(x, w, group, kernel, strides, dilations, pb, pe, out, name, fast=False, bias=None):
    """Grouped N-D correlation of x (N,C,*S) with w (M,C/group,*K), plus `bias` (M,) if given; computes in x's
    dtype.

    Paths: with `fast` (float Conv only: the result is not bit-exact), 3×3 stride-1 convs large enough to gain
    run Winograd (conv_winograd); 1×1 unit-stride convs are one GEMM per image; depthwise convs accumulate over
    kernel taps; the rest build im2col columns per image (in a reused buffer) and run one 2-D GEMM per
    (image, group) so BLAS always sees plain matrices.
    """
    n, c = x.shape[:2]
    m = w.shape[0]
    nd = len(kernel)
    if group <= 0 or c % group or m % group or w.shape[1] * group != c:
        raise InvalidArgument(f"{name}: X channels {c}, W shape {w.shape} and group {group} are inconsistent")
    dtype = np.result_type(x.dtype, w.dtype)
    if fast:
        wm = _wino.winograd_tile(x, w, group, kernel, strides, dilations, pb, pe, out)
        if wm:
            return _wino.winograd_conv3x3(x, w, pb, pe, out, wm, bias)
    if group == 1 and x.dtype == w.dtype and c * math.prod(kernel) * math.prod(out) <= SMALL_GATHER:
        return _gathered(x, w, kernel, strides, dilations, pb, out, bias)
    if x.dtype == w.dtype and nd in (1, 2):
        y = _direct(x, w, group, kernel, strides, dilations, pb, pe, out, fast, bias)
        if y is not None:
            return y
    y = _conv_nd(x, w, group, kernel, strides, dilations, pb, pe, out, dtype)
    if bias is not None:
        y += np.asarray(bias, y.dtype).reshape((1, -1) + (1,) * nd)
    return y


SMALL_GATHER = 1 << 15  # column-matrix elements up to which a conv gathers its columns with a cached index
_GATHER_INDEX = {}      # (C, spatial, kernel, strides, dilations, pads, out) -> index into the flat image + a zero


def _gathered(x, w, kernel, strides, dilations, pb, out, bias):
    """A small group-1 conv as one fancy-indexed gather of its column matrix (padding reads an appended zero)
    and one GEMM per image: the index is built once per geometry, so a call is a handful of numpy calls (silero
    VAD's 1-D conv: ~28 → ~19 µs, tests/bench/micro.py)."""
    n, c = x.shape[:2]
    m = w.shape[0]
    key = (c, x.shape[2:], tuple(kernel), tuple(strides), tuple(dilations), tuple(pb), tuple(out))
    idx = _GATHER_INDEX.get(key)
    if idx is None:
        if len(_GATHER_INDEX) > 256:
            _GATHER_INDEX.clear()
        idx = _GATHER_INDEX[key] = _gather_index(c, x.shape[2:], kernel, strides, dilations, pb, out)
    w2 = w.reshape(m, -1)
    zero = np.zeros(1, x.dtype)
    y = np.empty((n, m, idx.shape[1]), np.result_type(x.dtype, w.dtype))
    for i in range(n):
        np.matmul(w2, np.concatenate((x[i].reshape(-1), zero))[idx], out=y[i])
    if bias is not None:
        y += np.asarray(bias, y.dtype).reshape(1, m, 1)
    return y.reshape((n, m) + tuple(out))


def _gather_index(c, spatial, kernel, strides, dilations, pb, out):
    """(C·prod(kernel), prod(out)) positions in one image flattened with a zero appended: row (c, tap), column
    output position; taps reading padding point at the zero."""
    nd = len(kernel)
    size = math.prod(spatial)
    flat = np.zeros((1,) * (2 * nd), np.int64)
    valid = np.ones((1,) * (2 * nd), bool)
    for a in range(nd):  # axes: taps (nd) then output positions (nd)
        tap = np.arange(kernel[a]).reshape((1,) * a + (-1,) + (1,) * (2 * nd - a - 1))
        pos = np.arange(out[a]).reshape((1,) * (nd + a) + (-1,) + (1,) * (nd - a - 1))
        coord = pos * strides[a] + tap * dilations[a] - pb[a]
        valid = valid & (coord >= 0) & (coord < spatial[a])
        flat = flat * spatial[a] + coord
    taps = np.where(valid, flat, -1).reshape(math.prod(kernel), math.prod(out))
    per_channel = taps[None] + (np.arange(c) * size).reshape(c, 1, 1)
    return np.where(taps[None] < 0, c * size, per_channel).reshape(c * math.prod(kernel), math.prod(out))


def _direct(x, w, group, kernel, strides, dilations, pb, pe, out, fast, bias):
    """conv_direct's paths (1-D convs as 1×K): depthwise always, few output channels (M < 32, C >= 16) with
    `fast`; None where neither applies (and for 1×1 kernels, which are one plain GEMM already)."""
    c, m = x.shape[1], w.shape[0]
    if math.prod(kernel) == 1:
        return None
    depthwise = group == c and m == c
    if not (depthwise or (fast and group == 1 and m < 32 and c >= 16)):
        return None
    one_d = len(kernel) == 1
    if one_d:
        x, w = x[:, :, None, :], w[:, :, None, :]
        kernel, strides, dilations = [1] + list(kernel), list(strides) * 2, list(dilations) * 2
        pb, pe, out = [0] + list(pb), [0] + list(pe), [1] + list(out)
    if not _direct_paths.eligible(kernel, pb, pe):
        return None
    run = _direct_paths.depthwise if depthwise else _direct_paths.few_outputs
    y = run(x, w, pb, pe, list(strides), list(dilations), out, bias)
    return y[:, :, 0] if one_d and y is not None else y


def _conv_nd(x, w, group, kernel, strides, dilations, pb, pe, out, dtype):
    n, c = x.shape[:2]
    m = w.shape[0]
    nd = len(kernel)
    cg, mg = c // group, m // group
    kp = math.prod(kernel) if nd else 1
    p = math.prod(out) if nd else 1
    y = np.empty((n, group, mg, p), dtype=dtype)
    wg = w.reshape(group, mg, cg * kp)
    if kp == 1 and not any(pb) and not any(pe) and all(s == 1 for s in strides):
        xr = x.reshape(n, group, cg, p)
        for i in range(n):
            for g in range(group):
                np.matmul(wg[g], xr[i, g], out=y[i, g])
        return y.reshape((n, m) + tuple(out))
    xp = pad_spatial(x, pb, pe)
    view = windows(xp, kernel, strides, dilations, out)  # N, C, *O, *K
    if group == c and mg == 1 and kp > 1:  # depthwise: one multiply-add per kernel tap, vectorised over C and O
        acc = np.zeros((n, c) + tuple(out), dtype=dtype)
        wt = w.reshape(c, kp)
        for t, idx in enumerate(itertools.product(*(range(k) for k in kernel))):
            acc += view[(Ellipsis,) + idx] * wt[:, t].reshape((1, c) + (1,) * nd)
        return acc
    perm = tuple(range(1 + nd, 1 + 2 * nd)) + tuple(range(1, 1 + nd))
    cols = _wino.scratch("im2col", (c,) + tuple(kernel) + tuple(out), xp.dtype)  # reused: no page faults per call
    colsg = cols.reshape(group, cg * kp, p)
    for i in range(n):
        np.copyto(cols, view[i].transpose((0,) + perm))
        for g in range(group):
            np.matmul(wg[g], colsg[g], out=y[i, g])
    return y.reshape((n, m) + tuple(out))


def _check_bias(b, m, name):
    if b is not None and (b.ndim != 1 or b.shape[0] != m):
        raise InvalidArgument(f"{name}: B shape {b.shape} must be ({m},), one value per output channel")


def _float_in(a):
    ct = compute_dtype(a.dtype)
    return a if a.dtype == ct else a.astype(ct)


@op("Conv", since=1)
@via_float32
def conv(x, w, b=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None,
         ctx=None):
    name = f"Conv node '{ctx.node_name}'" if ctx is not None else "Conv"
    g = ConvGeometry.conv(x.shape, w.shape, name, auto_pad=auto_pad, dilations=dilations, group=group,
                          kernel_shape=kernel_shape, pads=pads, strides=strides)
    _check_bias(b, w.shape[0], name)
    if w.shape[0] == 0:  # no output channels: an empty result
        return np.zeros((x.shape[0], 0) + g.out, x.dtype)
    y = conv_nd(_float_in(x), _float_in(w), g.group, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                g.out, name, fast=True, bias=None if b is None else _float_in(b).reshape(-1))
    return y.astype(x.dtype, copy=False)


@op("ConvInteger", since=10)
def conv_integer(x, w, x_zero_point=None, w_zero_point=None, *, auto_pad="NOTSET", dilations=None, group=1,
                 kernel_shape=None, pads=None, strides=None, ctx=None):
    name = f"ConvInteger node '{ctx.node_name}'" if ctx is not None else "ConvInteger"
    g = ConvGeometry.conv(x.shape, w.shape, name, auto_pad=auto_pad, dilations=dilations, group=group,
                          kernel_shape=kernel_shape, pads=pads, strides=strides)
    xf = x.astype(np.float64)
    if x_zero_point is not None:
        if np.size(x_zero_point) != 1 or np.ndim(x_zero_point) > 1:
            raise InvalidArgument(f"{name}: x_zero_point {np.shape(x_zero_point)} must be a scalar or a 1-element "
                                  "vector")
        xf -= np.asarray(x_zero_point).astype(np.float64).reshape(())
    wf = w.astype(np.float64)
    if w_zero_point is not None:
        wz = np.asarray(w_zero_point).astype(np.float64)
        wf -= wz.reshape((-1,) + (1,) * (w.ndim - 1)) if wz.size > 1 else wz.reshape(())
    y = conv_nd(xf, wf, g.group, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end, g.out, name)
    return np.rint(y).astype(np.int32)


@op("ConvTranspose", since=1)
@via_float32
def conv_transpose(x, w, b=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
                   output_padding=None, output_shape=None, pads=None, strides=None, ctx=None):
    name = f"ConvTranspose node '{ctx.node_name}'" if ctx is not None else "ConvTranspose"
    g = ConvGeometry.conv_transpose(x.shape, w.shape, name, auto_pad=auto_pad, dilations=dilations, group=group,
                                    kernel_shape=kernel_shape, output_padding=output_padding,
                                    output_shape=output_shape, pads=pads, strides=strides)
    n, c = x.shape[:2]
    _check_bias(b, w.shape[1] * g.group, name)
    ins, ks, st, dil, pb, out = list(g.in_shape), list(g.kernel), list(g.strides), list(g.dilations), \
        list(g.pads_begin), list(g.out)
    nd = len(ins)
    dk = [(k - 1) * d + 1 for k, d in zip(ks, dil)]
    cg = c // group
    mg = w.shape[1]
    m = mg * group
    kp = math.prod(ks)
    pin = math.prod(ins)
    xf, wf = _float_in(x), _float_in(w)
    xg = xf.reshape(n, group, cg, pin)
    wg = wf.reshape(group, cg, mg * kp).transpose(0, 2, 1)
    cols = np.matmul(wg, xg).reshape((n, m) + tuple(ks) + tuple(ins))  # N, M, *K, *I
    full = [(i - 1) * s + k for i, s, k in zip(ins, st, dk)]
    if nd == 2 and st == list(ks) and dil == [1, 1] and not any(pb) and out == full:
        # kernel == stride (2×2 upsampling heads): every output pixel gets exactly one tap, placed by one copy each
        y = np.empty((n, m) + tuple(out), dtype=xf.dtype)
        dst = y.reshape(n, m, ins[0], ks[0], ins[1], ks[1])
        bias = None if b is None else _float_in(b).reshape(1, -1, 1, 1)
        for ki in range(ks[0]):
            for kj in range(ks[1]):
                if bias is None:
                    dst[:, :, :, ki, :, kj] = cols[:, :, ki, kj]
                else:
                    np.add(cols[:, :, ki, kj], bias, out=dst[:, :, :, ki, :, kj])
        return y.astype(x.dtype, copy=False)
    # place the full (uncropped) result into a buffer covering both it and the requested window (pads_begin >= 0)
    buf_shape = [max(f, b + ou) for f, b, ou in zip(full, pb, out)]
    buf = np.zeros((n, m) + tuple(buf_shape), dtype=xf.dtype)
    for kidx in itertools.product(*[range(k) for k in ks]):
        sl = tuple(slice(k * d, k * d + (i - 1) * s + 1, s) for k, d, i, s in zip(kidx, dil, ins, st))
        buf[(slice(None), slice(None)) + sl] += cols[(slice(None), slice(None)) + kidx]
    y = buf[(slice(None), slice(None)) + tuple(slice(b, b + ou) for b, ou in zip(pb, out))]
    if b is not None:
        y = y + _float_in(b).reshape((1, -1) + (1,) * nd)
    return np.ascontiguousarray(y).astype(x.dtype, copy=False)


@op("Col2Im", since=18, host_inputs=(1, 2))
@via_float32
def col2im(x, image_shape, block_shape, *, dilations=None, pads=None, strides=None, ctx=None):
    name = f"Col2Im node '{ctx.node_name}'" if ctx is not None else "Col2Im"
    img = [int(v) for v in np.asarray(image_shape).reshape(-1)]
    blk = [int(v) for v in np.asarray(block_shape).reshape(-1)]
    nd = len(img)
    if len(blk) != nd:
        raise InvalidArgument(f"{name}: image_shape and block_shape lengths differ")
    g = ConvGeometry.window(img, blk, name, strides=strides, dilations=dilations, pads=pads)  # blocks: its out
    st, dil, pb, pe, nb = g.strides, g.dilations, g.pads_begin, g.pads_end, list(g.out)
    kp = math.prod(blk)
    n, ck, length = x.shape
    if ck % kp:
        raise InvalidArgument(f"{name}: input dim 1 ({ck}) is not a multiple of prod(block_shape) {kp}")
    c = ck // kp
    if math.prod(nb) != length:
        raise InvalidArgument(f"{name}: input dim 2 ({length}) does not match the {nb} blocks the shapes give")
    cols = x.reshape((n, c) + tuple(blk) + tuple(nb))
    padded = [i + b + e for i, b, e in zip(img, pb, pe)]
    limits.check_shape((n, c, *padded), x.dtype, f"{name} output")
    buf = np.zeros((n, c) + tuple(padded), dtype=x.dtype)
    for kidx in itertools.product(*[range(k) for k in blk]):
        sl = tuple(slice(k * d, k * d + (q - 1) * s + 1, s) for k, d, q, s in zip(kidx, dil, nb, st))
        buf[(slice(None), slice(None)) + sl] += cols[(slice(None), slice(None)) + kidx]
    return np.ascontiguousarray(buf[(slice(None), slice(None)) + tuple(slice(b, b + i) for b, i in zip(pb, img))])


def _multilinear_gather(x, pos):
    """Sample x (N, C, *S) at fractional positions pos (N, C, *Q, nd) with zero outside: (N, C, *Q)."""
    n, c = x.shape[:2]
    sp = x.shape[2:]
    nd = len(sp)
    qshape = pos.shape[2:-1]
    flat = x.reshape(n, c, -1)
    lo = np.floor(pos)
    frac = pos - lo
    lo = lo.astype(np.int64)
    res = np.zeros((n, c) + qshape, dtype=x.dtype)
    q = math.prod(qshape) if qshape else 1
    for corner in itertools.product((0, 1), repeat=nd):
        wgt = np.ones((n, c) + qshape, dtype=x.dtype)
        idx = np.zeros((n, c) + qshape, dtype=np.int64)
        valid = np.ones((n, c) + qshape, dtype=bool)
        for a in range(nd):
            ia = lo[..., a] + corner[a]
            fa = frac[..., a]
            wgt *= fa if corner[a] else (1 - fa)
            valid &= (ia >= 0) & (ia < sp[a])
            idx = idx * sp[a] + np.clip(ia, 0, sp[a] - 1)
        vals = np.take_along_axis(flat, idx.reshape(n, c, q), axis=2).reshape((n, c) + qshape)
        res += np.where(valid, vals * wgt, 0)
    return res


@op("DeformConv", since=19)
@via_float32
def deform_conv(x, w, offset, b=None, mask=None, *, dilations=None, group=1, kernel_shape=None, offset_group=1,
                pads=None, strides=None, ctx=None):
    name = f"DeformConv node '{ctx.node_name}'" if ctx is not None else "DeformConv"
    n, c = x.shape[:2]
    sp = list(x.shape[2:])
    nd = len(sp)
    g = ConvGeometry.conv(x.shape, w.shape, name, dilations=dilations, group=group, kernel_shape=kernel_shape,
                          pads=pads, strides=strides)
    ks, st, dil, p = list(g.kernel), g.strides, g.dilations, g.pads_begin
    if offset.ndim != nd + 2 or offset.shape[0] != n:
        raise InvalidArgument(f"{name}: offset shape {offset.shape} must be (N, offset_group * kernel taps * "
                              f"{nd}, output dims...) with N = {n}")
    out = list(g.out)
    kp = math.prod(ks)
    og = offset_group
    if og <= 0 or c % og or offset.shape[1] != og * kp * nd:
        raise InvalidArgument(f"{name}: offset shape {offset.shape} inconsistent with offset_group {og}, kernel {ks}")
    if list(offset.shape[2:]) != out:
        raise InvalidArgument(f"{name}: offset's spatial dims {list(offset.shape[2:])} must be the output's {out}")
    if mask is not None and tuple(mask.shape) != (n, og * kp, *out):
        raise InvalidArgument(f"{name}: mask shape {list(mask.shape)} must be {[n, og * kp, *out]}")
    if b is not None and tuple(b.shape) != (w.shape[0],):
        raise InvalidArgument(f"{name}: B shape {list(b.shape)} must be [{w.shape[0]}]")
    m = w.shape[0]
    xf = _float_in(x)
    ct = xf.dtype
    off = offset.astype(ct).reshape((n, og) + tuple(ks) + (nd,) + tuple(out))
    # base sampling position per kernel tap and output position: (*K, *O, nd)
    grids = np.meshgrid(*[np.arange(k) * d for k, d in zip(ks, dil)],
                        *[np.arange(o) * s - pb for o, s, pb in zip(out, st, p[:nd])], indexing="ij")
    base = np.stack([grids[a] + grids[nd + a] for a in range(nd)], axis=-1).astype(ct)
    # positions (N, og, *K, *O, nd)
    pos = base + np.moveaxis(off, 2 + nd, -1)
    cpg = c // og
    xs = xf.reshape((n * og, cpg) + tuple(sp))
    q_shape = tuple(ks) + tuple(out)
    pos_b = np.broadcast_to(pos.reshape((n * og, 1) + q_shape + (nd,)), (n * og, cpg) + q_shape + (nd,))
    sampled = _multilinear_gather(xs, pos_b)  # (N*og, cpg, *K, *O)
    if mask is not None:
        mk = mask.astype(ct).reshape((n * og, 1) + q_shape)
        sampled = sampled * mk
    sampled = sampled.reshape((n, c, kp, math.prod(out)))
    cg, mg = c // group, m // group
    cols = sampled.reshape(n, group, cg * kp, -1)
    y = np.matmul(_float_in(w).reshape(group, mg, cg * kp), cols).reshape((n, m) + tuple(out))
    if b is not None:
        y = y + _float_in(b).reshape((1, -1) + (1,) * nd)
    return y.astype(x.dtype, copy=False)


@op("CausalConvWithState", since=27)
@via_float32
def causal_conv_with_state(x, w, b=None, past_state=None, *, activation="none", ctx=None):
    name = f"CausalConvWithState node '{ctx.node_name}'" if ctx is not None else "CausalConvWithState"
    if x.ndim != 3 or w.ndim != 3 or w.shape[0] != x.shape[1] or w.shape[1] != 1:
        raise InvalidArgument(f"{name}: input {x.shape} / weight {w.shape} shapes are inconsistent")
    n, c, length = x.shape
    k = w.shape[2]
    xf = _float_in(x)
    if past_state is not None:
        if past_state.shape != (n, c, k - 1):
            raise InvalidArgument(f"{name}: past_state shape {past_state.shape} is not {(n, c, k - 1)}")
        seq = np.concatenate([_float_in(past_state).astype(xf.dtype, copy=False), xf], axis=2)
    else:
        seq = np.concatenate([np.zeros((n, c, k - 1), xf.dtype), xf], axis=2)
    win = windows(seq, [k], [1], [1], [length])  # N, C, L, K
    y = np.einsum("nclk,ck->ncl", win, _float_in(w).reshape(c, k).astype(xf.dtype, copy=False))
    if b is not None:
        if b.shape != (c,):
            raise InvalidArgument(f"{name}: bias shape {b.shape} is not ({c},)")
        y = y + _float_in(b).reshape(1, c, 1)
    act = (activation or "none").lower()
    if act in ("silu", "swish"):
        y = y / (1 + np.exp(-y))
    elif act != "none":
        raise InvalidArgument(f"{name}: unsupported activation '{activation}'")
    present = np.ascontiguousarray(seq[:, :, seq.shape[2] - (k - 1):]) if k > 1 else np.zeros((n, c, 0), xf.dtype)
    return y.astype(x.dtype, copy=False), present.astype(x.dtype, copy=False)


# ---------------------------------------------------------------------------------------------------- shape rules

_WINDOW_ATTRS = (("dilations", 1), ("strides", 1), ("kernel_shape", 1), ("pads", 2))  # (entries per spatial dim)


def check_attr_sizes(f, needs_w=True):
    """Fail, as onnxruntime's shape inference at load (onnx's convPoolShapeInference), where X (and W, for the convs)
    have shapes and a Conv / ConvInteger / pool attribute present — an empty list too — does not have one entry per
    spatial dim of X (pads two): dilations, strides, kernel_shape, pads, checked in that order; ConvTranspose's own
    list (its output_shape: N and C listed too is taken only where X's rank is unknown at load; output_padding)."""
    x, w, attrs = f.dims(0), f.dims(1) if needs_w else None, f.node.attrs
    if x is None or len(x) < 2 or needs_w and w is None:
        return
    nd = len(x) - 2
    checked = list(_WINDOW_ATTRS)
    if f.node.op_type == "ConvTranspose":
        checked += [("output_shape", 1), ("output_padding", 1)]
    for name, per_dim in checked:
        v = attrs.get(name)
        if name == "output_shape" and (not v or any(not isinstance(d, int) for d in attrs.get("kernel_shape", w[2:]))):
            continue  # (as there: the output_shape check needs the kernel)
        if isinstance(v, list) and len(v) != per_dim * nd:
            raise Fail(f"Node ({f.node.name}) Op ({f.node.op_type}) [ShapeInferenceError] Attribute {name} has "
                       "incorrect size")


@rule("Conv", "ConvTranspose")
def conv_rule(f):
    """X's type; the window geometry's dims (conv_geometry.conv_output_shape); the attribute sizes checked."""
    check_attr_sizes(f)
    return [(f.common_type([0, 1]), conv_output_shape(f.node.op_type, f.node.attrs, f.dims(0), f.dims(1)))]


@rule("ConvInteger")
def _conv_integer_rule(f):
    check_attr_sizes(f)
    return [(dt.INT32, conv_output_shape(f.node.op_type, f.node.attrs, f.dims(0), f.dims(1)))]


@rule("DeformConv")
def _deform_conv_rule(f):
    return [(f.type(0), unknown_dims(f.rank(0)))]


@rule("CausalConvWithState")
def _causal_conv_rule(f):
    """Y as X; the state keeps the last kernel - 1 time steps of each channel."""
    s0, w = f.dims(0), f.dims(1)
    k = w[2] if w is not None and len(w) == 3 else None
    state = None if s0 is None or len(s0) != 3 else [s0[0], s0[1], k - 1 if isinstance(k, int) else None]
    return [(f.type(0), s0), (f.type(0), state)]


@rule("Col2Im")
def _col2im_rule(f):
    return [(f.type(0), None)]
