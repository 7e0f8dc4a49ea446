"""Random generators: RandomUniform/Normal(+Like), Multinomial and Bernoulli (seeded when `seed` is given)."""
import struct

import numpy as np

from ..dtypes import FLOAT, INT32, np_dtype
from ..errors import InvalidArgument
from ..runtime import limits
from .inference import rule
from .math import lift, lower, via_float32
from .registry import op

# unseeded nodes draw from one process-wide generator, made on first use: numpy.random is not imported with numpy,
# and importing it costs a page's cold start ~0.1-0.3 s in Pyodide
_shared = None


def set_seed(seed):
    """Restart the process-wide generator from `seed` (onnxruntime.set_seed)."""
    global _shared
    _shared = np.random.default_rng(seed)


def _rng(seed):
    """A generator for one run: deterministic from the float `seed` attribute, else the shared one."""
    global _shared
    if seed is None:
        if _shared is None:
            _shared = np.random.default_rng()
        return _shared
    bits = struct.unpack("<I", struct.pack("<f", float(seed)))[0]
    return np.random.default_rng(bits)


def _float_dtype(code, what):
    dt = np_dtype(code)
    if dt.kind != "f":
        raise InvalidArgument(f"{what}: dtype must be a floating-point type, got {dt}")
    return dt


def _checked(shape, dtype, what):
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise InvalidArgument(f"{what}: negative dimension in shape {list(shape)}")
    limits.check_shape(shape, dtype, f"{what} output")
    return shape


def _uniform(shape, dtype, seed, low, high):
    shape = _checked(shape, dtype, "RandomUniform")
    return _rng(seed).uniform(low, high, size=tuple(shape)).astype(dtype)


def _normal(shape, dtype, seed, mean, scale):
    shape = _checked(shape, dtype, "RandomNormal")
    return _rng(seed).normal(mean, scale, size=tuple(shape)).astype(dtype)


@op("RandomUniform", since=1)
def random_uniform(*, shape, dtype=1, high=1.0, low=0.0, seed=None):
    return _uniform(shape, _float_dtype(dtype, "RandomUniform"), seed, low, high)


@op("RandomNormal", since=1)
def random_normal(*, shape, dtype=1, mean=0.0, scale=1.0, seed=None):
    return _normal(shape, _float_dtype(dtype, "RandomNormal"), seed, mean, scale)


@rule("RandomUniform", "RandomNormal")
def _random_rule(f):
    """`dtype` (float by default), the `shape` attribute's dims."""
    return [(f.attr("dtype", FLOAT), list(f.attr("shape")))]


def _like_dtype(x, dtype, what):
    if dtype is None:
        if x.dtype.kind != "f":
            raise InvalidArgument(f"{what}: input dtype {x.dtype} is not floating point; set 'dtype'")
        return x.dtype
    return _float_dtype(dtype, what)


@op("RandomUniformLike", since=1, meta_inputs=(0,))
def random_uniform_like(x, *, dtype=None, high=1.0, low=0.0, seed=None):
    return _uniform(x.shape, _like_dtype(x, dtype, "RandomUniformLike"), seed, low, high)


@op("RandomNormalLike", since=1, meta_inputs=(0,))
def random_normal_like(x, *, dtype=None, mean=0.0, scale=1.0, seed=None):
    return _normal(x.shape, _like_dtype(x, dtype, "RandomNormalLike"), seed, mean, scale)


@rule("RandomUniformLike", "RandomNormalLike")
def _random_like_rule(f):
    """`dtype`, else the input's type; the input's dims."""
    return [(f.attr("dtype") or f.type(0), f.dims(0))]


@op("Multinomial", since=7)
@via_float32
def multinomial(x, *, dtype=6, sample_size=1, seed=None):
    """x: [batch, classes] unnormalized log-probabilities; returns [batch, sample_size] class indices."""
    out_dt = np_dtype(dtype)
    if out_dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise InvalidArgument(f"Multinomial: dtype must be int32 or int64, got {out_dt}")
    if x.ndim != 2:
        raise InvalidArgument(f"Multinomial: input must be [batch, classes], got shape {x.shape}")
    logits = x.astype(np.float64)
    logits = logits - logits.max(axis=1, keepdims=True)
    cdf = np.cumsum(np.exp(logits), axis=1)
    u = _rng(seed).random((x.shape[0], int(sample_size))) * cdf[:, -1:]
    idx = np.empty(u.shape, np.int64)
    for b in range(x.shape[0]):  # one vectorized search per batch row
        idx[b] = np.searchsorted(cdf[b], u[b], side="right")
    return np.minimum(idx, x.shape[1] - 1).astype(out_dt)


@op("Bernoulli", since=15)
def bernoulli(x, *, dtype=None, seed=None):
    out_dt = x.dtype if dtype is None else np_dtype(dtype)
    u = _rng(seed).random(x.shape)
    return lower((u < lift(x)[0].astype(np.float64)).astype(np.float32), out_dt)


@rule("Multinomial")
def _multinomial_rule(f):
    """`dtype` (int32 by default); [batch, sample_size]."""
    d = f.dims(0)
    return [(f.attr("dtype", INT32), [d[0] if d is not None and len(d) == 2 else None, f.attr("sample_size", 1)])]


rule("Bernoulli")(_random_like_rule)
