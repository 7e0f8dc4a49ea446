"""Normalization ops: BatchNormalization, Layer/Instance/Group/RMS norm, LRN, LpNormalization, MVN and Dropout."""
import numpy as np

from ..dtypes import BOOL, np_dtype
from ..errors import Fail, InvalidArgument
from .inference import UNKNOWN, positive_axis, rule, same_as_input
from .math import via_float32
from .registry import op
from .util import norm_axis
from .softmax import compute_dtype


def _outs(results, ctx):
    """Trim a tuple of candidate outputs to the number the node declares (a single array when only Y)."""
    n = max(1, ctx.num_outputs if ctx is not None else 1)
    res = tuple(results[:n])
    return res[0] if n == 1 else res


def _stash(stash_type, x_dtype, name):
    try:
        sd = np_dtype(stash_type)
    except KeyError:
        raise InvalidArgument(f"{name}: unsupported stash_type {stash_type}") from None
    # Compute in the wider of the stash type and the input (double input keeps double precision).
    cd = np.dtype(np.float64) if np.dtype(x_dtype) == np.float64 else compute_dtype(sd)
    return sd, cd


# ---------------------------------------------------------------------------------------------------------------------
# BatchNormalization
# ---------------------------------------------------------------------------------------------------------------------

def _batch_norm(x, scale, b, mean, var, epsilon, momentum, training, spatial, name):
    if x.ndim < 2:
        x_ = x.reshape(x.shape + (1,) * (2 - x.ndim))
    else:
        x_ = x
    cd = compute_dtype(x.dtype)
    xf = x_.astype(cd, copy=False)
    for label, a in (("scale", scale), ("B", b), ("mean", mean), ("var", var)):
        if spatial and np.ndim(a) != 1:
            raise InvalidArgument(f"{name}: invalid input {label}: rank {np.ndim(a)}, must be 1 (C)")
    if spatial:
        pshape = (1, x_.shape[1]) + (1,) * (x_.ndim - 2)
        axes = (0,) + tuple(range(2, x_.ndim))
    else:
        pshape = (1,) + x_.shape[1:]
        axes = (0,)

    def p(a):
        a = np.asarray(a).astype(cd, copy=False)
        if a.size != int(np.prod(pshape)):
            raise InvalidArgument(f"{name}: parameter of shape {a.shape} does not match input of shape {x.shape}")
        return a.reshape(pshape)

    s, bb, m_in, v_in = p(scale), p(b), p(mean), p(var)
    eps = cd.type(epsilon)
    if training:
        cur_mean = np.mean(xf, axis=axes, keepdims=True)
        cur_var = np.mean(np.square(xf - cur_mean), axis=axes, keepdims=True)
        y = (xf - cur_mean) / np.sqrt(cur_var + eps) * s + bb
        mom = cd.type(momentum)
        run_mean = m_in * mom + cur_mean * (cd.type(1) - mom)
        run_var = v_in * mom + cur_var * (cd.type(1) - mom)
    else:
        cur_mean, cur_var = m_in, v_in
        a = s / np.sqrt(v_in + eps)  # per-channel scale and shift first: two passes over x instead of four
        y = xf * a
        y += bb - m_in * a
        run_mean, run_var = m_in, v_in
    ps = np.shape(mean)
    y = y.reshape(x.shape).astype(x.dtype, copy=False)
    return (y, run_mean.reshape(ps).astype(np.asarray(mean).dtype), run_var.reshape(ps).astype(np.asarray(var).dtype),
            cur_mean.reshape(ps).astype(np.asarray(mean).dtype), cur_var.reshape(ps).astype(np.asarray(var).dtype))


@op("BatchNormalization", since=1)
@via_float32(outputs={0: 0, 1: 3, 2: 4, 3: 3, 4: 4})
def batch_norm_1(x, scale, b, mean, var, *, consumed_inputs=None, epsilon=1e-5, is_test=0, momentum=0.9, spatial=1,
                 ctx=None):
    training = not is_test and ctx is not None and ctx.num_outputs > 1
    return _outs(_batch_norm(x, scale, b, mean, var, epsilon, momentum, training, spatial, "BatchNormalization"), ctx)


@op("BatchNormalization", since=6)
@via_float32(outputs={0: 0, 1: 3, 2: 4, 3: 3, 4: 4})
def batch_norm_6(x, scale, b, mean, var, *, epsilon=1e-5, is_test=0, momentum=0.9, spatial=1, ctx=None):
    training = not is_test and ctx is not None and ctx.num_outputs > 1
    return _outs(_batch_norm(x, scale, b, mean, var, epsilon, momentum, training, spatial, "BatchNormalization"), ctx)


