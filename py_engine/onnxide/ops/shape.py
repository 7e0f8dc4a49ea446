"""Shape-manipulation kernels: Reshape, Transpose, Concat, Split, (Un)Squeeze, Flatten, Expand, Tile, Pad, Shape, Size,
DepthToSpace, SpaceToDepth, Identity, CenterCropPad, Trilu, EyeLike."""
import math

import numpy as np

from ..dtypes import np_dtype
from ..errors import InvalidArgument
from .math import lower
from .registry import op
from .util import ints, norm_axis


def _axes(axes, rank, name):
    out = [norm_axis(a, rank, name) for a in axes]
    if len(set(out)) != len(out):
        raise InvalidArgument(f"{name}: repeated axis in {list(axes)}")
    return out


# ---------------------------------------------------------------------------------------------------- Reshape

def _reshape(data, shape, allowzero=0, name="Reshape"):
    shape = ints(shape)
    new = []
    for i, s in enumerate(shape):
        if s == 0 and not allowzero:
            if i >= data.ndim:
                raise InvalidArgument(f"{name}: shape {shape} copies dimension {i} of a rank-{data.ndim} input")
            s = data.shape[i]
        elif s < -1:
            raise InvalidArgument(f"{name}: invalid dimension {s} in shape {shape}")
        new.append(s)
    if new.count(-1) > 1:
        raise InvalidArgument(f"{name}: more than one -1 in shape {shape}")
    if -1 in new:
        known = 1
        for s in new:
            if s != -1:
                known *= s
        if known == 0:
            if data.size != 0:
                raise InvalidArgument(f"{name}: cannot reshape {data.shape} to {shape}")
            new[new.index(-1)] = 0
        else:
            if data.size % known:
                raise InvalidArgument(f"{name}: cannot reshape {data.shape} to {shape}")
            new[new.index(-1)] = data.size // known
    if math.prod(new) != data.size:
        raise InvalidArgument(f"{name}: cannot reshape input of shape {data.shape} to {shape}")
    return data.reshape(new)


@op("Reshape", since=1)
def reshape_v1(data, *, shape=None, consumed_inputs=None):
    if shape is None:
        raise InvalidArgument("Reshape: the 'shape' attribute is required at this opset")
    return _reshape(data, shape)


@op("Reshape", since=5, host_inputs=(1,))
def reshape_v5(data, shape):
    return _reshape(data, shape)


@op("Reshape", since=14, host_inputs=(1,))
def reshape(data, shape, *, allowzero=0):
    return _reshape(data, shape, allowzero)


# ---------------------------------------------------------------------------------------------------- Transpose

@op("Transpose", since=1)
def transpose(data, *, perm=None):
    if perm is None:
        return np.transpose(data)
    if sorted(perm) != list(range(data.ndim)):
        raise InvalidArgument(f"Transpose: perm {perm} is not a permutation of the {data.ndim} axes")
    return np.transpose(data, perm)


# ---------------------------------------------------------------------------------------------------- Concat

def _concat(inputs, axis):
    if not inputs:
        raise InvalidArgument("Concat: no inputs")
    rank = inputs[0].ndim
    a = norm_axis(axis, rank, "Concat")
    try:
        return np.concatenate(inputs, axis=a)
    except ValueError as e:
        raise InvalidArgument(f"Concat: {e}") from None


@op("Concat", since=1)
def concat_v1(*inputs, axis=1):
    return _concat(inputs, axis)


@op("Concat", since=4)
def concat(*inputs, axis):
    return _concat(inputs, axis)


# ---------------------------------------------------------------------------------------------------- Split

