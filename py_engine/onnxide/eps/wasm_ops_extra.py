"""The WASM EP's ConvTranspose (wasm GEMM + col2im), nearest Resize by integer factors, com.microsoft Gelu family,
MultiHeadAttention and SkipLayerNormalization (same claim/fallback contract as wasm_ops.py)."""
import itertools

import numpy as np

from ..errors import InvalidArgument
from ..ops import activations, resize as R
from ..ops.contrib_norm import _Outs  # (LayerNormalization's three outputs when SkipLayerNorm's fourth is asked)
from ..ops.conv_geometry import ConvGeometry
from .wasm_ops import ACT, BINOP, F32, FALLBACK, _contig, _is_f32, gemm_call, guarded
from .wasm_ops_elem import binary_fast, layernorm_fast, unary_fast
from .wasm_runtime import In, Out

# ---- ConvTranspose --------------------------------------------------------------------------------------------


def conv_transpose_fast(rt, x, w, b=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
                        output_padding=None, output_shape=None, pads=None, strides=None, **_):
    if not _is_f32(x, w) or (b is not None and not _is_f32(b)) or x.ndim not in (3, 4) or w.ndim != x.ndim:
        return FALLBACK
    if output_shape or (auto_pad or "NOTSET") not in ("NOTSET", "VALID"):
        return FALLBACK
    try:  # (what it rejects, the numpy kernel reports)
        geo = ConvGeometry.conv_transpose(x.shape, w.shape, "ConvTranspose", auto_pad=auto_pad,
                                          dilations=dilations, group=group, kernel_shape=kernel_shape,
                                          output_padding=output_padding, pads=pads, strides=strides)
    except InvalidArgument:
        return FALLBACK
    n, c = x.shape[:2]
    ins, ks, st, dil, pb, out = list(geo.in_shape), list(geo.kernel), list(geo.strides), list(geo.dilations), \
        list(geo.pads_begin), list(geo.out)
    nd = len(ins)
    cg, mg = c // group, w.shape[1]
    m = mg * group
    if b is not None and b.shape != (m,):
        return FALLBACK
    if min(ins) <= 0 or n == 0:
        return FALLBACK
    dk = [(k - 1) * d + 1 for k, d in zip(ks, dil)]
    kp, pin = int(np.prod(ks)), int(np.prod(ins))
    xc, wc = _contig(x), _contig(w)
    # cols[n, g*mg*kp + r, p] = sum_c W[g*cg + c, r] X[n, g*cg + c, p]: A = W_g^T (strided), B = X_g
    cols = np.empty((n, m * kp, pin), F32)
    for g in range(group):
        a = wc[g * cg:(g + 1) * cg]
        bx = xc[:, g * cg:(g + 1) * cg] if group > 1 else xc
        cg_out = cols[:, g * mg * kp:(g + 1) * mg * kp]
        if group > 1:
            a, bx = _contig(a), _contig(bx)
            tmp = np.empty((n, mg * kp, pin), F32)
        else:
            tmp = cols
        gemm_call(rt, n, mg * kp, pin, cg, a, 1, mg * kp, 0, bx, pin, 1, cg * pin, tmp, pin, mg * kp * pin)
        if group > 1:
            cg_out[...] = tmp
    cols = cols.reshape((n, m) + tuple(ks) + tuple(ins))
    if st == ks and dil == [1] * nd and not any(pb) and not any(geo.pads_end) and not any(geo.output_padding):
        # non-overlapping taps: col2im is one transposed copy
        if nd == 2:
            y = np.empty((n, m, ins[0], ks[0], ins[1], ks[1]), F32)
            y[...] = cols.transpose(0, 1, 4, 2, 5, 3)
        else:
            y = np.empty((n, m, ins[0], ks[0]), F32)
            y[...] = cols.transpose(0, 1, 3, 2)
        y = y.reshape((n, m) + tuple(out))
    else:
        full = [(i - 1) * s + k for i, s, k in zip(ins, st, dk)]
        buf_shape = [max(f, b_ + o) for f, b_, o in zip(full, pb, out)]
        buf = np.zeros((n, m) + tuple(buf_shape), F32)
        for kidx in itertools.product(*[range(k) for k in ks]):
            sl = tuple(slice(k * d, k * d + (i - 1) * s + 1, s) for k, d, i, s in zip(kidx, dil, ins, st))
            buf[(slice(None), slice(None)) + sl] += cols[(slice(None), slice(None)) + kidx]
        y = np.ascontiguousarray(buf[(slice(None), slice(None)) + tuple(slice(b_, b_ + o)
                                                                      for b_, o in zip(pb, out))])
    if b is not None:
        y = binary_fast(rt, BINOP["Add"], y, _contig(b).reshape((m,) + (1,) * nd))
    return y


