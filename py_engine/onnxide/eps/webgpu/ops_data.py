"""Data movement on the WebGPU device: the numpy kernels of view ops (Reshape, Squeeze, Unsqueeze, Flatten, Identity,
Transpose, Slice, Split) run on a data-less stand-in decide shapes, errors and which elements each output
takes — a buffer shared when the output is the input in order, else one strided copy; the same copy serves Expand,
Tile, Concat and control flow's take; Gather / GatherElements read indices on the device (one out of range sets the
device's error flag instead of reading outside the input)."""
import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...errors import InvalidArgument
from ...ops.shape import expanded_shape
from . import programs as P
from .device import STORAGE

# storage bytes per element -> the WGSL element a copy moves
_ELEM = {4: "u32", 8: "vec2<u32>", 2: "f16"}
GATHER_ERROR = 1  # device.ERRORS' code


def _elem(dtype):
    return _ELEM[STORAGE[np.dtype(dtype)][1]]


def _contiguous_strides(shape):
    strides, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = acc
        acc *= shape[d]
    return strides


def strided_copy_into(device, src, dst, dims, istrides, ibase=0, ostrides=None, obase=0, imods=None):
    """dst[obase + sum(idx * ostrides)] = src[ibase + sum((idx % imods) * istrides)] over `dims` (element units)."""
    n = int(np.prod(dims, dtype=np.int64))
    rank = len(dims)
    ostrides = _contiguous_strides(dims) if ostrides is None else ostrides
    imods = [max(int(d), 1) for d in dims] if imods is None else imods
    elem = _elem(src.dtype)
    meta = [n, P.i32_word(ibase), obase] + list(dims) + [P.i32_word(s) for s in istrides] + list(ostrides) + \
        list(imods)

    def wgsl():
        return P.render("strided_copy", ENABLE="enable f16;" if elem == "f16" else "", ELEM=elem,
                        META_VEC4=P.META_WORDS // 4, RANK=rank, WORKGROUP=P.WORKGROUP, LINEAR=P.LINEAR)

    device.dispatch(("strided_copy", elem, rank), wgsl, [src], [dst], meta, n)


def indexed(x):
    """A numpy array with x's shape, dtype and C-order strides but no data of its own (one element, strided over):
    a numpy view kernel run on it returns views whose strides and offset say which elements of x it picks."""
    item = x.dtype.itemsize
    return as_strided(np.zeros(1, x.dtype), x.shape, [s * item for s in _contiguous_strides(x.shape)])


def _offset(view_array, base):
    """Element offset of a view's first element from `base`'s."""
    delta = view_array.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return delta // base.dtype.itemsize


def movement(device, x, kernel, args, kwargs):
    """Run a numpy kernel whose results are views of its first input (Reshape, Squeeze, Unsqueeze, Flatten,
    Identity, Transpose, Slice, Split) on indexed(x): each result becomes x's buffer under a new shape when
    it is x's elements in order, else a strided copy of the elements it selects."""
    base = indexed(x)
    result = kernel(base, *args, **kwargs)
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    outs = []
    for v in results:
        if not isinstance(v, np.ndarray) or not np.shares_memory(v, base) and v.size:
            raise InvalidArgument(f"{kernel.__name__}: not a view op on the WebGPU device")  # (a claim bug)
        item = x.dtype.itemsize
        off = _offset(v, base) if v.size else 0
        if v.size == x.size and off == 0 and v.flags.c_contiguous:
            outs.append(device.view(x, v.shape))
            continue
        out = device.alloc(v.shape, x.dtype)
        if out.size:
            strided_copy_into(device, x, out, list(v.shape), [st // item for st in v.strides], ibase=off)
        outs.append(out)
    return tuple(outs) if isinstance(result, (tuple, list)) else outs[0]


def expand(device, x, shape):
    out_shape = expanded_shape(x.shape, shape)
    xs = (1,) * (len(out_shape) - x.ndim) + x.shape
    out = device.alloc(out_shape, x.dtype)
    if out.size:
        strides = _contiguous_strides(xs)
        strided_copy_into(device, x, out, list(out_shape), [0 if d == 1 else s for d, s in zip(xs, strides)])
    return out


def tile(device, x, repeats):
    reps = [int(r) for r in np.asarray(repeats).reshape(-1)]
    if len(reps) != x.ndim or any(r < 0 for r in reps):
        raise InvalidArgument(f"Tile: repeats {reps} must be {x.ndim} non-negative values")
    dims = [d * r for d, r in zip(x.shape, reps)]
    out = device.alloc(dims, x.dtype)
    strided_copy_into(device, x, out, dims, _contiguous_strides(x.shape), imods=[max(d, 1) for d in x.shape])
    return out


def concat(device, xs, axis):
    rank = xs[0].ndim
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank or any(x.ndim != rank for x in xs) or any(
            x.shape[:axis] + x.shape[axis + 1:] != xs[0].shape[:axis] + xs[0].shape[axis + 1:] for x in xs):
        raise InvalidArgument(f"Concat: shapes {[x.shape for x in xs]} do not match outside axis {axis}")
    dims = list(xs[0].shape)
    dims[axis] = sum(x.shape[axis] for x in xs)
    out = device.alloc(dims, xs[0].dtype)
    ostrides = _contiguous_strides(dims)
    at = 0
    for x in xs:
        if x.size:
            strided_copy_into(device, x, out, list(x.shape), _contiguous_strides(x.shape), ostrides=ostrides,
                              obase=at * ostrides[axis])
        at += x.shape[axis]
    return out


def strided_copy(device, x, out, axis, index):
    """out = x[..., index, ...] along `axis` (control flow's take)."""
    strides = _contiguous_strides(x.shape)
    dims = list(x.shape[:axis] + x.shape[axis + 1:])
    strided_copy_into(device, x, out, dims, strides[:axis] + strides[axis + 1:], ibase=index * strides[axis])


def gather(device, data, indices, axis, elements=False):
    """Gather (elements=False) or GatherElements along `axis`; indices int32 / int64."""
    rank = data.ndim
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise InvalidArgument(f"{'GatherElements' if elements else 'Gather'}: axis {axis} out of range")
    dim = data.shape[axis]
    if elements:
        if indices.ndim != rank:
            raise InvalidArgument(f"GatherElements: indices rank {indices.ndim} != data rank {rank}")
        out_shape = indices.shape
    else:
        out_shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    out = device.alloc(out_shape, data.dtype)
    inner = int(np.prod(data.shape[axis + 1:], dtype=np.int64))
    elem = _elem(data.dtype)
    idx_words = 2 if indices.dtype == np.int64 else 1
    if elements:
        meta = [out.size, dim, axis, 0, 1, rank] + list(out_shape) + _contiguous_strides(data.shape)
        body = """let rank = m(5u); let axis = m(2u); var rem = i; var at = 0u;
  for (var d = 0u; d < rank; d++) {
    let e = rank - 1u - d; let c = rem % m(6u + e); rem = rem / m(6u + e);
    if (e != axis) { at += c * m(6u + rank + e); }
  }
  dst[i] = src[at + index_at(i, dim) * m(6u + rank + axis)];"""
    else:
        meta = [out.size, dim, inner, indices.size, 0, 0]
        body = """let inner = m(2u); let q = m(3u);
  let r = i % inner; let t = i / inner;
  dst[i] = src[((t / q) * dim + index_at(t % q, dim)) * inner + r];"""

    def wgsl():
        return P.render("gather", ENABLE="enable f16;" if elem == "f16" else "", ELEM=elem,
                        META_VEC4=P.META_WORDS // 4, IDX_WORDS=idx_words, ERR_CODE=GATHER_ERROR,
                        WORKGROUP=P.WORKGROUP, LINEAR=P.LINEAR, BODY=body)

    device.dispatch(("gather", elements, elem, idx_words), wgsl, [data, indices], [out], meta, out.size, checked=True)
    return out
