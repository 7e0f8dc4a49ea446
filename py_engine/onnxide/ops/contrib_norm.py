"""com.microsoft normalization fusions (SkipLayerNormalization, SkipSimplifiedLayerNormalization,
EmbedLayerNormalization and its uint8 QEmbedLayerNormalization) and onnxruntime's ai.onnx-domain SimplifiedLayerNormalization: compositions of the registered
LayerNormalization / RMSNormalization kernels."""
import numpy as np

from ..dtypes import DOUBLE, FLOAT, INT32
from ..errors import InvalidArgument
from .inference import rule
from .math import lift32, lower
from .norm import stat_dims
from .registry import MS_DOMAIN, lookup, op


class _Outs:
    """A stand-in KernelContext asking a reused kernel for `num_outputs` outputs."""

    __slots__ = ("num_outputs", "opset", "node_name", "input_types")

    def __init__(self, n, name=""):
        self.num_outputs, self.opset, self.node_name, self.input_types = n, 1, name, None


def _trim(results, ctx):
    n = max(1, ctx.num_outputs if ctx is not None else 1)
    res = tuple(results[:n])
    return res[0] if n == 1 else res


def _stat_dtype(dt):
    return np.dtype(np.float64) if np.dtype(dt) == np.float64 else np.dtype(np.float32)


def layer_norm(x, gamma, beta, epsilon, with_stats):
    """LayerNormalization over the last axis (the ai.onnx kernel): y, or (y, mean, inv_std_dev) in float32."""
    k = lookup("", "LayerNormalization", 17).kernel
    if not with_stats:
        return k(x, gamma, beta, axis=-1, epsilon=epsilon, stash_type=1, ctx=_Outs(1))
    return k(x, gamma, beta, axis=-1, epsilon=epsilon, stash_type=1, ctx=_Outs(3))


def rms_norm(x, gamma, epsilon, out_dtype, with_stats, axis=-1):
    """RMSNormalization (the ai.onnx kernel) computed in float32-or-wider; y in `out_dtype`, plus inv_std_dev."""
    xf, _ = lift32(x)
    xf = xf.astype(np.float32, copy=False) if xf.dtype == np.float16 else xf
    gf, _ = lift32(gamma)
    gf = gf.astype(xf.dtype, copy=False)
    y = lookup("", "RMSNormalization", 23).kernel(xf, gf, axis=axis, epsilon=epsilon, stash_type=1)
    y = lower(y, np.dtype(out_dtype)) if np.dtype(out_dtype) != y.dtype else y
    if not with_stats:
        return y, None
    a = axis % x.ndim
    sd = _stat_dtype(xf.dtype)
    ms = np.mean(np.square(xf.astype(sd)), axis=tuple(range(a, x.ndim)), keepdims=True)
    return y, (sd.type(1) / np.sqrt(ms + sd.type(epsilon))).astype(sd)


def _stat_type(x_type):
    """The element type of RMS statistics of an input of `x_type` (double stays double, the rest is float)."""
    return None if x_type is None else DOUBLE if x_type == DOUBLE else FLOAT


def _skip_sum(x, skip, bias, name):
    if x.ndim not in (2, 3):
        raise InvalidArgument(f"{name}: input must be 2D or 3D, got shape {x.shape}")
    hidden = x.shape[-1]
    if skip.shape[-1] != hidden or skip.ndim > x.ndim:
        raise InvalidArgument(f"{name}: skip shape {skip.shape} does not broadcast to input shape {x.shape}")
    try:
        np.broadcast_shapes(skip.shape, x.shape)
    except ValueError:
        raise InvalidArgument(f"{name}: skip shape {skip.shape} does not broadcast to input shape {x.shape}") \
            from None
    if bias is not None and bias.shape != (hidden,):
        raise InvalidArgument(f"{name}: bias must have shape ({hidden},), got {bias.shape}")
    xf, dt = lift32(x)
    s = xf + lift32(skip)[0].astype(xf.dtype, copy=False)
    if bias is not None:
        s = s + lift32(bias)[0].astype(xf.dtype, copy=False)
    return s, lower(s.astype(xf.dtype, copy=False), dt)


