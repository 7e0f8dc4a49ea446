"""Indexing kernels: Gather*, Scatter*, TensorScatter, Slice, Compress, NonZero, Unique, ReverseSequence, OneHot,
TopK, ArgMax/ArgMin, CumSum/CumProd, Range."""
import math

import numpy as np

from ..dtypes import INT64, np_dtype
from ..errors import InvalidArgument
from ..runtime import limits
from .inference import positive_axis, rule, same_as_input, unknown_dims
from .math import lift, via_float32
from .registry import op
from .util import ints, norm_axis, slice_bounds


def _norm_indices(idx, dim, name):
    """Indices (np.intp) with negatives wrapped by `dim`; out-of-range ones are refused."""
    idx = np.asarray(idx).astype(np.int64, copy=False)
    if idx.ndim == 0:  # a scalar index (state[0], shape[i]): a Python int, which np.take takes as is
        i = int(idx)
        if i < -dim or i >= dim:
            raise InvalidArgument(f"{name}: index {i} is out of bounds for a dimension of size {dim}")
        return i + dim if i < 0 else i
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < -dim or hi >= dim:
            bad = lo if lo < -dim else hi
            raise InvalidArgument(f"{name}: index {bad} is out of bounds for a dimension of size {dim}")
        if lo < 0:
            idx = np.where(idx < 0, idx + dim, idx)
    return idx.astype(np.intp, copy=False)  # np.take refuses int64 where intp is int32 (wasm32 / Pyodide)


def _norm_indices_by(idx, dims, name):
    """Like _norm_indices with a per-position bound broadcast against idx (for GatherND/ScatterND tuples)."""
    idx = np.asarray(idx).astype(np.int64, copy=False)
    dims = np.asarray(dims, dtype=np.int64)
    if idx.size:
        if np.any(idx < -dims) or np.any(idx >= dims):
            raise InvalidArgument(f"{name}: index out of bounds for dimensions {dims.tolist()}")
        idx = np.where(idx < 0, idx + dims, idx)
    return idx


def _elements_index(indices, axis, data_shape, name):
    """Full advanced-index tuple addressing data[..., indices[...], ...] element-wise along `axis`."""
    if indices.ndim != len(data_shape):
        raise InvalidArgument(f"{name}: indices rank {indices.ndim} differs from data rank {len(data_shape)}")
    for d, (i, s) in enumerate(zip(indices.shape, data_shape)):
        if d != axis and i > s:
            raise InvalidArgument(f"{name}: indices shape {list(indices.shape)} exceeds data shape {list(data_shape)} "
                                  f"at axis {d}")
    idx = _norm_indices(indices, data_shape[axis], name)
    grids = list(np.ix_(*[np.arange(s) for s in indices.shape])) if indices.ndim else []
    grids[axis] = idx
    return tuple(grids)


# ---------------------------------------------------------------------------------------------------- Gather family

@op("Gather", since=1)
def gather(data, indices, *, axis=0):
    a = norm_axis(axis, data.ndim, "Gather")
    return np.take(data, _norm_indices(indices, data.shape[a], "Gather"), axis=a)


@rule("Gather")
def _gather_rule(f):
    """data's type; indices' dims in place of the axis. Gathering shape entries along axis 0 gives shape entries."""
    data, picks = f.shape_value(0), f.shape_value(1)
    if data is not None and picks is not None and f.attr("axis", 0) == 0:
        vals, (idx, scalar) = data[0], picks
        if all(isinstance(i, int) and -len(vals) <= i < len(vals) for i in idx):
            f.holds([vals[i] for i in idx], scalar)
    s0, si = f.dims(0), f.dims(1)
    if s0 is None or si is None:
        return [(f.type(0), None)]
    ax = positive_axis(f.attr("axis", 0), len(s0))
    return [(f.type(0), s0[:ax] + si + s0[ax + 1:])]


@op("GatherElements", since=11)
def gather_elements(data, indices, *, axis=0):
    a = norm_axis(axis, data.ndim, "GatherElements")
    return data[_elements_index(indices, a, data.shape, "GatherElements")]


@rule("GatherElements")
def _gather_elements_rule(f):
    return [(f.type(0), f.dims(1))]


