"""NativeCPUExecutionProvider: native kernels (libonnxide_cpu, the build for this CPU's x86-64 level) ahead of the CPU
EP for float32 MatMul / Gemm, convolutions, ConvTranspose, pooling, Resize, attention, activations, binary ops,
LayerNorm, softmax and the plain LSTM, 8-bit MatMulInteger / DynamicQuantizeLinear / QLinearMatMul /
DynamicQuantizeMatMul / MatMulIntegerToFloat, and the walk of ai.onnx.ml tree ensembles, split over the session's
threads (own_threads). Tensors stay numpy arrays on the host; whatever it declines or falls back on runs in the numpy
kernel."""
import functools
import math

from onnxide.errors import InvalidArgument
from onnxide.ops import activations, ml_trees, registry, rnn
from onnxide.ops.conv_geometry import ConvGeometry
from onnxide.runtime.providers import ExecutionProvider, guarded

from . import chain
from . import cpu_ops as K
from . import cpu_qops as Q
from . import cpu_rnn
from . import lib as native_lib

ACT = K.ACT


def _claim_unary(lib, node, opdef, attrs):
    p = activations.unary_activation(node.op_type, opdef, attrs, ACT)
    if p is None:
        return None
    code, a, b = ACT[p[0]], p[1], p[2]
    return guarded(lambda x, **kw: K.act(lib, x, code, a, b), opdef.kernel)


def _claim_binary(lib, node, opdef, attrs):
    if attrs or opdef.since < 7 or len(node.inputs) != 2:  # (Max / Min are variadic: two inputs only)
        return None
    code = K.BINARY[node.op_type]
    return guarded(lambda a, b, **kw: K.binary(lib, code, a, b), opdef.kernel)


def _claim_softmax(log):
    def claim(lib, node, opdef, attrs):
        if set(attrs) - {"axis"}:
            return None
        coerced = opdef.since < 13
        axis = attrs.get("axis", 1 if coerced else -1)
        return guarded(lambda x, **kw: K.softmax(lib, x, axis, log, coerced), opdef.kernel)
    return claim


def _claim_batch_norm(lib, node, opdef, attrs):
    """Inference form only: opset 9+ (no is_test / spatial), one output, training_mode off."""
    if opdef.since < 9 or len([o for o in node.outputs if o]) != 1 or attrs.get("training_mode", 0) or \
            set(attrs) - {"epsilon", "momentum", "training_mode"}:
        return None
    return guarded(lambda *xs, **kw: K.batch_norm(lib, *xs, **kw), opdef.kernel)


def _claim_conv(lib, node, opdef, attrs):
    act = K.fused_act(node, opdef, attrs)
    if set(attrs) - {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"} or act is None:
        return None
    code, a, b = act
    return guarded(lambda *xs, activation=None, activation_params=None, **kw:
                   K.conv(lib, *xs, **kw, act_code=code, act_a=a, act_b=b), opdef.kernel)


def _claim_gemm(lib, node, opdef, attrs):
    act = K.fused_act(node, opdef, attrs)
    if (act is None or set(attrs) - {"alpha", "beta", "transA", "transB"}
            or (node.op_type == "Gemm" and opdef.since < 7)):
        return None
    return guarded(lambda *xs, activation=None, activation_alpha=None, activation_beta=None, activation_gamma=None,
                   **kw: K.gemm(lib, *xs, **kw, act=act), opdef.kernel)


def _claim_mha(lib, node, opdef, attrs):
    """q, k, v (3-D, unpacked) and optionally attention_bias; no packed bias, key padding mask or past."""
    ins = list(node.inputs) + [""] * (6 - len(node.inputs))
    if (set(attrs) - {"num_heads", "scale", "mask_filter_value"} or "num_heads" not in attrs or len(node.inputs) > 6
            or not all(ins[:3]) or ins[3] or ins[4] or len([o for o in node.outputs if o]) != 1):
        return None
    n, sc = attrs["num_heads"], attrs.get("scale", 0.0)
    return guarded(lambda q, k, v, bias=None, key_padding_mask=None, attention_bias=None, **kw:
                   K.attention(lib, q, k, v, n, sc, attention_bias), opdef.kernel)


def _claim_resize(lib, node, opdef, attrs):
    if opdef.since < 11 or attrs.get("mode", "nearest") != "nearest":
        return None
    return guarded(lambda *xs, **kw: K.upsample(lib, *xs, **kw), opdef.kernel)


def _claim_lstm(lib, node, opdef, attrs):
    """The plain LSTM (rnn.plain_lstm) at opset 7+ (LSTM-1's output_sequence attribute stays with numpy)."""
    if opdef.since < 7 or not rnn.plain_lstm(attrs.get("activations"), attrs.get("clip"),
                                             attrs.get("input_forget", 0), node.inputs):
        return None
    return guarded(lambda *xs, **kw: cpu_rnn.lstm(lib, *xs, **kw), opdef.kernel)


def _simple(fn, allowed=()):
    def claim(lib, node, opdef, attrs):
        if set(attrs) - set(allowed):
            return None
        return guarded(lambda *xs, **kw: fn(lib, *xs, **kw), opdef.kernel)
    return claim


CLAIMS = {
    "Softmax": _claim_softmax(False),
    "LogSoftmax": _claim_softmax(True),
    "LayerNormalization": _simple(K.layer_norm, ("axis", "epsilon", "stash_type")),
    "BatchNormalization": _claim_batch_norm,
    "Conv": _claim_conv,
    "MatMul": _simple(lambda lib, a, b, **kw: K.matmul(lib, a, b)),
    "Gemm": _claim_gemm,
    "GlobalAveragePool": _simple(K.global_average_pool),
    "ConvTranspose": _simple(K.conv_transpose, ("auto_pad", "dilations", "group", "kernel_shape", "output_padding",
                                                "output_shape", "pads", "strides")),
    "Resize": _claim_resize,
    "MatMulInteger": _simple(Q.matmul_integer),
    "DynamicQuantizeLinear": _simple(Q.dynamic_quantize_linear),
    "QLinearMatMul": _simple(Q.qlinear_matmul),
    "LSTM": _claim_lstm,
    "MaxPool": _simple(K.max_pool, ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order",
                                    "strides")),
    **{name: _claim_unary for name in activations.BY_OP},  # (those whose activation nx_eltwise.c has)
    **{name: _claim_binary for name in K.BINARY},
}
def _claim_contrib_act(lib, node, opdef, attrs):
    """com.microsoft Gelu / BiasGelu / FastGelu / QuickGelu: the activation of x (+ a bias over its last axis)."""
    p = activations.contrib_activation(node.op_type, opdef, attrs, ACT)
    if p is None:
        return None
    code, a, b = ACT[p[0]], p[1], p[2]
    return guarded(lambda x, bias=None, **kw: K.act(lib, x, code, a, b, bias=bias), opdef.kernel)


