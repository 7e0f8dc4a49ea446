"""Batch columns to model feeds: per-row conversion to the input's dtype and row shape, bad rows named."""
import numpy as np

_TYPES = {"float": np.float32, "double": np.float64, "float16": np.float16, "int8": np.int8, "int16": np.int16,
          "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
          "uint64": np.uint64, "bool": np.bool_, "string": object}


def input_dtype(arg):
    """The numpy dtype of a NodeArg whose type reads 'tensor(float)' and the like."""
    name = arg.type[len("tensor("):-1] if arg.type.startswith("tensor(") else arg.type
    if name not in _TYPES:
        raise ValueError(f"input {arg.name!r} has type {arg.type}: onnxide.batch feeds tensors of {sorted(_TYPES)}")
    return np.dtype(_TYPES[name])


def row_shape(arg):
    """The declared shape of one row (the input's shape less its batch axis); None for an unknown dim."""
    return [d if isinstance(d, int) else None for d in (arg.shape or [])[1:]]


def _fits(shape, want):
    return len(shape) == len(want) and all(w is None or s == w for s, w in zip(shape, want))


def convert_column(values, dtype, want):
    """{row index: array} of the rows that convert to dtype with a shape fitting want, and {row index: reason};
    a whole well-formed column comes back as one array (every row good)."""
    if isinstance(values, np.ndarray) and values.dtype != object and _fits(list(values.shape[1:]), want):
        try:
            return values.astype(dtype, copy=False), {}
        except (TypeError, ValueError):
            pass
    good, bad = {}, {}
    for i, v in enumerate(values):
        try:
            if v is None:
                raise ValueError("value is null")
            a = np.asarray(v, dtype=dtype)
            if not _fits(list(a.shape), want):
                raise ValueError(f"shape {list(a.shape)} does not fit the input's row shape {want}")
            good[i] = a
        except (TypeError, ValueError) as e:
            bad[i] = f"{type(e).__name__}: {e}"
    shapes = [a.shape for a in good.values()]
    if len(set(shapes)) > 1:  # unknown dims differ between rows: the most common shape wins
        common = max(set(shapes), key=shapes.count)
        for i in [i for i, a in good.items() if a.shape != common]:
            bad[i] = f"ValueError: shape {list(good.pop(i).shape)} differs from the batch's {list(common)}"
    return good, bad
