"""com.microsoft fused ops the optimizer emits (FusedConv, FusedGemm, FusedMatMul): compositions of the registered
Conv / Gemm / MatMul kernels with an activation kernel — no op math is defined twice."""
import numpy as np

from .math import unlifted, via_float32
from .registry import MS_DOMAIN, lookup, op

_ACT_OPSET = 22


def _primitive(op_type, opset):
    """The ai.onnx kernel a fused op composes, unlifted: the fused kernels are via_float32-wrapped themselves, so
    their inputs are never structured floats."""
    return unlifted(lookup("", op_type, opset).kernel)


def apply_activation(y, activation, params):
    """Apply ORT's fused `activation` (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, Clip) via its own kernel."""
    if not activation:
        return y
    k = _primitive(activation, _ACT_OPSET)
    p = list(params or [])
    if activation == "LeakyRelu":
        return k(y, alpha=p[0] if p else 0.01)
    if activation == "HardSigmoid":
        return k(y, alpha=p[0] if p else 0.2, beta=p[1] if len(p) > 1 else 0.5)
    if activation == "Clip":
        lo = np.asarray(p[0] if p else -np.inf, y.dtype)
        hi = np.asarray(p[1] if len(p) > 1 else np.inf, y.dtype)
        return k(y, lo, hi)
    return k(y)


@op("FusedConv", since=1, domain=MS_DOMAIN)
@via_float32
def fused_conv(x, w, b=None, z=None, *, activation="", activation_params=None, auto_pad="NOTSET", dilations=None,
               group=1, kernel_shape=None, pads=None, strides=None, ctx=None):
    y = _primitive("Conv", 11)(x, w, b, auto_pad=auto_pad, dilations=dilations, group=group,
                               kernel_shape=kernel_shape, pads=pads, strides=strides, ctx=ctx)
    if z is not None:
        y = y + z
    return apply_activation(y, activation, activation_params)


@op("FusedGemm", since=1, domain=MS_DOMAIN)
@via_float32
def fused_gemm(a, b, c=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, activation="", activation_alpha=0.01,
               activation_beta=0.5, activation_gamma=0.0, ctx=None):
    y = _primitive("Gemm", 13)(a, b, c, alpha=alpha, beta=beta, transA=transA, transB=transB, ctx=ctx)
    params = {"LeakyRelu": [activation_alpha], "HardSigmoid": [activation_alpha, activation_beta],
              "Clip": [activation_alpha, activation_beta]}.get(activation)
    return apply_activation(y, activation, params)


@op("FusedMatMul", since=1, domain=MS_DOMAIN)
@via_float32
def fused_matmul(a, b, *, alpha=1.0, transA=0, transB=0, ctx=None):
    """MatMul of optionally transposed (last two dims) operands, scaled by alpha (transBatch* not supported)."""
    def prep(m, trans):
        return np.swapaxes(m, -1, -2) if trans and m.ndim >= 2 else m

    y = _primitive("MatMul", 13)(prep(a, transA), prep(b, transB), ctx=ctx)
    return y if alpha == 1.0 else (y * np.asarray(alpha, y.dtype)).astype(y.dtype)
