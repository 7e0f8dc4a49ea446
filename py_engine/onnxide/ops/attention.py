"""Attention ops: Attention 23-25, RotaryEmbedding, SwiGLU, LinearAttention, ai.onnx.preview FlexAttention."""
import numpy as np

from ..dtypes import np_dtype
from ..errors import InvalidArgument
from .inference import rule, same_as_input
from .math import is_exotic_float, lift, lower, step_rounder, step_sum, via_float32
from .linalg import blas_matmul
from .registry import op
from .softmax import compute_dtype, work_dtype as _work_dtype

PREVIEW_DOMAIN = "ai.onnx.preview"


def _outs(results, ctx):
    n = max(1, ctx.num_outputs if ctx is not None else 1)
    res = tuple(results[:n])
    return res[0] if n == 1 else res


def _precision_dtype(code, name):
    """numpy dtype to run a softmax in for an ONNX `softmax_precision` code (bfloat16 is computed in float32)."""
    if code is None:
        return None
    if code not in (1, 10, 11, 16):
        raise InvalidArgument(f"{name}: unsupported softmax_precision {code}")
    return np.dtype(np.float32) if code == 16 else np_dtype(code)


def _mm(a, b):
    """matmul whose result keeps `a`'s dtype (numpy promotes bfloat16 products to float32); head-split views are
    made contiguous first so BLAS runs it (linalg.blas_matmul)."""
    r = blas_matmul(a, b)
    return r if r.dtype == a.dtype else r.astype(a.dtype)


def _id(v):
    return v


def _structured_lift(dt, arrays):
    """No-ml_dtypes emulation: when `dt` is a structured exotic float, (its step rounder, the arrays as float32),
    else (None, arrays unchanged). See math.step_rounder."""
    rnd = step_rounder(dt)
    if rnd is None:
        return None, arrays
    return rnd, [lift(a)[0] if isinstance(a, np.ndarray) and is_exotic_float(a.dtype) else a for a in arrays]


def _guarded_softmax(x, masked_rows, rnd=None):
    """Softmax over the last axis; rows flagged in `masked_rows` (or whose max is -inf) become all-zero."""
    r = rnd or _id
    m = np.max(x, axis=-1, keepdims=True)
    dead = np.isneginf(m)
    m = np.where(dead, x.dtype.type(0), m)
    if rnd is None:  # the common float path: x (a temporary the caller hands over) updated in place
        p = np.subtract(x, m, out=x)
        np.exp(p, out=p)
        s = np.sum(p, axis=-1, keepdims=True)
        s[s == 0] = 1
        p /= s
    else:
        e = r(np.exp(r(x - m)))
        s = step_sum(e, -1, rnd)
        s = np.where(s == 0, x.dtype.type(1), s)
        p = r(e / s)
    if masked_rows is not None:
        p = np.where(masked_rows, x.dtype.type(0), p)
    return p


def _split_heads(x, heads, name, what):
    b, s, hidden = x.shape
    if heads is None or heads <= 0 or hidden % heads:
        raise InvalidArgument(f"{name}: {what} hidden size {hidden} is not divisible by num_heads={heads}")
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


# ---------------------------------------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------------------------------------

