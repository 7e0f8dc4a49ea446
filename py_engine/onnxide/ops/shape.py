"""Shape-manipulation kernels: Reshape, Transpose, Concat, Split, (Un)Squeeze, Flatten, Expand, Tile, Shape, Size,
DepthToSpace, SpaceToDepth, Identity, Trilu, EyeLike (Pad and CenterCropPad: pad.py)."""
import math

import numpy as np

from ..dtypes import INT64, np_dtype
from ..errors import Fail, InvalidArgument
from ..runtime import limits
from .inference import broadcast, positive_axis, product, rule, same_as_input, unknown_dims
from .math import lower
from .registry import op
from .util import ints, norm_axes, norm_axis


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


def _reshaped_dims(s0, shape, allowzero):
    """Reshape's output dims for a constant `shape`: 0 copies the input dim (unless allowzero), -1 is inferred when
    the input's size and the other dims are static."""
    if shape is None:
        return None
    shape = [int(x) for x in np.asarray(shape).reshape(-1)]
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            out.append(s0[i] if s0 is not None and i < len(s0) else None)
        else:
            out.append(d if d != -1 else None)
    if -1 in shape:
        out[shape.index(-1)] = _inferred_dim(s0, [d for i, d in enumerate(out) if i != shape.index(-1)])
    return out


def _inferred_dim(s0, others):
    """The dim a -1 stands for: the input's size over the other output dims, where both are static or their
    symbolic dims cancel (a [batch, 192, 14, 14] input to [batch, 192, -1]: 196); None when not known."""
    if s0 is None or any(d is None for d in list(s0) + others):
        return None
    syms = sorted(d for d in s0 if isinstance(d, str))
    if syms != sorted(d for d in others if isinstance(d, str)):
        return None
    size, known = product([d for d in s0 if isinstance(d, int)]), product([d for d in others if isinstance(d, int)])
    return size // known if known and size % known == 0 else None


def _entry_dims(s0, entries, allowzero):
    """Reshape's output dims for a shape tensor known only as shape entries (ints / symbolic dims / None)."""
    out = [(s0[i] if s0 is not None and i < len(s0) else None) if e == 0 and not allowzero
           else (e if isinstance(e, str) or (isinstance(e, int) and e > 0) else None)
           for i, e in enumerate(entries)]
    if entries.count(-1) == 1:
        at = entries.index(-1)
        out[at] = _inferred_dim(s0, out[:at] + out[at + 1:])
    return out


@rule("Reshape")
def _reshape_rule(f):
    res = _reshape_dims_rule(f)
    held = f.shape_value(0)
    if held is not None and res[0][1] is not None and len(res[0][1]) == 1:  # a shape value flattened (or kept 1-D)
        f.holds(held[0])
    return res


def _reshape_dims_rule(f):
    t0, s0, allowzero = f.type(0), f.dims(0), f.attr("allowzero", 0)
    if len(f.node.inputs) < 2:
        return [(t0, _reshaped_dims(s0, f.attr("shape", []), allowzero))]
    shape, entries, d = f.const(1), f.shape_value(1), f.dims(1)
    if shape is None and entries is not None:
        return [(t0, _entry_dims(s0, entries[0], allowzero))]
    if shape is None:  # only the output's rank: the shape's length
        return [(t0, unknown_dims(d[0]) if d is not None and len(d) == 1 and isinstance(d[0], int) else None)]
    return [(t0, _reshaped_dims(s0, shape, allowzero))]


# ---------------------------------------------------------------------------------------------------- Transpose

@op("Transpose", since=1)
def transpose(data, *, perm=None):
    if perm is None:
        return np.transpose(data)
    if sorted(perm) != list(range(data.ndim)):
        raise InvalidArgument(f"Transpose: perm {perm} is not a permutation of the {data.ndim} axes")
    return np.transpose(data, perm)


