"""com.microsoft QAttention: Attention on an 8-bit input and weight, ((input - zero point) x scale) times
((weight - zero point(s)) x scale(s), per tensor or per column), then com.microsoft Attention in float32."""
import numpy as np

from ..errors import InvalidArgument
from .contrib_attention import _ms_attention_rule, ms_attention
from .inference import rule
from .registry import MS_DOMAIN, op


def _name(ctx):
    return f"QAttention node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) \
        else "QAttention"


def _params(scale, zp, count, what, name):
    """float32 scale and zero point of one tensor, scalars or (weights only) one a column."""
    s = np.asarray(scale, np.float32).reshape(-1)
    z = np.zeros(1, np.float32) if zp is None else np.asarray(zp).astype(np.float32).reshape(-1)
    if s.size not in (1, count) or z.size not in (1, count):
        raise InvalidArgument(f"{name}: {what} scale and zero point must be scalars" +
                              (f" or have {count} values" if count > 1 else "") +
                              f", got {s.size} and {z.size}")
    return s, z


@op("QAttention", since=1, domain=MS_DOMAIN)
def qattention(x, weights, bias, input_scale, weight_scale, mask_index=None, input_zero_point=None,
               weight_zero_point=None, past=None, *, do_rotary=0, mask_filter_value=-10000.0, num_heads,
               past_present_share_buffer=0, scale=0.0, unidirectional=0, ctx=None):
    name = _name(ctx)
    for t, what in ((x, "input"), (weights, "weight")):
        if np.asarray(t).dtype not in (np.uint8, np.int8):
            raise InvalidArgument(f"{name}: {what} must be uint8 or int8, got {np.asarray(t).dtype}")
    if weights.ndim != 2:
        raise InvalidArgument(f"{name}: weight must be 2-D, got shape {weights.shape}")
    xs, xz = _params(input_scale, input_zero_point, 1, "input", name)
    ws, wz = _params(weight_scale, weight_zero_point, weights.shape[1], "weight", name)
    xf = (x.astype(np.float32) - xz.reshape(())) * xs.reshape(())
    wf = (weights.astype(np.float32) - wz) * ws
    return ms_attention(xf, wf, bias, mask_index, past, do_rotary=do_rotary, mask_filter_value=mask_filter_value,
                        num_heads=num_heads, past_present_share_buffer=past_present_share_buffer, scale=scale,
                        unidirectional=unidirectional, ctx=ctx)


@rule("QAttention", domain=MS_DOMAIN)
def _qattention_rule(f):
    """Attention's shapes, in the bias's (float) type."""
    return [(f.type(2), d) for _t, d in _ms_attention_rule(f)]
