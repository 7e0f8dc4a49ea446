"""Logical and comparison kernels: And Or Xor Not, Equal Greater(OrEqual) Less(OrEqual), strings where allowed."""
import numpy as np

from ..dtypes import BOOL
from .inference import fixed_type, predicate, rule
from .math import legacy_broadcast, lift
from .registry import op
from .util import not_broadcastable


def _bool(x):
    return np.asarray(x, dtype=bool)


def _prep(a, b):
    """Operands ready for a numpy comparison: exotic floats lifted to float32, strings as object arrays."""
    a, _ = lift(a)
    b, _ = lift(b)
    if a.dtype.kind in "OUS" or b.dtype.kind in "OUS":
        return a.astype(object), b.astype(object)
    return a, b


def _binary(name, fn, since_list, prep=_prep):
    """Register a bool-returning binary op; opset 1 has the legacy broadcast/axis attributes."""

    def kernel(a, b):
        a, b = prep(np.asarray(a), np.asarray(b))
        try:
            return _bool(fn(a, b))
        except ValueError:
            e = not_broadcastable(name, (a, b))
            if e is None:
                raise
            raise e from None

    def kernel_v1(a, b, *, broadcast=0, axis=None):
        a, b = legacy_broadcast(a, b, broadcast, axis, name)
        return kernel(a, b)

    if since_list[0] == 1:
        op(name, since=1, infer=predicate)(kernel_v1)
        op(name, since=7, infer=predicate)(kernel)
    else:
        op(name, since=since_list[0], infer=predicate)(kernel)
    return kernel


def _logical_prep(a, b):
    return _bool(a), _bool(b)


logical_and = _binary("And", np.logical_and, [1], _logical_prep)
logical_or = _binary("Or", np.logical_or, [1], _logical_prep)
logical_xor = _binary("Xor", np.logical_xor, [1], _logical_prep)


@op("Not", since=1, infer=fixed_type(BOOL))
def logical_not(x):
    return _bool(np.logical_not(_bool(x)))


equal = _binary("Equal", np.equal, [1])


def _same_entry(a, b):
    """1 / 0 when two shape entries are surely equal / different (a symbolic dim is never negative), else None."""
    if isinstance(a, int) and isinstance(b, int):
        return int(a == b)
    if isinstance(a, str) and isinstance(b, str):
        return 1 if a == b else None
    if isinstance(a, str) or isinstance(b, str):
        n = b if isinstance(a, str) else a
        return 0 if isinstance(n, int) and n < 0 else None
    return None


@rule("Equal")
def _equal_rule(f):
    """predicate's; of two shape values, entries 1 / 0 where known (the Where of torch's expand(-1) reads them)."""
    a, b = f.shape_value(0), f.shape_value(1)
    if a is not None and b is not None and (len(a[0]) == len(b[0]) or 1 in (len(a[0]), len(b[0]))):
        n = max(len(a[0]), len(b[0]))
        f.holds([_same_entry(a[0][i if len(a[0]) > 1 else 0], b[0][i if len(b[0]) > 1 else 0]) for i in range(n)],
                a[1] and b[1])
    return predicate(f)
greater = _binary("Greater", np.greater, [1])
less = _binary("Less", np.less, [1])
greater_or_equal = _binary("GreaterOrEqual", np.greater_equal, [12])
less_or_equal = _binary("LessOrEqual", np.less_equal, [12])
