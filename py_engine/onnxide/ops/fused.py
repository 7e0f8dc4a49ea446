"""com.microsoft fused ops the optimizer emits (FusedConv, FusedGemm, FusedMatMul): compositions of the registered
Conv / Gemm / MatMul kernels with an activation of the activation table (ops/activations.py) — no op math is defined
twice."""
import numpy as np

from ..errors import InvalidArgument
from . import activations
from .conv import conv_rule
from .inference import rule
from .linalg import gemm_rule, matmul_rule
from .math import unlifted, via_float32
from .registry import MS_DOMAIN, lookup, op


def _primitive(op_type, opset):
    """The ai.onnx kernel a fused op composes, unlifted: the fused kernels are via_float32-wrapped themselves, so
    their inputs are never structured floats."""
    return unlifted(lookup("", op_type, opset).kernel)


def activate(y, name, a=0.0, b=0.0):
    """y through the activation table's `name` with parameters a, b: its ai.onnx op's registered kernel (at the
    table's opset), so no activation math is defined twice."""
    act = activations.BY_NAME[name]
    if not act.op:
        return y
    attrs = dict(act.when)
    attrs.update(zip((p for p, _ in act.params), (a, b)))
    return _primitive(act.op, act.since)(y, **attrs)


def _fused_activation(op_type, attrs):
    """(name, a, b) of a FusedConv / FusedGemm node's activation attributes (activations.fused_activation)."""
    p = activations.fused_activation(op_type, attrs, {}, activations.BY_NAME)
    if p is None:
        raise InvalidArgument(f"{op_type}: unsupported activation '{attrs.get('activation')}'")
    return p


@op("FusedConv", since=1, domain=MS_DOMAIN)
@via_float32
def fused_conv(x, w, b=None, z=None, *, activation="", activation_params=None, auto_pad="NOTSET", dilations=None,
               group=1, kernel_shape=None, pads=None, strides=None, ctx=None):
    act = _fused_activation("FusedConv", {"activation": activation, "activation_params": activation_params})
    y = _primitive("Conv", 11)(x, w, b, auto_pad=auto_pad, dilations=dilations, group=group,
                               kernel_shape=kernel_shape, pads=pads, strides=strides, ctx=ctx)
    if z is not None:
        y = y + z
    return activate(y, *act)


@op("FusedGemm", since=1, domain=MS_DOMAIN)
@via_float32
def fused_gemm(a, b, c=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, activation="", activation_alpha=0.01,
               activation_beta=0.5, activation_gamma=0.0, ctx=None):
    act = _fused_activation("FusedGemm", {"activation": activation, "activation_alpha": activation_alpha,
                                          "activation_beta": activation_beta})
    y = _primitive("Gemm", 13)(a, b, c, alpha=alpha, beta=beta, transA=transA, transB=transB, ctx=ctx)
    return activate(y, *act)


@op("FusedMatMul", since=1, domain=MS_DOMAIN)
@via_float32
def fused_matmul(a, b, *, alpha=1.0, transA=0, transB=0, ctx=None):
    """MatMul of optionally transposed (last two dims) operands, scaled by alpha (transBatch* not supported)."""
    def prep(m, trans):
        return np.swapaxes(m, -1, -2) if trans and m.ndim >= 2 else m

    y = _primitive("MatMul", 13)(prep(a, transA), prep(b, transB), ctx=ctx)
    return y if alpha == 1.0 else (y * np.asarray(alpha, y.dtype)).astype(y.dtype)


rule("FusedConv", domain=MS_DOMAIN)(conv_rule)  # the fused ops' shapes are their base op's
rule("FusedGemm", domain=MS_DOMAIN)(gemm_rule)
rule("FusedMatMul", domain=MS_DOMAIN)(matmul_rule)