def _split(x, axis, split, num_outputs, n_out, name="Split"):
    a = norm_axis(axis, x.ndim, name)
    dim = x.shape[a]
    if split is not None and len(split):
        sizes = list(split)
        if sum(sizes) != dim or any(s < 0 for s in sizes):
            raise InvalidArgument(f"{name}: split sizes {sizes} do not add up to dimension {dim}")
    else:
        n = num_outputs if num_outputs is not None else n_out
        if n <= 0:
            raise InvalidArgument(f"{name}: invalid number of outputs {n}")
        chunk = -(-dim // n)
        sizes = [min(chunk, max(dim - i * chunk, 0)) for i in range(n)]
        if num_outputs is None and dim % n:
            raise InvalidArgument(f"{name}: dimension {dim} is not divisible into {n} equal parts")
    bounds = np.cumsum([0] + sizes)
    idx = [slice(None)] * x.ndim
    outs = []
    for i in range(len(sizes)):
        idx[a] = slice(int(bounds[i]), int(bounds[i + 1]))
        outs.append(x[tuple(idx)])
    return tuple(outs)


@op("Split", since=1, host_inputs=(1,))
def split_v1(input, split=None, *, axis=0, ctx):  # noqa: A002 - ONNX input name
    s = ints(split) if split is not None else None
    return _split(input, axis, s, None, ctx.num_outputs)


@op("Split", since=2)
def split_v2(input, *, axis=0, split=None, ctx):  # noqa: A002
    return _split(input, axis, split, None, ctx.num_outputs)


@op("Split", since=13, host_inputs=(1,))
def split_v13(input, split=None, *, axis=0, ctx):  # noqa: A002
    return _split(input, axis, ints(split), None, ctx.num_outputs)


@op("Split", since=18, host_inputs=(1,))
def split(input, split=None, *, axis=0, num_outputs=None, ctx):  # noqa: A002
    if split is not None and num_outputs is not None:
        raise InvalidArgument("Split: both the 'split' input and the 'num_outputs' attribute are given")
    if num_outputs is not None and num_outputs != ctx.num_outputs:
        raise InvalidArgument(f"Split: num_outputs={num_outputs} but the node has {ctx.num_outputs} outputs")
    return _split(input, axis, ints(split), num_outputs, ctx.num_outputs)


# ---------------------------------------------------------------------------------------------------- Squeeze

def _squeeze(data, axes):
    if axes is None or len(axes) == 0:
        return data.reshape([d for d in data.shape if d != 1])
    ax = _axes(axes, data.ndim, "Squeeze")
    for a in ax:
        if data.shape[a] != 1:
            raise InvalidArgument(f"Squeeze: dimension {a} of shape {data.shape} is not 1")
    return data.reshape([d for i, d in enumerate(data.shape) if i not in ax])


@op("Squeeze", since=1)
def squeeze_v1(data, *, axes=None):
    return _squeeze(data, axes)


@op("Squeeze", since=13, host_inputs=(1,))
def squeeze(data, axes=None):
    return _squeeze(data, ints(axes))


def _unsqueeze(data, axes):
    if axes is None:
        raise InvalidArgument("Unsqueeze: axes are required")
    rank = data.ndim + len(axes)
    ax = set(_axes(axes, rank, "Unsqueeze"))
    it = iter(data.shape)
    return data.reshape([1 if i in ax else next(it) for i in range(rank)])


@op("Unsqueeze", since=1)
def unsqueeze_v1(data, *, axes):
    return _unsqueeze(data, axes)


@op("Unsqueeze", since=13, host_inputs=(1,))
def unsqueeze(data, axes):
    return _unsqueeze(data, ints(axes))


# ---------------------------------------------------------------------------------------------------- Flatten

@op("Flatten", since=1)
def flatten(input, *, axis=1):  # noqa: A002
    r = input.ndim
    if not -r <= axis <= r:
        raise InvalidArgument(f"Flatten: axis {axis} is out of range for rank {r}")
    a = axis + r if axis < 0 else axis
    outer = math.prod(input.shape[:a])
    inner = math.prod(input.shape[a:])
    return input.reshape(outer, inner)


# ---------------------------------------------------------------------------------------------------- Expand / Tile

@op("Expand", since=8, host_inputs=(1,))
def expand(input, shape):  # noqa: A002
    shape = ints(shape)
    try:
        out_shape = np.broadcast_shapes(input.shape, tuple(shape))
    except ValueError:
        raise InvalidArgument(f"Expand: shape {shape} does not broadcast with input shape {input.shape}") from None
    return np.broadcast_to(input, out_shape).copy()


@op("Tile", since=1, host_inputs=(1, 2))
def tile_v1(input, tiles, axis):  # noqa: A002
    reps = [1] * input.ndim
    reps[norm_axis(ints(axis)[0], input.ndim, "Tile")] = ints(tiles)[0]
    return np.tile(input, reps)


@op("Tile", since=6, host_inputs=(1,))
def tile(input, repeats):  # noqa: A002
    reps = ints(repeats)
    if len(reps) != input.ndim:
        raise InvalidArgument(f"Tile: repeats has {len(reps)} entries for a rank-{input.ndim} input")
    if any(r < 0 for r in reps):
        raise InvalidArgument(f"Tile: negative repeat in {reps}")
    return np.tile(input, reps)


# ---------------------------------------------------------------------------------------------------- Pad

def _pad(data, pads, mode, value, axes=None):
    r = data.ndim
    if axes is None:
        axes = list(range(r))
    else:
        axes = _axes(axes, r, "Pad")
    n = len(axes)
    if len(pads) != 2 * n:
        raise InvalidArgument(f"Pad: {len(pads)} pads given for {n} axes")
    before, after = [0] * r, [0] * r
    for i, a in enumerate(axes):
        before[a], after[a] = pads[i], pads[i + n]
    if any(p < 0 for p in before + after):  # negative pads crop first
        sl = tuple(slice(max(-b, 0), d - max(-e, 0)) for b, e, d in zip(before, after, data.shape))
        data = data[sl]
        if any(d < 0 for d in data.shape):
            raise InvalidArgument("Pad: negative pads remove more than the whole dimension")
    width = [(max(b, 0), max(e, 0)) for b, e in zip(before, after)]
    if not any(b or e for b, e in width):
        return data.copy()
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
            data = np.take(data, _pad_indices(mode, d, b, e), axis=a)
    return data


def _pad_indices(mode, d, b, e):
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


# ---------------------------------------------------------------------------------------------------- Shape / Size

@op("Shape", since=1, meta_inputs=(0,))
def shape_v1(data):
    return np.array(data.shape, dtype=np.int64)


@op("Shape", since=15, meta_inputs=(0,))
def shape(data, *, end=None, start=0):
    return np.array(data.shape[start:end], dtype=np.int64)


@op("Size", since=1, meta_inputs=(0,))
def size(data):
    return np.asarray(data.size, dtype=np.int64)


# ---------------------------------------------------------------------------------------------------- Depth/Space

def _check4d(x, name, blocksize):
    if x.ndim != 4:
        raise InvalidArgument(f"{name}: input must be 4-D, got shape {x.shape}")
    if blocksize <= 0:
        raise InvalidArgument(f"{name}: blocksize must be positive")


def _depth_to_space(x, blocksize, mode):
    _check4d(x, "DepthToSpace", blocksize)
    b, c, h, w = x.shape
    bs = blocksize
    if c % (bs * bs):
        raise InvalidArgument(f"DepthToSpace: channels {c} not divisible by blocksize^2={bs * bs}")
    oc = c // (bs * bs)
    if mode == "DCR":
        y = x.reshape(b, bs, bs, oc, h, w).transpose(0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        y = x.reshape(b, oc, bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
    else:
        raise InvalidArgument(f"DepthToSpace: unknown mode '{mode}'")
    return y.reshape(b, oc, h * bs, w * bs)


@op("DepthToSpace", since=1)
def depth_to_space_v1(input, *, blocksize):  # noqa: A002
    return _depth_to_space(input, blocksize, "DCR")


@op("DepthToSpace", since=11)
def depth_to_space(input, *, blocksize, mode="DCR"):  # noqa: A002
    return _depth_to_space(input, blocksize, mode)


def _space_to_depth(x, blocksize, mode):
    _check4d(x, "SpaceToDepth", blocksize)
    b, c, h, w = x.shape
    bs = blocksize
    if h % bs or w % bs:
        raise InvalidArgument(f"SpaceToDepth: spatial dims {(h, w)} not divisible by blocksize {bs}")
    t = x.reshape(b, c, h // bs, bs, w // bs, bs)
    if mode == "DCR":
        y = t.transpose(0, 3, 5, 1, 2, 4)
    elif mode == "CRD":
        y = t.transpose(0, 1, 3, 5, 2, 4)
    else:
        raise InvalidArgument(f"SpaceToDepth: unknown mode '{mode}'")
    return y.reshape(b, c * bs * bs, h // bs, w // bs)


@op("SpaceToDepth", since=1)
def space_to_depth_v1(input, *, blocksize):  # noqa: A002
    return _space_to_depth(input, blocksize, "DCR")


@op("SpaceToDepth", since=28)
def space_to_depth(input, *, blocksize, mode="DCR"):  # noqa: A002
    return _space_to_depth(input, blocksize, mode)


# ---------------------------------------------------------------------------------------------------- Identity

@op("Identity", since=1)
def identity(input):  # noqa: A002
    if isinstance(input, list):
        return list(input)
    return input


# ---------------------------------------------------------------------------------------------------- CenterCropPad

@op("CenterCropPad", since=18, host_inputs=(1,))
def center_crop_pad(input_data, shape, *, axes=None):
    r = input_data.ndim
    axes = list(range(r)) if axes is None else _axes(axes, r, "CenterCropPad")
    target = ints(shape)
    if len(target) != len(axes):
        raise InvalidArgument(f"CenterCropPad: shape has {len(target)} entries for {len(axes)} axes")
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


# ---------------------------------------------------------------------------------------------------- Trilu / EyeLike

@op("Trilu", since=14, host_inputs=(1,))
def trilu(input, k=None, *, upper=1):  # noqa: A002
    if input.ndim < 2:
        raise InvalidArgument(f"Trilu: input must have rank >= 2, got shape {input.shape}")
    kk = 0 if k is None else ints(k)[0]
    n, m = input.shape[-2:]
    rows = np.arange(n).reshape(n, 1)
    cols = np.arange(m).reshape(1, m)
    keep = (cols - rows >= kk) if upper else (cols - rows <= kk)
    return np.where(keep, input, np.zeros((), input.dtype))


@op("EyeLike", since=9, meta_inputs=(0,))
def eye_like(input, *, dtype=None, k=0):  # noqa: A002
    if input.ndim != 2:
        raise InvalidArgument(f"EyeLike: input must be 2-D, got shape {input.shape}")
    dt = input.dtype if dtype is None else np_dtype(dtype)
    n, m = input.shape
    out = np.zeros((n, m), dtype=dt)
    i = np.arange(max(0, -k), min(n, m - k)) if m - k > 0 else np.arange(0)
    out[i, i + k] = lower(np.ones((), np.float32), dt) if dt.names is not None else np.ones((), dtype=dt)
    return out
