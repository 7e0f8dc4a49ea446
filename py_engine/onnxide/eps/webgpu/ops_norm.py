"""WebGPU Softmax / LogSoftmax / Hardmax and the normalisations (Layer, RMS, Skip, Batch, Instance, Group, Lp, MVN)."""
import numpy as np

from ...errors import InvalidArgument
from ...ops.registry import MS_DOMAIN
from ...ops.util import norm_axis
from . import ops_elementwise as E
from . import programs as P
from .claims import F16, F32, FLOAT
from .ops_data import expand
from .ops_reduce import LOOP, arg_body, claim, load, rows, store


# --- Softmax / LogSoftmax / Hardmax ------------------------------------------------------------------------------

def _softmax_body(log, dtype, zero_sum=False):
    """WGSL of a softmax row (log: LogSoftmax); `zero_sum`: a row whose exponentials sum to 0 gives zeros (the
    attention ops' rule) instead of NaN. f16 rows round each step to f16 as the CPU EP (and ONNX's reference) do."""
    def r(v):
        return f"f32(f16({v}))" if dtype == F16 else v
    x = load("x", "at(base, j)")
    e = r(f"exp({r(x + ' - mx')})")
    out = f"{r('x_ - mx')} - {r('log(s)')}" if log else f"{r('exp(' + r('x_ - mx') + ')')} / s"
    total = "select(total, 1.0, total == 0.0)" if zero_sum else "total"
    return f"""var mx = -inf_f32();
  {LOOP} {{ mx = max_nan(mx, {x}); }}
  mx = finite_or_zero(wg_max(mx, lid));
  var acc = 0.0;
  {LOOP} {{ acc += {e}; }}
  let total = wg_sum(acc, lid);
  let s = {r(total)};
  {LOOP} {{ let o = at(base, j); let x_ = {load("x", "o")}; {store("y", dtype, "o", out)} }}"""


def _softmax_axes(op, x, axis, coerced):
    """The axes one softmax row spans: from `axis` on (opset < 13: the input coerced to 2-D), or `axis`."""
    if not coerced:
        return [norm_axis(axis, x.ndim, op)]
    a = axis + x.ndim if axis < 0 else axis
    if not 0 <= a <= x.ndim:
        raise InvalidArgument(f"{op}: axis {axis} is out of range for an input of rank {x.ndim}")
    return list(range(a, x.ndim))


def softmax(device, op, x, axis, coerced, zero_sum=False):
    y = device.alloc(x.shape, x.dtype)
    if y.size:
        axes = _softmax_axes(op, x, axis, coerced)
        if op == "Hardmax":
            emit = f"{LOOP} {{ {store('y', x.dtype, 'at(base, j)', 'select(0.0, 1.0, j == best)')} }}"
            rows(device, op, arg_body(emit), [("x", x)], [("y", y)], x.shape, axes, [1, 0])
        else:
            rows(device, op, _softmax_body(op == "LogSoftmax", x.dtype, zero_sum), [("x", x)], [("y", y)], x.shape,
                 axes)
    return y


def _softmax_claim(device, spec):
    op, coerced = spec.op_type, spec.opdef.since < 13
    default = 1 if coerced else -1
    return lambda x, *, axis=default, **kw: softmax(device, op, x, axis, coerced)


# --- Layer / RMS / Skip normalisation ------------------------------------------------------------------------------

def norm_body(val, rms, emit, stats=""):
    """WGSL: `mean` and `inv` = 1 / sqrt(variance + p(0)) of the row's values `val` (an expression of o =
    at(base, j) and j; with `rms` mean is 0 and the variance the mean square), then `emit` per element (o, j and
    its value v) and `stats` once per row."""
    if rms:
        first = f"""var acc = 0.0;
  {LOOP} {{ let o = at(base, j); let v = {val}; acc += v * v; }}
  let mean = 0.0;"""
    else:
        first = f"""var acc = 0.0;
  {LOOP} {{ let o = at(base, j); acc += {val}; }}
  let mean = wg_sum(acc, lid) / f32(n);
  acc = 0.0;
  {LOOP} {{ let o = at(base, j); let d = {val} - mean; acc += d * d; }}"""
    return f"""{first}
  let inv = 1.0 / sqrt(wg_sum(acc, lid) / f32(n) + p(0));
  {LOOP} {{ let o = at(base, j); let v = {val}; {emit} }}
  if (lid == 0u) {{ {stats} }}"""