def _nd_setup(data, indices, batch_dims, name):
    b = batch_dims
    k = indices.shape[-1] if indices.ndim else 0
    if indices.ndim < 1 or b < 0 or (b and b >= min(data.ndim, indices.ndim)) or k > data.ndim - b or \
            indices.shape[:b] != data.shape[:b]:
        raise InvalidArgument(f"{name}: incompatible data {data.shape} / indices {indices.shape} "
                              f"with batch_dims={b}")
    nb = math.prod(data.shape[:b])
    m = math.prod(indices.shape[b:-1])
    idx = _norm_indices_by(indices.reshape(nb, m, k), data.shape[b:b + k], name)
    bidx = np.arange(nb).reshape(nb, 1)
    key = (bidx,) + tuple(idx[..., j] for j in range(k))
    return b, k, nb, m, key


@op("GatherND", since=11)
def gather_nd_v11(data, indices):
    return gather_nd(data, indices, batch_dims=0)


@op("GatherND", since=12)
def gather_nd(data, indices, *, batch_dims=0):
    b, k, nb, m, key = _nd_setup(data, indices, batch_dims, "GatherND")
    flat = data.reshape((nb,) + data.shape[b:])
    if k == 0:  # every index tuple addresses the whole per-batch slice
        out = np.broadcast_to(flat[:, None], (nb, m) + data.shape[b:])
    else:
        out = flat[key]  # (nb, m, *rest)
    return out.reshape(indices.shape[:-1] + data.shape[b + k:])


@rule("GatherND")
def _gather_nd_rule(f):
    """data's type; indices' leading dims, then data's dims past the batch dims and the indexed ones."""
    s0, si, b = f.dims(0), f.dims(1), f.attr("batch_dims", 0)
    k = si[-1] if si else None
    return [(f.type(0), si[:-1] + s0[b + k:] if s0 is not None and isinstance(k, int) else None)]


_REDUCERS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter_apply(out, key, updates, reduction, name):
    if reduction == "none":
        out[key] = updates
    elif reduction in _REDUCERS:
        _REDUCERS[reduction].at(out, key, updates)
    else:
        raise InvalidArgument(f"{name}: unknown reduction '{reduction}'")
    return out


def _scatter_elements(data, indices, updates, axis, reduction, name):
    if indices.shape != updates.shape:
        raise InvalidArgument(f"{name}: indices shape {indices.shape} differs from updates {updates.shape}")
    a = norm_axis(axis, data.ndim, name)
    key = _elements_index(indices, a, data.shape, name)
    return _scatter_apply(data.copy(), key, updates, reduction, name)


@op("Scatter", since=9)
@via_float32
def scatter(data, indices, updates, *, axis=0):
    return _scatter_elements(data, indices, updates, axis, "none", "Scatter")


@op("ScatterElements", since=11)
@via_float32
def scatter_elements_v11(data, indices, updates, *, axis=0):
    return _scatter_elements(data, indices, updates, axis, "none", "ScatterElements")


@op("ScatterElements", since=16)
@via_float32
def scatter_elements(data, indices, updates, *, axis=0, reduction="none"):
    return _scatter_elements(data, indices, updates, axis, reduction, "ScatterElements")


def _scatter_nd(data, indices, updates, reduction):
    k = indices.shape[-1] if indices.ndim else 0
    if indices.ndim < 1 or k > data.ndim or updates.shape != indices.shape[:-1] + data.shape[k:]:
        raise InvalidArgument(f"ScatterND: incompatible data {data.shape} / indices {indices.shape} / "
                              f"updates {updates.shape}")
    m = math.prod(indices.shape[:-1])
    idx = _norm_indices_by(indices.reshape(m, k), data.shape[:k], "ScatterND")
    key = tuple(idx[:, j] for j in range(k))
    upd = updates.reshape((m,) + data.shape[k:])
    out = data.copy()
    if k == 0:  # every update addresses the whole tensor
        if m == 0:
            return out
        if reduction == "none":
            return upd[-1].copy()
        return _REDUCERS[reduction](out, _REDUCERS[reduction].reduce(upd, axis=0)).astype(out.dtype)
    return _scatter_apply(out, key, upd, reduction, "ScatterND")


