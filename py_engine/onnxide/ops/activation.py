"""Activation kernels: Relu, LeakyRelu, PRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish, Tanh, Softplus, ..."""
import inspect

import numpy as np

from ..errors import Fail
from .inference import rule, same_as_input
from .math import erf_array, half_erfc_single, lift32, lower
from .registry import op
from .util import broadcasting


def _c(v, x):
    """A scalar attribute as a 0-d array of x's dtype (keeps float16/float32 results from being promoted)."""
    return np.asarray(v, dtype=x.dtype)


def _act(name, fn, versions):
    """Register fn(x_float32_or_wider, **attrs) for each (since, attr-defaults) in versions; consumed_inputs ignored.

    `versions` maps since -> dict of attribute defaults (None for consumed_inputs, which is accepted and ignored).
    """
    for since, defaults in versions.items():
        op(name, since=since, infer=same_as_input)(_make(fn, defaults))


def _make(fn, defaults):
    """A kernel with signature (x, *, <attrs with defaults>) that computes fn in float32-or-wider."""

    def kernel(x, **attrs):
        vals = {**defaults, **attrs}
        vals.pop("consumed_inputs", None)
        xf, dt = lift32(x)
        with np.errstate(all="ignore"):
            y = fn(xf, **vals)
        return lower(np.asarray(y).astype(xf.dtype, copy=False), dt)

    params = [inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=v) for n, v in defaults.items()]
    kernel.__signature__ = inspect.Signature(params)  # the registry reads the ONNX attributes from it
    kernel.__name__ = fn.__name__.lstrip("_")
    return kernel


def _relu(x):
    return np.maximum(x, np.zeros((), x.dtype))


def _leaky_relu(x, alpha):
    return np.where(x < 0, x * _c(alpha, x), x)


def _elu(x, alpha):
    return np.where(x < 0, _c(alpha, x) * np.expm1(x), x)


def _selu(x, alpha, gamma):
    a, g = _c(alpha, x), _c(gamma, x)
    return np.where(x <= 0, g * (a * np.exp(x) - a), g * x)


def _celu(x, alpha):
    a = _c(alpha, x)
    return np.maximum(x, np.zeros((), x.dtype)) + np.minimum(np.zeros((), x.dtype), a * np.expm1(x / a))


def sigmoid_array(x):
    """The logistic function in x's dtype as 1 / (1 + e^-x), worked in place after the exp: accurate across the
    range (e^-x overflowing to inf gives the limit 0; callers silence that warning), four ufunc calls."""
    e = np.asarray(np.exp(-x))  # (a 0-d x gives a numpy scalar, which cannot be written in place)
    e += np.ones((), e.dtype)
    return np.reciprocal(e, out=e)


def _unit_clamp(y):
    """y clamped to [0, 1] in place (a fresh result per step costs more than the clamp); NaN stays NaN."""
    return np.clip(y, 0, 1, out=y)


def _hard_sigmoid(x, alpha, beta):
    y = _c(alpha, x) * x
    y += _c(beta, x)
    return _unit_clamp(y)


def _hard_swish(x):
    y = x / _c(6, x)
    y += _c(0.5, x)
    y = _unit_clamp(y)
    y *= x
    return y


def _softplus(x):
    return np.logaddexp(np.zeros((), x.dtype), x)


def _softsign(x):
    return x / (np.ones((), x.dtype) + np.abs(x))


def _thresholded_relu(x, alpha):
    return np.where(x > _c(alpha, x), x, np.zeros((), x.dtype))


def _mish(x):
    return x * np.tanh(_softplus(x))


def _swish(x, alpha):
    return x * sigmoid_array(_c(alpha, x) * x)


_act("Relu", _relu, {1: {"consumed_inputs": None}, 6: {}})
_act("LeakyRelu", _leaky_relu, {1: {"alpha": 0.009999999776482582, "consumed_inputs": None},
                                6: {"alpha": 0.009999999776482582}})
_act("Elu", _elu, {1: {"alpha": 1.0, "consumed_inputs": None}, 6: {"alpha": 1.0}})
_act("Selu", _selu, {1: {"alpha": 1.673200011253357, "gamma": 1.0506999492645264, "consumed_inputs": None},
                     6: {"alpha": 1.6732631921768188, "gamma": 1.0507010221481323}})
