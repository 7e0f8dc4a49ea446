"""Logical and comparison kernels: And Or Xor Not, Equal Greater(OrEqual) Less(OrEqual), strings where allowed."""
import numpy as np

from ..dtypes import BOOL
from .inference import fixed_type, predicate
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
greater = _binary("Greater", np.greater, [1])
less = _binary("Less", np.less, [1])
greater_or_equal = _binary("GreaterOrEqual", np.greater_equal, [12])
less_or_equal = _binary("LessOrEqual", np.less_equal, [12])
