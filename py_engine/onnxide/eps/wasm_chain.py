"""WASM chains (issue 16 item 1 inside the side module): runs of consecutive host steps on fixed float32 shapes become
one step making one ox_chain_run call (wasm_kernels/ox_chain.c) over one arena. The shared part is
onnxide.plan.chains; here: ox_chain.c's op codes, the lowerings of the ops the WASM EP runs (their decisions are the
EP's own: the claims, matmul / gemm geometry, conv_args, pool_args, broadcast_plan, the activation table) and the
call. In Pyodide the arena is a numpy array and pointers are numpy's; natively (wasmtime) the program and its
constants are pinned in the module's memory and a run copies only the chain's inputs in and outputs out."""
import math
import weakref

import numpy as np

from ..ops import activations, resize, rnn
from ..plan import chains
from ..runtime import limits
from ..plan.chain_lower import COPIES, dq_matmul, forward_lstm, lower_step, lstm_outputs, out, trailing_reduce
from ..plan.chains import F32, Decline
from . import wasm_ops as W
from . import wasm_ops_elem as E
from . import wasm_ops_extra as X
from . import wasm_ops_quant as Q
from . import wasm_ops_rnn as RNN

OPS = {name: i + 1 for i, name in enumerate(("gemm", "gemm_pb", "conv", "winograd", "pool", "gpool", "upsample",
                                             "softmax", "rownorm", "affine", "unary", "binary", "strided", "fill",
                                             "attention", "dq", "qgemm", "lstm"))}


def _claimed(claim, b, node, opdef, attrs):
    """The EP's own claim decides which attributes the kernels take."""
    if claim(b.lib, node, opdef, attrs) is None:
        raise Decline(node.op_type)


def _gemm(b, batch, m, n, k, a, rsa, csa, a_step, y, ldc, c_step, bmat=(-1, 0, 0, 0), packed=-1, bias=-1,
          bias_steps=(0, 0, 0), alpha=1.0, beta=1.0, act=(0, 0.0, 0.0)):
    """One ox_gemm (bmat: B tensor, row / column strides, batch step) or ox_gemm_pb (packed) instruction."""
    scratch = b.scratch(b.lib.gemm_scratch)
    b.emit("gemm" if packed == -1 else "gemm_pb",
           [batch, m, n, k, rsa, csa, a_step, *bmat[1:], ldc, c_step, *bias_steps],
           [a, bmat[0] if packed == -1 else packed, y, bias, scratch], [alpha, beta, act[1], act[2]], act[0])


def _packed(b, w, g):
    """A constant 2-D B packed once for ox_gemm_pb (as PackedB packs it at run time)."""
    return b.fixed(W.pack_b(b.lib, W._contig(w), g.k, g.n, g.rsb, g.csb))


def _matmul_like(b, step, alpha=1.0, trans_a=0, trans_b=0):
    ka, kb = step.in_keys[:2]
    sb = b.shape(kb)
    g = W.matmul_geometry(b.shape(ka), sb, trans_a, trans_b)
    if g is None or g.a_copy or g.b_copy:
        raise Decline("MatMul shapes")
    a, wb = b.src(ka), b.const(kb)
    y = b.dst(out(step), g.out)
    if g.fold:  # one shared 2-D B: A's batch folded into its rows
        rows = math.prod(g.a_shape) // g.k
        if wb is not None and len(sb) == 2:
            _gemm(b, 1, rows, g.n, g.k, a, g.k, 1, 0, y, g.n, 0, packed=_packed(b, wb, g), alpha=alpha)
        else:
            _gemm(b, 1, rows, g.n, g.k, a, g.k, 1, 0, y, g.n, 0, (b.src(kb), g.rsb, g.csb, 0), alpha=alpha)
    else:
        _gemm(b, math.prod(g.batch), g.m, g.n, g.k, a, g.rsa, g.csa, g.a_step, y, g.n, g.m * g.n,
              (b.src(kb), g.rsb, g.csb, g.b_step), alpha=alpha)


def _matmul(b, step, node, opdef, attrs):
    _claimed(W.claim_matmul, b, node, opdef, attrs)
    _matmul_like(b, step)


