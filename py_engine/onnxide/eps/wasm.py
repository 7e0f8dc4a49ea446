"""WasmExecutionProvider: runs float32 hot ops (GEMM, Conv, pooling, softmax, norms, activations, arithmetic) and the
8-bit GEMM family (MatMulInteger, DynamicQuantizeLinear, QLinearMatMul, DynamicQuantizeMatMul) in the wasm SIMD
kernels of wasm_kernels/ — in place on Pyodide's heap in the browser, through wasmtime natively.

Provider options: {"wasm_simd": "auto" | "relaxed" | "simd128"} (auto: relaxed where the engine validates it),
{"chains": "1" | "0"} (runs of steps on fixed float32 shapes as one ox_chain_run call, wasm_chain.py; on by default).
"""
import numpy as np

from ..errors import EPFail
from ..ops import registry
from ..runtime.providers import ExecutionProvider
from . import wasm_ops as K
from . import wasm_ops_elem as E
from . import wasm_ops_extra as X
from . import wasm_ops_quant as Q
from . import wasm_ops_rnn as RNN
from . import wasm_chain, wasm_runtime

CLAIMS = {
    "MatMul": K.claim_matmul,
    "Gemm": K.claim_gemm,
    "Conv": K.claim_conv,
    "MaxPool": K.claim_maxpool,
    "AveragePool": K.claim_avgpool,
    "GlobalAveragePool": K.claim_global_pool(False),
    "GlobalMaxPool": K.claim_global_pool(True),
    "Softmax": E.claim_softmax(False),
    "LogSoftmax": E.claim_softmax(True),
    "LayerNormalization": E.claim_layernorm,
    "InstanceNormalization": E.claim_instnorm,
    "BatchNormalization": E.claim_batchnorm,
    "ConvTranspose": X.claim_conv_transpose,
    "Resize": X.claim_resize,
    "LSTM": RNN.claim_lstm,
}
MS_CLAIMS = {
    "FusedConv": K.claim_fused_conv,
    "FusedGemm": K.claim_fused_gemm,
    "FusedMatMul": K.claim_fused_matmul,
    "Gelu": X.claim_ms_gelu,
    "FastGelu": X.claim_ms_gelu,
    "BiasGelu": X.claim_ms_gelu,
    "QuickGelu": X.claim_ms_gelu,
    "MultiHeadAttention": X.claim_mha,
    "SkipLayerNormalization": X.claim_skip_layernorm,
}
CLAIMS.update(Q.CLAIMS)
MS_CLAIMS.update(Q.MS_CLAIMS)
CLAIMS.update({name: E.claim_unary for name in E.UNARY})
CLAIMS.update({name: E.claim_binary for name in E.BINOP})


class _Kernels:
    """The loaded module plus what the op kernels need from it (the GEMM scratch size)."""

    def __init__(self, backend, build):
        self.backend, self.build = backend, build
        self.call = backend.call
        self.gemm_scratch = backend.call("ox_gemm_scratch_floats", [])


_WARMED = set()


def warm(rt):
    """Run every kernel once on small data (V8 compiles wasm lazily and tiers up hot functions)."""
    if id(rt.backend) in _WARMED:
        return
    # (plain values, not numpy.random: importing it in the page loads ten more of numpy's wasm modules)
    x = np.sin(np.arange(1 * 8 * 12 * 12, dtype=np.float32)).reshape(1, 8, 12, 12)
    w = np.cos(np.arange(8 * 8 * 3 * 3, dtype=np.float32)).reshape(8, 8, 3, 3)
    K.matmul_fast(rt, x.reshape(24, 48), x.reshape(48, 24))
    K.conv_fast(rt, x, w, pads=[1, 1, 1, 1])
    K.conv_fast(rt, x, w[:, :1], group=8)
    K.pool_fast(rt, True, x, kernel_shape=[2, 2], strides=[2, 2])
    K.pool_fast(rt, False, x, kernel_shape=[3, 3])
    K.global_pool_fast(rt, False, x)
    E.softmax_fast(rt, False, False, x, -1)
    E.layernorm_fast(rt, x, np.ones(12, np.float32))
    E.unary_fast(rt, x, E.ACT["sigmoid"])
    E.binary_fast(rt, 0, x, x[0, 0, 0])
    _WARMED.add(id(rt.backend))


class WasmExecutionProvider(ExecutionProvider):
    name = "WasmExecutionProvider"

    def __init__(self, options=None):
        super().__init__(options)
        try:
            backend, build = wasm_runtime.load(self.options.get("wasm_simd", "auto"))
        except (RuntimeError, ValueError) as e:
            raise EPFail(f"WasmExecutionProvider: {e}") from None
        self.rt = _Kernels(backend, build)
        self.build = build
        if str(self.options.get("warm", "1")) not in ("0", "false", "False"):
            warm(self.rt)

    @property
    def chains(self):
        return str(self.options.get("chains", "1")) != "0"

    @property
    def gains_from_fixed_shapes(self):  # (sessions specialize to recurring shapes: symbolic-dim models get chains)
        return self.chains

    def fuse_steps(self, plan):
        """Runs of consecutive steps that all lower to the module's kernels become one chain step (wasm_chain.py),
        unless the provider option "chains" is "0"."""
        if not self.chains:
            return plan.steps
        return wasm_chain.fuse(plan, self.rt, self)

    def claim(self, spec):
        node, opdef = spec.node, spec.opdef
        domain = registry.normalize_domain(node.domain)
        claim = (CLAIMS if domain == "" else MS_CLAIMS if domain == registry.MS_DOMAIN else {}).get(node.op_type)
        if claim is None:
            return None
        return claim(self.rt, node, opdef, dict(node.attrs))


def available():
    """True when a wasm engine is present and a kernel build can be found (the EP registers only then)."""
    return wasm_runtime.runtime_present() and any(wasm_runtime.find_build(b) for b in wasm_runtime.BUILDS)