_act("Celu", _celu, {12: {"alpha": 1.0}})
_act("Sigmoid", sigmoid_array, {1: {"consumed_inputs": None}, 6: {}})
_act("HardSigmoid", _hard_sigmoid, {1: {"alpha": 0.20000000298023224, "beta": 0.5, "consumed_inputs": None},
                                    6: {"alpha": 0.20000000298023224, "beta": 0.5}})
_act("HardSwish", _hard_swish, {14: {}})
_act("Tanh", np.tanh, {1: {"consumed_inputs": None}, 6: {}})
_act("Softplus", _softplus, {1: {}})
_act("Softsign", _softsign, {1: {}})
_act("ThresholdedRelu", _thresholded_relu, {10: {"alpha": 1.0}})
_act("Mish", _mish, {18: {}})
_act("Swish", _swish, {24: {"alpha": 1.0}})


@op("Gelu", since=20)
def gelu(x, *, approximate="none"):
    xf, dt = lift32(x)  # computed in float32 (float64 inputs stay float64), in place after the first temporary
    c = xf.dtype.type
    with np.errstate(all="ignore"):
        if approximate == "tanh":
            y = xf * xf
            y *= c(0.044715)
            y += c(1)
            y *= xf
            y *= c(np.sqrt(2.0 / np.pi))
            np.tanh(y, out=y)
        elif xf.dtype == np.float32:  # x·Φ(x), Φ from 0.5·erfc(|x|/√2): no 1 + erf cancellation for x < 0
            h = half_erfc_single(np.abs(xf) * c(1 / np.sqrt(2.0)))
            np.subtract(c(0.5), h, out=h)
            h *= np.sign(xf)
            h += c(0.5)
            h *= xf
            return lower(h, dt)
        else:
            y = erf_array(xf * c(1 / np.sqrt(2.0)))
        y += c(1)
        y *= xf
        y *= c(0.5)
    return lower(y, dt)


def _prelu(x, slope, legacy=False):
    x = np.asarray(x)
    slope = np.asarray(slope)
    xf, dt = lift32(x)
    sf, _ = lift32(slope)
    sf = sf.astype(xf.dtype, copy=False)
    if legacy:  # (from opset 7 the step's input guard checks the slope: ops.validate.INPUT_RELATIONS)
        if sf.ndim == 1 and xf.ndim >= 2 and sf.shape[0] == xf.shape[1] != xf.shape[-1]:
            sf = sf.reshape((-1,) + (1,) * (xf.ndim - 2))  # (before opset 7: a per-channel slope of shape (C,))
        check_prelu_slope(xf.shape, sf.shape)
    y = np.where(xf < 0, xf * sf, xf)
    return lower(y.astype(xf.dtype, copy=False), dt)


def check_prelu_slope(x_shape, slope_shape):
    """Fail unless the slope broadcasts onto X without growing it (the spec's unidirectional broadcast, as
    onnxruntime's kernel requires)."""
    try:
        fits = tuple(np.broadcast_shapes(tuple(slope_shape), tuple(x_shape))) == tuple(x_shape)
    except ValueError:
        fits = False
    if not fits:
        raise Fail(f"PRelu: slope of shape {list(slope_shape)} is not unidirectionally broadcastable to X of shape "
                   f"{list(x_shape)}")


@op("PRelu", since=1)
@broadcasting("PRelu")
def prelu_v1(x, slope, *, consumed_inputs=None):
    return _prelu(x, slope, legacy=True)


@op("PRelu", since=6)
@broadcasting("PRelu")
def prelu_v6(x, slope):
    return _prelu(x, slope, legacy=True)


@op("PRelu", since=7)
@broadcasting("PRelu")
def prelu(x, slope):
    return _prelu(x, slope)


@op("Shrink", since=9)
def shrink(x, *, bias=0.0, lambd=0.5):
    x = np.asarray(x)
    xf, dt = lift32(x)
    if xf.dtype.kind in "iu":
        xd = xf.astype(np.float64)
        y = np.where(xd < -lambd, xd + bias, np.where(xd > lambd, xd - bias, 0.0))
        return y.astype(x.dtype)
    y = np.where(xf < -lambd, xf + _c(bias, xf), np.where(xf > lambd, xf - _c(bias, xf), np.zeros((), xf.dtype)))
    return lower(y.astype(xf.dtype, copy=False), dt)


rule("Gelu", "PRelu", "Shrink")(same_as_input)  # (PRelu's slope broadcasts onto X)