def _fused_matmul(b, step, node, opdef, attrs):
    _claimed(W.claim_fused_matmul, b, node, opdef, attrs)
    _matmul_like(b, step, attrs.get("alpha", 1.0), attrs.get("transA", 0), attrs.get("transB", 0))


def _gemm_node(b, step, node, opdef, attrs):
    if node.op_type == "FusedGemm":
        _claimed(W.claim_fused_gemm, b, node, opdef, attrs)
        act = W._act_code(activations.fused_activation("FusedGemm", attrs, opdef.attrs, W.ACT))
    else:
        _claimed(W.claim_gemm, b, node, opdef, attrs)
        act = (0, 0.0, 0.0)
    ka, kb = step.in_keys[:2]
    kc = step.in_keys[2] if len(step.in_keys) > 2 else None
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    ta, tb = attrs.get("transA", 0), attrs.get("transB", 0)
    g = W.gemm_geometry(b.shape(ka), b.shape(kb), None if kc is None else b.shape(kc), beta, ta, tb)
    if g is None or g[2] == 0:
        raise Decline("Gemm shapes")
    m, n, k, rsa, csa, rsb, csb, steps = g
    a, wb = b.src(ka), b.const(kb)
    bias = -1 if steps is None else b.src(kc)
    y = b.dst(out(step), (m, n))
    common = dict(bias=bias, bias_steps=(*(steps or (0, 0)), 0), alpha=alpha, beta=beta, act=act)
    if wb is not None:
        packed = b.fixed(W.pack_b(b.lib, W._contig(wb), k, n, rsb, csb))
        _gemm(b, 1, m, n, k, a, rsa, csa, 0, y, n, 0, packed=packed, **common)
    else:
        _gemm(b, 1, m, n, k, a, rsa, csa, 0, y, n, 0, (b.src(kb), rsb, csb, 0), **common)


def _conv(b, step, node, opdef, attrs):
    if node.op_type == "FusedConv":
        _claimed(W.claim_fused_conv, b, node, opdef, attrs)
        act = W._act_code(activations.fused_activation("FusedConv", attrs, opdef.attrs, W.ACT))
    else:
        _claimed(W.claim_conv, b, node, opdef, attrs)
        act = (0, 0.0, 0.0)
    kx, kw, kb, kz = (list(step.in_keys) + [None] * 4)[:4]
    sw = b.shape(kw)
    if kb is not None and b.shape(kb) != sw[:1]:
        raise Decline("Conv bias")
    ca = W.conv_args(b.lib, b.shape(kx), sw, attrs)
    if ca is None:
        raise Decline("Conv geometry")
    wino, geometry, scratch, y_shape = ca
    if kz is not None and b.shape(kz) != y_shape:
        raise Decline("FusedConv Z shape")
    x, w, bias = b.src(kx), b.src(kw), b.src(kb)
    z = b.src(kz)
    y = b.dst(out(step), y_shape)
    first = (0, 0.0, 0.0) if z != -1 else act  # (with Z: conv, + Z, then the activation, as conv_sum_fast)
    b.emit("winograd" if wino else "conv", geometry, [x, w, bias, y, b.scratch(scratch)], first[1:], first[0])
    if z != -1:
        b.emit("binary", [W.BINOP["Add"], *_same_plan(y_shape, y_shape)], [y, z, y])
        if act[0]:
            b.emit("unary", [math.prod(y_shape)], [y, y], act[1:], act[0])


def _pool(is_max):
    def lower(b, step, node, opdef, attrs):
        _claimed(W.claim_maxpool if is_max else W.claim_avgpool, b, node, opdef, attrs)
        pa = W.pool_args(b.lib, b.shape(step.in_keys[0]), is_max, attrs)
        if pa is None:
            raise Decline("pool geometry")
        geometry, scratch, y_shape = pa
        b.emit("pool", geometry, [b.src(step.in_keys[0]), b.dst(out(step), y_shape), b.scratch(scratch)])
    return lower


def _reduce_mean(b, step, node, opdef, attrs):
    planes, count, y = trailing_reduce(b, step, opdef, attrs)
    b.emit("gpool", [planes, count, 0], [b.src(step.in_keys[0]), b.dst(out(step), y)])