def block_param(device, t, block, name, what):
    """`t` (broadcast to the normalised block's shape `block`) as a tensor of the block's size in C order: a view
    when it already is one, else an expanded copy (the caller releases it)."""
    dims = list(t.shape)
    while dims and dims[0] == 1 and len(dims) > len(block):
        dims.pop(0)
    try:
        ok = len(dims) <= len(block) and tuple(np.broadcast_shapes(tuple(dims), tuple(block))) == tuple(block)
    except ValueError:
        ok = False
    if not ok:
        raise InvalidArgument(f"{name}: {what} of shape {t.shape} does not broadcast to {tuple(block)}")
    size = int(np.prod(block, dtype=np.int64))
    return device.view(t, (size,)) if t.size == size else expand(device, t, block)


def layer_norm(device, op, x, scale, bias, axis, epsilon, rms, n_out, skip=None, skip_bias=None, y_dtype=None):
    """LayerNormalization / RMS forms over the axes from `axis` on: y = (v - mean) * inv * scale + bias where v
    is x (+ skip + skip_bias: the Skip* ops). Outputs y, then per n_out the statistics (mean, inv: f32) and the sum
    v (Skip* ops: (y, mean, inv, sum); RMS forms without a mean give zeros, Simplified gives (y, inv))."""
    a = norm_axis(axis, x.ndim, op)
    block = x.shape[a:]
    stat_shape = x.shape[:a] + (1,) * (x.ndim - a)
    temps = [block_param(device, scale, block, op, "scale")]
    ins = [("x", x), ("g", temps[0])]
    val = load("x", "o")
    if skip is not None:
        if skip.shape != x.shape:
            if skip.ndim > x.ndim or skip.shape[-1:] != x.shape[-1:]:
                raise InvalidArgument(f"{op}: skip shape {skip.shape} does not broadcast to input shape {x.shape}")
            skip = block_param(device, skip, x.shape, op, "skip")
            temps.append(skip)
        ins.append(("s", skip))
        val = f"({val} + {load('s', 'o')}"
        if skip_bias is not None:
            temps.append(block_param(device, skip_bias, x.shape[-1:], op, "bias"))
            ins.append(("sb", temps[-1]))
            val += f" + {load('sb', 'j')}"
        val += ")"
    out = "(v - mean) * inv * " + load("g", "j")
    if bias is not None:
        temps.append(block_param(device, bias, block, op, "bias"))
        ins.append(("b", temps[-1]))
        out += " + " + load("b", "j")
    y = device.alloc(x.shape, y_dtype or x.dtype)
    outs = [("y", y)]
    stats = []
    names = (["mu", "rs", "sum"] if skip is not None else ["rs"] if op == "SimplifiedLayerNormalization"
             else ["mu", "rs"])[:max(n_out - 1, 0)]
    for name in names:
        t = device.alloc(x.shape if name == "sum" else stat_shape, x.dtype if name == "sum" else F32)
        outs.append((name, t))
        stats.append(t)
    emit = store("y", y.dtype, "o", out) + (store("sum", x.dtype, "o", "v") if "sum" in names else "")
    row_stats = "".join(store(k, F32, "row", v) for k, v in (("mu", "mean"), ("rs", "inv")) if k in names)
    try:
        if y.size:
            rows(device, op, norm_body(val, rms, emit, row_stats), ins, outs, x.shape, range(a, x.ndim),
                 [P.f32_word(epsilon)])
    finally:
        for t in temps:
            device.release(t)
    return (y, *stats) if n_out > 1 else y


def _outputs(spec):
    return len(spec.node.outputs)


def _layer_norm_claim(device, spec):
    if spec.attrs.get("stash_type", 1) != 1:
        return None
    n, op = _outputs(spec), spec.op_type
    if op in ("SimplifiedLayerNormalization", "RMSNormalization"):  # (y has the scale's type)
        def simplified(x, scale, *, axis=-1, epsilon=1e-5, **kw):
            return layer_norm(device, op, x, scale, None, axis, epsilon, True, n, y_dtype=scale.dtype)
        return simplified

    def kernel(x, scale, bias=None, *, axis=-1, epsilon=1e-5, **kw):
        return layer_norm(device, op, x, scale, bias, axis, epsilon, False, n)
    return kernel


