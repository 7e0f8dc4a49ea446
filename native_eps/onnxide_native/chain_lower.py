"""Lowerings of native chains (chain.py): per op, the nx_chain.c instructions that compute a node on fixed float32
shapes, or Decline; the decisions are the EP's own (cpu_ops.conv_plan, packed weights, broadcast plans, the
activation table). Views and copies (Transpose, Slice, Concat, Expand, Pad) are the shared ones (plan/chain_lower)."""
import math

import numpy as np

from onnxide.errors import InvalidArgument
from onnxide.ops import activations, resize, rnn
from onnxide.ops.conv_geometry import ConvGeometry
from onnxide.plan.chain_lower import (COPIES, dq_matmul, forward_lstm, lower_step, lstm_outputs, out as _out,
                                     strided, trailing_reduce)
from onnxide.plan.chains import F32, Decline

from . import cpu_ops as K
from . import cpu_qops as Q

HOST_EPS = ("NativeCPUExecutionProvider", "CPUExecutionProvider")


# instructions whose epilogue applies their `act` to everything they write (nx_chain.c): the slot of that output
_ACT_EPILOGUE = {"gemm": 4, "dwconv": 3, "conv_shifted": 2, "winograd": 4}


def _writer(b, kx, slots):
    """The last instruction when it has just made value kx, as the output in its op's slot (`slots`: op -> tensor
    slot), and nothing else reads kx: its epilogue may then do the next node's work. Else None."""
    where = b.where.get(kx)
    last = b.code[-1] if b.code else None
    if where is None or where[0] != "buf" or last is None or b.readers[kx] != 1 or kx in b.kept:
        return None
    slot = next((s for op, s in slots.items() if b.backend.ops[op] == last[0]), None)
    if slot is None or b.tensors[last[2][slot]] != ("buf", where[1]) or b.life[where[1]][0] != len(b.code) - 1:
        return None
    return last


def _act(b, step, kx, fa, fb, code):
    """Activation `code` of value kx: folded into the instruction that has just written kx when its epilogue can
    apply it and no other step reads kx (MobileNetV3's HardSwish after its convs: a pass over the output saved), else
    an act instruction."""
    shape = b.shape(kx)
    last = _writer(b, kx, _ACT_EPILOGUE)
    if last is not None and last[4] == 0:
        b.code[-1] = (last[0], last[1], last[2], [fa, fb], code)
        b.where[_out(step)] = b.where[kx]
        return
    b.emit("act", [math.prod(shape)], [b.src(kx), b.dst(_out(step), shape), -1], [fa, fb], code)


def _unary(b, step, node, opdef, attrs):
    p = activations.unary_activation(node.op_type, opdef, attrs, K.ACT)
    if p is None:
        raise Decline(node.op_type)
    _act(b, step, step.in_keys[0], p[1], p[2], K.ACT[p[0]])


def _clip(b, step, node, opdef, attrs):
    """Clip: the clip activation, from opset 11 on where its bounds are constants (activations.clip_activation);
    else, for one-value bounds, the kernel's own min(max(x, lo), hi) as binary Max / Min passes (the same bits)."""
    if opdef.since < 11:
        return _unary(b, step, node, opdef, attrs)
    kx, *keys = (list(step.in_keys) + [None, None])[:3]
    bounds = [None if k is None else b.const(k) for k in keys]
    p = None if any(k is not None and v is None for k, v in zip(keys, bounds)) else activations.clip_activation(*bounds)
    if p is not None:
        _act(b, step, kx, p[0], p[1], K.ACT["clip"])
        return
    shape = b.shape(kx)
    if any(k is not None and math.prod(b.shape(k)) != 1 for k in keys) or not any(keys):
        raise Decline("Clip bounds")
    src = b.src(kx)
    y = b.dst(_out(step), shape)
    for k, op in zip(keys, ("Max", "Min")):
        if k is not None:
            out, b_first, plan, b_full = K.binary_plan(shape, (1,) * len(shape))
            b.emit("binary", [K.BINARY[op], 0, *plan, b_full], [src, b.src(k), y])
            src = y
    b.written_to_end(y)


