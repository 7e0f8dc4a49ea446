"""Lowerings every chain backend shares (chains.py): the step dispatcher (which steps a chain may take at all), the
ops that are only data movement — views as aliases, Transpose / Slice / Expand / Concat / Gather by a constant scalar
index as strided copies, Pad as a fill and a copy (constant mode) or strided copies (reflect, edge, wrap) — in the
"strided" and "fill" instructions both interpreters implement with the same parameters: strided p = rank, x offset,
y offset, dims[6], x strides[6], y strides[6] (floats); fill p = n, f[2] = the value — and the geometry of a
ReduceMean over trailing axes (each backend's global-average instruction) — which LSTM nodes a chain takes, and
DynamicQuantizeMatMul as a "dq" of its x (once per chain for every node reading it: p = n, t = x, the quantized
buffer) and a "qgemm" (p = M, N, K, per-column scale; t = the quantized buffer, packed B, b_zero_point, b_scale, bias,
y, scratch), the instructions both interpreters implement."""
import itertools
import math

import numpy as np

from ..errors import OnnxideError
from ..ops import pad as pad_ops
from ..ops import qgemm_forms as forms
from ..ops import reduce as reduce_ops
from ..ops import registry, rnn
from .chains import F32, VIEWS, Decline


def out(step):
    """The step's one output (optional ones it may have are unnamed)."""
    outs = [k for k in step.out_keys if k]
    if len(outs) != 1 or not step.out_keys[0]:
        raise Decline("outputs")
    return outs[0]


def strided(b, x, y, dims, xs, ys, x_off=0, y_off=0):
    if not 1 <= len(dims) <= 6:
        raise Decline("rank")
    pad = [0] * (6 - len(dims))
    b.emit("strided", [len(dims), x_off, y_off, *dims, *pad, *xs, *pad, *ys, *pad], [x, y])


