"""Pooling: MaxPool (with Indices), AveragePool, LpPool, the Global* pools, MaxUnpool, MaxRoiPool."""
import itertools
import math

import numpy as np

from .. import dtypes as dt
from ..errors import InvalidArgument
from ..runtime import limits
from .conv import check_attr_sizes, compute_dtype, pad_spatial
from .conv_geometry import ConvGeometry, conv_output_shape
from .inference import rule, unknown_dims
from .math import via_float32
from .registry import op


def _name(kind, ctx):
    return f"{kind} node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) else kind


def _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, name):
    """(kernel, out, pads begin, pads end, pads end every window fits in, strides, dilations) of ConvGeometry.pool."""
    g = ConvGeometry.pool(x.shape, name, auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations,
                          kernel_shape=kernel_shape, pads=pads, strides=strides)
    return g.kernel, g.out, g.pads_begin, g.pads_end, g.window_pads_end, g.strides, g.dilations


def _taps(ks, out, st, dil):
    """(flat tap index, slices into the padded spatial axes) for each kernel tap."""
    for t, kidx in enumerate(itertools.product(*[range(k) for k in ks])):
        yield t, kidx, tuple(slice(k * d, k * d + (o - 1) * s + 1, s) for k, d, o, s in zip(kidx, dil, out, st))


def _lowest(dtype):
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return -np.inf


@op("MaxPool", since=1)
@via_float32
def max_pool(x, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None, storage_order=0,
             strides=None, ctx=None):
    name = _name("MaxPool", ctx)
    ks, out, pb, pe, pe_full, st, dil = _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, name)
    xc = x if x.dtype.kind in "fiu" and x.dtype != np.float16 else x.astype(compute_dtype(x.dtype))
    low = _lowest(xc.dtype)
    xp = pad_spatial(xc, pb, pe_full, low)
    want_idx = ctx is not None and getattr(ctx, "num_outputs", 1) > 1
    if not want_idx:  # max is separable: sum(kernel) passes, one spatial axis at a time, instead of prod(kernel)
        y = xp
        for a in reversed(range(len(ks))):
            y = _max_along(y, 2 + a, ks[a], out[a], st[a], dil[a])
        return y.astype(x.dtype, copy=False)
    y = None
    best = None
    for t, kidx, sl in _taps(ks, out, st, dil):
        v = xp[(slice(None), slice(None)) + sl]
        if y is None:
            y = v.copy()
            if want_idx:
                best = np.zeros(y.shape, dtype=np.int64)
            continue
        if want_idx:
            better = v > y
            best[better] = t
        np.maximum(y, v, out=y)
    y = y.astype(x.dtype, copy=False)
    if not want_idx:
        return y
    # map the winning tap back to input coordinates and then to a flat index over the whole input
    nd = len(ks)
    taps = np.array(list(itertools.product(*[range(k) for k in ks])), dtype=np.int64).reshape(-1, nd)
    ins = x.shape[2:]
    n, c = x.shape[:2]
    spatial_idx = np.zeros(best.shape, dtype=np.int64)
    mult = 1
    axes = range(nd) if storage_order else reversed(range(nd))
    for a in axes:
        shape = [1] * (2 + nd)
        shape[2 + a] = out[a]
        pos = np.arange(out[a], dtype=np.int64).reshape(shape) * st[a] - pb[a] + taps[best, a] * dil[a]
        spatial_idx += pos * mult
        mult *= ins[a]
    nc = np.arange(n * c, dtype=np.int64).reshape((n, c) + (1,) * nd) * mult
    return y, spatial_idx + nc


def _max_along(x, axis, k, out, stride, dilation):
    """Windowed max over one axis: out positions `stride` apart, `k` taps `dilation` apart."""
    acc = None
    for t in range(k):
        sl = [slice(None)] * x.ndim
        sl[axis] = slice(t * dilation, t * dilation + (out - 1) * stride + 1, stride)
        v = x[tuple(sl)]
        if acc is None:
            acc = v.copy()
        else:
            np.maximum(acc, v, out=acc)
    return acc


def _window_sum(xp, ks, out, st, dil):
    acc = None
    for _, _, sl in _taps(ks, out, st, dil):
        v = xp[(Ellipsis,) + sl]
        acc = v.astype(v.dtype, copy=True) if acc is None else acc + v
    return acc