def _binary(b, step, node, opdef, attrs):
    if attrs or opdef.since < 7 or len(step.in_keys) != 2:  # (Max / Min are variadic: two inputs only)
        raise Decline(node.op_type)
    ka, kb = step.in_keys
    bp = K.binary_plan(b.shape(ka), b.shape(kb))
    if bp is None:
        raise Decline("broadcast")
    out, b_first, plan, b_full = bp
    full, other = (kb, ka) if b_first else (ka, kb)
    b.emit("binary", [K.BINARY[node.op_type], int(b_first), *plan, b_full],
           [b.src(full), b.src(other), b.dst(_out(step), out)])


def _pow(b, step, node, opdef, attrs):
    """Pow by a constant float32 2 (a spectrum's power: x·x, one rounding as pow's); other exponents stay with numpy
    (x^0.5 is not sqrt(x) at −0 and −inf)."""
    kx, ke = step.in_keys[:2]
    e = b.const(ke)
    if e is None or e.dtype != F32 or e.size != 1 or float(e.reshape(())) != 2.0:
        raise Decline("Pow exponent")
    shape = b.shape(kx)
    out, b_first, plan, b_full = K.binary_plan(shape, shape)
    x = b.src(kx)
    b.emit("binary", [K.BINARY["Mul"], int(b_first), *plan, b_full], [x, x, b.dst(_out(step), out)])


def _lstm(b, step, node, opdef, attrs):
    """The chain's LSTM (chain_lower.forward_lstm): its input projection as a GEMM into the arena (both biases in its
    epilogue), then nx_lstm's recurrence."""
    t, batch, i, h, w, r, both, kh, kc = forward_lstm(b, step, node, attrs)
    xw_key = ("lstm input projection", step.out_keys[0] or node.name)
    xw = b.dst(xw_key, (t * batch, 4 * h))
    _gemm_instr(b, t * batch, 4 * h, i, b.src(step.in_keys[0]), i, xw, bp=b.fixed(K.packed_b(b.lib, w[0], True)),
                bias=-1 if both is None else b.fixed(both))
    b.emit("lstm", [t, batch, h, 1], [b.src(xw_key), b.fixed(rnn.transposed_r(r)), b.src(kh), b.src(kc),
                                       *lstm_outputs(b, step, t, batch, h)])


def _gemm_instr(b, m, n, k, a, lda, y, bp=-1, raw_b=-1, ldb=0, bias=-1, row_bias=-1, res=-1, act=(0, 0.0, 0.0),
                ap=-1, batch=1, steps=(0, 0, 0, 0)):
    scratch = b.scratch(b.lib.nx_gemm_scratch_size(m, n, k, int(ap == -1), int(bp == -1)))
    b.emit("gemm", [m, n, k, lda, ldb, n, n, batch, *steps], [a, ap, raw_b, bp, y, bias, row_bias, res, scratch],
           [act[1], act[2]], act[0])


def _matmul(b, step, node, opdef, attrs):
    """A (..., M, K) by a 2-D B (one GEMM over all of A's rows), or batched A and B of the same batch dims (one GEMM
    per batch: attention scores and context where the attention is not fused)."""
    ka, kb = step.in_keys[:2]
    sa, sb = b.shape(ka), b.shape(kb)
    if len(sa) < 2 or len(sb) < 2 or sa[-1] != sb[-2] or (len(sb) > 2 and sa[:-2] != sb[:-2]):
        raise Decline("MatMul shapes")
    k, n = sb[-2:]
    wb = b.const(kb)
    a = b.src(ka)
    if len(sb) > 2:  # (batched B: as given, packed per batch into the scratch)
        m, batch = sa[-2], math.prod(sa[:-2])
        _gemm_instr(b, m, n, k, a, k, b.dst(_out(step), sa[:-1] + (n,)), raw_b=b.src(kb), ldb=n, batch=batch,
                    steps=(m * k, k * n, m * n, 0))
    elif wb is not None:
        bp = b.fixed(K.packed_b(b.lib, wb, False))
        _gemm_instr(b, math.prod(sa[:-1]), n, k, a, k, b.dst(_out(step), sa[:-1] + (n,)), bp=bp)
    else:
        _gemm_instr(b, math.prod(sa[:-1]), n, k, a, k, b.dst(_out(step), sa[:-1] + (n,)), raw_b=b.src(kb), ldb=n)


