"""The WASM EP's row-wise and elementwise kernels: Softmax/LogSoftmax, Layer/Instance/Batch normalization, unary
activations and broadcasting binary arithmetic (same claim/fallback contract as wasm_ops.py)."""
import math

import numpy as np

from ..ops import activations
from .wasm_ops import ACT, BINOP, F32, FALLBACK, _contig, _is_f32, guarded
from .wasm_runtime import In, Out

# ---- softmax ----------------------------------------------------------------------------------------------------


def softmax_cols(shape, axis, coerced):
    """The length of the rows ox_softmax normalizes for this shape and axis (opset < 13: `coerced` to 2-D), or None
    (0-D, empty, an inner axis from opset 13: the numpy kernel)."""
    if not shape or 0 in shape:
        return None
    a = axis + len(shape) if axis < 0 else axis
    if coerced:
        if not 0 <= a <= len(shape):
            return None
    elif a != len(shape) - 1:
        return None  # softmax over an inner axis: the numpy kernel
    return math.prod(shape[a:]) or None


def softmax_fast(rt, log, coerced, x, axis):
    if not _is_f32(x):
        return FALLBACK
    n = softmax_cols(x.shape, axis, coerced)
    if n is None:
        return FALLBACK
    y = np.empty(x.shape, F32)
    rt.call("ox_softmax", [x.size // n, n, In(_contig(x)), Out(y), int(log)])
    return y


def softmax_axis(opdef, attrs):
    """(axis, coerced to 2-D) of a Softmax / LogSoftmax node, or None for attributes the kernel lacks."""
    if set(attrs) - {"axis"}:
        return None
    coerced = opdef.since < 13
    return attrs.get("axis", opdef.attrs.get("axis", 1 if coerced else -1)), coerced


def claim_softmax(log):
    def claim(rt, node, opdef, attrs):
        sa = softmax_axis(opdef, {})
        if set(attrs) - {"axis"} or sa is None:
            return None
        default, coerced = sa
        return guarded(lambda x, *, axis=default, **kw: softmax_fast(rt, log, coerced, x, axis), opdef.kernel)
    return claim


# ---- normalization ----------------------------------------------------------------------------------------------

def layernorm_fast(rt, x, scale, b=None, *, axis=-1, epsilon=1e-5, stash_type=1, ctx=None, **_):
    if stash_type != 1 or not _is_f32(x, scale) or (b is not None and not _is_f32(b)) or x.ndim == 0:
        return FALLBACK
    if not -x.ndim <= axis < x.ndim:
        return FALLBACK
    a = axis % x.ndim
    norm_shape = x.shape[a:]
    d = int(np.prod(norm_shape, dtype=np.int64))
    if d == 0 or x.size == 0:
        return FALLBACK
    try:
        sc = _contig(np.broadcast_to(scale, norm_shape))
        bb = _contig(np.broadcast_to(b, norm_shape)) if b is not None else None
    except ValueError:
        return FALLBACK
    if np.broadcast_shapes(x.shape, scale.shape) != x.shape or (
            b is not None and np.broadcast_shapes(x.shape, b.shape) != x.shape):
        return FALLBACK
    rows = x.size // d
    nout = max(1, ctx.num_outputs if ctx is not None else 1)
    y = np.empty(x.shape, F32)
    stat_shape = x.shape[:a] + (1,) * (x.ndim - a)
    mean = np.empty(stat_shape, F32) if nout > 1 else None
    rstd = np.empty(stat_shape, F32) if nout > 2 else None
    rt.call("ox_rownorm", [rows, d, In(_contig(x)), Out(y), float(epsilon), In(sc),
                           In(bb) if bb is not None else 0, 0, 1,
                           Out(mean) if mean is not None else 0, Out(rstd) if rstd is not None else 0])
    return (y, mean, rstd)[:nout] if nout > 1 else y


def claim_layernorm(rt, node, opdef, attrs):
    if set(attrs) - {"axis", "epsilon", "stash_type"} or attrs.get("stash_type", 1) != 1:
        return None
    return guarded(lambda *a, **kw: layernorm_fast(rt, *a, **kw), opdef.kernel)


def instnorm_fast(rt, x, scale, b, *, epsilon=1e-5, **_):
    if not _is_f32(x, scale, b) or x.ndim < 3 or x.size == 0:
        return FALLBACK
    n, c = x.shape[:2]
    if scale.shape != (c,) or b.shape != (c,):
        return FALLBACK
    d = x.size // (n * c)
    y = np.empty(x.shape, F32)
    rt.call("ox_rownorm", [n * c, d, In(_contig(x)), Out(y), float(epsilon), In(_contig(scale)), In(_contig(b)),
                           1, c, 0, 0])
    return y


def claim_instnorm(rt, node, opdef, attrs):
    if set(attrs) - {"epsilon"}:
        return None
    return guarded(lambda *a, **kw: instnorm_fast(rt, *a, **kw), opdef.kernel)


def batchnorm_scale(scale, var, epsilon):
    """BatchNormalization's per-channel factor scale / sqrt(var + epsilon) (ox_channel_affine's s)."""
    return (scale / np.sqrt(var + np.float32(epsilon))).astype(F32)


def batchnorm_fast(rt, x, scale, b, mean, var, *, epsilon=1e-5, **_):
    if not _is_f32(x, scale, b, mean, var) or x.ndim < 2 or x.size == 0:
        return FALLBACK
    c = x.shape[1]
    if any(v.shape != (c,) for v in (scale, b, mean, var)):
        return FALLBACK
    s = batchnorm_scale(scale, var, epsilon)
    y = np.empty(x.shape, F32)
    rt.call("ox_channel_affine", [x.shape[0], c, x.size // (x.shape[0] * c), In(_contig(x)), In(_contig(mean)),
                                  In(s), In(_contig(b)), Out(y), 0, 0.0, 0.0])
    return y


def claim_batchnorm(rt, node, opdef, attrs):
    # inference form only: one output, no training mode (opset >= 9 has no `spatial` / `is_test`)
    if opdef.since < 9 or len([o for o in node.outputs if o]) != 1 or len(node.outputs) != 1:
        return None
    if set(attrs) - {"epsilon", "momentum", "training_mode"} or attrs.get("training_mode", 0):
        return None
    return guarded(lambda *a, **kw: batchnorm_fast(rt, *a, **kw), opdef.kernel)


# ---- elementwise ------------------------------------------------------------------------------------------------

def unary_fast(rt, x, act, a0=0.0, a1=0.0):
    if not _is_f32(x):
        return FALLBACK
    y = np.empty(x.shape, F32)
    if x.size:
        rt.call("ox_unary", [x.size, In(_contig(x)), Out(y), act, float(a0), float(a1)])
    return y


UNARY = activations.UNARY  # the ops claim_unary takes (Clip from opset 11 on: clip11_fast)


def clip_limits(lo, hi):
    """Clip's (min, max) from its optional float32 scalar inputs, or None (NaN limits: numpy's semantics)."""
    lim = []
    for v, inf in ((lo, -np.inf), (hi, np.inf)):
        if v is None:
            lim.append(inf)
        elif isinstance(v, np.ndarray) and v.dtype == F32 and v.size == 1:
            lim.append(float(v.reshape(())))
        else:
            return None
    if lim[0] != lim[0] or lim[1] != lim[1]:
        return None
    return lim


def clip11_fast(rt, x, lo=None, hi=None):
    lim = clip_limits(lo, hi)
    if lim is None:
        return FALLBACK
    return unary_fast(rt, x, ACT["clip"], lim[0], lim[1])


def unary_act(node, opdef, attrs):
    """(act code, a0, a1) of an activation node the unary kernel runs (Clip from opset 11 aside: its limits are
    inputs, clip_limits), or None."""
    if node.op_type == "Clip" and opdef.since >= 11:
        return None
    p = activations.unary_activation(node.op_type, opdef, attrs, ACT)
    return None if p is None else (ACT[p[0]], p[1], p[2])


def claim_unary(rt, node, opdef, attrs):
    if node.op_type == "Clip" and opdef.since >= 11:
        if attrs:
            return None
        return guarded(lambda *a, **kw: clip11_fast(rt, *a), opdef.kernel)
    p = unary_act(node, opdef, attrs)
    if p is None:
        return None
    act, a0, a1 = p
    return guarded(lambda x, **kw: unary_fast(rt, x, act, a0, a1), opdef.kernel)


_PLANS = {}


def broadcast_plan(sa, sb):
    """(out shape, int32[12] dims/strides) for A op B with numpy broadcasting in <= 4 coalesced dims, or None;
    cached per shape pair (the plan is pure Python work that costs more than a small kernel call)."""
    key = (sa, sb)
    plan = _PLANS.get(key, False)
    if plan is False:
        if len(_PLANS) > 4096:
            _PLANS.clear()
        plan = _PLANS[key] = _broadcast_plan(sa, sb)
    return plan


def _broadcast_plan(sa, sb):
    try:
        out = np.broadcast_shapes(sa, sb)
    except ValueError:
        return None
    r = len(out)
    sa = (1,) * (r - len(sa)) + tuple(sa)
    sb = (1,) * (r - len(sb)) + tuple(sb)

    def strides(shape):
        st, acc = [0] * r, 1
        for i in range(r - 1, -1, -1):
            st[i] = acc if shape[i] != 1 else 0
            acc *= shape[i]
        return st

    ta, tb = strides(sa), strides(sb)
    dims = []  # (size, stride a, stride b), outermost first, size-1 dims dropped, mergeable neighbours merged
    for i in range(r):
        if out[i] == 1:
            continue
        if dims:
            n, xa, xb = dims[-1]
            if xa == ta[i] * out[i] and xb == tb[i] * out[i]:
                dims[-1] = (n * out[i], ta[i], tb[i])
                continue
        dims.append((out[i], ta[i], tb[i]))
    if len(dims) > 4:
        return None
    dims = [(1, 0, 0)] * (4 - len(dims)) + dims
    if max(max(d) for d in dims) > 0x7FFFFFFF:
        return None  # (sizes wasm32's int32 parameters cannot hold: the numpy kernel reports them)
    p = np.array([d[0] for d in dims] + [d[1] for d in dims] + [d[2] for d in dims], dtype=np.int32)
    return out, p


def binary_fast(rt, opcode, a, b, x_shape_out=False):
    if not _is_f32(a, b):
        return FALLBACK
    plan = broadcast_plan(a.shape, b.shape)
    if plan is None:
        return FALLBACK
    out, p = plan
    if x_shape_out and out != a.shape:
        return FALLBACK  # PRelu: slope must broadcast to X
    y = np.empty(out, F32)
    if y.size:
        rt.call("ox_binary", [opcode, In(p), In(_contig(a)), In(_contig(b)), Out(y)])
    return y


def binary_op(node, opdef, attrs):
    """The ox_binary op code of a two-input arithmetic node the kernel runs, or None."""
    op_type = node.op_type
    if attrs or op_type not in BINOP:
        return None
    if op_type in ("Add", "Sub", "Mul", "Div") and opdef.since < 7:
        return None
    if op_type in ("Max", "Min"):
        if opdef.since < 8 or len(node.inputs) != 2 or not all(node.inputs):
            return None
    if op_type == "PRelu" and opdef.since < 6:
        return None
    return BINOP[op_type]


def claim_binary(rt, node, opdef, attrs):
    code = binary_op(node, opdef, attrs)
    if code is None:
        return None
    prelu = node.op_type == "PRelu"
    return guarded(lambda a, b, **kw: binary_fast(rt, code, a, b, prelu), opdef.kernel)
