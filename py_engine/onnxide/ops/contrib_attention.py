"""com.microsoft attention ops (Attention, MultiHeadAttention, GroupQueryAttention, RotaryEmbedding): onnxruntime's
masks, packing and KV-cache layouts mapped onto the ai.onnx Attention and RotaryEmbedding kernels."""
import numpy as np

from ..errors import InvalidArgument
from ..errors import NotImplemented as OrtNotImplemented
from .attention import _attention
from .inference import rule, same_as_input
from .math import lift32, lower
from .registry import MS_DOMAIN, lookup, op

_LOWEST = np.finfo(np.float32).min  # onnxruntime's causal fill (numeric_limits<float>::lowest)


def _name(kind, ctx):
    return f"{kind} node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) else kind


def _trim(results, ctx):
    n = max(1, ctx.num_outputs if ctx is not None else 1)
    res = tuple(results[:n])
    return res[0] if n == 1 else res


def _heads(x, n, name, what):
    """(B, S, N*H) -> (B, N, S, H)."""
    b, s, hidden = x.shape
    if n <= 0 or hidden % n:
        raise InvalidArgument(f"{name}: {what} hidden size {hidden} is not divisible by num_heads={n}")
    return x.reshape(b, s, n, hidden // n).transpose(0, 2, 1, 3)


def _merge(y):
    """(B, N, S, H) -> (B, S, N*H)."""
    b, n, s, h = y.shape
    return np.ascontiguousarray(y.transpose(0, 2, 1, 3)).reshape(b, s, n * h)


def sdpa(q, k, v, bias, scale, softcap=0.0, sink=None, qk_mode=None):
    """Scaled dot-product attention on (B, N, S, H) tensors through the ai.onnx Attention kernel (which repeats
    K/V heads for grouped queries). `bias` is an additive float mask broadcastable to (B, N, S, T); `sink`
    (per query head, or a scalar) adds exp(sink) to each softmax denominator, done as an extra zero key/value
    whose score is the sink. qk_mode picks a second output like Attention's qk_matmul_output_mode."""
    b, nq, s, _ = q.shape
    t = k.shape[2]
    if bias is None:
        bias = np.zeros((1, 1, s, t), np.float32)
    if sink is not None:
        zk = np.zeros(k.shape[:2] + (1, k.shape[3]), k.dtype)
        zv = np.zeros(v.shape[:2] + (1, v.shape[3]), v.dtype)
        k, v = np.concatenate((k, zk), axis=2), np.concatenate((v, zv), axis=2)
        bias = np.broadcast_to(bias, np.broadcast_shapes(bias.shape, (1, nq, s, t)))
        col = np.broadcast_to(np.asarray(sink, np.float32).reshape(1, -1, 1, 1), bias.shape[:3] + (1,))
        bias = np.concatenate((bias, col.astype(bias.dtype)), axis=-1)

    class _Ctx:
        num_outputs = 1 if qk_mode is None else 4
        node_name = ""

    res = _attention(q, k, v, np.asarray(bias, dtype=np.float32 if q.dtype != np.float64 else np.float64), None,
                     None, None, is_causal=0, kv_num_heads=None, q_num_heads=None,
                     qk_matmul_output_mode=qk_mode or 0, scale=scale, softcap=softcap, softmax_precision=None,
                     left=None, right=None, ctx=_Ctx)
    if qk_mode is None:
        return res, None
    y, qk = res[0], res[3]
    return y, (qk[..., :t] if sink is not None else qk)


def _key_mask(mask, b, s, t, past, fill, name):
    """onnxruntime's mask_index / key_padding_mask forms as an additive (B, 1, S, T) float mask (or None)."""
    if mask is None:
        return None
    m = np.asarray(mask)
    out = np.zeros((b, 1, s, t), np.float32)
    if m.ndim == 1:
        if m.shape[0] not in (b, 2 * b):
            raise InvalidArgument(f"{name}: 1D mask of shape {m.shape} must be (batch_size) or (2 * batch_size)")
        j = np.arange(t).reshape(1, t)
        dead = j >= m[:b].astype(np.int64).reshape(b, 1)
        if m.shape[0] == 2 * b:
            dead |= j < np.minimum(m[b:].astype(np.int64), t).reshape(b, 1)
        out[:] = np.where(dead, np.float32(fill), np.float32(0))[:, None, None, :]
    elif m.ndim == 2:
        if m.shape != (b, t):
            raise InvalidArgument(f"{name}: 2D mask of shape {m.shape} must be (batch_size, {t})")
        out[:] = np.where(m > 0, np.float32(0), np.float32(fill))[:, None, None, :]
    elif m.ndim == 3:
        if m.shape != (b, s, t):
            raise InvalidArgument(f"{name}: 3D mask of shape {m.shape} must be {(b, s, t)}")
        out[:] = np.where(m > 0, np.float32(0), np.float32(fill))[:, None, :, :]
    else:
        raise OrtNotImplemented(f"{name}: {m.ndim}D mask_index is not supported")
    return out


def _causal(s, t, past):
    """(1, 1, S, T) additive mask hiding keys after each query's position (past + s)."""
    j = np.arange(t).reshape(1, t)
    i = np.arange(s).reshape(s, 1) + past
    return np.where(j > i, _LOWEST, np.float32(0)).astype(np.float32)[None, None]


def _add(*masks):
    out = None
    with np.errstate(over="ignore"):
        for m in masks:
            if m is not None:
                out = m if out is None else (out + m)
    return out


def _check_bias(attention_bias, b, n, s, t, name):
    if attention_bias is None:
        return None
    ab = lift32(attention_bias)[0]
    if ab.ndim != 4 or ab.shape[0] not in (1, b) or ab.shape[1] not in (1, n) or ab.shape[2:] != (s, t):
        raise InvalidArgument(f"{name}: attention_bias shape {ab.shape} must be (batch_size or 1, num_heads or 1, "
                              f"{s}, {t})")
    return ab.astype(np.float32, copy=False)


# ---------------------------------------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------------------------------------

@op("Attention", since=1, domain=MS_DOMAIN, host_inputs=(6,))
def ms_attention(x, weights, bias=None, mask_index=None, past=None, attention_bias=None, past_sequence_length=None,
                 *, do_rotary=0, mask_filter_value=-10000.0, num_heads, past_present_share_buffer=0,
                 qkv_hidden_sizes=None, rotary_embedding_dim=0, scale=0.0, unidirectional=0, ctx=None):
    name = _name("Attention", ctx)
    if do_rotary or past_present_share_buffer:
        raise OrtNotImplemented(f"{name}: do_rotary / past_present_share_buffer are not supported on the CPU EP")
    if x.ndim != 3 or weights.ndim != 2 or weights.shape[0] != x.shape[2]:
        raise InvalidArgument(f"{name}: input {x.shape} and weights {weights.shape} do not match")
    total = weights.shape[1]
    if qkv_hidden_sizes:
        dq, dk, dv = (int(d) for d in qkv_hidden_sizes)
        if dq != dk or dq + dk + dv != total:
            raise InvalidArgument(f"{name}: qkv_hidden_sizes {list(qkv_hidden_sizes)} do not match weights")
    else:
        if total % 3:
            raise InvalidArgument(f"{name}: weights' second dimension {total} is not divisible by 3")
        dq = dk = dv = total // 3
    dt = x.dtype
    xf, wf = lift32(x)[0], lift32(weights)[0]
    qkv = np.matmul(xf, wf.astype(xf.dtype, copy=False))
    if bias is not None and bias.shape != (total,):
        raise InvalidArgument(f"{name}: bias shape {bias.shape} must be ({total},)")
    if bias is not None:
        qkv = qkv + lift32(bias)[0].astype(xf.dtype, copy=False)
    q = _heads(qkv[..., :dq], num_heads, name, "Q")
    k = _heads(qkv[..., dq:dq + dk], num_heads, name, "K")
    v = _heads(qkv[..., dq + dk:], num_heads, name, "V")
    b, n, s, hq = q.shape
    p = 0
    if past is not None and attention_bias is not None:
        raise InvalidArgument(f"{name}: Attention cannot have both past and attention_bias")
    if past is not None:
        pf = lift32(past)[0].astype(xf.dtype, copy=False)
        if pf.ndim != 5 or pf.shape[0] != 2 or pf.shape[1:3] != (b, n) or pf.shape[4] != hq or dv != dq:
            raise InvalidArgument(f"{name}: past shape {past.shape} must be (2, {b}, {n}, past_len, {hq})")
        p = pf.shape[3]
        k = np.concatenate((pf[0], k), axis=2)
        v = np.concatenate((pf[1], v), axis=2)
    t = k.shape[2]
    mask = _add(_key_mask(mask_index, b, s, t, p, mask_filter_value, name),
                _causal(s, t, p) if unidirectional else None,
                _check_bias(attention_bias, b, n, s, t, name))
    sc = float(scale) if scale else 1.0 / np.sqrt(hq)
    y, _ = sdpa(q, k, v, mask, sc)
    out = lower(_merge(y).astype(xf.dtype, copy=False), dt if dt != xf.dtype else None)
    present = None
    if ctx is not None and ctx.num_outputs > 1:
        present = lower(np.stack((k, v)), dt if dt != xf.dtype else None)
    return _trim((out, present), ctx)


@rule("Attention", domain=MS_DOMAIN)
def _ms_attention_rule(f):
    """output [batch, sequence, v_hidden] and present of the input's type."""
    s0, w, sizes = f.dims(0), f.dims(1), f.attr("qkv_hidden_sizes")
    total = w[1] if w is not None and len(w) == 2 else None
    dv = int(sizes[2]) if sizes else (total // 3 if isinstance(total, int) else None)
    return [(f.type(0), None if s0 is None or len(s0) != 3 else s0[:2] + [dv]), (f.type(0), None)]


# ---------------------------------------------------------------------------------------------------------------------
# MultiHeadAttention
# ---------------------------------------------------------------------------------------------------------------------

@op("MultiHeadAttention", since=1, domain=MS_DOMAIN, host_inputs=(8,))
def multi_head_attention(query, key=None, value=None, bias=None, key_padding_mask=None, attention_bias=None,
                         past_key=None, past_value=None, past_sequence_length=None, cache_indirection=None, *,
                         mask_filter_value=-10000.0, num_heads, scale=0.0, unidirectional=0, ctx=None):
    name = _name("MultiHeadAttention", ctx)
    if past_sequence_length is not None or cache_indirection is not None:
        raise OrtNotImplemented(f"{name}: past_sequence_length / cache_indirection (beam search buffers) are not "
                                "supported on the CPU EP")
    dt = query.dtype
    qf = lift32(query)[0]
    cd = qf.dtype

    def f(a):
        return None if a is None else lift32(a)[0].astype(cd, copy=False)

    key, value, bias, past_key, past_value = f(key), f(value), f(bias), f(past_key), f(past_value)
    n = num_heads
    kv_bnsh = False
    if qf.ndim == 5:  # packed QKV (B, S, N, 3, H)
        if key is not None or value is not None or qf.shape[3] != 3 or qf.shape[2] != n:
            raise InvalidArgument(f"{name}: packed QKV must be (batch, seq, num_heads, 3, head_size) without key/value")
        b, s, _, _, h = qf.shape
        q, k, v = (qf[:, :, :, i, :].reshape(b, s, n * h) for i in range(3))
    elif qf.ndim == 3:
        q = qf
        if key is None:
            raise InvalidArgument(f"{name}: key is required unless query is packed QKV")
        if key.ndim == 5:  # packed KV (B, L, N, 2, H)
            if value is not None or key.shape[3] != 2 or key.shape[2] != n:
                raise InvalidArgument(f"{name}: packed KV must be (batch, kv_seq, num_heads, 2, head_size)")
            bb, l_, _, _, h = key.shape
            k, v = (key[:, :, :, i, :].reshape(bb, l_, n * h) for i in range(2))
        elif key.ndim == 4:  # K and V already (B, N, L, H)
            if value is None or value.ndim != 4:
                raise InvalidArgument(f"{name}: a 4D key needs a 4D value")
            k, v, kv_bnsh = key, value, True
        elif key.ndim == 3:
            if value is None or value.ndim != 3:
                raise InvalidArgument(f"{name}: a 3D key needs a 3D value")
            k, v = key, value
        else:
            raise InvalidArgument(f"{name}: key must be 3D, 4D or 5D, got shape {key.shape}")
    else:
        raise InvalidArgument(f"{name}: query must be 3D or packed 5D, got shape {qf.shape}")
    d = q.shape[2]
    if bias is not None:
        dv = bias.shape[0] - 2 * d
        if bias.ndim != 1 or dv <= 0:
            raise InvalidArgument(f"{name}: bias shape {bias.shape} does not match hidden size {d}")
        q = q + bias[:d]
        if not kv_bnsh:
            k = k + bias[d:2 * d]
            v = v + bias[2 * d:]
    q4 = _heads(q, n, name, "query")
    if kv_bnsh:
        k4, v4 = k, v
    else:
        k4, v4 = _heads(k, n, name, "key"), _heads(v, n, name, "value")
        if past_key is not None and past_value is not None:
            k4 = np.concatenate((past_key, k4), axis=2)
            v4 = np.concatenate((past_value, v4), axis=2)
    b, _, s, h = q4.shape
    t = k4.shape[2]
    p = t - (k.shape[1] if not kv_bnsh else t)
    mask = _add(_key_mask(key_padding_mask, b, s, t, p, mask_filter_value, name),
                _causal(s, t, p) if unidirectional else None,
                _check_bias(attention_bias, b, n, s, t, name))
    sc = float(scale) if scale else 1.0 / np.sqrt(h)
    want_qk = ctx is not None and ctx.num_outputs > 3
    y, qk = sdpa(q4, k4, v4, mask, sc, qk_mode=0 if want_qk else None)
    back = dt if dt != cd else None
    out = lower(_merge(y), back)
    return _trim((out, lower(k4, back), lower(v4, back), None if qk is None else lower(qk, back)), ctx)


@rule("MultiHeadAttention", domain=MS_DOMAIN)
def _query_typed_rule(f):
    """Every output of the query's type (attention outputs, present key / value, QK scores)."""
    return [(f.type(0), None)] * f.n_outputs


# ---------------------------------------------------------------------------------------------------------------------
# RotaryEmbedding
# ---------------------------------------------------------------------------------------------------------------------

def rotary(x, cos_cache, sin_cache, positions, interleaved, num_heads, rotary_dim):
    """Rotate (B, S, N*H) or (B, N, S, H) `x` at (B, S) `positions` through the ai.onnx RotaryEmbedding kernel."""
    return lookup("", "RotaryEmbedding", 23).kernel(x, cos_cache, sin_cache, positions, interleaved=interleaved,
                                                    num_heads=num_heads, rotary_embedding_dim=rotary_dim)


@op("RotaryEmbedding", since=1, domain=MS_DOMAIN)
def ms_rotary_embedding(x, position_ids, cos_cache, sin_cache, *, interleaved=0, is_packed_batching=0, num_heads=0,
                        rotary_embedding_dim=0, scale=1.0, ctx=None):
    name = _name("RotaryEmbedding", ctx)
    if is_packed_batching:
        raise OrtNotImplemented(f"{name}: is_packed_batching is not supported on the CPU EP")
    if x.ndim == 4:
        b, _, s, head = x.shape
    elif x.ndim == 3:
        b, s, hidden = x.shape
        if not num_heads:
            if rotary_embedding_dim:
                raise InvalidArgument(f"{name}: num_heads is required with rotary_embedding_dim")
            head = 2 * cos_cache.shape[1]
            if hidden % head:
                raise InvalidArgument(f"{name}: hidden size {hidden} is not a multiple of head size {head}")
            num_heads = hidden // head
    else:
        raise InvalidArgument(f"{name}: input must be 3D or 4D, got shape {x.shape}")
    pid = np.asarray(position_ids).astype(np.int64)
    if pid.size == 1 and pid.ndim <= 1:
        pos = np.broadcast_to(pid.reshape(()) + np.arange(s, dtype=np.int64), (b, s))
    elif pid.shape == (b, s):
        pos = pid
    else:
        raise InvalidArgument(f"{name}: position_ids shape {pid.shape} must be (1) or ({b}, {s})")
    if pos.size and (pos.min() < 0 or pos.max() >= cos_cache.shape[0]):
        raise InvalidArgument(f"{name}: position ids must be in [0, {cos_cache.shape[0]})")
    return rotary(x, cos_cache, sin_cache, pos, interleaved, num_heads if x.ndim == 3 else None,
                  rotary_embedding_dim or 2 * cos_cache.shape[1])


# ---------------------------------------------------------------------------------------------------------------------
# GroupQueryAttention
# ---------------------------------------------------------------------------------------------------------------------

@op("GroupQueryAttention", since=1, domain=MS_DOMAIN, host_inputs=(6,))
def group_query_attention(query, key, value, past_key, past_value, seqlens_k, total_sequence_length,
                          cos_cache=None, sin_cache=None, position_ids=None, attention_bias=None, head_sink=None,
                          k_scale=None, v_scale=None, q_norm_weight=None, k_norm_weight=None, query_seqlens=None, *,
                          causal=1, do_rotary=0, k_norm_epsilon=None, k_quant_type="NONE", kv_cache_bit_width=0,
                          kv_num_heads, local_window_size=-1, num_heads, q_norm_epsilon=None,
                          qk_norm_epsilon=1e-6, qk_output=0, rotary_interleaved=0, scale=0.0,
                          sliding_window_cache=0, smooth_softmax=-1, softcap=0.0, v_quant_type="NONE", ctx=None):
    name = _name("GroupQueryAttention", ctx)
    if k_quant_type != "NONE" or v_quant_type != "NONE" or k_scale is not None or v_scale is not None:
        raise OrtNotImplemented(f"{name}: quantized KV cache is not supported")
    if q_norm_weight is not None or k_norm_weight is not None:
        raise OrtNotImplemented(f"{name}: q_norm_weight / k_norm_weight are not supported on the CPU EP")
    if sliding_window_cache:
        raise OrtNotImplemented(f"{name}: sliding_window_cache is not supported")
    if not causal and local_window_size != -1:
        raise InvalidArgument(f"{name}: local_window_size must be -1 when causal is 0")
    if num_heads <= 0 or kv_num_heads <= 0 or num_heads % kv_num_heads:
        raise InvalidArgument(f"{name}: num_heads {num_heads} must be a positive multiple of kv_num_heads "
                              f"{kv_num_heads}")
    dt = query.dtype
    qf = lift32(query)[0]
    cd = qf.dtype
    if qf.ndim != 3:
        raise InvalidArgument(f"{name}: query must be 3D, got shape {query.shape}")
    b, s, d = qf.shape
    if key is None:  # packed QKV
        if value is not None or d % (num_heads + 2 * kv_num_heads):
            raise InvalidArgument(f"{name}: packed QKV width {d} does not match num_heads/kv_num_heads")
        h = d // (num_heads + 2 * kv_num_heads)
        q = qf[..., :num_heads * h]
        k = qf[..., num_heads * h:(num_heads + kv_num_heads) * h]
        v = qf[..., (num_heads + kv_num_heads) * h:]
    else:
        q, k, v = qf, lift32(key)[0].astype(cd, copy=False), lift32(value)[0].astype(cd, copy=False)
        h = d // num_heads
        if k.shape[:2] != (b, s) or v.shape != k.shape:
            raise InvalidArgument(f"{name}: key/value must have shape ({b}, {s}, kv_hidden), got {k.shape}, "
                                  f"{v.shape}")
    if d % num_heads if key is not None else False:
        raise InvalidArgument(f"{name}: query hidden size {d} is not divisible by num_heads={num_heads}")
    q4 = _heads(q, num_heads, name, "query")
    k4 = _heads(k, kv_num_heads, name, "key")
    v4 = _heads(v, kv_num_heads, name, "value")
    if k4.shape[3] != h:
        raise InvalidArgument(f"{name}: key head size {k4.shape[3]} differs from query head size {h}")

    total_len = np.asarray(seqlens_k).astype(np.int64).reshape(-1) + 1  # T per batch entry
    if total_len.shape != (b,):
        raise InvalidArgument(f"{name}: seqlens_k must have shape ({b},)")
    tsl = int(np.asarray(total_sequence_length).reshape(-1)[0])
    past_buf = 0 if past_key is None else past_key.shape[2]
    if past_key is not None and (past_key.shape != (b, kv_num_heads, past_buf, h) or
                                 past_value is None or past_value.shape != past_key.shape):
        raise InvalidArgument(f"{name}: past_key/past_value must have shape ({b}, {kv_num_heads}, past_len, {h})")
    if query_seqlens is not None:
        qlen = np.asarray(query_seqlens).astype(np.int64).reshape(-1)
        if qlen.shape != (b,) or (qlen < 0).any() or (qlen > np.minimum(s, total_len)).any():
            raise InvalidArgument(f"{name}: query_seqlens must be in [0, min(sequence_length, seqlens_k + 1)]")
        past_len = total_len - qlen
        first_prompt = False
    else:
        qlen = np.minimum(s, total_len)
        first_prompt = past_key is None or (s == tsl)
        past_len = np.zeros(b, np.int64) if first_prompt else total_len - s
    if (past_len < 0).any() or (past_len > past_buf).any() and past_key is not None:
        raise InvalidArgument(f"{name}: seqlens_k {list(total_len - 1)} are inconsistent with the past length")
    present_len = max(tsl, past_buf) if past_key is not None else tsl
    if (past_len + s > present_len).any() and query_seqlens is None:
        present_len = int((past_len + s).max())

    if do_rotary:
        if cos_cache is None or sin_cache is None:
            raise InvalidArgument(f"{name}: do_rotary needs cos_cache and sin_cache")
        if position_ids is not None:
            pos = np.broadcast_to(np.asarray(position_ids).astype(np.int64), (b, s))
            if first_prompt:  # onnxruntime reads only the very first id for a first prompt
                pos = np.broadcast_to(pos[0, 0] + np.arange(s, dtype=np.int64), (b, s))
        else:
            pos = past_len.reshape(b, 1) + np.arange(s, dtype=np.int64).reshape(1, s)
        pos = np.minimum(pos, cos_cache.shape[0] - 1)  # padded rows may run past the cache: their output is unused
        cc, sc_ = lift32(cos_cache)[0].astype(cd), lift32(sin_cache)[0].astype(cd)
        rd = 2 * cos_cache.shape[1]
        q4 = rotary(q4, cc, sc_, pos, rotary_interleaved, None, rd)
        k4 = rotary(k4, cc, sc_, pos, rotary_interleaved, None, rd)

    # present KV: the past rows then the new (valid) rows of each batch entry
    pk = np.zeros((b, kv_num_heads, present_len, h), cd)
    pv = np.zeros_like(pk)
    if past_key is not None:
        n_copy = min(past_buf, present_len)
        pk[:, :, :n_copy] = lift32(past_key)[0][:, :, :n_copy]
        pv[:, :, :n_copy] = lift32(past_value)[0][:, :, :n_copy]
    rows = np.arange(s)
    for bi in range(b):  # per-entry offsets into the cache
        nr = int(qlen[bi]) if query_seqlens is not None else min(s, present_len - int(past_len[bi]))
        dst = int(past_len[bi]) + rows[:nr]
        pk[bi, :, dst] = k4[bi, :, :nr].transpose(1, 0, 2)
        pv[bi, :, dst] = v4[bi, :, :nr].transpose(1, 0, 2)

    # which keys each query row sees: key j < T_b; causal: j <= P_b + s; local window: j >= P_b + s - W
    j = np.arange(present_len).reshape(1, 1, present_len)
    pos_q = past_len.reshape(b, 1, 1) + rows.reshape(1, s, 1)
    allowed = j < total_len.reshape(b, 1, 1)
    if causal:
        allowed = allowed & (j <= pos_q)
        if local_window_size is not None and local_window_size > 0:
            allowed = allowed & (j > pos_q - local_window_size)
    mask = np.where(allowed, np.float32(0), np.float32(-np.inf))[:, None]  # (B, 1, S, T)
    if attention_bias is not None:
        ab = lift32(attention_bias)[0].astype(np.float32)
        if ab.ndim != 4 or ab.shape[0] not in (1, b) or ab.shape[1] not in (1, num_heads) or ab.shape[2] != s:
            raise InvalidArgument(f"{name}: attention_bias shape {ab.shape} must be (batch_size or 1, num_heads or "
                                  f"1, {s}, total_sequence_length)")
        width = min(ab.shape[3], present_len)
        pad = np.zeros(ab.shape[:3] + (present_len,), np.float32)
        pad[..., :width] = ab[..., :width]
        mask = mask + pad
    sink = None
    if head_sink is not None:
        sink = lift32(head_sink)[0].astype(np.float32).reshape(-1)
        if sink.shape != (num_heads,):
            raise InvalidArgument(f"{name}: head_sink must have shape ({num_heads},)")
    elif smooth_softmax is not None and smooth_softmax > 0:
        sink = np.zeros((num_heads,), np.float32)
    sc = float(scale) if scale else 1.0 / np.sqrt(h)
    want_qk = bool(qk_output) and ctx is not None and ctx.num_outputs > 3
    if want_qk and qk_output not in (1, 2):
        raise InvalidArgument(f"{name}: qk_output must be 0, 1 or 2")
    y, qk = sdpa(q4, pk, pv, mask, sc, softcap=softcap or 0.0, sink=sink,
                 qk_mode=(2 if qk_output == 1 else 3) if want_qk else None)
    if qk is not None and qk_output == 1:  # scores after softcap and bias; keys a row cannot see stay zero
        qk = np.where(allowed[:, None], qk, qk.dtype.type(0))
    back = dt if dt != cd else None
    return _trim((lower(_merge(y), back), lower(pk, back), lower(pv, back),
                  None if qk is None else lower(qk, back)), ctx)


rule("RotaryEmbedding", domain=MS_DOMAIN)(same_as_input)
rule("GroupQueryAttention", domain=MS_DOMAIN)(_query_typed_rule)
