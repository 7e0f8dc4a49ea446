"""Control flow: If, Loop, Scan (opset 8 batched form and opset 9+ form) and SequenceMap. Their kernels are
generators that run bodies with `yield from ctx.run_graph(...)` (a body may await device work). If, Loop and Scan 9+
touch the values they carry only through `ctx.array_ops` (take / stack / zeros) and `ctx.release`, so a device EP
runs them with the carried values staying on its device; only conditions and trip counts are host values."""
import math

import numpy as np

from .. import dtypes
from ..errors import Fail, InvalidArgument
from ..runtime import limits
from ..runtime.devices import HostArrayOps
from .inference import UNKNOWN, SequenceOf, positive_axis, rule
from .registry import op
from .util import norm_axis


def _scalar_bool(v, what):
    a = np.asarray(v)
    if a.size != 1:
        raise InvalidArgument(f"{what} must hold a single element, got shape {a.shape}")
    return bool(a.reshape(-1)[0])


def _result(outs, n):
    """A kernel result from a list of output values: the single value, or a tuple for several."""
    outs = list(outs)
    if n <= 1 and len(outs) == 1:
        return outs[0]
    return tuple(outs)


def _declared_type(graph, index):
    """(per-iteration shape as a list or None, numpy dtype) of a body output, from its declared (or inferred) type;
    a dim the type leaves unknown is 0 (the output is empty either way; its rank is the type's)."""
    dt, shape = np.dtype(np.float32), None
    try:
        vi = graph.outputs[index]
        if vi.elem_type:
            dt = dtypes.np_dtype(vi.elem_type)
        shape = vi.shape
    except (AttributeError, IndexError, KeyError, TypeError):
        pass
    if shape is not None:
        return [d if isinstance(d, int) else 0 for d in shape], dt
    return None, dt


def _empty_output(ops, graph, index, axis=0):
    """A scan output that got no iterations: zero along `axis`, typed by the body's declared output when known."""
    shape, dt = _declared_type(graph, index)
    if shape is None:
        return ops.zeros((0,), dt)
    shape = list(shape)
    axis = axis % (len(shape) + 1)
    shape.insert(axis, 0)
    return ops.zeros(shape, dt)


def _stack(ops, values, axis, what):
    for v in values:
        if isinstance(v, list) or v is None:
            raise InvalidArgument(f"{what}: scan outputs must be tensors")
    shapes = {tuple(v.shape) for v in values}
    if len(shapes) > 1:
        raise InvalidArgument(f"{what}: scan output shapes differ between iterations: {sorted(shapes)}")
    return ops.stack(values, axis)


def _check_scans(scans, iterations):
    """The memory limit holds for the scan outputs a Loop has gathered so far (they are stacked at the end)."""
    per = sum(math.prod(v[-1].shape) * np.dtype(v[-1].dtype).itemsize for v in scans if hasattr(v[-1], "shape"))
    limits.check(per * iterations, "Loop scan outputs after {} iterations", iterations)


def _owned_values(ctx, *groups):
    """Hand back the device values of `groups` (lists of values this kernel owns) after a failure."""
    for g in groups:
        ctx.release([v for v in g if v is not None and not isinstance(v, list)])


# ---------------------------------------------------------------- If


@op("If", since=1, host_inputs=(0,))
def if_(cond, *, then_branch, else_branch, ctx):
    branch = then_branch if _scalar_bool(cond, "If: cond") else else_branch
    outs = yield from ctx.run_graph(branch, [])
    if len(outs) != ctx.num_outputs:
        ctx.release(outs)
        raise Fail(f"If: the chosen branch produced {len(outs)} outputs, the node declares {ctx.num_outputs}")
    return _result(outs, ctx.num_outputs)


# ---------------------------------------------------------------- Loop