@op("SkipLayerNormalization", since=1, domain=MS_DOMAIN)
def skip_layer_norm(x, skip, gamma, beta=None, bias=None, *, epsilon=1e-12, ctx=None):
    name = "SkipLayerNormalization"
    if not epsilon >= 0:
        raise InvalidArgument(f"{name}: epsilon must be non-negative, got {epsilon}")
    if gamma.shape != (x.shape[-1],) or (beta is not None and beta.shape != (x.shape[-1],)):
        raise InvalidArgument(f"{name}: gamma/beta must have shape ({x.shape[-1]},)")
    s_comp, s_out = _skip_sum(x, skip, bias, name)
    n = ctx.num_outputs if ctx is not None else 1
    s32 = s_comp.astype(np.float32, copy=False) if s_comp.dtype == np.float16 else s_comp
    g = lift32(gamma)[0].astype(s32.dtype, copy=False)
    b = None if beta is None else lift32(beta)[0].astype(s32.dtype, copy=False)
    res = layer_norm(s32, g, b, epsilon, n > 1)
    y, mean, inv = (res, None, None) if n <= 1 else res
    y = y.astype(x.dtype, copy=False)
    return _trim((y, mean, inv, s_out), ctx)


@rule("SkipLayerNormalization", domain=MS_DOMAIN)
def _skip_layer_norm_rule(f):
    """output and input+skip(+bias) like the input; mean and inv_std_var float, reduced over the last axis."""
    stat = (FLOAT, stat_dims(f.dims(0), -1))
    return [f.ins[0], stat, stat, f.ins[0]]


@op("SkipSimplifiedLayerNormalization", since=1, domain=MS_DOMAIN)
def skip_simplified_layer_norm(x, skip, gamma, bias=None, *, epsilon=1e-12, ctx=None):
    name = "SkipSimplifiedLayerNormalization"
    if gamma.shape != (x.shape[-1],):
        raise InvalidArgument(f"{name}: gamma must have shape ({x.shape[-1]},)")
    s_comp, s_out = _skip_sum(x, skip, bias, name)
    n = ctx.num_outputs if ctx is not None else 1
    y, inv = rms_norm(s_comp, gamma, epsilon, x.dtype, n > 1)
    mean = None if inv is None else np.zeros_like(inv)  # onnxruntime emits zeros: RMS norm has no mean
    return _trim((y, mean, inv, s_out), ctx)


@rule("SkipSimplifiedLayerNormalization", domain=MS_DOMAIN)
def _skip_simplified_layer_norm_rule(f):
    """output and input+skip(+bias) like the input; mean (zeros) and inv_std_var in the statistics' type."""
    stat = (_stat_type(f.type(0)), stat_dims(f.dims(0), -1))
    return [f.ins[0], stat, stat, f.ins[0]]


@op("SimplifiedLayerNormalization", since=1)
def simplified_layer_norm(x, scale, *, axis=-1, epsilon=1e-5, stash_type=1, ctx=None):
    """onnxruntime's RMS normalization (registered in the ai.onnx domain by onnxruntime); Y has scale's type."""
    if not -x.ndim <= axis < x.ndim:
        raise InvalidArgument(f"SimplifiedLayerNormalization: axis {axis} is out of range for rank {x.ndim}")
    n = ctx.num_outputs if ctx is not None else 1
    y, inv = rms_norm(x, scale, epsilon, scale.dtype, n > 1, axis=axis)
    return _trim((y, inv), ctx)


@rule("SimplifiedLayerNormalization")
def _simplified_layer_norm_rule(f):
    """Y of the scale's type and X's dims; inv_std_var in the statistics' type, reduced from `axis` on."""
    return [(f.type(1), f.dims(0)), (_stat_type(f.type(0)), stat_dims(f.dims(0), f.attr("axis", -1)))]


