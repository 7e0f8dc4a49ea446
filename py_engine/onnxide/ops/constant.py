"""Constant kernels: Constant (value, sparse_value and every value_* attribute) and ConstantOfShape."""
import numpy as np

from .. import dtypes as dt
from ..errors import InvalidArgument
from ..runtime import limits
from .inference import rule, unknown_dims
from .registry import op


def _constant(**given):
    set_ = {k: v for k, v in given.items() if v is not None}
    if len(set_) != 1:
        raise InvalidArgument(f"Constant: exactly one value attribute must be set, got {sorted(set_) or 'none'}")
    (name, v), = set_.items()
    if name in ("value", "sparse_value"):
        return np.asarray(v)
    if name == "value_float":
        return np.asarray(v, dtype=np.float32)
    if name == "value_floats":
        return np.asarray(list(v), dtype=np.float32).reshape(-1)
    if name == "value_int":
        return np.asarray(v, dtype=np.int64)
    if name == "value_ints":
        return np.asarray(list(v), dtype=np.int64).reshape(-1)
    if name == "value_string":
        return np.asarray(_text(v), dtype=object)
    if name == "value_strings":
        out = np.empty(len(v), dtype=object)
        out[:] = [_text(s) for s in v]
        return out
    raise InvalidArgument(f"Constant: unknown attribute {name}")  # pragma: no cover


def _text(s):
    return s.decode("utf-8") if isinstance(s, (bytes, bytearray)) else s


@op("Constant", since=1)
def constant_v1(*, value):
    return _constant(value=value)


@op("Constant", since=11)
def constant_v11(*, value=None, sparse_value=None):
    return _constant(value=value, sparse_value=sparse_value)


@op("Constant", since=12)
def constant(*, value=None, sparse_value=None, value_float=None, value_floats=None, value_int=None,
             value_ints=None, value_string=None, value_strings=None):
    return _constant(value=value, sparse_value=sparse_value, value_float=value_float, value_floats=value_floats,
                     value_int=value_int, value_ints=value_ints, value_string=value_string,
                     value_strings=value_strings)


_LISTED = {"value_float": (dt.FLOAT, False), "value_floats": (dt.FLOAT, True), "value_int": (dt.INT64, False),
           "value_ints": (dt.INT64, True), "value_string": (dt.STRING, False), "value_strings": (dt.STRING, True)}


@rule("Constant")
def _constant_rule(f):
    """The type and dims of the value attribute (a tensor, or a float / int / string scalar or list)."""
    for name, v in f.node.attrs.items():
        if isinstance(v, np.ndarray):
            return [(dt.code_of(v.dtype), list(v.shape))]
        if name in _LISTED:
            code, listed = _LISTED[name]
            return [(code, [len(v)] if listed else [])]
    return None


@op("ConstantOfShape", since=9, host_inputs=(0,))
def constant_of_shape(input, *, value=None):  # noqa: A002
    shape = np.asarray(input).astype(np.int64).reshape(-1).tolist()
    if any(d < 0 for d in shape):
        raise InvalidArgument(f"ConstantOfShape: negative dimension in {shape}")
    v = np.zeros((), np.float32) if value is None else np.asarray(value)
    if v.size != 1:
        raise InvalidArgument("ConstantOfShape: 'value' must hold exactly one element")
    limits.check_shape(shape, v.dtype, "ConstantOfShape output")
    return np.full(shape, v.reshape(-1)[0], dtype=v.dtype)


@rule("ConstantOfShape")
def _constant_of_shape_rule(f):
    """value's type (float without one); dims from a constant shape or its shape entries, else only the rank."""
    v = f.attr("value")
    elem = dt.code_of(v.dtype) if isinstance(v, np.ndarray) else dt.FLOAT
    shape, entries, d = f.ints(0), f.shape_value(0), f.dims(0)
    if shape is not None:
        return [(elem, shape)]
    if entries is not None:
        return [(elem, [e if isinstance(e, str) or (isinstance(e, int) and e >= 0) else None for e in entries[0]])]
    return [(elem, unknown_dims(d[0]) if d is not None and len(d) == 1 and isinstance(d[0], int) else None)]
