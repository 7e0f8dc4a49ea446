"""com.microsoft activation fusions (Gelu, FastGelu, BiasGelu, QuickGelu, BiasAdd, BiasSplitGelu): compositions of
the registered ai.onnx Gelu / Sigmoid / Add kernels."""
import numpy as np

from ..errors import InvalidArgument
from .activation import sigmoid_array
from .inference import rule, same_as_input
from .math import lift32, lower
from .registry import MS_DOMAIN, lookup, op

_GELU_OPSET = 20


def gelu_exact(x):
    """0.5 * x * (1 + erf(x / sqrt(2))) through the ai.onnx Gelu kernel."""
    return lookup("", "Gelu", _GELU_OPSET).kernel(x, approximate="none")


def gelu_tanh(x):
    """The tanh approximation of Gelu through the ai.onnx Gelu kernel."""
    return lookup("", "Gelu", _GELU_OPSET).kernel(x, approximate="tanh")


def _add_bias(x, bias, name):
    if bias is None:
        return x
    if bias.ndim != 1 or (x.ndim and bias.shape[0] != x.shape[-1]):
        raise InvalidArgument(f"{name}: bias of shape {bias.shape} does not match the last dimension of "
                              f"input {x.shape}")
    xf, dt = lift32(x)
    bf, _ = lift32(bias)
    return lower((xf + bf.astype(xf.dtype, copy=False)).astype(xf.dtype, copy=False), dt)


@op("Gelu", since=1, domain=MS_DOMAIN)
def ms_gelu(x):
    return gelu_exact(x)


@op("BiasGelu", since=1, domain=MS_DOMAIN)
def bias_gelu(a, b):
    return gelu_exact(_add_bias(a, b, "BiasGelu"))


@op("FastGelu", since=1, domain=MS_DOMAIN)
def fast_gelu(x, bias=None):
    return gelu_tanh(_add_bias(x, bias, "FastGelu"))


@op("QuickGelu", since=1, domain=MS_DOMAIN)
def quick_gelu(x, *, alpha=1.7020000219345093):
    xf, dt = lift32(x)
    with np.errstate(over="ignore"):
        y = xf * sigmoid_array(xf * np.asarray(alpha, xf.dtype))
    return lower(y.astype(xf.dtype, copy=False), dt)


@op("BiasAdd", since=1, domain=MS_DOMAIN)
def bias_add(x, bias, skip):
    if x.ndim != 3 or skip.shape != x.shape:
        raise InvalidArgument(f"BiasAdd: X {x.shape} and skip {skip.shape} must be the same 3D shape (N, S, C)")
    y = _add_bias(x, bias, "BiasAdd")
    yf, dt = lift32(y)
    sf, _ = lift32(skip)
    return lower((yf + sf.astype(yf.dtype, copy=False)).astype(yf.dtype, copy=False), dt)


@op("BiasSplitGelu", since=1, domain=MS_DOMAIN)
def bias_split_gelu(x, bias):
    if x.ndim != 3 or x.shape[-1] % 2:
        raise InvalidArgument(f"BiasSplitGelu: X must be 3D (N, S, D) with an even D, got {x.shape}")
    h = _add_bias(x, bias, "BiasSplitGelu")
    half = x.shape[-1] // 2
    left, right = h[..., :half], h[..., half:]
    g = gelu_exact(right)
    lf, dt = lift32(left)
    gf, _ = lift32(g)
    return lower((lf * gf).astype(lf.dtype, copy=False), dt)


rule("Gelu", "BiasGelu", "FastGelu", "QuickGelu", "BiasAdd", domain=MS_DOMAIN)(same_as_input)  # (biases: 1-D, last dim)


@rule("BiasSplitGelu", domain=MS_DOMAIN)
def _bias_split_gelu_rule(f):
    """X's type; (N, S, D/2)."""
    d = f.dims(0)
    half = None if d is None or len(d) != 3 else d[:2] + [d[2] // 2 if isinstance(d[2], int) else None]
    return [(f.type(0), half)]