@op("Loop", since=1, host_inputs=(0, 1))
def loop(M=None, cond=None, *v_initial, body, ctx):
    n_carried = len(v_initial)
    n_body_in = len(body.inputs)
    if n_body_in != n_carried + 2:
        raise Fail(f"Loop: the body takes {n_body_in} inputs, expected 2 + {n_carried} loop-carried values")
    trip = None
    if M is not None:
        m = np.asarray(M)
        if m.size != 1:
            raise InvalidArgument(f"Loop: M must hold a single element, got shape {m.shape}")
        trip = int(m.reshape(-1)[0])
    go = True if cond is None else _scalar_bool(cond, "Loop: cond")
    carried = list(v_initial)
    n_scan = len(body.outputs) - 1 - n_carried
    if n_scan < 0:
        raise Fail(f"Loop: the body has {len(body.outputs)} outputs, fewer than 1 + {n_carried}")
    scans = [[] for _ in range(n_scan)]
    owned = False  # the carried values are this kernel's once an iteration made them (v_initial are the node's)
    i = 0
    try:
        while go and (trip is None or i < trip):
            outs = yield from ctx.run_graph(body, [np.asarray(i, dtype=np.int64), np.asarray(go, dtype=np.bool_)]
                                            + carried)
            if owned:
                ctx.release(carried)
            # like onnxruntime, the body's condition output ends the loop even when the `cond` input is omitted
            go = _scalar_bool(outs[0], "Loop: the body's condition output")
            carried, owned = list(outs[1:1 + n_carried]), True
            for k, v in enumerate(outs[1 + n_carried:]):
                scans[k].append(v)
            i += 1
            if n_scan:
                _check_scans(scans, i)
        results = carried
        for k in range(n_scan):
            if scans[k]:
                results.append(_stack(ctx.array_ops, scans[k], 0, "Loop"))
                done, scans[k] = scans[k], []
                ctx.release(done)
            else:
                results.append(_empty_output(ctx.array_ops, body, 1 + n_carried + k))
    except BaseException:
        _owned_values(ctx, carried if owned else [], *scans)
        raise
    keep = max(ctx.num_outputs, 1)
    ctx.release([v for v in results[keep:] if not any(v is x for x in v_initial)])  # outputs the node omits
    return _result(results[:keep], ctx.num_outputs)


# ---------------------------------------------------------------- Scan


@op("Scan", since=8, host_inputs=(0,))
def scan_8(sequence_lens=None, *inputs, body, num_scan_inputs, directions=None, ctx):
    m = num_scan_inputs
    n = len(inputs) - m
    if n < 0 or m < 1:
        raise InvalidArgument(f"Scan: num_scan_inputs={m} but only {len(inputs)} state/scan inputs given")
    states0 = [np.asarray(s) for s in inputs[:n]]
    xs = [np.asarray(x) for x in inputs[n:]]
    dirs = list(directions) if directions else [0] * m
    if len(dirs) != m:
        raise InvalidArgument(f"Scan: directions has {len(dirs)} entries, expected {m}")
    if xs[0].ndim < 2:
        raise InvalidArgument(f"Scan: scan inputs must be [batch, sequence, ...], got {xs[0].shape}")
    batch, max_len = xs[0].shape[0], xs[0].shape[1]
    for x in xs:
        if x.ndim < 2 or x.shape[:2] != (batch, max_len):
            raise InvalidArgument(f"Scan: scan inputs must share [batch, sequence] dims, got {x.shape}")
    for s in states0:
        if s.ndim < 1 or s.shape[0] != batch:
            raise InvalidArgument(f"Scan: state inputs must have batch dim {batch}, got {s.shape}")
    if sequence_lens is None:
        lens = np.full(batch, max_len, dtype=np.int64)
    else:
        lens = np.asarray(sequence_lens).astype(np.int64).reshape(-1)
        if lens.shape != (batch,) or (lens < 0).any() or (lens > max_len).any():
            raise InvalidArgument(f"Scan: sequence_lens {lens.tolist()} invalid for batch {batch}, length {max_len}")
    k_out = len(body.outputs) - n
    final_states = [[] for _ in range(n)]
    scan_vals = [[] for _ in range(k_out)]  # per output: per batch: list of per-step values
    for b in range(batch):
        st = [s[b] for s in states0]
        per = [[] for _ in range(k_out)]
        L = int(lens[b])
        for t in range(L):
            step_in = [x[b, (L - 1 - t) if d else t, ...] for x, d in zip(xs, dirs)]  # arrays, not numpy scalars
            outs = yield from ctx.run_graph(body, st + step_in)
            st = list(outs[:n])
            for k, v in enumerate(outs[n:]):
                per[k].append(np.asarray(v))
        for j in range(n):
            final_states[j].append(np.asarray(st[j]))
        for k in range(k_out):
            scan_vals[k].append(per[k])
    results = [_stack(HostArrayOps, fs, 0, "Scan") for fs in final_states]
    for k in range(k_out):
        sample = next((p[0] for p in scan_vals[k] if p), None)
        if sample is None:
            shape, dt = _declared_type(body, n + k)
            out = np.zeros((batch, max_len, *(shape or [])), dtype=dt)
        else:
            out = np.zeros((batch, max_len) + sample.shape, dtype=sample.dtype)
            for b, p in enumerate(scan_vals[k]):
                if p:
                    out[b, :len(p)] = _stack(HostArrayOps, p, 0, "Scan")
        results.append(out)
    return _result(results, ctx.num_outputs)