def _gemm(b, step, node, opdef, attrs):
    act = K.fused_act(node, opdef, attrs)
    if act is None or set(attrs) - {"alpha", "beta", "transA", "transB"} or attrs.get("alpha", 1.0) != 1.0 \
            or attrs.get("transA", 0) or (node.op_type == "Gemm" and opdef.since < 7):
        raise Decline("Gemm attributes")
    ka, kb = step.in_keys[:2]
    kc = step.in_keys[2] if len(step.in_keys) > 2 else None
    sa, sb = b.shape(ka), b.shape(kb)
    trans = bool(attrs.get("transB", 0))
    if len(sa) != 2 or len(sb) != 2:
        raise Decline("Gemm ranks")
    m, k = sa
    n = sb[0] if trans else sb[1]
    if (sb[1] if trans else sb[0]) != k:
        raise Decline("Gemm shapes")
    wb = b.const(kb)
    if wb is None and trans:
        raise Decline("transposed dynamic B")
    bias = row_bias = res = -1
    a = b.src(ka)
    if kc is not None:
        sc = b.shape(kc)
        if attrs.get("beta", 1.0) != 1.0:
            raise Decline("beta")
        if sc in ((n,), (1, n)):
            bias = b.src(kc)
        elif sc == (m, 1) and m != 1:
            row_bias = b.src(kc)
        elif sc == (m, n):
            res = b.src(kc)
        else:
            raise Decline("Gemm C shape")
    if wb is not None:
        bp, raw = b.fixed(K.packed_b(b.lib, wb, trans)), -1
    else:
        bp, raw = -1, b.src(kb)
    _gemm_instr(b, m, n, k, a, k, b.dst(_out(step), (m, n)), bp=bp, raw_b=raw, ldb=n, bias=bias, row_bias=row_bias,
                res=res, act=act)


