"""Row kernels on the WebGPU device (rows.wgsl: a workgroup per row) and the Reduce* and ArgMax / ArgMin families."""
import numpy as np

from ...errors import InvalidArgument
from ...ops.reduce import norm_axes
from ...ops.util import ints, norm_axis
from . import programs as P
from .claims import CLAIMS, F16, FLOAT, I64
from .ops_linalg import fits

MAX_WG = 256  # invocations per workgroup (SwiftShader in Chromium allows 256)
LOOP = "for (var j = lid; j < n; j += WG)"


def claim(ops, types, make, **kw):
    """CLAIMS.add for these families: a node whose statically known inputs or outputs exceed the device's binding
    size is declined (ops_linalg.fits) before `make` sees it."""
    CLAIMS.add(ops, types, lambda device, spec: make(device, spec) if fits(device, spec) else None, **kw)


def contiguous_strides(shape):
    strides, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = acc
        acc *= shape[d]
    return strides


def merge_dims(dims, strides):
    """The same offsets over fewer dims: size-1 dims dropped, neighbours where the outer steps over the inner
    contiguously merged (C order of the merged dims is C order of the originals)."""
    out_d, out_s = [], []
    for d, s in zip(dims, strides):
        if d == 1:
            continue
        if out_d and out_s[-1] == s * d:
            out_d[-1] *= d
            out_s[-1] = s
        else:
            out_d.append(d)
            out_s.append(s)
    return out_d, out_s


def layout(shape, axes):
    """(kept dims, kept strides, reduced dims, reduced strides) of a C-contiguous `shape` reduced over `axes`,
    merged: row r's elements are those whose kept coordinates are r's (C order), j-th in C order of `axes`."""
    strides = contiguous_strides(shape)
    ax = set(axes)
    kept = merge_dims([d for i, d in enumerate(shape) if i not in ax],
                      [s for i, s in enumerate(strides) if i not in ax])
    red = merge_dims([shape[i] for i in sorted(ax)], [strides[i] for i in sorted(ax)])
    return kept, red


def workgroup_size(device, n):
    """A power of two >= 32 covering a row of n elements where it can, at most MAX_WG and the device's limits."""
    limit = min(MAX_WG, device.limits.get("max-compute-invocations-per-workgroup", MAX_WG),
                device.limits.get("max-compute-workgroup-size-x", MAX_WG))
    wg = 32
    while wg < n and wg * 2 <= limit:
        wg *= 2
    return min(wg, limit)


def load(name, i):
    """WGSL reading element i of tensor `name` as f32."""
    return f"f32(ld_{name}({i}))"


def store(name, dtype, i, v):
    """WGSL storing the f32 expression v at element i of `name` (f16 tensors round once, here)."""
    return f"st_{name}({i}, {'f16' if np.dtype(dtype) == F16 else 'f32'}({v}));"


def rows(device, name, body, inputs, outputs, shape, axes, params=()):
    """Dispatch `body` (WGSL inside main: row, lid, n, base, at(base, j), the wg_* trees, p(k) / pu(k) for
    `params` words) once per row of `shape` (C-contiguous) reduced over `axes`. `inputs` / `outputs`:
    [(WGSL name, GpuTensor)]."""
    (kd, ks), (rd, rs) = layout(shape, axes)
    n = int(np.prod(rd, dtype=np.int64)) if rd else 1
    count = int(np.prod(kd, dtype=np.int64)) if kd else 1
    if count == 0:
        return
    wg = workgroup_size(device, n)
    kept, red = len(kd), len(rd)
    meta = [count, n] + kd + ks + rd + rs + list(params)
    ins = [(k, t.dtype) for k, t in inputs]
    outs = [(k, t.dtype) for k, t in outputs]

    def wgsl():
        return P.render("rows", INTERFACE=P.interface(ins, outs), COMMON=P.template("common"), WG=wg, KEPT=kept,
                        RED=red, PB=2 + 2 * kept + 2 * red, MAX_GROUPS=P.MAX_GROUPS, BODY=body)

    key = ("rows", name, body, tuple(d.str for _, d in ins + outs), wg, kept, red)
    # one workgroup per row: device.dispatch covers `invocations` with WORKGROUP-wide groups, so count groups
    device.dispatch(key, wgsl, [t for _, t in inputs], [t for _, t in outputs], meta, count * P.WORKGROUP)


# --- Reduce* -----------------------------------------------------------------------------------------------------