@op("Scan", since=9)
def scan_9(*inputs, body, num_scan_inputs, scan_input_axes=None, scan_input_directions=None, scan_output_axes=None,
           scan_output_directions=None, ctx):
    m = num_scan_inputs
    n = len(inputs) - m
    if n < 0 or m < 1:
        raise InvalidArgument(f"Scan: num_scan_inputs={m} but only {len(inputs)} inputs given")
    states = list(inputs[:n])
    xs = list(inputs[n:])
    in_axes = list(scan_input_axes) if scan_input_axes else [0] * m
    in_dirs = list(scan_input_directions) if scan_input_directions else [0] * m
    if len(in_axes) != m or len(in_dirs) != m:
        raise InvalidArgument(f"Scan: scan_input_axes/directions must have {m} entries")
    if any(x.ndim == 0 for x in xs):
        raise InvalidArgument(f"Scan: a scan input is a scalar (shapes {[x.shape for x in xs]}): nothing to scan")
    in_axes = [norm_axis(a, x.ndim, "Scan input") for a, x in zip(in_axes, xs)]
    lengths = {x.shape[a] for x, a in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise InvalidArgument(f"Scan: scan inputs have different sequence lengths {sorted(lengths)}")
    L = lengths.pop()
    k_out = len(body.outputs) - n
    out_axes = list(scan_output_axes) if scan_output_axes else [0] * k_out
    out_dirs = list(scan_output_directions) if scan_output_directions else [0] * k_out
    if len(out_axes) != k_out or len(out_dirs) != k_out:
        raise InvalidArgument(f"Scan: scan_output_axes/directions must have {k_out} entries")
    ops = ctx.array_ops
    per = [[] for _ in range(k_out)]
    owned = False  # the states are this kernel's once an iteration made them
    step_in = []
    try:
        for t in range(L):
            step_in = [ops.take(x, a, L - 1 - t if d else t) for x, a, d in zip(xs, in_axes, in_dirs)]
            outs = yield from ctx.run_graph(body, states + step_in)
            ctx.release(step_in)
            if owned:
                ctx.release(states)
            states, owned, step_in = list(outs[:n]), True, []
            for k, v in enumerate(outs[n:]):
                per[k].append(v)
        results = states
        for k in range(k_out):
            vals = per[k][::-1] if out_dirs[k] else per[k]
            if vals:
                results.append(_stack(ops, vals, norm_axis(out_axes[k], vals[0].ndim + 1, "Scan output"), "Scan"))
                done, per[k] = per[k], []
                ctx.release(done)
            else:
                results.append(_empty_output(ops, body, n + k, out_axes[k]))
    except BaseException:
        _owned_values(ctx, step_in, states if owned else [], *per)
        raise
    return _result(results, ctx.num_outputs)


# ---------------------------------------------------------------- SequenceMap


@op("SequenceMap", since=17)
def sequence_map(input_sequence, *additional_inputs, body, ctx):
    if not isinstance(input_sequence, list):
        raise InvalidArgument("SequenceMap: the first input must be a sequence")
    count = len(input_sequence)
    for a in additional_inputs:
        if isinstance(a, list) and len(a) != count:
            raise InvalidArgument(f"SequenceMap: input sequences have different lengths ({len(a)} vs {count})")
    n_out = len(body.outputs)
    results = [[] for _ in range(n_out)]
    for i in range(count):
        args = [input_sequence[i]] + [a[i] if isinstance(a, list) else a for a in additional_inputs]
        outs = yield from ctx.run_graph(body, args)
        for k, v in enumerate(outs):
            results[k].append(v)
    return _result(results, ctx.num_outputs)


# ---------------------------------------------------------------- shape rules

def _merged(a, b):
    """The entry two branches' outputs agree on: the type when equal, each dim where equal."""
    if a is None or b is None or a[0] != b[0]:
        return UNKNOWN
    da, db = a[1], b[1]
    same_rank = da is not None and db is not None and len(da) == len(db)
    return (a[0], [x if x == y else None for x, y in zip(da, db)] if same_rank else None)


@rule("If")
def _if_rule(f):
    """If: each output as both branches declare it."""
    then, other = f.attr("then_branch"), f.attr("else_branch")
    return [_merged(x.type_entry(), y.type_entry()) for x, y in zip(then.outputs, other.outputs)]


def _body_output(body, i):
    """The entry body output i has (declared, or inferred with its node), UNKNOWN when none."""
    return (body.outputs[i].type_entry() if i < len(body.outputs) else None) or UNKNOWN


def _stacked(entry, axis, count=None):
    """A scan output: the body's per-iteration entry stacked along `axis` (`count` entries)."""
    t, d = entry
    return (t, None if d is None else d[:positive_axis(axis, len(d) + 1)] + [count] +
            d[positive_axis(axis, len(d) + 1):])


@rule("Loop")
def _loop_rule(f):
    """Loop: loop-carried values have the body's output types (their initial values' where the body's are unknown:
    an optional initial value may be carried as its content); scan outputs stack the body's outputs."""
    carried = max(len(f.ins) - 2, 0)
    body = f.attr("body")
    return [(_body_output(body, 1 + i)[0] or f.type(2 + i), None) for i in range(carried)] + \
        [_stacked(_body_output(body, 1 + carried + j), 0) for j in range(f.n_outputs - carried)]


def _loop_body_inputs(f):
    """Loop's body reads the iteration number, the condition (of the node's condition's dims, as onnx's inference)
    and the loop-carried values."""
    return [(dtypes.INT64, []), (dtypes.BOOL, f.dims(1) if f.has(1) else [])] + \
        [(f.type(2 + i), None) for i in range(max(len(f.ins) - 2, 0))]


def _scan_states(f):
    """(index of the first state input, number of state variables): Scan 8 takes sequence_lens first."""
    return (1 if f.opset < 9 else 0), len(f.attr("body").inputs) - f.attr("num_scan_inputs", 0)


@rule("Scan")
def _scan_rule(f):
    """Scan: state variables keep their initial values' types; scan outputs stack the body's outputs (along
    scan_output_axes, as many as the first scan input has along its axis)."""
    body = f.attr("body")
    first, states = _scan_states(f)
    if f.opset < 9:
        return [(f.type(first + i), None) for i in range(states)] + \
            [(_body_output(body, states + j)[0], None) for j in range(f.n_outputs - states)]
    in_axes = f.attr("scan_input_axes") or [0] * f.attr("num_scan_inputs", 0)
    out_axes = f.attr("scan_output_axes") or [0] * (f.n_outputs - states)
    x = f.dims(states)
    count = x[positive_axis(in_axes[0], len(x))] if x is not None and in_axes else None
    return [(f.type(i), None) for i in range(states)] + \
        [_stacked(_body_output(body, states + j), out_axes[j], count) for j in range(f.n_outputs - states)]


def _scan_body_inputs(f):
    """Scan's body reads the state variables and one slice of each scan input (without its scan axis; Scan-8's
    without the batch axis too)."""
    first, states = _scan_states(f)
    if f.opset < 9:  # (Scan-8: inputs lead with the batch axis, scan inputs then with the sequence axis)
        cut = lambda i, d: None if d is None or len(d) < 1 + (i >= states) else d[1 + (i >= states):]  # noqa: E731
        return [(t, cut(i, d)) for i, (t, d) in enumerate(f.ins[first:])]
    in_axes = f.attr("scan_input_axes") or [0] * (len(f.ins) - states)
    sliced = []
    for j, a in enumerate(in_axes):
        t, d = f.ins[states + j]
        sliced.append((t, None if d is None else d[:positive_axis(a, len(d))] + d[positive_axis(a, len(d)) + 1:]))
    return list(f.ins[:states]) + sliced


@rule("SequenceMap")
def _sequence_map_rule(f):
    body = f.attr("body")
    return [(SequenceOf((_body_output(body, j)[0], None)), None) for j in range(f.n_outputs)]


def _sequence_map_body_inputs(f):
    """SequenceMap's body reads one element of each sequence input (other inputs as they are)."""
    return [t.of if isinstance(t, SequenceOf) else (t, d) for t, d in f.ins]


_loop_rule.body_inputs = _loop_body_inputs  # what each node hands its body (ir/infer.py types undeclared inputs)
_scan_rule.body_inputs = _scan_body_inputs
_sequence_map_rule.body_inputs = _sequence_map_body_inputs
