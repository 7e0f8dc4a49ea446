"""Sequence and optional ops: SequenceConstruct/Empty/At/Insert/Erase/Length, Concat/SplitToSequence, Optional*."""
import numpy as np

from ..errors import Fail, InvalidArgument
from .registry import op


def _seq(s, name):
    if not isinstance(s, list):
        raise InvalidArgument(f"{name}: input is not a sequence (got {type(s).__name__})")
    return s


def _position(pos, name):
    p = np.asarray(pos)
    if p.size != 1:
        raise InvalidArgument(f"{name}: 'position' must be a scalar, got shape {p.shape}")
    if p.dtype.kind not in "iu":
        raise InvalidArgument(f"{name}: 'position' must be int32 or int64, got {p.dtype}")
    return int(p.reshape(-1)[0])


@op("SequenceConstruct", since=11)
def sequence_construct(*inputs):
    if not inputs:
        raise InvalidArgument("SequenceConstruct: needs at least one input tensor")
    dts = {np.asarray(x).dtype for x in inputs}
    if len(dts) > 1:
        raise InvalidArgument(f"SequenceConstruct: all inputs must have the same type, got {sorted(map(str, dts))}")
    return list(inputs)


@op("SequenceEmpty", since=11)
def sequence_empty(*, dtype=1):
    return []


@op("SequenceAt", since=11, host_inputs=(1,))
def sequence_at(input_sequence, position):
    seq = _seq(input_sequence, "SequenceAt")
    n = len(seq)
    p = _position(position, "SequenceAt")
    if not -n <= p < n:
        raise InvalidArgument(f"SequenceAt: position {p} is out of bounds for a sequence of length {n}")
    return seq[p]


@op("SequenceInsert", since=11, host_inputs=(2,))
def sequence_insert(input_sequence, tensor, position=None):
    seq = _seq(input_sequence, "SequenceInsert")
    n = len(seq)
    if seq and np.asarray(seq[0]).dtype != np.asarray(tensor).dtype:
        raise InvalidArgument(f"SequenceInsert: tensor type {np.asarray(tensor).dtype} does not match the "
                              f"sequence's {np.asarray(seq[0]).dtype}")
    if position is None:
        p = n
    else:
        p = _position(position, "SequenceInsert")
        if not -n <= p <= n:
            raise InvalidArgument(f"SequenceInsert: position {p} is out of bounds for a sequence of length {n}")
        if p < 0:
            p += n
    out = list(seq)
    out.insert(p, tensor)
    return out


@op("SequenceErase", since=11, host_inputs=(1,))
def sequence_erase(input_sequence, position=None):
    seq = _seq(input_sequence, "SequenceErase")
    n = len(seq)
    if n == 0:
        raise InvalidArgument("SequenceErase: cannot erase from an empty sequence")
    p = -1 if position is None else _position(position, "SequenceErase")
    if not -n <= p < n:
        raise InvalidArgument(f"SequenceErase: position {p} is out of bounds for a sequence of length {n}")
    out = list(seq)
    del out[p]
    return out


@op("SequenceLength", since=11)
def sequence_length(input_sequence):
    return np.asarray(len(_seq(input_sequence, "SequenceLength")), dtype=np.int64)


@op("ConcatFromSequence", since=11)
def concat_from_sequence(input_sequence, *, axis, new_axis=0):
    seq = _seq(input_sequence, "ConcatFromSequence")
    if not seq:
        raise InvalidArgument("ConcatFromSequence: the input sequence is empty")
    arrs = [np.asarray(a) for a in seq]
    r = arrs[0].ndim
    if new_axis:
        if not -r - 1 <= axis <= r:
            raise InvalidArgument(f"ConcatFromSequence: axis {axis} out of range [{-r - 1}, {r}] with new_axis=1")
        return np.stack(arrs, axis=axis % (r + 1))
    if r == 0:
        raise InvalidArgument("ConcatFromSequence: cannot concatenate scalars without new_axis=1")
    if not -r <= axis < r:
        raise InvalidArgument(f"ConcatFromSequence: axis {axis} out of range [{-r}, {r - 1}]")
    try:
        return np.concatenate(arrs, axis=axis % r)
    except ValueError as e:
        raise InvalidArgument(f"ConcatFromSequence: {e}") from None


@op("SplitToSequence", since=11, host_inputs=(1,))
def split_to_sequence(input, split=None, *, axis=0, keepdims=1):
    x = np.asarray(input)
    r = x.ndim
    if not -r <= axis < r:
        raise InvalidArgument(f"SplitToSequence: axis {axis} out of range for rank {r}")
    axis %= r
    dim = x.shape[axis]
    if split is None:
        parts = np.split(x, dim, axis=axis) if dim else []
        if not keepdims:
            parts = [np.squeeze(p, axis=axis) for p in parts]
        return parts
    s = np.asarray(split)
    if s.ndim == 0:
        k = int(s)
        if k <= 0:
            raise InvalidArgument(f"SplitToSequence: split size must be positive, got {k}")
        bounds = list(range(k, dim, k))
    elif s.ndim == 1:
        sizes = [int(v) for v in s]
        if any(v < 0 for v in sizes) or sum(sizes) != dim:
            raise InvalidArgument(f"SplitToSequence: split {sizes} does not sum to dimension {dim}")
        bounds = list(np.cumsum(sizes)[:-1]) if sizes else []
    else:
        raise InvalidArgument(f"SplitToSequence: 'split' must be a scalar or 1-D, got shape {s.shape}")
    return np.split(x, bounds, axis=axis)


@op("Optional", since=15)
def optional(input=None, *, type=None):
    return input


@op("OptionalHasElement", since=15)
def optional_has_element(input=None):
    return np.asarray(input is not None, dtype=np.bool_)


@op("OptionalGetElement", since=15)
def optional_get_element(input):
    if input is None:
        raise Fail("OptionalGetElement: the optional input has no element")
    return input