@op("BatchNormalization", since=7)
@via_float32(outputs={0: 0, 1: 3, 2: 4, 3: 3, 4: 4})
def batch_norm_7(x, scale, b, mean, var, *, epsilon=1e-5, momentum=0.9, spatial=1, ctx=None):
    training = ctx is not None and ctx.num_outputs > 1
    return _outs(_batch_norm(x, scale, b, mean, var, epsilon, momentum, training, spatial, "BatchNormalization"), ctx)


@op("BatchNormalization", since=9)
@via_float32(outputs={0: 0, 1: 3, 2: 4, 3: 3, 4: 4})
def batch_norm_9(x, scale, b, mean, var, *, epsilon=1e-5, momentum=0.9, ctx=None):
    training = ctx is not None and ctx.num_outputs > 1
    return _outs(_batch_norm(x, scale, b, mean, var, epsilon, momentum, training, 1, "BatchNormalization"), ctx)


@op("BatchNormalization", since=14)
@via_float32(outputs={0: 0, 1: 3, 2: 4, 3: 3, 4: 4})
def batch_norm_14(x, scale, b, input_mean, input_var, *, epsilon=1e-5, momentum=0.9, training_mode=0, ctx=None):
    res = _batch_norm(x, scale, b, input_mean, input_var, epsilon, momentum, bool(training_mode), 1,
                      "BatchNormalization")
    return _outs(res[:3], ctx)


@rule("BatchNormalization")
def _batch_norm_rule(f):
    """Y like X; the running (and saved) mean and variance like the mean and var inputs."""
    mean, var = (f.ins[3], f.ins[4]) if len(f.ins) > 4 else (UNKNOWN, UNKNOWN)
    for i in range(1, 5) if f.opset >= 14 else ():  # (onnxruntime's shape inference from opset 14; its kernel: all)
        if f.rank(i) not in (None, 1):
            raise Fail(f"Node ({f.node.name}) Op (BatchNormalization) [ShapeInferenceError] Input {i} expected to "
                       f"have rank 1 but has rank {f.rank(i)}.")
    return [f.ins[0], mean, var, mean, var][:max(f.n_outputs, 1)]


# ---------------------------------------------------------------------------------------------------------------------
# Layer / RMS / Instance / Group normalization
# ---------------------------------------------------------------------------------------------------------------------

@op("LayerNormalization", since=1)  # onnxruntime accepts it before opset 17 (older exports and its own fusions)
@op("LayerNormalization", since=17)
@via_float32(outputs=(0,))
def layer_norm(x, scale, b=None, *, axis=-1, epsilon=1e-5, stash_type=1, ctx=None):
    a = norm_axis(axis, x.ndim, "LayerNormalization")
    _check_params(x.shape[a:], "LayerNormalization", scale=scale, B=b)
    sd, cd = _stash(stash_type, x.dtype, "LayerNormalization")
    xf = x.astype(cd, copy=False)
    axes = tuple(range(a, x.ndim))
    mean = np.mean(xf, axis=axes, keepdims=True)
    dev = xf - mean
    var = np.mean(np.square(dev), axis=axes, keepdims=True)
    std = np.sqrt(var + cd.type(epsilon))
    y = (dev / std).astype(x.dtype, copy=False)
    y = y * scale
    if b is not None:
        y = y + b
    y = np.asarray(y).astype(x.dtype, copy=False)
    return _outs((y, mean.astype(sd), (cd.type(1) / std).astype(sd)), ctx)


def _check_params(shape, what, **params):
    """Scale / bias inputs must broadcast to `shape` (the normalized dims) without growing it."""
    for name, p in params.items():
        if p is not None:
            try:
                ok = np.broadcast_shapes(p.shape, tuple(shape)) == tuple(shape)
            except ValueError:
                ok = False
            if not ok:
                raise InvalidArgument(f"{what}: {name} shape {p.shape} does not broadcast to the normalized shape "
                                      f"{tuple(shape)}")


def stat_dims(dims, axis):
    """The dims of statistics over the axes from `axis` on, kept as 1s (None when the rank is unknown)."""
    if dims is None:
        return None
    a = positive_axis(axis, len(dims))
    if not 0 <= a < len(dims):
        return None  # (the kernel reports the axis)
    return dims[:a] + [1] * (len(dims) - a)


@rule("LayerNormalization")
def _layer_norm_rule(f):
    """Y like X; Mean and InvStdDev of the stash type, reduced from `axis` on."""
    stat = (f.attr("stash_type", 1), stat_dims(f.dims(0), f.attr("axis", -1)))
    return [f.ins[0], stat, stat]