@op("EmbedLayerNormalization", since=1, domain=MS_DOMAIN)
def embed_layer_norm(input_ids, segment_ids, word_embedding, position_embedding, segment_embedding, gamma, beta,
                     mask=None, position_ids=None, *, epsilon=1e-12, mask_index_type=1, ctx=None):
    name = "EmbedLayerNormalization"
    if input_ids.ndim != 2:
        raise InvalidArgument(f"{name}: input_ids must be 2D (batch_size, sequence_length), got {input_ids.shape}")
    b, s = input_ids.shape
    hidden = word_embedding.shape[1]

    def gather(table, ids, what):
        ids = np.asarray(ids).astype(np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
            raise InvalidArgument(f"{name}: {what} index out of range [0, {table.shape[0]})")
        return lift32(table)[0][ids]

    if position_ids is None:
        pos = np.broadcast_to(np.arange(s, dtype=np.int64), (b, s))
    else:
        pos = np.broadcast_to(np.asarray(position_ids).astype(np.int64), (b, s))
    emb = gather(word_embedding, input_ids, "input_ids") + gather(position_embedding, pos, "position_ids")
    if segment_embedding is not None and segment_ids is not None:
        emb = emb + gather(segment_embedding, segment_ids, "segment_ids")
    if emb.shape[-1] != hidden:
        raise InvalidArgument(f"{name}: embeddings have different hidden sizes")
    emb32 = emb.astype(np.float32, copy=False) if emb.dtype == np.float16 else emb
    y = layer_norm(emb32, lift32(gamma)[0].astype(emb32.dtype), lift32(beta)[0].astype(emb32.dtype), epsilon,
                   False)
    dt = word_embedding.dtype
    if mask is not None:
        mask_index = np.count_nonzero(np.asarray(mask), axis=1).astype(np.int32)
    else:
        mask_index = np.zeros((b,), dtype=np.int32)
    return _trim((y.astype(dt), mask_index, emb.astype(dt)), ctx)


@rule("EmbedLayerNormalization", domain=MS_DOMAIN)
def _embed_layer_norm_rule(f):
    """output and embedding sum of the word embedding's type, [batch, sequence, hidden]; int32 mask_index [batch]."""
    ids, table = f.dims(0), f.dims(2)
    hidden = table[1] if table is not None and len(table) == 2 else None
    out = ids + [hidden] if ids is not None and len(ids) == 2 else None
    return [(f.type(2), out), (INT32, None if out is None else out[:1]), (f.type(2), out)]


@op("QEmbedLayerNormalization", since=1, domain=MS_DOMAIN)
def qembed_layer_norm(input_ids, segment_ids, word_embedding, position_embedding, segment_embedding, gamma, beta,
                      mask, word_embedding_scale, position_embedding_scale, segment_embedding_scale, gamma_scale,
                      beta_scale, word_embedding_zero_point, position_embedding_zero_point,
                      segment_embedding_zero_point, gamma_zero_point, beta_zero_point, *, epsilon=1e-12, ctx=None):
    """EmbedLayerNormalization on the uint8 tables, gamma and beta dequantized ((q - zero point) x scale, float32,
    per tensor)."""
    def deq(q, scale, zp, what):
        if q is None:
            return None
        if scale is None or zp is None or np.size(scale) != 1 or np.size(zp) != 1:
            raise InvalidArgument(f"QEmbedLayerNormalization: {what} needs a scalar scale and zero point")
        return (np.asarray(q).astype(np.float32) - np.asarray(zp).astype(np.float32).reshape(())) * \
            np.asarray(scale, np.float32).reshape(())

    tables = [deq(word_embedding, word_embedding_scale, word_embedding_zero_point, "word_embedding"),
              deq(position_embedding, position_embedding_scale, position_embedding_zero_point, "position_embedding"),
              deq(segment_embedding, segment_embedding_scale, segment_embedding_zero_point, "segment_embedding"),
              deq(gamma, gamma_scale, gamma_zero_point, "gamma"), deq(beta, beta_scale, beta_zero_point, "beta")]
    return embed_layer_norm(input_ids, segment_ids, *tables, mask, epsilon=epsilon, ctx=ctx)


@rule("QEmbedLayerNormalization", domain=MS_DOMAIN)
def _qembed_layer_norm_rule(f):
    """float32 output [batch, sequence, hidden]; int32 mask_index [batch]."""
    ids, table = f.dims(0), f.dims(2)
    hidden = table[1] if table is not None and len(table) == 2 else None
    out = ids + [hidden] if ids is not None and len(ids) == 2 else None
    return [(FLOAT, out), (INT32, None if out is None else out[:1])]
