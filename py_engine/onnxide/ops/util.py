"""Small helpers shared by the kernels (and shape inference): attribute/input int lists, axis normalisation, Slice's
bounds (one definition each)."""
import functools

import numpy as np

from ..errors import InvalidArgument


def ints(x):
    """A 1-D int tensor (or scalar / list / None) as a list of Python ints."""
    if x is None:
        return None
    return [int(v) for v in np.asarray(x).reshape(-1).tolist()]


def not_broadcastable(name, arrays):
    """The InvalidArgument for `arrays` whose shapes do not broadcast (numpy's ValueError otherwise leaks), or None
    when they do (the ValueError had another cause)."""
    try:
        np.broadcast_shapes(*(np.shape(a) for a in arrays))
        return None
    except ValueError:
        shapes = ", ".join(str(tuple(np.shape(a))) for a in arrays)
        return InvalidArgument(f"{name}: input shapes {shapes} do not broadcast")


def broadcasting(name):
    """Decorate an element-wise kernel so inputs that do not broadcast raise InvalidArgument naming their shapes
    (hot kernels inline the same try / except instead: a wrapper costs a call)."""
    def deco(fn):
        @functools.wraps(fn)
        def kernel(*inputs, **attrs):
            try:
                return fn(*inputs, **attrs)
            except ValueError:
                e = not_broadcastable(name, [x for x in inputs if x is not None])
                if e is None:
                    raise
                raise e from None
        return kernel
    return deco


def norm_axis(axis, rank, name):
    """`axis` in [0, rank) (negative counts from the end; a scalar behaves as rank 1); out of range raises."""
    r = max(rank, 1)
    a = int(axis)
    if not -r <= a < r:
        raise InvalidArgument(f"{name}: axis {axis} is out of range for rank {rank}")
    return a % r


def norm_axes(axes, rank, name):
    """Each of `axes` in [0, rank) (see norm_axis); a repeated axis raises."""
    out = [norm_axis(a, rank, name) for a in axes]
    if len(set(out)) != len(out):
        raise InvalidArgument(f"{name}: repeated axis in {list(axes)}")
    return out


def slice_bounds(d, start, end, step):
    """The Python slice ONNX's Slice takes along an axis of length d: negatives count from the end, then starts and
    ends clamp to [0, d] for positive steps and to [0, d-1] / [-1, d-1] for negative ones (a start below -d still
    starts at 0, where Python's slice would start nowhere)."""
    s = start + d if start < 0 else start
    e = end + d if end < 0 else end
    if step > 0:
        return slice(min(max(s, 0), d), min(max(e, 0), d), step)
    if not d:
        return slice(0, 0)
    s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
    return slice(s, None if e < 0 else e, step)