@op("RMSNormalization", since=23)
@via_float32(outputs={0: 1})
def rms_norm(x, scale, *, axis=-1, epsilon=1e-5, stash_type=1):
    """Y in the scale's type (the schema's V; X's type T may differ)."""
    a = norm_axis(axis, x.ndim, "RMSNormalization")
    _check_params(x.shape[a:], "RMSNormalization", scale=scale)
    _, cd = _stash(stash_type, x.dtype, "RMSNormalization")
    xf = x.astype(cd, copy=False)
    ms = np.mean(np.square(xf), axis=tuple(range(a, x.ndim)), keepdims=True)
    y = (xf / np.sqrt(ms + cd.type(epsilon))).astype(x.dtype, copy=False)
    return np.asarray(y * scale).astype(np.result_type(scale), copy=False)


@op("InstanceNormalization", since=1)
@via_float32
def instance_norm(x, scale, b, *, epsilon=1e-5):
    if x.ndim < 2:
        raise InvalidArgument(f"InstanceNormalization: input must have rank >= 2, got shape {x.shape}")
    for what, p in (("scale", scale), ("B", b)):
        if p.shape != x.shape[1:2]:
            raise InvalidArgument(f"InstanceNormalization: invalid input {what}: shape {p.shape}, must be (C,) = "
                                  f"{x.shape[1:2]}")
    cd = compute_dtype(x.dtype)
    xf = x.astype(cd, copy=False)
    axes = tuple(range(2, x.ndim))
    pshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    mean = np.mean(xf, axis=axes, keepdims=True)
    dev = xf - mean
    var = np.mean(np.square(dev), axis=axes, keepdims=True)
    y = dev / np.sqrt(var + cd.type(epsilon)) * scale.astype(cd).reshape(pshape) + b.astype(cd).reshape(pshape)
    return y.astype(x.dtype, copy=False)


def _group_norm(x, scale, b, epsilon, num_groups, cd, per_channel):
    n, c = x.shape[0], x.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise InvalidArgument(f"GroupNormalization: {c} channels are not divisible into num_groups={num_groups}")
    want = c if per_channel else num_groups
    if np.size(scale) != want or np.size(b) != want:
        raise InvalidArgument(f"GroupNormalization: scale and bias need {want} values each, got {np.size(scale)} "
                              f"and {np.size(b)}")
    xg = x.astype(cd, copy=False).reshape(n, num_groups, -1)
    mean = np.mean(xg, axis=2, keepdims=True)
    dev = xg - mean
    var = np.mean(np.square(dev), axis=2, keepdims=True)
    norm = dev / np.sqrt(var + cd.type(epsilon))
    if per_channel:
        norm = norm.astype(x.dtype, copy=False).reshape(x.shape)
        pshape = (1, c) + (1,) * (x.ndim - 2)
        y = norm * scale.reshape(pshape) + b.reshape(pshape)
    else:
        s = scale.astype(cd).reshape(1, num_groups, 1)
        bb = b.astype(cd).reshape(1, num_groups, 1)
        y = (norm * s + bb).reshape(x.shape)
    return np.asarray(y).astype(x.dtype, copy=False)


@op("GroupNormalization", since=18)
@via_float32
def group_norm_18(x, scale, b, *, epsilon=1e-5, num_groups):
    return _group_norm(x, scale, b, epsilon, num_groups, compute_dtype(x.dtype), per_channel=False)


@op("GroupNormalization", since=21)
@via_float32
def group_norm_21(x, scale, b, *, epsilon=1e-5, num_groups, stash_type=1):
    _, cd = _stash(stash_type, x.dtype, "GroupNormalization")
    return _group_norm(x, scale, b, epsilon, num_groups, cd, per_channel=True)


rule("InstanceNormalization", "GroupNormalization")(same_as_input)
rule("RMSNormalization")(lambda f: [(f.type(1), f.dims(0))])  # (Y is V, the scale's type)


# ---------------------------------------------------------------------------------------------------------------------
# LRN, LpNormalization, MeanVarianceNormalization
# ---------------------------------------------------------------------------------------------------------------------