def _skip_claim(device, spec):
    n, op = _outputs(spec), spec.op_type
    if op == "SkipSimplifiedLayerNormalization":
        def simplified(x, skip, gamma, bias=None, *, epsilon=1e-12, **kw):
            _check_skip(op, x, gamma, None)
            return _zero_mean(device, layer_norm(device, op, x, gamma, None, -1, epsilon, True, n, skip, bias))
        return simplified

    def kernel(x, skip, gamma, beta=None, bias=None, *, epsilon=1e-12, **kw):
        _check_skip(op, x, gamma, beta)
        return layer_norm(device, op, x, gamma, beta, -1, epsilon, False, n, skip, bias)
    return kernel


def _check_skip(op, x, gamma, beta):
    if x.ndim not in (2, 3):
        raise InvalidArgument(f"{op}: input must be 2D or 3D, got shape {x.shape}")
    if gamma.shape != x.shape[-1:] or beta is not None and beta.shape != x.shape[-1:]:
        raise InvalidArgument(f"{op}: gamma/beta must have shape ({x.shape[-1]},)")


def _zero_mean(device, outs):
    """SkipSimplifiedLayerNormalization's mean output: zeros, as onnxruntime's (an RMS norm has no mean)."""
    if not isinstance(outs, tuple):
        return outs
    mean = device.zeros(outs[1].shape, outs[1].dtype)
    device.release(outs[1])
    return (outs[0], mean) + outs[2:]


# --- Instance / Group / Lp / mean-variance normalisation ------------------------------------------------------------