def claim_conv_transpose(rt, node, opdef, attrs):
    if set(attrs) - {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads",
                     "strides"}:
        return None
    return guarded(lambda *a, **kw: conv_transpose_fast(rt, *a, **kw), opdef.kernel)


# ---- Resize (nearest, integer up-scaling) ------------------------------------------------------------------------

def resize_fast(rt, x, roi=None, scales=None, sizes=None, **attrs):
    if not _is_f32(x):
        return FALLBACK
    f = R.integer_nearest_factors(x.shape, scales, sizes, **attrs)
    if f is None:
        return FALLBACK
    n, c, h, w = x.shape
    y = np.empty((n, c, h * f[0], w * f[1]), F32)
    rt.call("ox_upsample_nearest", [n * c, h, w, f[0], f[1], In(_contig(x)), Out(y)])
    return y


def claim_resize(rt, node, opdef, attrs):
    if opdef.since < 11 or attrs.get("mode", "nearest") != "nearest" or attrs.get("axes"):
        return None
    if attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        return None
    return guarded(lambda *a, **kw: resize_fast(rt, *a, **kw), opdef.kernel)


# ---- com.microsoft Gelu / FastGelu / BiasGelu / QuickGelu ----------------------------------------------------------

def _bias_act(rt, x, bias, act, a=0.0, b=0.0):
    if not _is_f32(x) or (bias is not None and (not _is_f32(bias) or bias.ndim != 1 or x.ndim == 0
                                                or bias.shape[0] != x.shape[-1])):
        return FALLBACK
    if bias is not None:
        x = binary_fast(rt, BINOP["Add"], x, bias)
    return unary_fast(rt, x, act, a, b)


def claim_ms_gelu(rt, node, opdef, attrs):
    """com.microsoft Gelu / FastGelu / BiasGelu / QuickGelu (activations.CONTRIB): (x + bias), then the activation."""
    p = activations.contrib_activation(node.op_type, opdef, attrs, ACT)
    if p is None:
        return None
    act, a, b = ACT[p[0]], p[1], p[2]
    return guarded(lambda x, bias=None, **kw: _bias_act(rt, x, bias, act, a, b), opdef.kernel)


# ---- com.microsoft MultiHeadAttention (the optimizer's attention fusion) --------------------------------------------

