"""WebGPU MaxPool (with Indices), AveragePool, LpPool and the Global* pools: one window per thread (pool.wgsl)."""
from ...errors import InvalidArgument
from ...ops.conv_geometry import ConvGeometry
from ...ops.pool import _check_p
from . import ops_linalg as L
from . import programs as P
from .claims import CLAIMS, FLOAT, I64

_MAX_TAP = """var v = lowest();
        if (inside) { v = f32(ld_x(x_at)); }
        if (v > acc) { best = t; }
        acc = max_nan(acc, v);"""
# the winning tap's input coordinates as a flat index over the whole input (row-major, or column-major over the
# spatial dims with storage_order 1), as the CPU EP gives it
_INDEX = """let k12 = m(5u) * m(6u);
  let won = start + vec3<i32>(i32(best / k12), i32((best / m(6u)) % m(5u)), i32(best % m(6u))) * dil;
  let flat = select((won.x * size.y + won.y) * size.z + won.z, won.x + size.x * (won.y + size.y * won.z),
                    m(22u) != 0u);
  st_ind(i, i32(base) + flat);"""
_AVG_TAP = """if (inside) { acc += f32(ld_x(x_at)); }
        let padded = all(at >= -pad_begin) && all(at < size + pad_end);
        count += select(0u, 1u, select(inside, padded, m(23u) != 0u));"""
_LP_POWER = {1.0: "a", 2.0: "a * a"}
_LP_ROOT = {1.0: "acc", 2.0: "sqrt(acc)"}


def _three(values, fill):
    return [fill] * (3 - len(values)) + list(values)


def pool(device, x, mode, g, *, indices=False, storage_order=0, count_include_pad=0, p=2.0):
    """The `mode` ("max", "avg", "lp") pool of x over ConvGeometry `g`: y, or (y, indices) with `indices`."""
    if len(g.kernel) > 3:
        raise InvalidArgument(f"Pool: the WebGPU kernels take 1 to 3 spatial dims, not {len(g.kernel)}")
    out_shape = tuple(x.shape[:2]) + tuple(g.out)
    y = device.alloc(out_shape, x.dtype)
    ind = device.alloc(out_shape, I64) if indices else None
    outputs = [("y", y)] + ([("ind", ind)] if indices else [])
    ct = P.ctype(x.dtype)
    lp = float(p) if mode == "lp" else None
    if mode == "max":
        init, tap, finish = "lowest()", _MAX_TAP, f"st_y(i, {ct}(acc));" + ("\n  " + _INDEX if indices else "")
    elif mode == "avg":
        init, tap, finish = "0.0", _AVG_TAP, f"st_y(i, {ct}(acc / f32(count)));"
    else:
        power = _LP_POWER.get(lp, "select(pow(a, mf(24u)), a, is_nan(a))")  # (lavapipe's pow loses NaNs)
        root = _LP_ROOT.get(lp, "select(pow(acc, 1.0 / mf(24u)), acc, is_nan(acc))")
        init, tap, finish = "0.0", f"if (inside) {{ let a = abs(f32(ld_x(x_at))); acc += {power}; }}", \
            f"st_y(i, {ct}({root}));"
    if y.size:
        meta = [y.size] + _three(g.in_shape, 1) + _three(g.kernel, 1) + _three(g.strides, 1) + \
            _three(g.dilations, 1) + _three(g.pads_begin, 0) + _three(g.pads_end, 0) + _three(g.out, 1) + \
            [int(storage_order), int(count_include_pad), P.f32_word(p)]

        def wgsl():
            return P.render("pool", INTERFACE=P.interface([("x", x.dtype)], [(k, t.dtype) for k, t in outputs]),
                            COMMON=P.template("common"), WORKGROUP=P.WORKGROUP, LINEAR=P.LINEAR, INIT=init, TAP=tap,
                            FINISH=finish)

        key = ("pool", mode, indices, lp if lp in _LP_POWER else None, x.dtype.str)
        device.dispatch(key, wgsl, [x], [t for _, t in outputs], meta, y.size)
    return (y, ind) if indices else y


# --- claims ---------------------------------------------------------------------------------------------------------

_MODES = {"MaxPool": "max", "GlobalMaxPool": "max", "AveragePool": "avg", "GlobalAveragePool": "avg",
          "LpPool": "lp", "GlobalLpPool": "lp"}


def _claim(device, spec):
    shape = spec.input_shapes[0]
    if not L.fits(device, spec) or shape is None or not 3 <= len(shape) <= 5:
        return None
    op, mode = spec.op_type, _MODES[spec.op_type]
    indices = len(spec.node.outputs) > 1  # (as the CPU EP: a node with two outputs computes Indices)
    default_p = spec.opdef.attrs.get("p", 2)

    def run(x, *, ctx=None, storage_order=0, count_include_pad=0, p=default_p, **attrs):
        name = f"{op} node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) else op
        if op.startswith("Global"):
            if x.ndim < 3:
                raise InvalidArgument(f"{op}: X must be at least 3-D, got shape {x.shape}")
            g = ConvGeometry.window(x.shape[2:], x.shape[2:], name)
        else:
            g = ConvGeometry.pool(x.shape, name, **attrs)
            if mode == "lp":
                _check_p(p, op)
        return pool(device, x, mode, g, indices=indices, storage_order=storage_order,
                    count_include_pad=count_include_pad, p=float(p))
    return run


CLAIMS.add(["MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"], FLOAT,
           _claim)