@op("ScatterND", since=11)
@via_float32
def scatter_nd_v11(data, indices, updates):
    return _scatter_nd(data, indices, updates, "none")


@op("ScatterND", since=16)
@via_float32
def scatter_nd(data, indices, updates, *, reduction="none"):
    if reduction not in ("none",) + tuple(_REDUCERS):
        raise InvalidArgument(f"ScatterND: unknown reduction '{reduction}'")
    return _scatter_nd(data, indices, updates, reduction)


@op("TensorScatter", since=24)
def tensor_scatter(past_cache, update, write_indices=None, *, axis=-2, mode="linear"):
    r = past_cache.ndim
    a = norm_axis(axis, r, "TensorScatter")
    if a == 0:
        raise InvalidArgument("TensorScatter: axis cannot be the batch dimension 0")
    if update.ndim != r or any(update.shape[i] != past_cache.shape[i] for i in range(r) if i != a):
        raise InvalidArgument(f"TensorScatter: update shape {update.shape} does not match cache {past_cache.shape}")
    nb, max_s, s = past_cache.shape[0], past_cache.shape[a], update.shape[a]
    w = np.zeros(nb, np.int64) if write_indices is None else np.asarray(write_indices).astype(np.int64).reshape(-1)
    if w.shape[0] != nb:
        raise InvalidArgument(f"TensorScatter: write_indices has {w.shape[0]} entries for batch {nb}")
    pos = w[:, None] + np.arange(s, dtype=np.int64)[None, :]
    if mode == "circular":
        pos = pos % max_s if max_s else pos
    elif mode == "linear":
        if pos.size and (pos.max() >= max_s or pos.min() < 0):
            raise InvalidArgument("TensorScatter: write_indices + sequence_length exceed max_sequence_length")
    else:
        raise InvalidArgument(f"TensorScatter: unknown mode '{mode}'")
    out = past_cache.copy()
    out_m = np.moveaxis(out, a, 1)
    out_m[np.arange(nb)[:, None], pos] = np.moveaxis(update, a, 1)
    return out


rule("Scatter", "ScatterElements", "ScatterND", "TensorScatter")(same_as_input)


# ---------------------------------------------------------------------------------------------------- Slice

def _slice(data, starts, ends, axes, steps):
    r = data.ndim
    n = len(starts)
    if len(ends) != n:
        raise InvalidArgument("Slice: starts and ends differ in length")
    axes = list(range(n)) if axes is None else [norm_axis(a, r, "Slice") for a in axes]
    steps = [1] * n if steps is None else steps
    if len(axes) != n or len(steps) != n or len(set(axes)) != n:
        raise InvalidArgument("Slice: starts/ends/axes/steps disagree in length or axes repeat")
    if any(a >= r for a in axes):
        raise InvalidArgument(f"Slice: axes {axes} go beyond the input's rank {r}")
    sl = [slice(None)] * r
    for s, e, a, st in zip(starts, ends, axes, steps):
        if st == 0:
            raise InvalidArgument("Slice: step cannot be 0")
        sl[a] = slice_bounds(data.shape[a], s, e, st)
    return data[tuple(sl)]


@op("Slice", since=1)
def slice_v1(data, *, starts, ends, axes=None):
    return _slice(data, list(starts), list(ends), axes, None)


@op("Slice", since=10, host_inputs=(1, 2, 3, 4))
def slice_(data, starts, ends, axes=None, steps=None):
    return _slice(data, ints(starts), ints(ends), ints(axes), ints(steps))


def _sliced(s0, starts, ends, axes, steps):
    """Slice's output dims (the kernel's bounds, ops.util.slice_bounds); unknown dims stay unknown."""
    r = len(s0)
    axes = list(range(len(starts))) if axes is None else [x + r if x < 0 else x for x in axes]
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps) or any(not 0 <= x < r for x in axes) or 0 in steps:
        return None
    out = list(s0)
    for x, st, en, sp in zip(axes, starts, ends, steps):
        out[x] = len(range(*slice_bounds(out[x], st, en, sp).indices(out[x]))) if isinstance(out[x], int) else None
    return out