def mha_fast(rt, query, key=None, value=None, bias=None, key_padding_mask=None, attention_bias=None, *rest,
             num_heads, scale=0.0, unidirectional=0, ctx=None, **_):
    """Separate 3-D Q, K, V (B, S, N*H) with an optional additive float attention_bias: per batch entry, a batched
    GEMM over heads (strided views of Q and K, no transposes) with scale and bias in the epilogue, a row softmax,
    and a batched GEMM writing straight into the merged (B, S, N*Hv) output."""
    if (bias is not None or key_padding_mask is not None or any(r is not None for r in rest) or unidirectional
            or (ctx is not None and ctx.num_outputs > 1)):
        return FALLBACK
    if not _is_f32(query, key, value) or query.ndim != 3 or key.ndim != 3 or value.ndim != 3:
        return FALLBACK
    b, s, d = query.shape
    n = int(num_heads)
    if n <= 0 or d % n or key.shape[0] != b or value.shape[0] != b or key.shape[2] != d or value.shape[2] % n:
        return FALLBACK
    t, dv = key.shape[1], value.shape[2]
    if value.shape[1] != t or s == 0 or t == 0 or b == 0:
        return FALLBACK
    h, hv = d // n, dv // n
    ab = None
    if attention_bias is not None:
        if not _is_f32(attention_bias) or attention_bias.ndim != 4:
            return FALLBACK
        ab = _contig(attention_bias)
        bb, bn, bs, bt = ab.shape
        if bb not in (1, b) or bn not in (1, n) or (bs, bt) != (s, t):
            return FALLBACK  # the CPU kernel reports the bad shape
        sbias, bsm, bsn = (s * t if bn > 1 else 0), t, 1
    sc = float(scale) if scale else 1.0 / float(np.sqrt(h))
    q, k, v = _contig(query), _contig(key), _contig(value)
    y = np.empty((b, s, dv), F32)
    scores = np.empty((n, s, t), F32)
    for i in range(b):
        if ab is not None:
            bias_i = ab[i if ab.shape[0] > 1 else 0]
            gemm_call(rt, n, s, t, h, q[i], d, 1, h, k[i], 1, d, h, scores, t, s * t, sc,
                      bias_i, bsm, bsn, sbias, 1.0)
        else:
            gemm_call(rt, n, s, t, h, q[i], d, 1, h, k[i], 1, d, h, scores, t, s * t, sc)
        rt.call("ox_softmax", [n * s, t, In(scores), Out(scores), 0])
        gemm_call(rt, n, s, hv, t, scores, t, 1, s * t, v[i], dv, 1, hv, y[i], dv, hv)
    return y


def claim_mha(rt, node, opdef, attrs):
    if set(attrs) - {"num_heads", "scale", "mask_filter_value", "unidirectional"} or attrs.get("unidirectional", 0):
        return None
    if len(node.inputs) > 6 or any(node.inputs[j] for j in (3, 4) if j < len(node.inputs)):
        return None  # bias / key_padding_mask / past / cache inputs: the CPU kernel
    if len([o for o in node.outputs if o]) != 1 or (node.outputs and not node.outputs[0]):
        return None
    return guarded(lambda *a, **kw: mha_fast(rt, *a, **kw), opdef.kernel)


# ---- com.microsoft SkipLayerNormalization ---------------------------------------------------------------------------

def skip_layernorm_fast(rt, x, skip, gamma, beta=None, bias=None, *, epsilon=1e-12, ctx=None):
    """LayerNormalization over the last axis of s = (x + skip) + bias (the numpy kernel's two float32 sums, exact
    here too); outputs y, mean, inv_std_dev, s as asked. Skip of another shape than x: the numpy kernel."""
    if not _is_f32(x, skip, gamma) or x.ndim not in (2, 3) or skip.shape != x.shape or x.size == 0 or \
            not epsilon >= 0:
        return FALLBACK
    h = x.shape[-1]
    if any(v is not None and (not _is_f32(v) or v.shape != (h,)) for v in (beta, bias)) or gamma.shape != (h,):
        return FALLBACK
    s = binary_fast(rt, BINOP["Add"], x, skip)
    if bias is not None:
        s = binary_fast(rt, BINOP["Add"], s, bias)
    n = max(1, ctx.num_outputs if ctx is not None else 1)
    stats = layernorm_fast(rt, s, gamma, beta, axis=-1, epsilon=epsilon, ctx=ctx if n <= 3 else _Outs(3))
    if n == 1:
        return stats
    return (*stats, s)[:n]


def claim_skip_layernorm(rt, node, opdef, attrs):
    if set(attrs) - {"epsilon"}:
        return None
    return guarded(lambda *a, **kw: skip_layernorm_fast(rt, *a, **kw), opdef.kernel)