# kind -> (tree, initial value, per-element term of v, result of the combined r (n: the row length))
REDUCE = {
    "ReduceSum": ("sum", "0.0", "v", "r"),
    "ReduceMean": ("sum", "0.0", "v", "select(nan_f32(), r / f32(n), n > 0u)"),
    "ReduceMax": ("max", "-inf_f32()", "v", "r"),
    "ReduceMin": ("min", "inf_f32()", "v", "r"),
    "ReduceProd": ("prod", "1.0", "v", "r"),
    "ReduceL1": ("sum", "0.0", "abs(v)", "r"),
    "ReduceL2": ("sum", "0.0", "v * v", "sqrt(r)"),
    "ReduceSumSquare": ("sum", "0.0", "v * v", "r"),
    "ReduceLogSum": ("sum", "0.0", "v", "log_z(r)"),
}
_COMBINE = {"sum": "{a} + {b}", "max": "max_nan({a}, {b})", "min": "min_nan({a}, {b})", "prod": "{a} * {b}"}


def _reduce_body(op, y_dtype):
    x = load("x", "at(base, j)")
    if op == "ReduceLogSumExp":  # max first (a non-finite one counts as 0, like the CPU EP), then the sum
        return f"""var mx = -inf_f32();
  {LOOP} {{ mx = max_nan(mx, {x}); }}
  mx = finite_or_zero(wg_max(mx, lid));
  var acc = 0.0;
  {LOOP} {{ acc += exp({x} - mx); }}
  let r = wg_sum(acc, lid);
  if (lid == 0u) {{ {store("y", y_dtype, "row", "log_z(r) + mx")} }}"""
    tree, init, term, result = REDUCE[op]
    step = _COMBINE[tree].format(a="acc", b=term.replace("v", "v_"))
    return f"""var acc = {init};
  {LOOP} {{ let v_ = {x}; acc = {step}; }}
  let r = wg_{tree}(acc, lid);
  if (lid == 0u) {{ {store("y", y_dtype, "row", result)} }}"""


def reduce(device, op, x, axes, keepdims, noop):
    ax = norm_axes(len(x.shape), axes, noop, op)
    if ax is None:
        return device.view(x, x.shape)
    kept = [d for i, d in enumerate(x.shape) if i not in ax]
    out_shape = [1 if i in ax else d for i, d in enumerate(x.shape)] if keepdims else kept
    y = device.alloc(out_shape, x.dtype)
    if y.size:
        rows(device, op, _reduce_body(op, y.dtype), [("x", x)], [("y", y)], x.shape, ax)
    return y


def _reduce_claim(device, spec):
    op = spec.op_type
    if 1 in spec.opdef.host_inputs:  # (axes as an input: ReduceSum-13, the others from 18)
        def input_axes(x, axes=None, *, keepdims=1, noop_with_empty_axes=0, **kw):
            return reduce(device, op, x, ints(axes), keepdims, noop_with_empty_axes)
        return input_axes

    def attr_axes(x, *, axes=None, keepdims=1, **kw):
        return reduce(device, op, x, axes, keepdims, 0)
    return attr_axes


# --- ArgMax / ArgMin ---------------------------------------------------------------------------------------------

def arg_body(emit):
    """WGSL finding `best` (the index within the row of its max / min: pu(0) != 0 for max, pu(1) != 0 for the last of
    equals), then `emit`."""
    return f"""let want_max = pu(0) != 0u;
  let last = pu(1) != 0u;
  var bv = 0.0;
  var bi = NONE;
  {LOOP} {{
    let v = {load("x", "at(base, j)")};
    if (beats(bv, bi, v, j, want_max, last)) {{ bv = v; bi = j; }}
  }}
  let best = wg_arg(bv, bi, lid, want_max, last);
  {emit}"""


def arg(device, op, x, axis, keepdims, last):
    a = norm_axis(axis, x.ndim, op)
    if x.shape[a] == 0:
        raise InvalidArgument(f"{op}: cannot reduce an empty axis {a}")
    out_shape = [1 if i == a else d for i, d in enumerate(x.shape)] if keepdims else \
        [d for i, d in enumerate(x.shape) if i != a]
    y = device.alloc(out_shape, I64)
    if y.size:
        body = arg_body("if (lid == 0u) { st_y(row, i32(best)); }")
        rows(device, "Arg", body, [("x", x)], [("y", y)], x.shape, [a], [int(op == "ArgMax"), int(bool(last))])
    return y


def _arg_claim(device, spec):
    op = spec.op_type
    return lambda x, *, axis=0, keepdims=1, select_last_index=0, **kw: arg(device, op, x, axis, keepdims,
                                                                            select_last_index)


claim(list(REDUCE) + ["ReduceLogSumExp"], FLOAT, _reduce_claim)
claim(["ArgMax", "ArgMin"], FLOAT, _arg_claim)