def contiguous(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


def _transpose(b, step, node, opdef, attrs):
    shape = b.shape(step.in_keys[0])
    perm = list(attrs.get("perm", range(len(shape) - 1, -1, -1)))
    if sorted(perm) != list(range(len(shape))):
        raise Decline("perm")
    y = tuple(shape[p] for p in perm)
    xs = contiguous(shape)
    strided(b, b.src(step.in_keys[0]), b.dst(out(step), y), y, [xs[p] for p in perm], contiguous(y))


def _slice(b, step, node, opdef, attrs):
    shape = b.shape(step.in_keys[0])
    if opdef.since < 10:
        starts, ends, axes, steps = attrs.get("starts"), attrs.get("ends"), attrs.get("axes"), None
    else:
        given = [b.const(k) for k in (list(step.in_keys[1:]) + [None] * 4)[:4]]
        if given[0] is None or given[1] is None or any(g is None and k is not None for g, k in zip(
                given[2:], (list(step.in_keys[3:]) + [None, None])[:2])):
            raise Decline("Slice bounds not constant")
        starts, ends, axes, steps = [None if g is None else [int(v) for v in np.ravel(g)] for g in given]
    if starts is None or ends is None:
        raise Decline("Slice bounds")
    axes = list(range(len(starts))) if axes is None else [a + len(shape) if a < 0 else a for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    if len(ends) != len(starts) or len(axes) != len(starts) or len(steps) != len(starts) or 0 in steps or \
            len(set(axes)) != len(axes) or any(not 0 <= a < len(shape) for a in axes):
        raise Decline("Slice arguments")
    xs, offset = contiguous(shape), 0
    dims, strides = list(shape), list(xs)
    for a, st, en, sp in zip(axes, starts, ends, steps):
        r = range(*slice(st, en, sp).indices(shape[a]))
        dims[a], strides[a] = len(r), xs[a] * sp
        offset += (r.start if len(r) else 0) * xs[a]
    if 0 in dims:
        raise Decline("empty")
    strided(b, b.src(step.in_keys[0]), b.dst(out(step), tuple(dims)), dims, strides, contiguous(dims), x_off=offset)


def _expand(b, step, node, opdef, attrs):
    """Expand to a constant shape: a strided copy reading broadcast dims with stride 0."""
    shape, target = b.shape(step.in_keys[0]), b.const(step.in_keys[1])
    if target is None:
        raise Decline("Expand shape not constant")
    try:
        y = np.broadcast_shapes(shape, tuple(int(d) for d in np.ravel(target)))
    except ValueError:
        raise Decline("Expand shape") from None
    padded = (1,) * (len(y) - len(shape)) + tuple(shape)
    xs = contiguous(padded)
    strided(b, b.src(step.in_keys[0]), b.dst(out(step), y), y,
            [0 if d == 1 and o != 1 else s for d, o, s in zip(padded, y, xs)], contiguous(y))


def _pad(b, step, node, opdef, attrs):
    """Pad with constant, non-negative pads: constant mode as a fill and the input copied inside; reflect / edge /
    wrap as strided copies, one per combination of the padded axes' runs (ops.pad's source indices split into
    runs of one stride: reflect's are −1, edge's 0)."""
    shape = b.shape(step.in_keys[0])
    mode = attrs.get("mode", "constant")
    if opdef.since < 11 or mode not in ("constant", "reflect", "edge", "wrap") or len(step.in_keys) > 3 or not shape:
        raise Decline("Pad form")
    pads = b.const(step.in_keys[1])
    value = b.const(step.in_keys[2]) if len(step.in_keys) > 2 and step.in_keys[2] is not None else np.zeros(1)
    if pads is None or value is None or np.size(value) != 1 or np.size(pads) != 2 * len(shape) or np.min(pads) < 0:
        raise Decline("Pad arguments")
    begin, end = [int(v) for v in np.ravel(pads)[:len(shape)]], [int(v) for v in np.ravel(pads)[len(shape):]]
    shape_y = tuple(d + p + q for d, p, q in zip(shape, begin, end))
    xs, ys = contiguous(shape), contiguous(shape_y)
    x, y = b.src(step.in_keys[0]), b.dst(out(step), shape_y)
    if mode == "constant":
        b.emit("fill", [math.prod(shape_y)], [y], [0.0, 0.0, float(np.ravel(value)[0])])
        strided(b, x, y, shape, xs, ys, y_off=sum(p * s for p, s in zip(begin, ys)))
        b.written_to_end(y)
        return
    if 0 in shape:
        raise Decline("Pad of an empty axis")  # (the kernel's error)
    axes_runs = [_runs(pad_ops.pad_indices(mode, d, p, q)) for d, p, q in zip(shape, begin, end)]
    if math.prod(len(r) for r in axes_runs) > 64:
        raise Decline("Pad runs")
    for combo in itertools.product(*axes_runs):  # (out start, source start, stride, length) per axis
        strided(b, x, y, [r[3] for r in combo], [r[2] * s for r, s in zip(combo, xs)], ys,
                x_off=sum(r[1] * s for r, s in zip(combo, xs)), y_off=sum(r[0] * s for r, s in zip(combo, ys)))
    b.written_to_end(y)


def _runs(index):
    """[(out start, source start, stride, length)] covering an axis's source indices with runs of one stride."""
    runs, i = [], 0
    while i < len(index):
        step = int(index[i + 1] - index[i]) if i + 1 < len(index) else 1
        j = i + 1
        while j < len(index) and index[j] - index[j - 1] == step:
            j += 1
        runs.append((i, int(index[i]), step, j - i))
        i = j
    return runs


def forward_lstm(b, step, node, attrs):
    """A chain's LSTM: the plain forward one (rnn.plain_lstm, layout 0) with constant float32 W, R, B and states of
    (1, batch, H). (T, batch, I, H, W, R, B's two biases summed or None, initial_h key, initial_c key), or Decline:
    each backend then emits its input projection (a GEMM into the arena) and its recurrence writing Y [T, 1, batch,
    H], Y_h and Y_c where the node's outputs go."""
    keys = (list(step.in_keys) + [None] * 8)[:8]
    kx, kw, kr, kb = keys[:4]
    w, r, bias = b.const(kw), b.const(kr), b.const(kb)
    if attrs.get("direction", "forward") != "forward" or attrs.get("layout", 0) or not rnn.plain_lstm(
            attrs.get("activations"), attrs.get("clip"), attrs.get("input_forget", 0), node.inputs):
        raise Decline("LSTM form")
    sx = b.shape(kx)
    if w is None or r is None or (kb is not None and bias is None) or len(sx) != 3 or w.dtype != F32 or \
            r.dtype != F32 or (bias is not None and bias.dtype != F32):
        raise Decline("LSTM weights")
    t, batch, i = sx
    h = attrs.get("hidden_size") or r.shape[-1]
    if w.shape != (1, 4 * h, i) or r.shape != (1, 4 * h, h) or (bias is not None and bias.shape != (1, 8 * h)):
        raise Decline("LSTM shapes")
    for k in keys[5:7]:
        if k is not None and b.shape(k) != (1, batch, h):
            raise Decline("LSTM state shape")
    both = None if bias is None else (bias[0, :4 * h] + bias[0, 4 * h:]).astype(F32)
    return t, batch, i, h, w, r, both, keys[5], keys[6]


def lstm_outputs(b, step, t, batch, h):
    """The arena tensors ox_lstm / nx_lstm write: Y, Y_h, Y_c where the node has them, scratch where not."""
    outs = (list(step.out_keys) + [None] * 3)[:3]
    return [b.dst(k, shape) if k else b.scratch(math.prod(shape))
            for k, shape in zip(outs, ((t, 1, batch, h), (1, batch, h), (1, batch, h)))]


def trailing_reduce(b, step, opdef, attrs):
    """(planes, count, output shape) of a ReduceMean / ReduceMax over trailing axes (constant axes): one result of
    `count` values per plane (a backend's global-average or pooling instruction). Axes ops.reduce refuses decline
    (its error)."""
    op, shape = step.node.op_type, b.shape(step.in_keys[0])
    if opdef.since >= 18:
        k = step.in_keys[1] if len(step.in_keys) > 1 else None
        axes = None if k is None else b.const(k)
        if k is not None and axes is None:
            raise Decline(f"{op} axes not constant")
        axes = None if axes is None else np.ravel(axes)
    else:
        axes = attrs.get("axes")
    axes = reduce_ops.norm_axes(len(shape), axes, attrs.get("noop_with_empty_axes", 0), op)
    if axes is None:
        raise Decline(f"{op} noop")
    lead = len(shape) - len(axes)
    if sorted(axes) != list(range(lead, len(shape))) or 0 in shape:
        raise Decline(f"{op} axes not trailing")
    y = shape[:lead] + ((1,) * len(axes) if attrs.get("keepdims", 1) else ())
    return math.prod(shape[:lead]), math.prod(shape[lead:]), y


def dq_matmul(b, step, attrs, packed_b, gemm_scratch):
    """com.microsoft DynamicQuantizeMatMul with constant B, scale, zero point and bias: x quantized into the arena
    once per chain (the nodes reading one x — attention's Q, K, V projections — share it), then the int8 GEMM with
    its float epilogue; x holding a NaN or an infinity makes the interpreter return 1 + i and the chain rerun
    stepwise, as the per-node kernel falls back. `packed_b(B)` is the backend's packed weight, `gemm_scratch(M, N,
    K)` the floats its qgemm needs."""
    kx, kb, ks, kz, kbias = (list(step.in_keys) + [None] * 5)[:5]
    shape = b.shape(kx)
    if attrs or len(shape) < 2 or any(k is not None and b.const(k) is None for k in (kb, ks, kz, kbias)):
        raise Decline("DynamicQuantizeMatMul operands")
    k = shape[-1]
    ops = forms.dynamic_quantize_matmul_constants(b.const(kb), b.const(ks), b.const(kz), b.const(kbias), k)
    if ops is forms.FALLBACK:
        raise Decline("DynamicQuantizeMatMul form")
    bz, b_scale, bias = ops
    m, n = math.prod(shape) // k, b.const(kb).shape[1]
    quantized = ("quantized", kx)  # (a 16-byte head — scale, zero point — then the m·k uint8 values)
    if quantized not in b.where:
        x = b.src(kx)
        b.emit("dq", [m * k], [x, b.dst(quantized, (4 + (m * k + 3) // 4,))])
    b.emit("qgemm", [m, n, k, int(b_scale.size > 1)],
           [b.src(quantized), b.fixed(packed_b(b.const(kb))), -1 if bz is None else b.fixed(bz), b.fixed(b_scale),
            -1 if bias is None else b.fixed(bias), b.dst(out(step), shape[:-1] + (n,)),
            b.scratch(gemm_scratch(m, n, k))])


def _concat(b, step, node, opdef, attrs):
    keys = [k for k in step.in_keys if k is not None]
    shapes = [b.shape(k) for k in keys]
    rank = len(shapes[0])
    axis = attrs.get("axis", 0 if opdef.since < 4 else None)
    if axis is None or rank == 0 or not -rank <= axis < rank:
        raise Decline("Concat axis")
    axis %= rank
    if any(len(s) != rank or s[:axis] != shapes[0][:axis] or s[axis + 1:] != shapes[0][axis + 1:] for s in shapes):
        raise Decline("Concat shapes")
    total = sum(s[axis] for s in shapes)
    shape_y = shapes[0][:axis] + (total,) + shapes[0][axis + 1:]
    outer, inner = math.prod(shape_y[:axis]), math.prod(shape_y[axis + 1:])
    y, at = b.dst(out(step), shape_y), 0
    for k, s in zip(keys, shapes):
        row = s[axis] * inner
        if row:
            strided(b, b.src(k), y, [outer, row], [row, 1], [total * inner, 1], y_off=at * inner)
        at += s[axis]
    b.written_to_end(y)  # (written by each copy)


def _gather(b, step, node, opdef, attrs):
    """Gather by a constant scalar index (silero VAD's state halves): a strided copy of one slice along the axis."""
    shape, index = b.shape(step.in_keys[0]), b.const(step.in_keys[1])
    axis = attrs.get("axis", 0)
    if index is None or index.ndim != 0 or index.dtype.kind not in "iu" or not -len(shape) <= axis < len(shape):
        raise Decline("Gather index")
    axis %= len(shape)
    i = int(index)
    if not -shape[axis] <= i < shape[axis]:
        raise Decline("Gather index range")  # (the kernel's error)
    y = shape[:axis] + shape[axis + 1:]
    if not y:
        raise Decline("rank")
    xs = contiguous(shape)
    strided(b, b.src(step.in_keys[0]), b.dst(out(step), y), y, xs[:axis] + xs[axis + 1:], contiguous(y),
            x_off=(i % shape[axis]) * xs[axis])


def _view(b, step, node, opdef, attrs):
    if node.op_type == "Dropout" and (len([k for k in step.in_keys if k is not None]) != 1 or len(step.out_keys) != 1):
        raise Decline("Dropout")
    key = out(step)
    shape, out_shape = b.shape(step.in_keys[0]), b.shape(key)
    if math.prod(shape) != math.prod(out_shape):
        raise Decline("view size")
    b.alias(key, step.in_keys[0], out_shape)


COPIES = {"Transpose": _transpose, "Slice": _slice, "Concat": _concat, "Expand": _expand, "Pad": _pad,
          "Gather": _gather, **{op: _view for op in VIEWS}}


def lower_step(b, step, host_eps, lower, ms_lower):
    """Appends `step`'s instructions to builder `b` by the lowering `lower` (ai.onnx) or `ms_lower` (com.microsoft)
    holds for its op, or raises Decline (b is then unusable). Only host steps of the EPs in `host_eps` lower."""
    node = step.node
    if step.bodies is not None or step.ep is None or step.ep.name not in host_eps or not step.device.is_host:
        raise Decline("step")
    domain = registry.normalize_domain(node.domain)
    fn = (lower if domain == "" else ms_lower if domain == registry.MS_DOMAIN else {}).get(node.op_type)
    if fn is None:
        raise Decline(node.op_type)
    try:
        opdef = registry.lookup(domain, node.op_type, step.opset)
    except Exception:  # noqa: BLE001 - (a custom op of that name: not ours)
        raise Decline(node.op_type) from None
    if opdef.custom is not None:
        raise Decline("custom op")
    for k in step.out_keys:  # (float32 outputs; their shapes are the lowering's: a graph output may declare a
        entry = b.types.get(k if isinstance(k, str) else k[0])  # symbolic dim the run has fixed)
        if k and (not entry or entry[0] != 1):
            raise Decline(k)
    try:
        fn(b, step, node, opdef, dict(node.attrs))
    except OnnxideError as e:  # (a check the node's own kernel makes at run time, e.g. the memory limit)
        raise Decline(str(e)) from None