@rule("Transpose")
def _transpose_rule(f):
    s0 = f.dims(0)
    if s0 is None:
        return [(f.type(0), None)]
    perm = f.attr("perm") or list(range(len(s0)))[::-1]
    return [(f.type(0), [s0[p] for p in perm])]


# ---------------------------------------------------------------------------------------------------- Concat

def _concat(inputs, axis):
    if not inputs:
        raise InvalidArgument("Concat: no inputs")
    rank = inputs[0].ndim
    a = norm_axis(axis, rank, "Concat")
    limits.check(sum(x.nbytes for x in inputs), "Concat output")
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


@rule("Concat")
def _concat_rule(f):
    """The inputs' type; their dims with the axis dims summed. Shape vectors concatenate into one."""
    values = [f.shape_value(i) for i in range(len(f.node.inputs))]
    if values and all(v is not None and not v[1] for v in values):
        f.holds([e for v in values for e in v[0]])
    dims = [d for _, d in f.ins]
    if any(d is None for d in dims):
        return [(f.common_type(), unknown_dims(next((len(d) for d in dims if d is not None), None)))]
    s0 = dims[0]
    axis = f.attr("axis", 1)
    if isinstance(axis, int) and not -len(s0) <= axis < len(s0):  # (onnxruntime's inference at load, a dead node's too)
        raise Fail(f"Node ({f.node.name}) Op (Concat) [ShapeInferenceError] axis must be in [-rank, rank-1].")
    ax = positive_axis(axis, len(s0))
    along = [d[ax] for d in dims]
    total = sum(along) if all(isinstance(d, int) for d in along) else None
    return [(f.common_type(), [total if i == ax else d for i, d in enumerate(s0)])]


# ---------------------------------------------------------------------------------------------------- Split

def _split(x, axis, split, num_outputs, n_out, name="Split"):
    if x.ndim == 0:
        raise InvalidArgument(f"{name}: cannot split a scalar")
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
        sizes = _even_split(dim, n)
        if sizes[-1] < 0:
            raise Fail(f"Invalid num_outputs value of {n}. Split sizes would produce a negative final split.")
        if num_outputs is None and dim % n:
            raise InvalidArgument(f"{name}: dimension {dim} is not divisible into {n} equal parts")
    bounds = np.cumsum([0] + sizes)
    idx = [slice(None)] * x.ndim
    outs = []
    for i in range(len(sizes)):
        idx[a] = slice(int(bounds[i]), int(bounds[i + 1]))
        outs.append(x[tuple(idx)])
    return tuple(outs)