def channel_norm(device, op, x, scale, bias, epsilon, groups=None, per_channel=True):
    """InstanceNormalization (groups None: a row per (n, c)) and GroupNormalization (a row per (n, group); scale
    and bias per channel, or per group with per_channel False)."""
    if x.ndim < 2:
        raise InvalidArgument(f"{op}: input must have rank >= 2, got shape {x.shape}")
    c = x.shape[1]
    spatial = int(np.prod(x.shape[2:], dtype=np.int64))
    g = c if groups is None else int(groups)
    if g <= 0 or c % g:
        raise InvalidArgument(f"{op}: {c} channels are not divisible into num_groups={g}")
    width = c if per_channel else g
    for t, what in ((scale, "scale"), (bias, "bias")):
        if t.size != width:
            raise InvalidArgument(f"{op}: {what} of shape {t.shape} does not match {width} channels")
    y = device.alloc(x.shape, x.dtype)
    if y.size:
        gi = "(row % pu(1)) * pu(2) + j / pu(3)" if per_channel else "row % pu(1)"
        emit = store("y", x.dtype, "o", f"(v - mean) * inv * {load('g', gi)} + {load('b', gi)}")
        body = norm_body(load("x", "o"), False, emit)
        params = [P.f32_word(epsilon), g, c // g, spatial]
        grouped = (x.shape[0] * g, (c // g) * spatial)  # rows of a group's channels, contiguous
        xg = device.view(x, grouped)
        try:
            rows(device, op, body, [("x", xg), ("g", scale), ("b", bias)], [("y", y)], grouped, [1], params)
        finally:
            device.release(xg)
    return y


def lp_norm(device, x, axis, p):
    a = norm_axis(axis, x.ndim, "LpNormalization")
    y = device.alloc(x.shape, x.dtype)
    if y.size:
        term, total = ("abs(v)", "s") if p == 1 else ("v * v", "sqrt(s)")
        body = f"""var acc = 0.0;
  {LOOP} {{ let v = {load("x", "at(base, j)")}; acc += {term}; }}
  let s = wg_sum(acc, lid);
  let nrm = {total};
  {LOOP} {{ let o = at(base, j); {store("y", x.dtype, "o", f"select({load('x', 'o')} / nrm, 0.0, nrm == 0.0)")} }}"""
        rows(device, "LpNormalization", body, [("x", x)], [("y", y)], x.shape, [a])
    return y


def mvn(device, x, axes):
    """MeanVarianceNormalization: (x - mean) / (sqrt(max(E[x^2] - mean^2, 0)) + 1e-9), as the CPU EP."""
    ax = sorted(set(norm_axis(int(a), x.ndim, "MeanVarianceNormalization") for a in axes))
    y = device.alloc(x.shape, x.dtype)
    if y.size:
        body = f"""var acc = 0.0;
  var sq = 0.0;
  {LOOP} {{ let v = {load("x", "at(base, j)")}; acc += v; sq += v * v; }}
  let mean = wg_sum(acc, lid) / f32(n);
  let sd = sqrt(max(wg_sum(sq, lid) / f32(n) - mean * mean, 0.0));
  {LOOP} {{ let o = at(base, j); {store("y", x.dtype, "o", f"({load('x', 'o')} - mean) / (sd + 1e-9)")} }}"""
        rows(device, "MeanVarianceNormalization", body, [("x", x)], [("y", y)], x.shape, ax)
    return y


def batch_norm(device, x, scale, bias, mean, var, epsilon):
    """Inference BatchNormalization: per channel a = scale / sqrt(var + eps) and b - mean * a (f32), then
    y = x * a + (b - mean * a), the CPU EP's two passes."""
    c = x.shape[1] if x.ndim >= 2 else 1
    for t in (scale, bias, mean, var):
        if t.size != c:
            raise InvalidArgument(f"BatchNormalization: parameter of shape {t.shape} does not match input of "
                                  f"shape {x.shape}")
    flat = [device.view(t, (c,)) for t in (scale, bias, mean, var)]
    a = E.run(device, "BatchNormalization", "a / sqrt(b + p0)", [flat[0], flat[3]], F32, (epsilon, 0.0),
              float_math=True)
    shift = E.run(device, "BatchNormalization", "a - b * c", [flat[1], flat[2], a], F32, float_math=True)
    pshape = (c,) + (1,) * max(x.ndim - 2, 0)
    views = [device.view(a, pshape), device.view(shift, pshape)]
    try:
        return E.run(device, "BatchNormalization", "a * b + c", [x] + views, x.dtype, out_shape=x.shape,
                     float_math=True)
    finally:
        for t in flat + views + [a, shift]:
            device.release(t)


def _batch_norm_claim(device, spec):
    if len([o for o in spec.node.outputs if o]) != 1 or spec.attrs.get("training_mode", 0) or \
            not spec.attrs.get("spatial", 1):
        return None
    return lambda x, s, b, m, v, *, epsilon=1e-5, **kw: batch_norm(device, x, s, b, m, v, epsilon)


def _group_claim(device, spec):
    if spec.attrs.get("stash_type", 1) != 1:
        return None
    per_channel = spec.opdef.since >= 21
    return lambda x, s, b, *, epsilon=1e-5, num_groups, **kw: channel_norm(
        device, "GroupNormalization", x, s, b, epsilon, num_groups, per_channel)


def _lp_claim(device, spec):
    if spec.attrs.get("p", 2) not in (1, 2):
        return None
    return lambda x, *, axis=-1, p=2, **kw: lp_norm(device, x, axis, p)


claim(["Softmax", "LogSoftmax", "Hardmax"], FLOAT, _softmax_claim)
claim(["LayerNormalization", "SimplifiedLayerNormalization"], FLOAT, _layer_norm_claim)
claim(["RMSNormalization"], FLOAT, _layer_norm_claim, since=23)
claim(["SkipLayerNormalization", "SkipSimplifiedLayerNormalization"], FLOAT, _skip_claim, domain=MS_DOMAIN)
claim(["BatchNormalization"], FLOAT, _batch_norm_claim)
claim(["InstanceNormalization"], FLOAT, lambda device, spec: lambda x, s, b, *, epsilon=1e-5, **kw:
      channel_norm(device, "InstanceNormalization", x, s, b, epsilon))
claim(["GroupNormalization"], FLOAT, _group_claim, since=18)
claim(["LpNormalization"], FLOAT, _lp_claim)
claim(["MeanVarianceNormalization"], FLOAT, lambda device, spec: lambda x, *, axes=(0, 2, 3), **kw:
      mvn(device, x, axes), since=9)