def _slice_params(f):
    """(starts, ends, axes, steps) from the attributes (Slice-1) or the constant inputs; None when not known."""
    if f.opset < 10:
        return list(f.attr("starts")), list(f.attr("ends")), f.attr("axes"), None
    starts, ends, axes, steps = f.ints(1), f.ints(2), f.ints(3), f.ints(4)
    if starts is None or ends is None or (f.has(3) and axes is None) or (f.has(4) and steps is None):
        return None
    return starts, ends, axes, steps


@rule("Slice")
def _slice_rule(f):
    """data's type and rank; the sliced dims where the bounds are known."""
    t0, s0 = f.type(0), f.dims(0)
    if s0 is None:
        return [(t0, None)]
    params = _slice_params(f)
    dims = None if params is None else _sliced(s0, *params)
    held = f.shape_value(0)
    if held is not None and not held[1] and params is not None and len(params[0]) == 1 and \
            len(params[1]) == 1 and params[2] in (None, [0], [-1]) and params[3] in (None, [1]):
        n = len(held[0])  # (a 1-D shape value sliced: torch's x.shape[:2])
        f.holds([held[0][i] for i in range(*slice_bounds(n, params[0][0], params[1][0], 1).indices(n))])
    return [(t0, dims if dims is not None else unknown_dims(len(s0)))]


# ---------------------------------------------------------------------------------------------------- Compress / NonZero

@op("Compress", since=9, host_inputs=(1,))
def compress(input, condition, *, axis=None):  # noqa: A002
    cond = np.asarray(condition).astype(bool).reshape(-1)
    if axis is None:
        flat = input.reshape(-1)
        cond = cond[:flat.shape[0]]
        return flat[np.nonzero(cond)[0]]
    a = norm_axis(axis, input.ndim, "Compress")
    cond = cond[:input.shape[a]]
    return np.take(input, np.nonzero(cond)[0], axis=a)


@op("NonZero", since=9)
def nonzero(X):  # noqa: N803
    x = X.reshape(1) if X.ndim == 0 else X
    if x.dtype == object:
        x = x.astype(bool)
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


@rule("Compress")
def _compress_rule(f):
    """input's type; 1-D without an axis, else its dims with the axis dim unknown."""
    s0, axis = f.dims(0), f.attr("axis")
    if axis is None:
        return [(f.type(0), [None])]
    ax = None if s0 is None else positive_axis(axis, len(s0))
    return [(f.type(0), None if s0 is None else [None if i == ax else d for i, d in enumerate(s0)])]


@rule("NonZero")
def _non_zero_rule(f):
    """int64 [rank (a scalar counts as rank 1), number of non-zeros]."""
    r = f.rank(0)
    return [(INT64, [None if r is None else max(r, 1), None])]


# ---------------------------------------------------------------------------------------------------- Unique

def _sort_key(x):
    """An array numpy can sort/compare exactly for x (exotic floats, ml_dtypes or structured, as float32)."""
    return lift(x)[0]


@op("Unique", since=11)
def unique(X, *, axis=None, sorted=1):  # noqa: N803, A002
    if axis is None:
        rows = X.reshape(-1, 1)
        moved = X.reshape(-1)
    else:
        a = norm_axis(axis, X.ndim, "Unique")
        moved = np.moveaxis(X, a, 0)
        rows = moved.reshape(moved.shape[0], -1)
    n = rows.shape[0]
    keys = _sort_key(rows)
    if n == 0:
        order = np.zeros(0, np.int64)
    elif keys.shape[1] == 1:
        order = np.argsort(keys[:, 0], kind="stable")
    elif keys.shape[1] == 0:
        order = np.arange(n)
    else:
        order = np.lexsort(keys.T[::-1])
    srt = keys[order]
    starts = np.ones(n, dtype=bool)
    if n > 1:
        differ = srt[1:] != srt[:-1]
        if srt.dtype.kind in "fc":  # NaNs compare equal to each other, as in numpy.unique
            differ &= ~(np.isnan(srt[1:]) & np.isnan(srt[:-1]))
        starts[1:] = np.any(differ, axis=1)
    gid = np.cumsum(starts) - 1  # group of each sorted position
    first = order[starts].astype(np.int64)  # first occurrence of each group (stable sort)
    bounds = np.append(np.nonzero(starts)[0], n)
    counts = np.diff(bounds).astype(np.int64)
    inverse = np.empty(n, np.int64)
    inverse[order] = gid
    if not sorted:
        perm = np.argsort(first, kind="stable")
        rank = np.empty_like(perm)
        rank[perm] = np.arange(perm.shape[0])
        first, counts, inverse = first[perm], counts[perm], rank[inverse]
    y = moved[first]
    if axis is not None:
        y = np.moveaxis(y, 0, a)
    return y, first, inverse.astype(np.int64), counts