@op("AveragePool", since=1)
@via_float32
def average_pool(x, *, auto_pad="NOTSET", ceil_mode=0, count_include_pad=0, dilations=None, kernel_shape=None,
                 pads=None, strides=None, ctx=None):
    name = _name("AveragePool", ctx)
    ks, out, pb, pe, pe_full, st, dil = _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, name)
    ct = compute_dtype(x.dtype)
    xp = pad_spatial(x.astype(ct, copy=False), pb, pe_full, 0)
    s = _window_sum(xp, ks, out, st, dil)
    ins = list(x.shape[2:])
    # divisor: taps landing on real input (or on explicit/auto pads with count_include_pad), never on the
    # extra end region ceil_mode adds
    if count_include_pad:
        mask = np.zeros([b + i + e for b, i, e in zip(pb, ins, pe_full)], dtype=ct)
        mask[tuple(slice(0, b + i + e) for b, i, e in zip(pb, ins, pe))] = 1
    else:
        mask = pad_spatial(np.ones([1, 1] + ins, dtype=ct), pb, pe_full, 0)[0, 0]
    cnt = _window_sum(mask, ks, out, st, dil)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = s / cnt
    return y.astype(x.dtype, copy=False)


def _lp_pool(x, p, auto_pad, ceil_mode, dilations, kernel_shape, pads, strides, ctx):
    name = _name("LpPool", ctx)
    ks, out, pb, pe, pe_full, st, dil = _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, name)
    ct = compute_dtype(x.dtype)
    xa = np.abs(x.astype(ct, copy=False))
    xp = pad_spatial(xa ** ct.type(p), pb, pe_full, 0)
    s = _window_sum(xp, ks, out, st, dil)
    return (s ** ct.type(1.0 / p)).astype(x.dtype, copy=False)


@op("LpPool", since=1)
@via_float32
def lp_pool_1(x, *, auto_pad="NOTSET", kernel_shape=None, p=2.0, pads=None, strides=None, ctx=None):
    _check_p(p, "LpPool")
    return _lp_pool(x, float(p), auto_pad, 0, None, kernel_shape, pads, strides, ctx)


@op("LpPool", since=2)
@via_float32
def lp_pool(x, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, p=2, pads=None, strides=None,
            ctx=None):
    _check_p(p, "LpPool")
    return _lp_pool(x, float(p), auto_pad, ceil_mode, dilations, kernel_shape, pads, strides, ctx)


def _check_p(p, what):
    if not p > 0 or not math.isfinite(p):
        raise InvalidArgument(f"{what}: p must be positive, got {p}")


def _spatial_axes(x, kind):
    if x.ndim < 3:
        raise InvalidArgument(f"{kind}: X must be at least 3-D, got shape {x.shape}")
    return tuple(range(2, x.ndim))


@op("GlobalAveragePool", since=1)
@via_float32
def global_average_pool(x, *, ctx=None):
    ax = _spatial_axes(x, "GlobalAveragePool")
    return np.mean(x, axis=ax, keepdims=True, dtype=compute_dtype(x.dtype)).astype(x.dtype, copy=False)


@op("GlobalMaxPool", since=1)
@via_float32
def global_max_pool(x, *, ctx=None):
    ax = _spatial_axes(x, "GlobalMaxPool")
    return np.max(x, axis=ax, keepdims=True).astype(x.dtype, copy=False)


def _global_lp(x, p):
    ax = _spatial_axes(x, "GlobalLpPool")
    ct = compute_dtype(x.dtype)
    s = np.sum(np.abs(x.astype(ct, copy=False)) ** ct.type(p), axis=ax, keepdims=True)
    return (s ** ct.type(1.0 / p)).astype(x.dtype, copy=False)


@op("GlobalLpPool", since=1)
@via_float32
def global_lp_pool_1(x, *, p=2.0, ctx=None):
    return _global_lp(x, float(p))


@op("GlobalLpPool", since=2)
@via_float32
def global_lp_pool(x, *, p=2, ctx=None):
    return _global_lp(x, float(p))