@op("LRN", since=1)
@via_float32
def lrn(x, *, alpha=1e-4, beta=0.75, bias=1.0, size):
    if x.ndim < 3:
        raise InvalidArgument(f"LRN: input must have rank >= 3, got shape {x.shape}")
    if not (size >= 1 and alpha > 0 and beta > 0 and bias > 0):
        raise InvalidArgument(f"LRN: size {size}, alpha {alpha}, beta {beta} and bias {bias} must be positive")
    cd = compute_dtype(x.dtype)
    xf = x.astype(cd, copy=False)
    c = x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = np.square(xf)
    pad = [(0, 0)] * x.ndim
    pad[1] = (lo + 1, hi)
    cs = np.cumsum(np.pad(sq, pad), axis=1)
    # window of channel i covers padded indices [i+1, i+size] (inclusive) => cs[i+size] - cs[i]
    idx = np.arange(c)
    ssum = np.take(cs, idx + size, axis=1) - np.take(cs, idx, axis=1)
    y = xf / np.power(cd.type(bias) + cd.type(alpha / size) * ssum, cd.type(beta))
    return y.astype(x.dtype, copy=False)


@op("LpNormalization", since=1)
@via_float32
def lp_normalization(x, *, axis=-1, p=2):
    a = norm_axis(axis, x.ndim, "LpNormalization")
    cd = compute_dtype(x.dtype)
    xf = x.astype(cd, copy=False)
    if p == 1:
        nrm = np.sum(np.abs(xf), axis=a, keepdims=True)
    elif p == 2:
        nrm = np.sqrt(np.sum(np.square(xf), axis=a, keepdims=True))
    else:
        raise InvalidArgument(f"LpNormalization: p must be 1 or 2, got {p}")
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(nrm == 0, cd.type(0), xf / nrm)
    return y.astype(x.dtype, copy=False)


@op("MeanVarianceNormalization", since=9)
@via_float32
def mvn(x, *, axes=(0, 2, 3)):
    cd = compute_dtype(x.dtype)
    xf = x.astype(cd, copy=False)
    ax = tuple(sorted(set(norm_axis(int(a), x.ndim, "MeanVarianceNormalization") for a in axes)))
    mean = np.mean(xf, axis=ax, keepdims=True)
    var = np.mean(np.square(xf), axis=ax, keepdims=True) - np.square(mean)
    std = np.sqrt(np.maximum(var, cd.type(0)))
    y = (xf - mean) / (std + cd.type(1e-9))
    return y.astype(x.dtype, copy=False)


rule("LRN", "LpNormalization", "MeanVarianceNormalization")(same_as_input)


# ---------------------------------------------------------------------------------------------------------------------
# Dropout
# ---------------------------------------------------------------------------------------------------------------------

def _identity_dropout(data, ctx, mask_dtype):
    out = np.array(data, copy=True)
    if ctx is not None and ctx.num_outputs > 1:
        return out, np.ones(np.shape(data), dtype=mask_dtype)
    return out


@op("Dropout", since=1)
@via_float32
def dropout_1(data, *, consumed_inputs=None, is_test=0, ratio=0.5, ctx=None):
    return _identity_dropout(data, ctx, np.asarray(data).dtype)


@op("Dropout", since=6)
@via_float32
def dropout_6(data, *, is_test=0, ratio=0.5, ctx=None):
    return _identity_dropout(data, ctx, np.asarray(data).dtype)


@op("Dropout", since=7)
@via_float32
def dropout_7(data, *, ratio=0.5, ctx=None):
    return _identity_dropout(data, ctx, np.asarray(data).dtype)


@op("Dropout", since=10)
@via_float32
def dropout_10(data, *, ratio=0.5, ctx=None):
    return _identity_dropout(data, ctx, np.bool_)


@op("Dropout", since=12, host_inputs=(1, 2))
@via_float32
def dropout_12(data, ratio=None, training_mode=None, *, seed=None, ctx=None):
    r = 0.5 if ratio is None else float(np.asarray(ratio).reshape(-1)[0])
    training = training_mode is not None and bool(np.asarray(training_mode).reshape(-1)[0])
    if not 0 <= r < 1:  # (out of inference too, as onnxruntime)
        raise Fail(f"Dropout: ratio must be in the range [0, 1), got {r}")
    if not training or r == 0:
        return _identity_dropout(data, ctx, np.bool_)
    # Seeded Mersenne Twister (numpy's legacy RandomState): the same stream onnx's reference uses for a given seed.
    rng = np.random.RandomState(None if seed is None else int(seed) & 0xFFFFFFFF)
    mask = rng.uniform(0.0, 1.0, size=np.shape(data)) >= r
    cd = compute_dtype(data.dtype)
    out = (data.astype(cd) * mask * cd.type(1.0 / (1.0 - r))).astype(data.dtype, copy=False)
    if ctx is not None and ctx.num_outputs > 1:
        return out, mask
    return out


@rule("Dropout")
def _dropout_rule(f):
    """output like data; the mask is bool from opset 10 (data's type before)."""
    return [f.ins[0], (BOOL if f.opset >= 10 else f.type(0), f.dims(0))]