@rule("Unique")
def _unique_rule(f):
    """Y: X's type (1-D without an axis, else X's dims with the axis dim unknown); the index outputs: int64 1-D."""
    s0, axis = f.dims(0), f.attr("axis")
    if axis is None:
        y = [None]
    else:
        y = None if s0 is None else [None if i == positive_axis(axis, len(s0)) else d for i, d in enumerate(s0)]
    return [(f.type(0), y)] + [(INT64, [None])] * 3


# ---------------------------------------------------------------------------------------------------- ReverseSequence

@op("ReverseSequence", since=10)
def reverse_sequence(input, sequence_lens, *, batch_axis=1, time_axis=0):  # noqa: A002
    r = input.ndim
    ba, ta = norm_axis(batch_axis, r, "ReverseSequence"), norm_axis(time_axis, r, "ReverseSequence")
    if ba == ta or not {ba, ta} <= {0, 1}:
        raise InvalidArgument("ReverseSequence: batch_axis and time_axis must be 0 and 1 in some order")
    nb, nt = input.shape[ba], input.shape[ta]
    lens = np.asarray(sequence_lens).astype(np.int64).reshape(-1)
    if lens.shape[0] != nb or np.any(lens < 0) or np.any(lens > nt):
        raise InvalidArgument(f"ReverseSequence: invalid sequence_lens {lens.tolist()}")
    t = np.arange(nt)[:, None]  # (T, B)
    src = np.where(t < lens[None, :], lens[None, :] - 1 - t, t)
    if ta == 1:
        src = src.T
    shape = [1] * r
    shape[ta], shape[ba] = nt, nb
    idx = np.broadcast_to(src.reshape(shape), input.shape)
    return np.take_along_axis(input, idx, axis=ta)


rule("ReverseSequence")(same_as_input)


# ---------------------------------------------------------------------------------------------------- OneHot

@op("OneHot", since=9, host_inputs=(1,))
def one_hot(indices, depth, values, *, axis=-1):
    d = np.asarray(depth).reshape(-1)
    if d.size != 1:
        raise InvalidArgument("OneHot: depth must hold exactly one value")
    d = int(lift(d)[0].astype(np.int64)[0])  # depth and indices may be of any numeric type, exotic floats too
    v = np.asarray(values).reshape(-1)
    if v.size != 2:
        raise InvalidArgument("OneHot: values must hold [off_value, on_value]")
    r = indices.ndim
    if not -r - 1 <= axis <= r:
        raise InvalidArgument(f"OneHot: axis {axis} is out of range for rank {r}")
    a = axis + r + 1 if axis < 0 else axis
    if d < 1:
        raise InvalidArgument(f"OneHot: depth must be positive, got {d}")
    limits.check_shape(indices.shape + (d,), v.dtype, "OneHot output")
    idx = lift(indices)[0].astype(np.int64)
    idx = np.where(idx < 0, idx + d, idx)
    shape = [1] * (r + 1)
    shape[a] = d
    hot = np.expand_dims(idx, a) == np.arange(d, dtype=np.int64).reshape(shape)
    return np.where(hot, v[1], v[0]).astype(v.dtype, copy=False)