@op("MaxUnpool", since=9, host_inputs=(2,))
def max_unpool(x, indices, output_shape=None, *, kernel_shape=None, pads=None, strides=None, ctx=None):
    name = _name("MaxUnpool", ctx)
    if not kernel_shape:
        raise InvalidArgument(f"{name}: attribute 'kernel_shape' is required")
    nd = x.ndim - 2
    ks = [int(k) for k in kernel_shape]
    st = [int(s) for s in strides] if strides else [1] * nd
    p = [int(v) for v in pads] if pads else [0] * (2 * nd)
    if nd < 1 or len(ks) != nd or len(st) != nd or len(p) != 2 * nd or min(ks + st) < 1 or min(p) < 0:
        raise InvalidArgument(f"{name}: kernel_shape {ks}, strides {st} and pads {p} do not fit X shape {x.shape} "
                              "(kernel and strides positive, pads non-negative, one per spatial dim)")
    inferred = x.shape[:2] + tuple((i - 1) * s + k - p[a] - p[nd + a]
                                   for a, (i, s, k) in enumerate(zip(x.shape[2:], st, ks)))
    if indices.shape != x.shape:
        raise InvalidArgument(f"{name}: I shape {indices.shape} differs from X shape {x.shape}")
    if min(inferred) < 0:
        raise InvalidArgument(f"{name}: the pads leave a negative output shape {inferred}")
    limits.check_shape(inferred, x.dtype, f"{name} output")
    y = np.zeros(math.prod(inferred), dtype=x.dtype)
    idx = indices.reshape(-1).astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= y.size):
        raise InvalidArgument(f"{name}: index out of range for unpooled shape {inferred}")
    y[idx] = x.reshape(-1)
    y = y.reshape(inferred)
    if output_shape is None:
        return y
    # as onnx's reference: indices address the inferred shape, which lands in the leading corner of output_shape
    shape = tuple(int(v) for v in np.asarray(output_shape).reshape(-1))
    if len(shape) != x.ndim or any(s < i for s, i in zip(shape, inferred)):
        raise InvalidArgument(f"{name}: output_shape {shape} must have rank {x.ndim} and cover {inferred}")
    limits.check_shape(shape, x.dtype, f"{name} output")
    res = np.zeros(shape, dtype=x.dtype)
    res[tuple(slice(0, i) for i in inferred)] = y
    return res


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


@op("MaxRoiPool", since=1)
@via_float32
def max_roi_pool(x, rois, *, pooled_shape=None, spatial_scale=1.0, ctx=None):
    name = _name("MaxRoiPool", ctx)
    if not pooled_shape or len(pooled_shape) != 2 or x.ndim != 4:
        raise InvalidArgument(f"{name}: needs 4-D X and a 2-value pooled_shape")
    ph, pw = (int(v) for v in pooled_shape)
    if ph < 1 or pw < 1 or not math.isfinite(spatial_scale) or not spatial_scale > 0:
        raise InvalidArgument(f"{name}: pooled_shape {list(pooled_shape)} must be positive and spatial_scale "
                              f"{spatial_scale} finite")
    n, c, h, w = x.shape
    if np.ndim(rois) != 2 or np.shape(rois)[1] != 5:
        raise InvalidArgument(f"{name}: rois must be (num_rois, 5), got shape {np.shape(rois)}")
    limits.check_shape((np.shape(rois)[0], c, ph, pw), x.dtype, f"{name} output")
    r = np.asarray(rois, dtype=np.float64).reshape(-1, 5)
    y = np.zeros((r.shape[0], c, ph, pw), dtype=x.dtype)
    for i, roi in enumerate(r):
        b = int(roi[0])
        if b < 0 or b >= n:
            raise InvalidArgument(f"{name}: roi batch index {b} out of range")
        x1, y1, x2, y2 = (int(v) for v in _round_half_away(roi[1:] * spatial_scale))
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = rh / ph, rw / pw
        for i_h in range(ph):
            hs = min(max(int(np.floor(i_h * bh)) + y1, 0), h)
            he = min(max(int(np.ceil((i_h + 1) * bh)) + y1, 0), h)
            for i_w in range(pw):
                ws = min(max(int(np.floor(i_w * bw)) + x1, 0), w)
                we = min(max(int(np.ceil((i_w + 1) * bw)) + x1, 0), w)
                if he > hs and we > ws:
                    y[i, :, i_h, i_w] = x[b, :, hs:he, ws:we].max(axis=(1, 2))
    return y


# ---------------------------------------------------------------------------------------------------- shape rules

@rule("MaxPool", "AveragePool", "LpPool")
def _pool_rule(f):
    """X's type and the window geometry's dims (the attribute sizes checked); MaxPool's indices are int64."""
    check_attr_sizes(f, needs_w=False)
    dims = conv_output_shape(f.node.op_type, f.node.attrs, f.dims(0))
    return [(f.type(0), dims)] + [(dt.INT64, dims)] * (f.n_outputs - 1)


@rule("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _global_pool_rule(f):
    s0 = f.dims(0)
    return [(f.type(0), None if s0 is None else s0[:2] + [1] * (len(s0) - 2))]


@rule("MaxUnpool")
def _max_unpool_rule(f):
    return [(f.type(0), unknown_dims(f.rank(0)))]


@rule("MaxRoiPool")
def _max_roi_pool_rule(f):
    return [(f.type(0), unknown_dims(4))]