def _global_pool(is_max):
    def lower(b, step, node, opdef, attrs):
        _claimed(W.claim_global_pool(is_max), b, node, opdef, attrs)
        shape = b.shape(step.in_keys[0])
        if len(shape) < 3:
            raise Decline("rank")
        planes = shape[0] * shape[1]
        b.emit("gpool", [planes, math.prod(shape) // planes, int(is_max)],
               [b.src(step.in_keys[0]), b.dst(out(step), shape[:2] + (1,) * (len(shape) - 2))])
    return lower


def _softmax(log):
    def lower(b, step, node, opdef, attrs):
        sa = E.softmax_axis(opdef, attrs)
        shape = b.shape(step.in_keys[0])
        n = None if sa is None else E.softmax_cols(shape, *sa)
        if n is None:
            raise Decline("Softmax form")
        b.emit("softmax", [math.prod(shape) // n, n, int(log)], [b.src(step.in_keys[0]), b.dst(out(step), shape)])
    return lower


def _norm_param(b, key, shape):
    """LayerNormalization's scale / bias as a tensor of `shape` (a constant broadcast to it once), or Decline."""
    if key is None:
        return -1
    c = b.const(key)
    if c is not None:
        try:
            return b.fixed(W._contig(np.broadcast_to(c, shape)))
        except ValueError:
            raise Decline("LayerNormalization parameter shape") from None
    if b.shape(key) != tuple(shape):
        raise Decline("LayerNormalization parameter shape")
    return b.src(key)


def _layer_norm(b, step, node, opdef, attrs):
    _claimed(E.claim_layernorm, b, node, opdef, attrs)
    kx, ks = step.in_keys[:2]
    kb = step.in_keys[2] if len(step.in_keys) > 2 else None
    shape = b.shape(kx)
    axis = attrs.get("axis", -1)
    if not shape or not -len(shape) <= axis < len(shape):
        raise Decline("LayerNormalization axis")
    norm = shape[axis % len(shape):]
    d = math.prod(norm)
    x, scale, bias = b.src(kx), _norm_param(b, ks, norm), _norm_param(b, kb, norm)
    b.emit("rownorm", [math.prod(shape) // d, d, 0, 1], [x, b.dst(out(step), shape), scale, bias],
           [0.0, 0.0, float(attrs.get("epsilon", 1e-5))])


def _skip_layer_norm(b, step, node, opdef, attrs):
    """com.microsoft SkipLayerNormalization's first output: LayerNorm over the last axis of (x + skip) + bias, the
    sums in an arena buffer."""
    _claimed(X.claim_skip_layernorm, b, node, opdef, attrs)
    kx, kskip, kg, kbeta, kbias = (list(step.in_keys) + [None] * 5)[:5]
    shape = b.shape(kx)
    if len(shape) not in (2, 3) or b.shape(kskip) != shape or 0 in shape:
        raise Decline("SkipLayerNormalization shapes")
    h = shape[-1]
    gamma, beta, bias = (_norm_param(b, k, shape[-1:]) for k in (kg, kbeta, kbias))
    total = (out(step), "x + skip + bias")  # (a value of the chain's own: read by the next instructions)
    b.emit("binary", [E.BINOP["Add"], *_same_plan(shape, shape)], [b.src(kx), b.src(kskip), b.dst(total, shape)])
    if bias != -1:
        b.emit("binary", [E.BINOP["Add"], *_same_plan(shape, (h,))], [b.src(total), bias, b.src(total)])
    b.emit("rownorm", [math.prod(shape) // h, h, 0, 1], [b.src(total), b.dst(out(step), shape), gamma, beta],
           [0.0, 0.0, float(attrs.get("epsilon", 1e-12))])


def _instance_norm(b, step, node, opdef, attrs):
    _claimed(E.claim_instnorm, b, node, opdef, attrs)
    kx, ks, kb = step.in_keys[:3]
    shape = b.shape(kx)
    if len(shape) < 3 or b.shape(ks) != shape[1:2] or b.shape(kb) != shape[1:2]:
        raise Decline("InstanceNormalization shapes")
    n, c = shape[:2]
    b.emit("rownorm", [n * c, math.prod(shape) // (n * c), 1, c],
           [b.src(kx), b.dst(out(step), shape), b.src(ks), b.src(kb)], [0.0, 0.0, float(attrs.get("epsilon", 1e-5))])


def _batch_norm(b, step, node, opdef, attrs):
    """Inference form with constant parameters (ox_channel_affine with the kernel's own factor)."""
    _claimed(E.claim_batchnorm, b, node, opdef, attrs)
    kx, *params = step.in_keys
    shape = b.shape(kx)
    p = [b.const(k) for k in params]
    if len(shape) < 2 or len(p) != 4 or any(v is None or v.dtype != F32 or v.shape != shape[1:2] for v in p):
        raise Decline("BatchNormalization parameters")
    scale, bias, mean, var = p
    s = E.batchnorm_scale(scale, var, attrs.get("epsilon", 1e-5))
    b.emit("affine", [shape[0], shape[1], math.prod(shape[2:])],
           [b.src(kx), b.fixed(W._contig(mean)), b.fixed(s), b.fixed(W._contig(bias)), b.dst(out(step), shape)])


def _unary(b, step, node, opdef, attrs):
    if node.op_type == "Clip" and opdef.since >= 11:
        bounds = (list(step.in_keys[1:]) + [None, None])[:2]
        if attrs or any(k is not None and b.const(k) is None for k in bounds):
            raise Decline("Clip limits not constant")
        limits = E.clip_limits(*[b.const(k) for k in bounds])
        if limits is None:
            raise Decline("Clip limits")
        act = (W.ACT["clip"], *limits)
    else:
        act = E.unary_act(node, opdef, attrs)
        if act is None:
            raise Decline(node.op_type)
    shape = b.shape(step.in_keys[0])
    b.emit("unary", [math.prod(shape)], [b.src(step.in_keys[0]), b.dst(out(step), shape)], act[1:], act[0])


def _binary(b, step, node, opdef, attrs):
    code = E.binary_op(node, opdef, attrs)
    if code is None or len(step.in_keys) != 2 or None in step.in_keys:
        raise Decline(node.op_type)
    ka, kb = step.in_keys
    sa = b.shape(ka)
    plan = E.broadcast_plan(sa, b.shape(kb))
    if plan is None or (node.op_type == "PRelu" and plan[0] != sa) or 0 in plan[0]:
        raise Decline("broadcast")
    b.emit("binary", [code, *plan[1]], [b.src(ka), b.src(kb), b.dst(out(step), plan[0])])


def _same_plan(sa, sb):
    """ox_binary's dims / strides for shapes the lowering already knows broadcast (Decline past int32 sizes)."""
    plan = E.broadcast_plan(sa, sb)
    if plan is None:
        raise Decline("binary sizes")
    return plan[1]


def _pow(b, step, node, opdef, attrs):
    """Pow by a constant float32 2 (a spectrum's power: x·x, one rounding as pow's); other exponents stay with numpy
    (x^0.5 is not sqrt(x) at −0 and −inf)."""
    kx, ke = step.in_keys[:2]
    e = b.const(ke)
    if e is None or e.dtype != F32 or e.size != 1 or float(e.reshape(())) != 2.0:
        raise Decline("Pow exponent")
    shape = b.shape(kx)
    if not shape:
        raise Decline("rank")
    x = b.src(kx)
    b.emit("binary", [W.BINOP["Mul"], *_same_plan(shape, shape)], [x, x, b.dst(out(step), shape)])


def _resize(b, step, node, opdef, attrs):
    _claimed(X.claim_resize, b, node, opdef, attrs)
    kx, *rest = list(step.in_keys) + [None] * 3
    shape = b.shape(kx)
    scales, sizes = b.const(rest[1]), b.const(rest[2])
    if (rest[1] is not None and scales is None) or (rest[2] is not None and sizes is None):
        raise Decline("Resize scales not constant")
    f = resize.integer_nearest_factors(shape, scales, sizes, **attrs)
    if f is None:
        raise Decline("Resize form")
    n, c, h, w = shape
    b.emit("upsample", [n * c, h, w, f[0], f[1]], [b.src(kx), b.dst(out(step), (n, c, h * f[0], w * f[1]))])


def _ms_gelu(b, step, node, opdef, attrs):
    """com.microsoft Gelu / FastGelu / BiasGelu / QuickGelu: (x + bias over the last axis), then the activation in
    place."""
    _claimed(X.claim_ms_gelu, b, node, opdef, attrs)
    name, fa, fb = activations.contrib_activation(node.op_type, opdef, attrs, W.ACT)
    kx = step.in_keys[0]
    kbias = step.in_keys[1] if len(step.in_keys) > 1 else None
    shape = b.shape(kx)
    x = b.src(kx)
    y = b.dst(out(step), shape)
    if kbias is not None:
        if not shape or b.shape(kbias) != shape[-1:]:
            raise Decline("bias shape")
        b.emit("binary", [W.BINOP["Add"], *_same_plan(shape, shape[-1:])], [x, b.src(kbias), y])
        x = y
    b.emit("unary", [math.prod(shape)], [x, y], [fa, fb], W.ACT[name])


def _attention(b, step, node, opdef, attrs):
    """com.microsoft MultiHeadAttention of 3-D q, k, v with an optional attention_bias (mha_fast's form)."""
    _claimed(X.claim_mha, b, node, opdef, attrs)
    ins = list(step.in_keys) + [None] * (6 - len(step.in_keys))
    if None in ins[:3]:
        raise Decline("MultiHeadAttention form")
    (bs, s, d), (bk, t, dk), (bv, tv, dv) = (b.shape(k) if len(b.shape(k)) == 3 else (0, 0, 0) for k in ins[:3])
    n = int(attrs["num_heads"])
    if not bs or n <= 0 or d % n or bk != bs or bv != bs or dk != d or dv % n or tv != t:
        raise Decline("MultiHeadAttention shapes")
    bias_b = bias_h = 0
    if ins[5] is not None:
        sb = b.shape(ins[5])
        if len(sb) != 4 or sb[0] not in (1, bs) or sb[1] not in (1, n) or sb[2:] != (s, t):
            raise Decline("attention_bias shape")
        bias_b, bias_h = int(sb[0] > 1), int(sb[1] > 1)
    scale = float(attrs.get("scale", 0.0)) or 1.0 / float(np.sqrt(d // n))
    q, k, v, bias = (b.src(key) for key in (ins[0], ins[1], ins[2], ins[5]))
    b.emit("attention", [bs, s, t, n, d // n, dv // n, bias_b, bias_h],
           [q, k, v, bias, b.dst(out(step), (bs, s, dv)), b.scratch(n * s * t), b.scratch(b.lib.gemm_scratch)],
           [0.0, 0.0, scale])


def _dq_matmul(b, step, node, opdef, attrs):
    """com.microsoft DynamicQuantizeMatMul the WASM EP claims (plan/chain_lower.dq_matmul)."""
    _claimed(Q.MS_CLAIMS["DynamicQuantizeMatMul"], b, node, opdef, attrs)
    dq_matmul(b, step, attrs, lambda w: Q.packed_b(b.lib, w),
              lambda m, n, k: b.lib.call("ox_qgemm_f32_scratch_floats", [m, n, k]))


def _lstm(b, step, node, opdef, attrs):
    """The chain's LSTM (chain_lower.forward_lstm): its input projection on the packed GEMM into the arena (both
    biases in its epilogue), then ox_lstm's recurrence."""
    _claimed(RNN.claim_lstm, b, node, opdef, attrs)
    t, batch, i, h, w, r, both, kh, kc = forward_lstm(b, step, node, attrs)
    xw_key = ("lstm input projection", step.out_keys[0] or node.name)
    xw = b.dst(xw_key, (t * batch, 4 * h))
    _gemm(b, 1, t * batch, 4 * h, i, b.src(step.in_keys[0]), i, 1, 0, xw, 4 * h, 0,
          packed=b.fixed(W.pack_b(b.lib, W._contig(w[0]), i, 4 * h, 1, i)), bias=-1 if both is None else b.fixed(both),
          bias_steps=(0, 1, 0))
    b.emit("lstm", [t, batch, h, 1], [b.src(xw_key), b.fixed(rnn.transposed_r(r)), b.src(kh), b.src(kc),
                                       *lstm_outputs(b, step, t, batch, h), b.scratch(4 * h + 4)])


LOWER = {"MatMul": _matmul, "Gemm": _gemm_node, "Conv": _conv, "MaxPool": _pool(True), "AveragePool": _pool(False),
         "GlobalAveragePool": _global_pool(False), "GlobalMaxPool": _global_pool(True),
         "Softmax": _softmax(False), "LogSoftmax": _softmax(True), "LayerNormalization": _layer_norm,
         "InstanceNormalization": _instance_norm, "BatchNormalization": _batch_norm, "Resize": _resize, "Pow": _pow,
         "ReduceMean": _reduce_mean, "LSTM": _lstm, **{op: _unary for op in E.UNARY},
         **{op: _binary for op in E.BINOP}, **COPIES}
MS_LOWER = {"FusedConv": _conv, "FusedGemm": _gemm_node, "FusedMatMul": _fused_matmul, "Gelu": _ms_gelu,
            "FastGelu": _ms_gelu, "BiasGelu": _ms_gelu, "QuickGelu": _ms_gelu, "MultiHeadAttention": _attention,
            "SkipLayerNormalization": _skip_layer_norm, "DynamicQuantizeMatMul": _dq_matmul}


class _Pinned:
    """A program's constants and tables copied into the module's memory (wasmtime), freed with the program."""

    def __init__(self, backend):
        self.backend, self.addresses = backend, []
        weakref.finalize(self, _unpin, backend, self.addresses)

    def add(self, array):
        self.addresses.append(self.backend.pin(array))
        return self.addresses[-1]


def _unpin(backend, addresses):
    for a in addresses:
        backend.unpin(a)


class WasmChains(chains.Backend):
    node_type = "WasmChain"
    ops = OPS
    layout = chains.Layout(np.int32)  # (wasm32: ox_instr is 42 int32 words, pointers are 32-bit)
    host_eps = ("WasmExecutionProvider", "CPUExecutionProvider")

    def __init__(self, rt, ep):
        super().__init__(ep)
        self.lib, self.backend = rt, rt.backend

    def lower(self, b, step):
        lower_step(b, step, self.host_eps, LOWER, MS_LOWER)

    def pins(self):
        return chains.HostPins() if self.backend.shares_memory else _Pinned(self.backend)

    def run(self, chain, prog, nt, inputs):
        if self.backend.shares_memory:  # (Pyodide: the arena is a numpy array, pointers passed as they are)
            return chains.run_in_host_arena(chain, prog, nt, inputs, self._call)
        if not getattr(prog, "limit_checked", False):  # (the arena grows the module's memory: the session's limit)
            limits.check(prog.arena_bytes, f"{self.node_type} arena")
            prog.limit_checked = True
        code, offsets, ext = prog.addresses
        rc, outs = self.backend.run_chain(
            code, prog.n, offsets, ext, prog.arena_bytes, [(off, inputs[i]) for i, off, _ in prog.staged],
            [(slot, inputs[i]) for i, slot in prog.in_place],
            [(off, shape) for off, _, shape in prog.outputs if off is not None])
        if rc > 0:  # (input only the steps' own kernels define)
            return chain.stepwise(inputs)
        if rc:
            raise chain.failed(prog, rc)
        made = iter(outs)
        return tuple(next(made) if off is not None else inputs[i].reshape(shape) for off, i, shape in prog.outputs)

    def _call(self, prog, ws, nt):
        # (shared memory: the ctypes function itself — its five integer arguments need none of call()'s conversions,
        # ~3 µs of the benchmark MLP's ~40 µs run in Pyodide, measured at the time)
        return self.backend.funcs["ox_chain_run"](prog.addresses[0], prog.n, prog.addresses[1], ws.base,
                                                  ws.ext_address)


def fuse(plan, rt, ep):
    """`plan.steps` with each run of lowerable steps worth a chain made one WasmChain step run by `ep`."""
    return chains.fuse(plan, WasmChains(rt, ep))