def _even_split(dim, parts):
    """Sizes of `parts` chunks of ceil(dim / parts), what is left in the last ones (negative where `parts` is too many:
    the kernel refuses a negative last one, as onnxruntime's; the shape rule reads them as 0)."""
    chunk = -(-dim // parts)
    return [min(chunk, dim - i * chunk) for i in range(parts)]


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


def _split_sizes(f, dim):
    """The output sizes along the split axis as the kernel cuts them (None each where not fixed)."""
    n = f.n_outputs
    split = f.attr("split") if f.attr("split") is not None else (f.ints(1) if f.has(1) else [])
    if split is None:  # a split input that is not a constant
        return [None] * n
    if len(split):
        return list(split)
    if not isinstance(dim, int):
        return [None] * n
    return [max(size, 0) for size in _even_split(dim, f.attr("num_outputs") or n)]


@rule("Split")
def _split_rule(f):
    """Every output of the input's type and rank; the axis dim where the split sizes are fixed."""
    t0, s0 = f.type(0), f.dims(0)
    if s0 is None:
        return [(t0, None)] * f.n_outputs
    ax = positive_axis(f.attr("axis", 0), len(s0))
    return [(t0, s0[:ax] + [size] + s0[ax + 1:]) for size in _split_sizes(f, s0[ax])]


# ---------------------------------------------------------------------------------------------------- Squeeze

def _squeeze(data, axes):
    if axes is None or len(axes) == 0:
        return data.reshape([d for d in data.shape if d != 1])
    if data.ndim == 0:
        raise InvalidArgument(f"Squeeze: axes {list(axes)} are out of range for a scalar (rank 0)")
    ax = norm_axes(axes, data.ndim, "Squeeze")
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
    ax = set(norm_axes(axes, rank, "Unsqueeze"))
    it = iter(data.shape)
    return data.reshape([1 if i in ax else next(it) for i in range(rank)])


@op("Unsqueeze", since=1)
def unsqueeze_v1(data, *, axes):
    return _unsqueeze(data, axes)


@op("Unsqueeze", since=13, host_inputs=(1,))
def unsqueeze(data, axes):
    return _unsqueeze(data, ints(axes))


def _axes_of(f):
    """(Un)Squeeze's axes: the attribute, or the constant input; None when not given or not constant."""
    axes = f.attr("axes")
    return f.ints(1) if axes is None and f.has(1) else axes


@rule("Squeeze")
def _squeeze_rule(f):
    """The input's type; its dims without the squeezed axes (without every 1 when no axes are given). A squeezed
    one-entry shape vector is a scalar."""
    value = f.shape_value(0)
    if value is not None and len(value[0]) == 1:
        f.holds(value[0], scalar=True)
    t0, s0, axes = f.type(0), f.dims(0), _axes_of(f)
    if s0 is None or (axes is None and f.has(1)):
        return [(t0, None)]
    if axes is None:
        return [(t0, [d for d in s0 if d != 1]) if all(isinstance(d, int) for d in s0) else (t0, None)]
    ax = {positive_axis(x, len(s0)) for x in axes}
    return [(t0, [d for i, d in enumerate(s0) if i not in ax])]


@rule("Unsqueeze")
def _unsqueeze_rule(f):
    """The input's type; its dims with 1s inserted at the axes. An unsqueezed scalar shape entry is a vector."""
    value = f.shape_value(0)
    if value is not None and value[1]:
        f.holds(value[0])
    t0, s0, axes = f.type(0), f.dims(0), _axes_of(f)
    if s0 is None or axes is None:
        return [(t0, None)]
    r = len(s0) + len(axes)
    ax = {positive_axis(x, r) for x in axes}
    if len(ax) != len(axes) or not all(0 <= a < r for a in ax):
        return [(t0, None)]  # (the kernel reports the axes)
    it = iter(s0)
    return [(t0, [1 if i in ax else next(it) for i in range(r)])]


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


@rule("Flatten")
def _flatten_rule(f):
    s0 = f.dims(0)
    if s0 is None:
        return [(f.type(0), [None, None])]
    axis, r = f.attr("axis", 1), len(s0)
    if isinstance(axis, int) and not (0 if f.opset < 11 else -r) <= axis <= r:  # (negative axes from opset 11)
        raise Fail(f"Node ({f.node.name}) Op (Flatten) [ShapeInferenceError] Invalid value({axis}) for attribute "
                   "'axis'")
    ax = positive_axis(axis, r)
    return [(f.type(0), [product(s0[:ax]), product(s0[ax:])])]


# ---------------------------------------------------------------------------------------------------- Expand / Tile

def expanded_shape(in_shape, shape):
    """Expand's output shape (numpy's broadcast of the input's and `shape`), or InvalidArgument."""
    shape = ints(shape)
    try:
        return np.broadcast_shapes(tuple(in_shape), tuple(shape))
    except ValueError:
        raise InvalidArgument(f"Expand: shape {shape} does not broadcast with input shape {tuple(in_shape)}") from None


@op("Expand", since=8, host_inputs=(1,))
def expand(input, shape):  # noqa: A002
    out = expanded_shape(input.shape, shape)
    limits.check_shape(out, input.dtype, "Expand output")
    return np.broadcast_to(input, out).copy()


@rule("Expand")
def _expand_rule(f):
    """The input's type; its dims broadcast with the shape's entries when those are known."""
    t0, s0, entries = f.type(0), f.dims(0), f.shape_value(1)
    if entries is None or s0 is None:
        return [(t0, None)]
    target = [e if isinstance(e, (str, int)) and e != -1 else None for e in entries[0]]
    return [(t0, broadcast([s0, target]))]


@op("Tile", since=1, host_inputs=(1, 2))
def tile_v1(input, tiles, axis):  # noqa: A002
    reps = [1] * input.ndim
    reps[norm_axis(ints(axis)[0], input.ndim, "Tile")] = ints(tiles)[0]
    return _tile(input, reps)


@op("Tile", since=6, host_inputs=(1,))
def tile(input, repeats):  # noqa: A002
    reps = ints(repeats)
    if len(reps) != input.ndim:
        raise InvalidArgument(f"Tile: repeats has {len(reps)} entries for a rank-{input.ndim} input")
    return _tile(input, reps)


def _tile(x, reps):
    if any(r < 0 for r in reps):
        raise InvalidArgument(f"Tile: negative repeat in {reps}")
    limits.check_shape([d * r for d, r in zip(x.shape, reps)], x.dtype, "Tile output")
    return np.tile(x, reps)


@rule("Tile")
def _tile_rule(f):
    """The input's type and rank; static dims times constant repeats (Tile-6 on)."""
    t0, s0 = f.type(0), f.dims(0)
    reps = f.ints(1) if f.opset >= 6 else None
    if s0 is None or reps is None or len(reps) != len(s0):
        return [(t0, unknown_dims(None if s0 is None else len(s0)))]
    return [(t0, [d if r == 1 else d * r if isinstance(d, int) else None for d, r in zip(s0, reps)])]


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


@rule("Shape")
def _shape_rule(f):
    """int64 [number of dims in start:end]; it holds those dims."""
    d = f.dims(0)
    if d is None:
        return [(INT64, None)]
    r = len(d)
    start, end = f.attr("start", 0), f.attr("end", r)
    start, end = max(0, min(r, positive_axis(start, r))), max(0, min(r, positive_axis(end, r)))
    f.holds(d[start:end])
    return [(INT64, [max(0, end - start)])]


@rule("Size")
def _size_rule(f):
    return [(INT64, [])]


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


def _times(d, k):
    return d * k if isinstance(d, int) else None


def _over(d, k):
    return d // k if isinstance(d, int) else None


def _blocks_dims(f, to_space):
    """DepthToSpace (to_space) / SpaceToDepth dims: channels and spatial dims traded by blocksize, where static."""
    s0, bs = f.dims(0), f.attr("blocksize")
    if s0 is None or len(s0) != 4 or not bs:
        return unknown_dims(4)
    n, c, h, w = s0
    if to_space:
        return [n, _over(c, bs * bs), _times(h, bs), _times(w, bs)]
    return [n, _times(c, bs * bs), _over(h, bs), _over(w, bs)]


@rule("DepthToSpace")
def _depth_to_space_rule(f):
    return [(f.type(0), _blocks_dims(f, True))]


@rule("SpaceToDepth")
def _space_to_depth_rule(f):
    return [(f.type(0), _blocks_dims(f, False))]


# ---------------------------------------------------------------------------------------------------- Identity

@op("Identity", since=1)
def identity(input):  # noqa: A002
    if isinstance(input, list):
        return list(input)
    return input


# ---------------------------------------------------------------------------------------------------- Trilu / EyeLike

@op("Trilu", since=14, host_inputs=(1,))
def trilu(input, k=None, *, upper=1):  # noqa: A002
    if input.ndim < 2:
        raise InvalidArgument(f"Trilu: input must have rank >= 2, got shape {input.shape}")
    if k is not None and np.size(k) != 1:
        raise InvalidArgument(f"Trilu: k must hold one value, got shape {np.shape(k)}")
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


rule("Identity", "Trilu")(same_as_input)  # (Identity passes sequences and optionals through too)


@rule("EyeLike")
def _eye_like_rule(f):
    return [(f.attr("dtype") or f.type(0), f.dims(0))]