@rule("OneHot")
def _one_hot_rule(f):
    """values' type; indices' dims with the depth inserted at the axis (unknown unless depth is constant)."""
    si, depth = f.dims(0), f.const(1)
    if si is None:
        return [(f.type(2), None)]
    d = int(np.asarray(depth).reshape(-1)[0]) if depth is not None and depth.size == 1 and \
        depth.dtype.kind in "iuf" else None
    a = positive_axis(f.attr("axis", -1), len(si) + 1)
    return [(f.type(2), si[:a] + [d] + si[a:])]


# ---------------------------------------------------------------------------------------------------- TopK / Arg*

def _topk(x, k, axis, largest, name="TopK"):
    if x.ndim == 0:
        raise InvalidArgument(f"{name}: X must have rank >= 1, got a scalar")
    a = norm_axis(axis, x.ndim, name)
    n = x.shape[a]
    if k < 0 or k > n:
        raise InvalidArgument(f"{name}: k={k} is out of range for an axis of size {n}")
    keys = _sort_key(x)
    if largest:  # descending values, ties keep ascending index order
        rev = np.flip(keys, axis=a)
        order = (n - 1) - np.flip(np.argsort(rev, axis=a, kind="stable"), axis=a)
    else:
        order = np.argsort(keys, axis=a, kind="stable")
    idx = np.take(order, np.arange(k), axis=a).astype(np.int64)
    return np.take_along_axis(x, idx, axis=a), idx


@op("TopK", since=1)
def top_k_v1(X, *, axis=-1, k):  # noqa: N803
    return _topk(X, k, axis, True)


def _k(K):
    k = ints(K)
    if len(k) != 1:
        raise InvalidArgument(f"TopK: K must hold one value, got {len(k)}")
    return k[0]


@op("TopK", since=10, host_inputs=(1,))
def top_k_v10(X, K, *, axis=-1):  # noqa: N803
    return _topk(X, _k(K), axis, True)


@op("TopK", since=11, host_inputs=(1,))
def top_k(X, K, *, axis=-1, largest=1, sorted=1):  # noqa: N803, A002
    return _topk(X, _k(K), axis, largest)


@rule("TopK")
def _top_k_rule(f):
    """Values of X's type, int64 indices; X's dims with k along the axis (unknown unless k is constant)."""
    s0 = f.dims(0)
    if s0 is None:
        return [(f.type(0), None), (INT64, None)]
    k = f.attr("k") if f.opset < 10 else (f.ints(1) or [None])[0]
    ax = positive_axis(f.attr("axis", -1), len(s0))
    dims = [k if i == ax else d for i, d in enumerate(s0)]
    return [(f.type(0), dims), (INT64, dims)]


def _arg(data, axis, keepdims, select_last_index, fn, name):
    if data.ndim == 0:
        raise InvalidArgument(f"{name}: axis {axis} is out of range for a scalar (rank 0)")
    a = norm_axis(axis, data.ndim, name)
    if data.shape[a] == 0:
        raise InvalidArgument(f"{name}: cannot reduce an empty axis {a}")
    keys = _sort_key(data)
    if select_last_index:
        res = (data.shape[a] - 1) - fn(np.flip(keys, axis=a), axis=a)
    else:
        res = fn(keys, axis=a)
    res = np.asarray(res, dtype=np.int64)
    return np.expand_dims(res, a) if keepdims else res


@op("ArgMax", since=1)
@via_float32
def arg_max_v1(data, *, axis=0, keepdims=1):
    return _arg(data, axis, keepdims, 0, np.argmax, "ArgMax")


@op("ArgMax", since=12)
@via_float32
def arg_max(data, *, axis=0, keepdims=1, select_last_index=0):
    return _arg(data, axis, keepdims, select_last_index, np.argmax, "ArgMax")


@op("ArgMin", since=1)
@via_float32
def arg_min_v1(data, *, axis=0, keepdims=1):
    return _arg(data, axis, keepdims, 0, np.argmin, "ArgMin")


@op("ArgMin", since=12)
@via_float32
def arg_min(data, *, axis=0, keepdims=1, select_last_index=0):
    return _arg(data, axis, keepdims, select_last_index, np.argmin, "ArgMin")


