"""Sequence and optional ops: SequenceConstruct/Empty/At/Insert/Erase/Length, Concat/SplitToSequence, Optional*."""
import numpy as np

from ..dtypes import BOOL, FLOAT, INT64
from ..errors import Fail, InvalidArgument
from .inference import UNKNOWN, OptionalOf, SequenceOf, entry_of, positive_axis, rule, same_dims
from .registry import op


def _seq(s, name):
    if not isinstance(s, list) or not all(isinstance(t, np.ndarray) for t in s):
        raise InvalidArgument(f"{name}: input is not a sequence of tensors (got {type(s).__name__}"
                              f"{' of ' + type(s[0]).__name__ if isinstance(s, list) and s else ''})")
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


def _element(f, i=0):
    """The tensor entry of the sequence (or optional) input i, UNKNOWN when that is not known."""
    t = f.type(i)
    return t.of if isinstance(t, (SequenceOf, OptionalOf)) else UNKNOWN


def _sequence(entries):
    """A sequence of tensors of these entries' (common) type, with their dims when all agree."""
    types = [e[0] for e in entries if e[0] is not None]
    return (SequenceOf((types[0] if types else None, same_dims(entries))), None)


@rule("SequenceConstruct")
def _sequence_construct_rule(f):
    return [_sequence(f.ins)]


@op("SequenceEmpty", since=11)
def sequence_empty(*, dtype=1):
    return []


@rule("SequenceEmpty")
def _sequence_empty_rule(f):
    return [(SequenceOf((f.attr("dtype", FLOAT), None)), None)]


@op("SequenceAt", since=11, host_inputs=(1,))
def sequence_at(input_sequence, position):
    seq = _seq(input_sequence, "SequenceAt")
    n = len(seq)
    p = _position(position, "SequenceAt")
    if not -n <= p < n:
        raise InvalidArgument(f"SequenceAt: position {p} is out of bounds for a sequence of length {n}")
    return seq[p]


@rule("SequenceAt")
def _sequence_at_rule(f):
    return [_element(f)]


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


@rule("SequenceInsert")
def _sequence_insert_rule(f):
    return [_sequence([_element(f), f.ins[1]])]


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


@rule("SequenceErase")
def _sequence_erase_rule(f):
    return [f.ins[0]]


@op("SequenceLength", since=11)
def sequence_length(input_sequence):
    return np.asarray(len(_seq(input_sequence, "SequenceLength")), dtype=np.int64)


@rule("SequenceLength")
def _sequence_length_rule(f):
    return [(INT64, [])]


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
        if any(a.shape != arrs[0].shape for a in arrs):
            raise InvalidArgument(f"ConcatFromSequence: new_axis=1 needs tensors of one shape, got "
                                  f"{sorted({a.shape for a in arrs})}")
        return np.stack(arrs, axis=axis % (r + 1))
    if r == 0:
        raise InvalidArgument("ConcatFromSequence: cannot concatenate scalars without new_axis=1")
    if not -r <= axis < r:
        raise InvalidArgument(f"ConcatFromSequence: axis {axis} out of range [{-r}, {r - 1}]")
    try:
        return np.concatenate(arrs, axis=axis % r)
    except ValueError as e:
        raise InvalidArgument(f"ConcatFromSequence: {e}") from None


@rule("ConcatFromSequence")
def _concat_from_sequence_rule(f):
    """The tensors' type; their rank (one more with new_axis)."""
    t, d = _element(f)
    return [(t, None if d is None else [None] * (len(d) + (1 if f.attr("new_axis", 0) else 0)))]


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
        if not dim:
            return []  # (no chunks of an empty axis)
    elif s.ndim == 1:
        sizes = [int(v) for v in s]
        if any(v < 0 for v in sizes) or sum(sizes) != dim:
            raise InvalidArgument(f"SplitToSequence: split {sizes} does not sum to dimension {dim}")
        bounds = list(np.cumsum(sizes)[:-1]) if sizes else []
    else:
        raise InvalidArgument(f"SplitToSequence: 'split' must be a scalar or 1-D, got shape {s.shape}")
    return np.split(x, bounds, axis=axis)


@rule("SplitToSequence")
def _split_to_sequence_rule(f):
    """A sequence of tensors of the input's type: without a split, its dims with the axis dim 1 (dropped without
    keepdims); with one, its rank."""
    t, d = f.ins[0]
    if d is None:
        return [(SequenceOf((t, None)), None)]
    ax = positive_axis(f.attr("axis", 0), len(d))
    if f.has(1):
        part = [None if i == ax else x for i, x in enumerate(d)]
    else:
        part = [1 if i == ax else x for i, x in enumerate(d) if i != ax or f.attr("keepdims", 1)]
    return [(SequenceOf((t, part)), None)]


@op("Optional", since=15)
def optional(input=None, *, type=None):
    return input


@rule("Optional")
def _optional_rule(f):
    """An optional of the input's type, or of the `type` attribute's."""
    return [(OptionalOf(f.ins[0] if f.has(0) else entry_of(f.attr("type")) or UNKNOWN), None)]


@op("OptionalHasElement", since=15)
def optional_has_element(input=None):
    return np.asarray(input is not None, dtype=np.bool_)


@rule("OptionalHasElement")
def _optional_has_element_rule(f):
    return [(BOOL, [])]


@op("OptionalGetElement", since=15)
def optional_get_element(input):
    if input is None:
        raise Fail("OptionalGetElement: the optional input has no element")
    return input


@rule("OptionalGetElement")
def _optional_get_element_rule(f):
    """The optional's element (a plain tensor or sequence input passes through)."""
    t = f.type(0)
    return [t.of if isinstance(t, OptionalOf) else f.ins[0] if t is not None else UNKNOWN]
