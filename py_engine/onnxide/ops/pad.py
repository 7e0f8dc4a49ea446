"""Padding and cropping kernels: Pad (constant / reflect / edge / wrap; negative pads crop) and CenterCropPad."""
import numpy as np

from ..errors import InvalidArgument
from ..runtime import limits
from .inference import positive_axis, rule, unknown_dims
from .math import lower
from .registry import op
from .util import ints, norm_axes


# ---------------------------------------------------------------------------------------------------- Pad

def _pad(data, pads, mode, value, axes=None):
    r = data.ndim
    if axes is None:
        axes = list(range(r))
    else:
        axes = norm_axes(axes, r, "Pad")
    n = len(axes)
    if len(pads) != 2 * n:
        raise InvalidArgument(f"Pad: {len(pads)} pads given for {n} axes")
    before, after = [0] * r, [0] * r
    for i, a in enumerate(axes):
        before[a], after[a] = pads[i], pads[i + n]
    if any(p < 0 for p in before + after):  # negative pads crop first
        sl = tuple(slice(max(-b, 0), d - max(-e, 0)) for b, e, d in zip(before, after, data.shape))
        if any(max(-b, 0) + max(-e, 0) > d for b, e, d in zip(before, after, data.shape)):
            raise InvalidArgument(f"Pad: negative pads {list(pads)} remove more than the whole of shape {data.shape}")
        data = data[sl]
    width = [(max(b, 0), max(e, 0)) for b, e in zip(before, after)]
    if not any(b or e for b, e in width):
        return data.copy()
    limits.check_shape([d + b + e for d, (b, e) in zip(data.shape, width)], data.dtype, "Pad output")
    if mode == "constant":
        v = np.zeros((), data.dtype) if value is None else np.asarray(value).reshape(-1)
        v = v.reshape(-1)[0] if v.size else np.zeros((), data.dtype)
        if data.dtype.names is not None and np.asarray(v).dtype != data.dtype:  # a number for a structured type
            v = lower(np.asarray(v, dtype=np.float64), data.dtype)
        out = np.full([d + b + e for d, (b, e) in zip(data.shape, width)], v, dtype=data.dtype)
        out[tuple(slice(b, b + d) for d, (b, _) in zip(data.shape, width))] = data
        return out
    if mode not in ("reflect", "edge", "wrap"):
        raise InvalidArgument(f"Pad: unsupported mode '{mode}'")
    for a, (b, e) in enumerate(width):
        if b or e:
            d = data.shape[a]
            if d == 0:
                raise InvalidArgument(f"Pad: cannot {mode}-pad the empty axis {a}")
            data = np.take(data, pad_indices(mode, d, b, e), axis=a)
    return data


def pad_indices(mode, d, b, e):
    """Source index of each position of an axis of length d padded by b before and e after (numpy.pad's rules,
    which ONNX follows, pads longer than the axis included); one gather per padded axis."""
    i = np.arange(-b, d + e)
    if mode == "edge":
        return np.clip(i, 0, d - 1)
    if mode == "wrap":
        return i % d
    if d == 1:  # reflect of a single element repeats it
        return np.zeros_like(i)
    i = np.abs(i) % (2 * (d - 1))
    return np.where(i >= d, 2 * (d - 1) - i, i)


@op("Pad", since=1)
def pad_v1(data, *, mode="constant", paddings, value=0.0):
    return _pad(data, paddings, mode, value)


@op("Pad", since=2)
def pad_v2(data, *, mode="constant", pads, value=0.0):
    return _pad(data, pads, mode, value)


@op("Pad", since=11, host_inputs=(1, 2))
def pad_v11(data, pads, constant_value=None, *, mode="constant"):
    return _pad(data, ints(pads), mode, constant_value)


@op("Pad", since=18, host_inputs=(1, 2, 3))
def pad(data, pads, constant_value=None, axes=None, *, mode="constant"):
    return _pad(data, ints(pads), mode, constant_value, ints(axes))


def _padded(s0, pads, axes):
    """Pad's output dims: pads (begin..., end...) over `axes` (all when None); unknown dims stay unknown."""
    r = len(s0)
    axes = list(range(r)) if axes is None else [x + r if x < 0 else x for x in axes]
    if len(pads) != 2 * len(axes) or any(not 0 <= x < r for x in axes):
        return None
    out = list(s0)
    for i, x in enumerate(axes):
        size = out[x] + pads[i] + pads[i + len(axes)] if isinstance(out[x], int) else -1
        out[x] = size if size >= 0 else None  # (cropping past the whole axis: the kernel reports it)
    return out


def _pads_and_axes(f):
    """(pads, axes) when they are attributes (Pad-1 / Pad-2) or constant inputs, else None."""
    if f.opset < 11:
        pads = f.attr("pads", f.attr("paddings"))
        return None if pads is None else (list(pads), None)
    pads, axes = f.ints(1), f.ints(3)
    if pads is None or (f.has(3) and axes is None):
        return None
    return pads, axes


@rule("Pad")
def _pad_rule(f):
    """The input's type and rank; padded dims where pads (and axes) are known."""
    t0, s0 = f.type(0), f.dims(0)
    if s0 is None:
        return [(t0, None)]
    known = _pads_and_axes(f)
    padded = None if known is None else _padded(s0, *known)
    return [(t0, padded if padded is not None else unknown_dims(len(s0)))]


# ---------------------------------------------------------------------------------------------------- CenterCropPad

@op("CenterCropPad", since=18, host_inputs=(1,))
def center_crop_pad(input_data, shape, *, axes=None):
    r = input_data.ndim
    axes = list(range(r)) if axes is None else norm_axes(axes, r, "CenterCropPad")
    target = ints(shape)
    if len(target) != len(axes):
        raise InvalidArgument(f"CenterCropPad: shape has {len(target)} entries for {len(axes)} axes")
    if min(target, default=0) < 0:
        raise InvalidArgument(f"CenterCropPad: negative target shape {target}")
    limits.check_shape([target[axes.index(a)] if a in axes else d for a, d in enumerate(input_data.shape)],
                       input_data.dtype, "CenterCropPad output")
    src = [slice(None)] * r
    dst = [slice(None)] * r
    out_shape = list(input_data.shape)
    for a, t in zip(axes, target):
        d = input_data.shape[a]
        out_shape[a] = t
        if d > t:
            s = (d - t) // 2
            src[a] = slice(s, s + t)
        elif d < t:
            s = (t - d) // 2
            dst[a] = slice(s, s + d)
    out = np.zeros(out_shape, dtype=input_data.dtype)
    out[tuple(dst)] = input_data[tuple(src)]
    return out


@rule("CenterCropPad")
def _center_crop_pad_rule(f):
    """The input's type and rank; the target sizes on the axes where the shape input is constant."""
    t0, s0, target = f.type(0), f.dims(0), f.ints(1)
    if s0 is None:
        return [(t0, None)]
    axes = f.attr("axes")
    axes = list(range(len(s0))) if axes is None else [positive_axis(a, len(s0)) for a in axes]
    if target is None or len(target) != len(axes):
        return [(t0, [None if i in axes else d for i, d in enumerate(s0)])]
    out = list(s0)
    for a, t in zip(axes, target):
        out[a] = t
    return [(t0, out)]