@rule("ArgMax", "ArgMin")
def _arg_rule(f):
    """int64; the data's dims without the axis (kept as 1 with keepdims)."""
    s0 = f.dims(0)
    if s0 is None:
        return [(INT64, None)]
    ax, keep = positive_axis(f.attr("axis", 0), len(s0)), f.attr("keepdims", 1)
    return [(INT64, [1 if i == ax else d for i, d in enumerate(s0)] if keep else
             [d for i, d in enumerate(s0) if i != ax])]


# ---------------------------------------------------------------------------------------------------- CumSum / CumProd

def _cum(x, axis, exclusive, reverse, fn, ident, name):
    if x.ndim == 0:
        raise InvalidArgument(f"Cannot apply {name} operator on a scalar")
    a = norm_axis(ints(axis)[0], x.ndim, name)
    y = np.flip(x, axis=a) if reverse else x
    out = fn(y, axis=a, dtype=x.dtype)
    if exclusive:
        pad = np.full(tuple(1 if i == a else s for i, s in enumerate(x.shape)), ident, dtype=x.dtype)
        out = np.concatenate([pad, np.take(out, np.arange(x.shape[a] - 1), axis=a)], axis=a)
    return np.ascontiguousarray(np.flip(out, axis=a)) if reverse else out


@op("CumSum", since=11, host_inputs=(1,))
@via_float32
def cum_sum(x, axis, *, exclusive=0, reverse=0):
    return _cum(x, axis, exclusive, reverse, np.cumsum, 0, "CumSum")


@op("CumProd", since=26, host_inputs=(1,))
@via_float32
def cum_prod(x, axis, *, exclusive=0, reverse=0):
    return _cum(x, axis, exclusive, reverse, np.cumprod, 1, "CumProd")


rule("CumSum", "CumProd")(same_as_input)


# ---------------------------------------------------------------------------------------------------- Range

def _range(start, limit, delta, stash):
    dt = np.asarray(start).dtype
    for name, v in (("start", start), ("limit", limit), ("delta", delta)):
        if np.size(v) != 1:
            raise InvalidArgument(f"Range: {name} must be a scalar, got shape {np.shape(v)}")
    s, l, d = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    if dt.kind in "iu":
        s, l, d = int(s), int(l), int(d)
        if d == 0:
            raise InvalidArgument("Range: delta cannot be 0")
        n = max(-((s - l) // d), 0)  # ceil((l - s) / d)
        limits.check_shape([n], dt, "Range output")
        return (s + np.arange(n, dtype=np.int64) * d).astype(dt)
    work = dt
    if dt.kind not in "f" or dt.itemsize < 4 or dt == np.float16:
        work = np.dtype(np.float32) if stash is None else np_dtype(stash)
    fs, fl, fd = (float(v.astype(np.float64)) for v in (s, l, d))
    if fd == 0 or not math.isfinite(fs) or not math.isfinite(fl) or not math.isfinite(fd):
        raise InvalidArgument(f"Range: start {fs}, limit {fl} and delta {fd} must be finite, delta non-zero")
    n = max(int(math.ceil((fl - fs) / fd)), 0)
    limits.check_shape([n], dt, "Range output")
    ws, wd = np.asarray(fs, work), np.asarray(fd, work)
    return (ws + np.arange(n).astype(work) * wd).astype(work).astype(dt)


@op("Range", since=11, host_inputs=(0, 1, 2))
@via_float32
def range_v11(start, limit, delta):
    return _range(start, limit, delta, None)


@op("Range", since=27, host_inputs=(0, 1, 2))
@via_float32
def range_(start, limit, delta, *, stash_type=1):
    return _range(start, limit, delta, stash_type)


@rule("Range")
def _range_rule(f):
    """The inputs' type; 1-D of ceil((limit - start) / delta) entries when those are known integers (a symbolic
    limit when start is 0 and delta 1)."""
    known = [f.shape_value(i) for i in range(3)]
    length = None
    if all(v is not None and len(v[0]) == 1 for v in known):
        (start,), (limit,), (delta,) = (v[0] for v in known)
        if all(isinstance(v, int) for v in (start, limit, delta)) and delta:
            length = max(-((start - limit) // delta), 0)
        elif start == 0 and delta == 1 and isinstance(limit, str):
            length = limit
    return [(f.common_type([0, 1, 2]), [length])]