def _attention(q, k, v, attn_mask, past_key, past_value, nonpad, *, is_causal, kv_num_heads, q_num_heads,
               qk_matmul_output_mode, scale, softcap, softmax_precision, left, right, ctx):
    name = "Attention"
    if not q.ndim == k.ndim == v.ndim or q.ndim not in (3, 4):
        raise InvalidArgument(f"{name}: Q, K, V must all be 3D or all 4D, got {q.shape}, {k.shape}, {v.shape}")
    if (past_key is None) != (past_value is None):
        raise InvalidArgument(f"{name}: past_key and past_value must be given together")
    if nonpad is not None and past_key is not None:
        raise InvalidArgument(f"{name}: nonpad_kv_seqlen cannot be combined with past_key/past_value")
    out_dt = q.dtype
    rnd, (q, k, v, attn_mask, past_key, past_value) = _structured_lift(q.dtype, (q, k, v, attn_mask, past_key,
                                                                                  past_value))
    r = rnd or _id  # rounds each step onto the input type when it is emulated (structured bfloat16), else identity
    dt = q.dtype
    input_3d = q.ndim == 3
    if input_3d:
        q = _split_heads(q, q_num_heads, name, "Q")
        k = _split_heads(k, kv_num_heads, name, "K")
        v = _split_heads(v, kv_num_heads, name, "V")
    if past_key is not None:
        for past, now, what in ((past_key, k, "past_key"), (past_value, v, "past_value")):
            if past.ndim != 4 or past.shape[:2] != now.shape[:2] or past.shape[3] != now.shape[3]:
                raise InvalidArgument(f"{name}: {what} {past.shape} does not fit {what[5:].upper()} {now.shape} "
                                      "(batch, heads, sequence, head size)")
        k = np.concatenate((past_key, k), axis=2)
        v = np.concatenate((past_value, v), axis=2)
    present_key, present_value = k, v
    batch, hq, sq, head = q.shape
    if nonpad is not None and np.size(nonpad) != batch:
        raise InvalidArgument(f"{name}: nonpad_kv_seqlen {np.shape(nonpad)} must hold one length per batch ({batch})")
    hkv, skv = k.shape[1], k.shape[2]
    if k.shape[0] != batch or v.shape[0] != batch or k.shape[3] != head or v.shape[2] != skv or \
            v.shape[1] != hkv:
        raise InvalidArgument(f"{name}: Q {q.shape}, K {k.shape} and V {v.shape} (batch, heads, sequence, head size) "
                              "disagree")
    if hq != hkv:
        if hkv <= 0 or hq % hkv or v.shape[1] != hkv:
            raise InvalidArgument(f"{name}: q_num_heads {hq} must be a multiple of kv_num_heads {hkv}")
        k = np.repeat(k, hq // hkv, axis=1)
        v = np.repeat(v, hq // hkv, axis=1)

    cd = _work_dtype(dt)
    sc = (1.0 / np.sqrt(head)) if scale is None else float(scale)
    s = r(cd.type(dt.type(np.sqrt(abs(sc)))))  # sqrt(|scale|) rounded to the input type, applied to Q and K
    sk = -s if sc < 0 else s  # (a negative scale's sign on K)
    qk = r(_mm(r(np.multiply(q, s, dtype=cd)), np.swapaxes(r(np.multiply(k, sk, dtype=cd)), -1, -2)))
    raw_qk = qk
    # only `y` wanted and no emulated rounding: scores and probabilities overwrite the fresh qk product in place
    in_place = rnd is None and (ctx is None or ctx.num_outputs <= 1)
    if softcap and softcap > 0:
        c = r(cd.type(softcap))
        qk = r(c * r(np.tanh(r(qk / c))))

    # Additive bias: float mask values plus -inf wherever a boolean constraint disallows the key.
    float_bias = None
    allowed = None
    if attn_mask is not None:
        m = np.asarray(attn_mask)
        if m.dtype.kind in "iuOSU":
            raise InvalidArgument(f"{name}: attn_mask must be boolean or of Q's float type, got {m.dtype}")
        if m.ndim > 4 or (m.ndim and m.shape[-1] > skv) or \
                any(a not in (1, b) for a, b in zip(m.shape[-2::-1], (sq, hq, batch))):  # (a shorter last dim: padded)
            raise InvalidArgument(f"{name}: attn_mask {m.shape} does not broadcast to (batch, heads, q sequence, "
                                  f"kv sequence) {(batch, hq, sq, skv)}")
        if m.shape and m.shape[-1] < skv:
            pad = [(0, 0)] * (m.ndim - 1) + [(0, skv - m.shape[-1])]
            m = np.pad(m, pad, constant_values=(False if m.dtype == np.bool_ else -np.inf))
        if m.dtype == np.bool_:
            allowed = m
        else:
            float_bias = m.astype(cd, copy=False)
    if past_key is not None:
        offset = past_key.shape[2]
    elif nonpad is not None:
        offset = (np.asarray(nonpad).astype(np.int64).reshape(-1) - sq).reshape(-1, 1, 1, 1)
    else:
        offset = 0
    ii = np.arange(sq).reshape(sq, 1)
    jj = np.arange(skv).reshape(1, skv)
    pos = ii + offset

    def conj(a, b):
        return b if a is None else (a & b)

    if is_causal:
        allowed = conj(allowed, jj <= pos)
    if left is not None and left >= 0:
        allowed = conj(allowed, jj >= pos - left)
    if right is not None and right >= 0:
        allowed = conj(allowed, jj <= pos + right)
    if nonpad is not None:
        allowed = conj(allowed, jj < np.asarray(nonpad).astype(np.int64).reshape(-1, 1, 1, 1))
    bias = None if float_bias is None else r(float_bias + np.zeros((sq, skv), dtype=cd))
    if allowed is not None:
        bias = r((0 if bias is None else bias) + np.where(allowed, cd.type(0), cd.type(-np.inf)))
    masked_rows = None if bias is None else np.isneginf(np.max(bias, axis=-1, keepdims=True))
    if masked_rows is not None and not masked_rows.any():
        masked_rows = None

    with np.errstate(invalid="ignore", over="ignore"):
        if bias is None:
            scores = qk
        elif in_place and np.broadcast_shapes(qk.shape, bias.shape) == qk.shape:
            scores = qk
            scores += bias
        else:
            scores = r(qk + bias)
        sp = _precision_dtype(softmax_precision, name)
        probs = _guarded_softmax(scores.astype(sp if sp is not None else cd, copy=not in_place), masked_rows,
                                 rnd if sp is None else None)
    probs = r(probs.astype(dt, copy=False).astype(cd, copy=False))
    y = r(_mm(probs, v.astype(cd, copy=False)))
    if input_3d:
        y = y.transpose(0, 2, 1, 3).reshape(batch, sq, -1)
    y = lower(y, out_dt) if rnd else y.astype(dt, copy=False)
    if rnd:
        present_key, present_value = lower(present_key, out_dt), lower(present_value, out_dt)

    if ctx is None or ctx.num_outputs <= 1:
        return y
    mode = qk_matmul_output_mode
    if mode == 0:
        qk_out = raw_qk
    elif mode == 1:
        qk_out = qk
    elif mode == 2:
        qk_out = np.broadcast_to(scores, np.broadcast_shapes(scores.shape, qk.shape))
    elif mode == 3:
        qk_out = probs
    else:
        raise InvalidArgument(f"{name}: unsupported qk_matmul_output_mode {mode}")
    qk_out = np.ascontiguousarray(qk_out)
    return _outs((y, present_key, present_value, lower(r(qk_out), out_dt) if rnd else qk_out.astype(dt)), ctx)


@op("Attention", since=23)
def attention_23(q, k, v, attn_mask=None, past_key=None, past_value=None, *, is_causal=0, kv_num_heads=None,
                 q_num_heads=None, qk_matmul_output_mode=0, scale=None, softcap=0.0, softmax_precision=None, ctx=None):
    return _attention(q, k, v, attn_mask, past_key, past_value, None, is_causal=is_causal, kv_num_heads=kv_num_heads,
                      q_num_heads=q_num_heads, qk_matmul_output_mode=qk_matmul_output_mode, scale=scale,
                      softcap=softcap, softmax_precision=softmax_precision, left=None, right=None, ctx=ctx)


@op("Attention", since=24)
def attention_24(q, k, v, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None, *, is_causal=0,
                 kv_num_heads=None, q_num_heads=None, qk_matmul_output_mode=0, scale=None, softcap=0.0,
                 softmax_precision=None, ctx=None):
    return _attention(q, k, v, attn_mask, past_key, past_value, nonpad_kv_seqlen, is_causal=is_causal,
                      kv_num_heads=kv_num_heads, q_num_heads=q_num_heads,
                      qk_matmul_output_mode=qk_matmul_output_mode, scale=scale, softcap=softcap,
                      softmax_precision=softmax_precision, left=None, right=None, ctx=ctx)


@op("Attention", since=25)
def attention_25(q, k, v, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None, *, is_causal=0,
                 kv_num_heads=None, q_num_heads=None, qk_matmul_output_mode=0, scale=None, softcap=0.0,
                 softmax_precision=None, left_window_size=-1, right_window_size=-1, ctx=None):
    if left_window_size < -1 or right_window_size < -1:
        raise InvalidArgument("Attention: left_window_size/right_window_size must be -1 or nonnegative")
    if q.ndim == 4 and (q_num_heads is not None or kv_num_heads is not None):
        raise InvalidArgument("Attention: q_num_heads/kv_num_heads must not be set for 4D inputs")
    return _attention(q, k, v, attn_mask, past_key, past_value, nonpad_kv_seqlen, is_causal=is_causal,
                      kv_num_heads=kv_num_heads, q_num_heads=q_num_heads,
                      qk_matmul_output_mode=qk_matmul_output_mode, scale=scale, softcap=softcap,
                      softmax_precision=softmax_precision, left=left_window_size, right=right_window_size, ctx=ctx)


# ---------------------------------------------------------------------------------------------------------------------
# RotaryEmbedding, SwiGLU
# ---------------------------------------------------------------------------------------------------------------------

@rule("Attention")
def _attention_rule(f):
    """Y and the QK output of Q's type; the present key / value of K's / V's type, when it is Q's (the kernel
    rounds an emulated Q's type onto them)."""
    q = f.type(0)
    return [(q, None)] + [(f.type(i) if f.type(i) == q else None, None) for i in (1, 2)] + [(q, None)]


@op("RotaryEmbedding", since=23)
@via_float32
def rotary_embedding(x, cos_cache, sin_cache, position_ids=None, *, interleaved=0, num_heads=None,
                     rotary_embedding_dim=0):
    name = "RotaryEmbedding"
    dt = x.dtype
    cd = compute_dtype(dt)
    if x.ndim == 4:
        xs = x.transpose(0, 2, 1, 3)  # (B, S, H, D)
    elif x.ndim == 3:
        if not num_heads:
            raise InvalidArgument(f"{name}: num_heads is required for a 3D input")
        b, s, hidden = x.shape
        if hidden % num_heads:
            raise InvalidArgument(f"{name}: hidden size {hidden} is not divisible by num_heads={num_heads}")
        xs = x.reshape(b, s, num_heads, hidden // num_heads)
    else:
        raise InvalidArgument(f"{name}: input must be 3D or 4D, got shape {x.shape}")
    xs = xs.astype(cd)
    head = xs.shape[3]
    rd = rotary_embedding_dim or head
    if rd > head or rd % 2:
        raise InvalidArgument(f"{name}: rotary_embedding_dim {rd} is invalid for head size {head}")
    cos, sin = np.asarray(cos_cache).astype(cd), np.asarray(sin_cache).astype(cd)
    b, s = xs.shape[:2]
    if cos.shape != sin.shape or cos.ndim != (2 if position_ids is not None else 3) or cos.shape[-1] != rd // 2:
        raise InvalidArgument(f"{name}: cos_cache {cos.shape} and sin_cache {sin.shape} must both be "
                              f"{'(max_position, ' if position_ids is not None else f'({b}, {s}, '}{rd // 2}) "
                              f"(rotary_embedding_dim / 2 last)")
    if position_ids is not None:
        pid = np.asarray(position_ids).astype(np.int64)
        if pid.shape != (b, s):
            raise InvalidArgument(f"{name}: position_ids shape {pid.shape} must be ({b}, {s})")
        if pid.size and (pid.min() < 0 or pid.max() >= cos.shape[0]):
            raise InvalidArgument(f"{name}: position_ids must be in [0, {cos.shape[0]}) (the caches' first dim)")
        cos, sin = cos[pid], sin[pid]
    elif cos.shape[:2] != (b, s):
        raise InvalidArgument(f"{name}: cos_cache / sin_cache shape {cos.shape} must start with ({b}, {s})")
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]
    xr, rest = xs[..., :rd], xs[..., rd:]
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
    else:
        x1, x2 = xr[..., :rd // 2], xr[..., rd // 2:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        rot = np.stack((real, imag), axis=-1).reshape(xr.shape)
    else:
        rot = np.concatenate((real, imag), axis=-1)
    out = np.concatenate((rot, rest), axis=-1).astype(dt)
    if x.ndim == 3:
        return out.reshape(x.shape)
    return np.ascontiguousarray(out.transpose(0, 2, 1, 3))


@op("SwiGLU", since=28)
@via_float32
def swiglu(a, b, *, alpha=1.0):
    if a.shape != b.shape:
        raise InvalidArgument(f"SwiGLU: A and B must have identical shapes, got {a.shape} and {b.shape}")
    cd = compute_dtype(a.dtype)
    af = a.astype(cd)
    with np.errstate(over="ignore"):
        sig = cd.type(1) / (cd.type(1) + np.exp(-cd.type(alpha) * af))
    return (af * sig * b.astype(cd)).astype(a.dtype)


rule("RotaryEmbedding", "SwiGLU")(same_as_input)


# ---------------------------------------------------------------------------------------------------------------------
# LinearAttention
# ---------------------------------------------------------------------------------------------------------------------

@op("LinearAttention", since=27)
@via_float32
def linear_attention(query, key, value, past_state=None, decay=None, beta=None, *, chunk_size=64, kv_num_heads,
                     q_num_heads, scale=0.0, update_rule="gated_delta", ctx=None):
    name = "LinearAttention"
    if update_rule not in ("linear", "gated", "delta", "gated_delta"):
        raise InvalidArgument(f"{name}: unsupported update_rule '{update_rule}'")
    if q_num_heads <= 0 or kv_num_heads <= 0 or q_num_heads % kv_num_heads:
        raise InvalidArgument(f"{name}: q_num_heads {q_num_heads} must be a positive multiple of "
                              f"kv_num_heads {kv_num_heads}")
    gated = update_rule in ("gated", "gated_delta")
    delta = update_rule in ("delta", "gated_delta")
    if gated != (decay is not None):
        raise InvalidArgument(f"{name}: update_rule '{update_rule}' {'requires' if gated else 'forbids'} decay")
    if delta != (beta is not None):
        raise InvalidArgument(f"{name}: update_rule '{update_rule}' {'requires' if delta else 'forbids'} beta")
    for nm, a in (("query", query), ("key", key), ("value", value)):
        if a.ndim != 3:
            raise InvalidArgument(f"{name}: {nm} must be rank 3 (B, T, H*D), got shape {a.shape}")
    dt = query.dtype
    cd = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    b, t, _ = query.shape
    for nm, a in (("key", key), ("value", value), ("decay", decay), ("beta", beta)):
        if a is not None and (a.ndim != 3 or a.shape[:2] != (b, t)):
            raise InvalidArgument(f"{name}: {nm} shape {a.shape} must be rank 3 with query's (B, T) {(b, t)}")
    q4 = _split_heads(query, q_num_heads, name, "query").astype(cd)
    k4 = _split_heads(key, kv_num_heads, name, "key").astype(cd)
    v4 = _split_heads(value, kv_num_heads, name, "value").astype(cd)
    d_k, d_v = q4.shape[3], v4.shape[3]
    group = q_num_heads // kv_num_heads
    if gated:
        last = decay.shape[-1]
        if decay.ndim != 3 or last not in (kv_num_heads, kv_num_heads * d_k):
            raise InvalidArgument(f"{name}: decay shape {decay.shape} must be (B, T, H_kv) or (B, T, H_kv*d_k)")
        g4 = np.exp(decay.astype(cd).reshape(b, t, kv_num_heads, last // kv_num_heads).transpose(0, 2, 1, 3))
    if delta:
        last = beta.shape[-1]
        if beta.ndim != 3 or last not in (kv_num_heads, 1):
            raise InvalidArgument(f"{name}: beta shape {beta.shape} must be (B, T, H_kv) or (B, T, 1)")
        b4 = beta.astype(cd).reshape(b, t, last).transpose(0, 2, 1)[..., None]  # (B, H|1, T, 1)
    if past_state is not None:
        if past_state.shape != (b, kv_num_heads, d_k, d_v):
            raise InvalidArgument(f"{name}: past_state shape {past_state.shape} must be "
                                  f"{(b, kv_num_heads, d_k, d_v)}")
        state_dtype = past_state.dtype
        state = past_state.astype(cd)
    else:
        state_dtype = dt
        state = np.zeros((b, kv_num_heads, d_k, d_v), dtype=cd)
    sc = cd.type(1.0 / np.sqrt(d_k) if not scale else scale)
    out = np.empty((b, q_num_heads, t, d_v), dtype=cd)
    for i in range(t):  # the recurrence is sequential in time; everything else is vectorised
        kt, vt = k4[:, :, i, :], v4[:, :, i, :]
        if gated:
            state = state * g4[:, :, i, :][..., None]
        if delta:
            retrieved = np.einsum("bhdm,bhd->bhm", state, kt)
            vt = b4[:, :, i, :] * (vt - retrieved)
        state = state + kt[..., :, None] * vt[..., None, :]
        rs = state if group == 1 else np.repeat(state, group, axis=1)
        out[:, :, i, :] = sc * np.einsum("bhd,bhdm->bhm", q4[:, :, i, :], rs)
    y = out.transpose(0, 2, 1, 3).reshape(b, t, q_num_heads * d_v).astype(dt)
    return _outs((y, state.astype(state_dtype)), ctx)


# ---------------------------------------------------------------------------------------------------------------------
# FlexAttention (ai.onnx.preview)
# ---------------------------------------------------------------------------------------------------------------------

@rule("LinearAttention")
def _linear_attention_rule(f):
    """Y of the query's type; the present state of past_state's type (the query's without one)."""
    return [(f.type(0), None), (f.type(3) if f.has(3) else f.type(0), None)]


def _same_shape(value, shape, what, name):
    """A body's result as an array of `shape` (what the body was given), else InvalidArgument naming the body."""
    value = np.asarray(value)
    if value.shape != shape:
        raise InvalidArgument(f"{name}: {what} gave shape {value.shape}, must keep the scores' shape {shape}")
    return value


@op("FlexAttention", since=1, domain=PREVIEW_DOMAIN)
def flex_attention(q, k, v, *, prob_mod=None, scale=None, score_mod=None, softmax_precision=None, ctx=None):
    name = "FlexAttention"
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise InvalidArgument(f"{name}: Q, K, V must be rank 4, got {q.shape}, {k.shape}, {v.shape}")
    hq, e = q.shape[1], q.shape[3]
    hkv = k.shape[1]
    if v.shape[1] != hkv or v.shape[2] != k.shape[2] or k.shape[3] != e or not q.shape[0] == k.shape[0] == v.shape[0]:
        raise InvalidArgument(f"{name}: incompatible Q/K/V shapes {q.shape}, {k.shape}, {v.shape}")
    if hq != hkv:
        if hq % hkv:
            raise InvalidArgument(f"{name}: q_num_heads {hq} must be a multiple of kv_num_heads {hkv}")
        k = np.repeat(k, hq // hkv, axis=1)
        v = np.repeat(v, hq // hkv, axis=1)
    out_dt = v.dtype
    rnd, (q, k, v) = _structured_lift(q.dtype, (q, k, v))
    r = rnd or _id
    dt = q.dtype
    if softmax_precision is not None:
        sd = _precision_dtype(softmax_precision, name)
    else:
        sd = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    cd = compute_dtype(dt)
    sc = (1.0 / np.sqrt(e)) if scale is None else float(scale)
    s = r(cd.type(dt.type(np.sqrt(np.float32(sc)))))
    scores = r(np.matmul(q.astype(cd) * s, np.swapaxes(k.astype(cd) * s, -1, -2)).astype(dt)).astype(sd)
    if score_mod is not None:
        scores = _same_shape(ctx.call_graph(score_mod, [scores])[0], scores.shape, "score_mod", name).astype(sd)
    with np.errstate(invalid="ignore"):
        m = np.max(scores, axis=-1, keepdims=True)
        ex = np.exp(scores - m)
        probs = ex / np.sum(ex, axis=-1, keepdims=True)
    if prob_mod is not None:
        probs = _same_shape(ctx.call_graph(prob_mod, [probs])[0], probs.shape, "prob_mod", name).astype(sd)
    return lower(np.matmul(probs, v.astype(sd)), out_dt) if rnd else np.matmul(probs, v.astype(sd)).astype(v.dtype)


@rule("FlexAttention", domain=PREVIEW_DOMAIN)
def _flex_attention_rule(f):
    """V's type."""
    return [(f.type(2), None)]