def _softmax(log):
    def lower(b, step, node, opdef, attrs):
        if set(attrs) - {"axis"}:
            raise Decline("Softmax attributes")
        coerced = opdef.since < 13
        shape = b.shape(step.in_keys[0])
        axis = attrs.get("axis", 1 if coerced else -1)
        a = axis + len(shape) if axis < 0 else axis
        if not shape or not 0 <= a < len(shape) or (not coerced and a != len(shape) - 1):
            raise Decline("Softmax axis")
        cols = math.prod(shape[a:])
        b.emit("softmax", [math.prod(shape) // cols, cols, int(log)],
               [b.src(step.in_keys[0]), b.dst(_out(step), shape)])
    return lower


def _layer_norm(b, step, node, opdef, attrs):
    if set(attrs) - {"axis", "epsilon", "stash_type"} or attrs.get("stash_type", 1) != 1:
        raise Decline("LayerNormalization attributes")
    kx, ks = step.in_keys[:2]
    kb = step.in_keys[2] if len(step.in_keys) > 2 else None
    shape = b.shape(kx)
    axis = attrs.get("axis", -1)
    a = axis + len(shape) if axis < 0 else axis
    if not shape or not 0 <= a < len(shape):
        raise Decline("LayerNormalization axis")
    norm = shape[a:]
    if b.shape(ks) != norm or (kb is not None and b.shape(kb) != norm):
        raise Decline("LayerNormalization scale")
    cols = math.prod(norm)
    b.emit("layernorm", [math.prod(shape) // cols, cols], [b.src(kx), b.src(ks), b.src(kb), b.dst(_out(step), shape)],
           [0.0, 0.0, float(attrs.get("epsilon", 1e-5))])


def _skip_layer_norm(b, step, node, opdef, attrs):
    """com.microsoft SkipLayerNormalization's first output: LayerNorm(x + skip + bias) over the last axis."""
    if set(attrs) - {"epsilon"}:
        raise Decline("SkipLayerNormalization attributes")
    kx, kskip, kg, kbeta, kbias = (list(step.in_keys) + [None] * 5)[:5]
    shape = b.shape(kx)
    if len(shape) < 2 or b.shape(kskip) != shape or any(
            k is not None and b.shape(k) != shape[-1:] for k in (kg, kbeta, kbias)):
        raise Decline("SkipLayerNormalization shapes")
    h = shape[-1]
    b.emit("layernorm", [math.prod(shape) // h, h], [b.src(kx), b.src(kg), b.src(kbeta), b.dst(_out(step), shape),
                                                     b.src(kskip), b.src(kbias)],
           [0.0, 0.0, float(attrs.get("epsilon", 1e-12))])


def _contrib_act(b, step, node, opdef, attrs):
    """com.microsoft Gelu / BiasGelu / FastGelu / QuickGelu: the activation of x (+ a bias over its last axis)."""
    p = activations.contrib_activation(node.op_type, opdef, attrs, K.ACT)
    if p is None:
        raise Decline(node.op_type)
    code, fa, fb = K.ACT[p[0]], p[1], p[2]
    kx = step.in_keys[0]
    kbias = step.in_keys[1] if len(step.in_keys) > 1 else None
    shape = b.shape(kx)
    if kbias is None:
        _act(b, step, kx, fa, fb, code)
    elif shape and b.shape(kbias) == shape[-1:]:
        b.emit("bias_act", [math.prod(shape) // shape[-1], shape[-1]],
               [b.src(kx), b.dst(_out(step), shape), b.src(kbias)], [fa, fb], code)
    else:
        raise Decline("bias shape")


def _attention(b, step, node, opdef, attrs):
    """com.microsoft MultiHeadAttention of 3-D q, k, v with an optional attention_bias (no packed bias, key padding
    mask or past), as the EP's claim takes it."""
    ins = list(step.in_keys) + [None] * (6 - len(step.in_keys))
    if set(attrs) - {"num_heads", "scale", "mask_filter_value"} or "num_heads" not in attrs or len(step.in_keys) > 6 \
            or None in ins[:3] or ins[3] is not None or ins[4] is not None:
        raise Decline("MultiHeadAttention form")
    sq, sk, sv = (b.shape(k) for k in ins[:3])
    n = int(attrs["num_heads"])
    if len(sq) != 3 or len(sk) != 3 or len(sv) != 3 or n <= 0 or sq[2] % n or sk[0] != sq[0] or sv[:2] != sk[:2] \
            or sk[2] != sq[2] or sv[2] % n:
        raise Decline("MultiHeadAttention shapes")
    bs, s, d = sq
    h, t, hv = d // n, sk[1], sv[2] // n
    bias_b = bias_h = 0
    if ins[5] is not None:
        sb = b.shape(ins[5])
        if len(sb) != 4 or sb[0] not in (1, bs) or sb[1] not in (1, n) or sb[2:] != (s, t):
            raise Decline("attention_bias shape")
        bias_b, bias_h = int(sb[0] > 1), int(sb[1] > 1)
    scale = float(attrs.get("scale", 0.0)) or 1.0 / math.sqrt(h)
    if not scale > 0 or not math.isfinite(scale):
        raise Decline("scale")
    b.emit("attention", [bs, s, t, n, h, hv, bias_b, bias_h],
           [b.src(ins[0]), b.src(ins[1]), b.src(ins[2]), b.src(ins[5]), b.dst(_out(step), (bs, s, n * hv))],
           [0.0, 0.0, scale])


def _dq_matmul(b, step, node, opdef, attrs):
    """com.microsoft DynamicQuantizeMatMul (plan/chain_lower.dq_matmul); nx_chain.c's qgemm needs N floats of scratch
    (the multipliers)."""
    dq_matmul(b, step, attrs, lambda w: Q.packed_b(b.lib, w), lambda m, n, k: n)


def _resize(b, step, node, opdef, attrs):
    """Nearest upsampling by whole factors (resize.integer_nearest_factors decides, as for the EP's claim)."""
    if opdef.since < 11:
        raise Decline("Resize opset")
    kx, *rest = list(step.in_keys) + [None] * 3
    shape = b.shape(kx)
    scales, sizes = b.const(rest[1]), b.const(rest[2])
    if (rest[1] is not None and scales is None) or (rest[2] is not None and sizes is None):
        raise Decline("Resize scales not constant")
    f = resize.integer_nearest_factors(shape, scales, sizes, **attrs)
    if f is None:
        raise Decline("Resize form")
    n, c, h, w = shape
    b.emit("upsample", [n * c, h, w, f[0], f[1]], [b.src(kx), b.dst(_out(step), (n, c, h * f[0], w * f[1]))])


def _batch_norm(b, step, node, opdef, attrs):
    """Inference form with constant parameters: y = x·a + (b − mean·a) per channel, a and the shift computed as the
    native kernel computes them."""
    if opdef.since < 9 or attrs.get("training_mode", 0) or set(attrs) - {"epsilon", "momentum", "training_mode"}:
        raise Decline("BatchNormalization attributes")
    kx, *params = step.in_keys
    shape = b.shape(kx)
    p = [b.const(k) for k in params]
    if len(shape) < 2 or len(p) != 4 or any(v is None or v.dtype != F32 or v.shape != (shape[1],) for v in p):
        raise Decline("BatchNormalization parameters")
    scale, bias, mean, var = p
    a = scale / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5)))
    b.emit("affine", [shape[0], shape[1], math.prod(shape[2:])],
           [b.src(kx), b.fixed(a), b.fixed(bias - mean * a), b.dst(_out(step), shape)])