MS_CLAIMS = {
    "FusedConv": _claim_conv,
    "FusedGemm": _claim_gemm,
    **{op: _claim_contrib_act for op in activations.CONTRIB},
    "SkipLayerNormalization": _simple(K.skip_layer_norm, ("epsilon",)),
    "MultiHeadAttention": _claim_mha,
    "DynamicQuantizeMatMul": _simple(Q.dynamic_quantize_matmul),
    "MatMulIntegerToFloat": _simple(Q.matmul_integer_to_float),
}


def _small_gemm(shapes, attrs):
    a, b = shapes[0], shapes[1]
    if a is None or b is None or len(a) < 2 or len(b) != 2:
        return False
    m, n = math.prod(a[:-1]), b[0] if b[1] == a[-1] else b[1]  # (Gemm's B may be transposed: the other dim)
    return m < 4 or n < K.SMALL_N or m * n * a[-1] < K.SMALL_GEMM


def _small_conv(shapes, attrs):
    x, w = shapes[0], shapes[1]
    if x is None or w is None or len(x) <= 2 or len(w) <= 1 or w[1] <= 0:
        return False
    if math.prod(w) * math.prod(x) < K.SMALL_GEMM * w[1] or math.prod(x[2:]) < K.SMALL_N:
        return True
    try:  # few output positions (silero VAD's STFT conv: 3): the native kernel declines those at run time
        out = ConvGeometry.conv(x, w, "Conv", **attrs).out
    except InvalidArgument:
        return False  # the kernel reports it
    return math.prod(out) < K.SMALL_N


def _small_elementwise(shapes, attrs):
    return all(s is not None for s in shapes) and max(math.prod(s) for s in shapes) < K.SMALL_ACT


SMALL = {"MatMul": _small_gemm, "Gemm": _small_gemm, "FusedGemm": _small_gemm, "Conv": _small_conv,
         "FusedConv": _small_conv}


def _claim_trees(lib, node, opdef, attrs):
    """The op's own kernel, its trees walked natively (ml_trees.with_walk)."""
    return ml_trees.with_walk(opdef.kernel, functools.partial(K.tree_leaves, lib))


ML_CLAIMS = {name: _claim_trees for name in ("TreeEnsemble", "TreeEnsembleClassifier", "TreeEnsembleRegressor")}
_CLAIMS_BY_DOMAIN = {"": CLAIMS, registry.MS_DOMAIN: MS_CLAIMS, registry.ML_DOMAIN: ML_CLAIMS}


class NativeCPUExecutionProvider(ExecutionProvider):
    name = "NativeCPUExecutionProvider"
    by_default = True
    own_threads = True

    def __init__(self, options=None):
        super().__init__(options)
        self.lib = native_lib.load()

    @property
    def gains_from_fixed_shapes(self):
        return self.chains

    @property
    def chains(self):
        return str(self.options.get("chains", "1")) != "0"

    def fuse_steps(self, plan):
        """Runs of consecutive steps that all lower to native kernels become one chain step (chain.py), unless the
        provider option "chains" is "0"."""
        if not self.chains:
            return plan.steps
        return chain.fuse(plan, self.lib, self)

    def claim(self, spec):
        node = spec.node
        domain = registry.normalize_domain(node.domain)
        claim = _CLAIMS_BY_DOMAIN.get(domain, {}).get(node.op_type)
        if claim is None or _too_small(node, spec.static_shapes()):
            return None
        return claim(self.lib, node, spec.opdef, dict(node.attrs))


def _too_small(node, shapes):
    """Whether the node's work, as far as the graph fixes its inputs' shapes, is below the kernels' thresholds (the
    run-time checks agree; with the shapes known, the node goes to numpy at plan time and skips them every run)."""
    return bool(shapes) and SMALL.get(node.op_type, _small_elementwise)(shapes, node.attrs)


def by_default_here():
    """Whether sessions created without a providers list run it: not with the baseline x86-64 build (a CPU without
    AVX2 + FMA), whose plain-C GEMM tile and libm fmaf calls ran ResNet-18 and MiniLM 1.4-1.5x slower than numpy
    alone, even with OpenBLAS held to its SSE kernels (OPENBLAS_CORETYPE=NEHALEM); there it runs when named."""
    return native_lib.load().build_level != 1


def available():
    """True when libonnxide_cpu is built and loads (the EP registers only then)."""
    try:
        native_lib.load()
        return True
    except RuntimeError:
        return False