def _global_average_pool(b, step, node, opdef, attrs):
    shape = b.shape(step.in_keys[0])
    if len(shape) < 3:
        raise Decline("rank")
    b.emit("gavg", [shape[0] * shape[1], math.prod(shape[2:])],
           [b.src(step.in_keys[0]), b.dst(_out(step), shape[:2] + (1,) * (len(shape) - 2))])


def _reduce_mean(b, step, node, opdef, attrs):
    planes, count, y = trailing_reduce(b, step, opdef, attrs)
    b.emit("gavg", [planes, count], [b.src(step.in_keys[0]), b.dst(_out(step), y)])


def _reduce_max(b, step, node, opdef, attrs):
    """ReduceMax over trailing axes: a max pool of each plane's values in one window (NaN wins, as numpy's max)."""
    if set(attrs) - {"axes", "keepdims", "noop_with_empty_axes"}:
        raise Decline("ReduceMax attributes")
    planes, count, y = trailing_reduce(b, step, opdef, attrs)
    b.emit("maxpool", [planes, 1, count, 1, count, 1, 1, 1, 1, 0, 0, 1, 1],
           [b.src(step.in_keys[0]), b.dst(_out(step), y)])


def _max_pool(b, step, node, opdef, attrs):
    shape = b.shape(step.in_keys[0])
    if len(shape) not in (3, 4) or not attrs.get("kernel_shape") or set(attrs) - {
            "auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}:
        raise Decline("MaxPool")
    x4 = shape if len(shape) == 4 else shape[:2] + (1, shape[2])
    try:
        g = ConvGeometry.pool(x4 if len(shape) == 4 else shape, "MaxPool", **{
            k: v for k, v in attrs.items() if k != "storage_order"}).as_2d()
    except InvalidArgument:
        raise Decline("MaxPool geometry") from None
    out = g.out
    if _pool_in_conv(b, step, shape, g):
        return
    b.emit("maxpool", [x4[0] * x4[1], x4[2], x4[3], *g.kernel, *g.strides, *g.dilations, *g.pads_begin, *out],
           [b.src(step.in_keys[0]), b.dst(_out(step), shape[:2] + (out[1:] if len(shape) == 3 else out))])


def _pool_in_conv(b, step, shape, g):
    """A 2×2 stride-2 max pool (floor sizes) of a shifted conv's output that nothing else reads: made by the conv
    instruction from its tiles while they are in cache (nx_conv_shifted's `pooled`). False where it is not that."""
    kx = step.in_keys[0]
    last = _writer(b, kx, {"conv_shifted": 2}) if K.POOL_IN_CONV else None
    if (last is None or len(shape) != 4 or g.kernel != (2, 2) or g.strides != (2, 2) or g.dilations != (1, 1)
            or any(g.pads_begin) or g.out != (shape[2] // 2, shape[3] // 2)):
        return False
    y = b.dst(_out(step), shape[:2] + g.out)
    b.life[b.tensors[y][1]][0] = len(b.code) - 1  # (written by the conv: live beside its input and scratch)
    last[1][17] = shape[1] * math.prod(g.out)  # (p[17]: the pool's floats per image; t[6]: the pool)
    last[2].append(y)
    return True


def _conv(b, step, node, opdef, attrs):
    act = K.fused_act(node, opdef, attrs)
    if act is None or set(attrs) - {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}:
        raise Decline("Conv attributes")
    keys = list(step.in_keys) + [None] * (4 - len(step.in_keys))
    kx, kw, kb, kz = keys[:4]
    w = b.const(kw)
    if w is None or w.dtype != F32:
        raise Decline("Conv weights")
    sx = b.shape(kx)
    cp = K.conv_plan(b.lib, sx, w, None if kb is None else b.shape(kb), None if kz is None else b.shape(kz),
                     small=True, **attrs)
    if cp is None:
        raise Decline("Conv geometry")
    (kh, kw_), (sh, sw), (dh, dw), (pt, pl), (oh, ow) = cp.ks, cp.st, cp.dil, cp.pb, cp.out
    x, bias, z = b.src(kx), b.src(kb), b.src(kz)
    y = b.dst(_out(step), cp.y_shape)
    n, c, h, wd, m = cp.n, cp.c, cp.h, cp.w, cp.m
    code, fa, fb = act
    if cp.kind == "dw":
        b.emit("dwconv", [n, c, h, wd, kh, kw_, sh, sw, dh, dw, pt, pl, oh, ow], [x, b.fixed(cp.packed), bias, y],
               [fa, fb], 0 if z != -1 else code)
        if z != -1:
            b.emit("act", [n * m * oh * ow], [y, y, z], [fa, fb], code)
    elif cp.kind == "wino":
        b.emit("winograd", [n, c, h, wd, m, pt, pl, oh, ow], [x, b.fixed(cp.packed), bias, z, y, b.scratch(cp.scratch)],
               [fa, fb], code)
    elif cp.kind == "shifted":
        floats, copies = K.shifted_scratch(b.lib, cp, b.nt)
        b.emit("conv_shifted", [c, h, wd, kh, kw_, sh, sw, dh, dw, pt, pl, oh, ow, m, n, c * h * wd, m * oh * ow,
                                0, copies], [x, b.fixed(cp.packed), y, bias, z, b.scratch(floats)], [fa, fb], code)
    elif cp.kind == "windows":  # per image: positions × channels from the input's windows, then transposed
        yt = b.scratch(n * ow * m)
        _gemm_instr(b, ow, m, kw_, x, sw, yt, bp=b.fixed(cp.packed), bias=bias, act=act, batch=n,
                    steps=(wd, 0, ow * m, 0))
        strided(b, yt, y, (n, m, ow), (ow * m, 1, m), (m * ow, ow, 1))
        b.written_to_end(yt)  # (the GEMM's output, read by the copy)
    else:  # 1×1: one GEMM per image, the image as a raw B
        p = oh * ow
        _gemm_instr(b, m, p, c, -1, c, y, raw_b=x, ldb=p, row_bias=bias, res=z, act=act, ap=b.fixed(cp.packed),
                    batch=n, steps=(0, c * p, m * p, m * p))


LOWER = {"Conv": _conv, "MatMul": _matmul, "Gemm": _gemm, "Softmax": _softmax(False), "LogSoftmax": _softmax(True),
         "LayerNormalization": _layer_norm, "BatchNormalization": _batch_norm, "MaxPool": _max_pool,
         "GlobalAveragePool": _global_average_pool, "Resize": _resize, "Pow": _pow, "LSTM": _lstm,
         "ReduceMean": _reduce_mean, "ReduceMax": _reduce_max,
         **{op: _binary for op in K.BINARY},
         **{op: _unary for op in activations.BY_OP}, "Clip": _clip, **COPIES}
MS_LOWER = {"FusedConv": _conv, "FusedGemm": _gemm, "SkipLayerNormalization": _skip_layer_norm,
            "MultiHeadAttention": _attention, "DynamicQuantizeMatMul": _dq_matmul,
            **{op: _contrib_act for op in activations.CONTRIB}}



def lower(b, step):
    """Appends `step`'s instructions to builder `b`, or raises Decline (b is then unusable)."""
    lower_step(b, step, HOST_EPS, LOWER, MS_LOWER)
