"""WebGPU Conv, FusedConv, ConvTranspose: implicit GEMM (matmul.wgsl), direct (conv.wgsl), Winograd F(2×2, 3×3)."""
import math

from ...errors import InvalidArgument
from ...ops.conv import _check_bias
from ...ops.conv_geometry import ConvGeometry
from ...ops.registry import MS_DOMAIN
from . import ops_linalg as L
from . import programs as P
from .claims import CLAIMS, F32, FLOAT

G = L.GEMM_META  # where the geometry words start (conv_taps.wgsl), in both kernels
DIRECT_BELOW = 8  # output channels per group under which the direct kernel runs (a GEMM tile would be mostly empty)

# the input coordinate a tap reads along one axis (conv_taps.wgsl's tap_axis), -1 outside the input
_AXIS = {False: "let i = i32(o) * stride + i32(t) * dil - pad;\n  return select(-1, i, i >= 0 && i < size);",
         True: "let q = i32(o) + pad - i32(t) * dil;\n  if (q < 0 || q % stride != 0) { return -1; }\n"
               "  return select(-1, q / stride, q / stride < size);"}
# W's element for output row `row` of group `grp`, input channel c of the group, tap t (direct kernel)
_W_DIRECT = {False: "((grp * mg + row) * cg + c) * taps + t", True: "((grp * cg + c) * mg + row) * taps + t"}
# ... and at (row, k = c · taps + t) of the GEMM's A
_W_GEMM = {False: "f32(ld_w((grp * m(G + 20u) + row) * m(3u) + k))",
           True: "f32(ld_w(((grp * m(G + 19u) + k / m(G + 25u)) * m(G + 20u) + row) * m(G + 25u) + k % m(G + 25u)))"}
_PROLOGUE = "let img = batch / m(G + 22u);\n  let grp = batch % m(G + 22u);"
_LOAD_B = "x_tap(img, grp * m(G + 19u) + k / m(G + 25u), k % m(G + 25u), col)"


def _three(values, fill):
    return [fill] * (3 - len(values)) + list(values)


def geometry(x, w, transposed, attrs, name):
    """(ConvGeometry, output channels, output channels per group) of a Conv / ConvTranspose node."""
    if transposed:
        g = ConvGeometry.conv_transpose(x.shape, w.shape, name, **attrs)
        return g, w.shape[1] * g.group, w.shape[1]
    g = ConvGeometry.conv(x.shape, w.shape, name, **attrs)
    return g, w.shape[0], w.shape[0] // g.group


def conv(device, x, w, b=None, z=None, *, transposed=False, act=("none", 0.0, 0.0), attrs=None, name="Conv"):
    """act(conv(x, w) + b + z) (ConvTranspose when `transposed`), 1 to 3 spatial dims."""
    g, m, mg = geometry(x, w, transposed, attrs or {}, name)
    if len(g.kernel) > 3:
        raise InvalidArgument(f"{name}: the WebGPU kernels take 1 to 3 spatial dims, not {len(g.kernel)}")
    n, c = x.shape[:2]
    cg = c // g.group
    _check_bias(b, m, name)
    out_shape = (n, m) + tuple(g.out)
    if z is not None and z.shape != out_shape:
        raise InvalidArgument(f"{name}: Z shape {z.shape} is not the output's {out_shape}")
    y = device.alloc(out_shape, x.dtype)
    if y.size == 0:
        return y
    if not transposed and winograd_fits(device, g, c, m, n):
        return winograd(device, x, w, b, z, y, g, act)
    taps, positions = math.prod(g.kernel), math.prod(g.out)
    meta = _three(g.in_shape, 1) + _three(g.kernel, 1) + _three(g.strides, 1) + _three(g.dilations, 1) + \
        _three(g.pads_begin, 0) + _three(g.out, 1) + [c, cg, mg, m, g.group, P.f32_word(act[1]),
                                                      P.f32_word(act[2]), taps, positions]
    inputs = [("x", x), ("w", w)] + ([("bias", b)] if b is not None else []) + ([("z", z)] if z is not None else [])
    add = " ".join(s for s, t in (("s += f32(ld_bias(ch));", b), ("s += f32(ld_z(at));", z)) if t is not None)
    taps_wgsl = P.render("conv_taps", G=G, AXIS=_AXIS[transposed], ACT=L.activation_fn(act[0]), ADD=add,
                         OUT=P.ctype(x.dtype))
    family = ("conv", transposed, b is not None, z is not None, act[0])
    if mg >= DIRECT_BELOW:
        L.gemm(device, family, inputs, y, mg, positions, cg * taps, n * g.group, meta, load_a=_W_GEMM[transposed],
               load_b=_LOAD_B, store="epilogue(img, grp, row, col, v);", prologue=_PROLOGUE, helpers=taps_wgsl)
        return y
    decls = [(k, t.dtype) for k, t in inputs]

    def wgsl():
        return P.render("conv", INTERFACE=P.interface(decls, [("y", y.dtype)]), COMMON=P.template("common"),
                        TAPS=taps_wgsl, WORKGROUP=P.WORKGROUP, LINEAR=P.LINEAR, W_INDEX=_W_DIRECT[transposed])

    device.dispatch(("conv_direct",) + family + (tuple(d.str for _, d in decls),), wgsl, [t for _, t in inputs],
                    [y], [y.size, 0, 0, 0] + meta, y.size)
    return y


# --- Winograd F(2×2, 3×3) -------------------------------------------------------------------------------------------
# The F(2×2, 3×3) matrices: V = Bᵀ·d·B (input tile), U = G·g·Gᵀ (weights), Y = Aᵀ·M·A (output tile).
_BT = ((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1))
_G = ((1, 0, 0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0, 0, 1))
_AT = ((1, 1, 1, 0), (0, 1, -1, -1))
WINOGRAD_MIN = (8, 16, 64)  # input channels, output channels, 2×2 tiles under which the transforms cost more


def _transposed(mat):
    return tuple(zip(*mat))


def _sum(coeffs, terms):
    parts = [t if c == 1 else f"-{t}" if c == -1 else f"{float(c)!r} * {t}" for c, t in zip(coeffs, terms) if c]
    return ("(" + " + ".join(parts) + ")").replace("+ -", "- ") if parts else "0.0"


def _sandwich(left, src, right, dst):
    """WGSL lets {dst}{r}_{c} = (left · src · right)[r][c] over lets {src}{a}_{b}, through {dst}t{r}_{b}."""
    k, kk = len(left[0]), len(right)
    lines = [f"let {dst}t{r}_{b} = {_sum(left[r], [f'{src}{a}_{b}' for a in range(k)])};"
             for r in range(len(left)) for b in range(kk)]
    lines += [f"let {dst}{r}_{c} = {_sum([right[b][c] for b in range(kk)], [f'{dst}t{r}_{b}' for b in range(kk)])};"
              for r in range(len(left)) for c in range(len(right[0]))]
    return lines


_TILE = ["let n = t / (m(7u) * m(8u));", "let ty = (t / m(8u)) % m(7u);", "let tx = t % m(8u);"]  # tile t


def _winograd_body(stage, out_ctype="f32", add=""):
    """BODY of winograd.wgsl's `stage`: "weights" (item m·C + c), "input" (c·tiles + t), "output" (m·tiles + t)."""
    if stage == "weights":
        lines = [f"let g{a}_{b} = f32(ld_w(i * 9u + {3 * a + b}u));" for a in range(3) for b in range(3)]
        lines += _sandwich(_G, "g", _transposed(_G), "u")
        lines += [f"st_wplanes({4 * r + c}u * m(0u) + i, u{r}_{c});" for r in range(4) for c in range(4)]
    elif stage == "input":
        lines = ["let t = i % m(11u);", "let c = i / m(11u);"] + _TILE + [
            "let y0 = i32(ty * 2u) - i32(m(9u));", "let x0 = i32(tx * 2u) - i32(m(10u));",
            "let h = i32(m(3u));", "let w = i32(m(4u));", "let base = (n * m(1u) + c) * m(3u) * m(4u);"]
        for a in range(4):
            for b in range(4):
                yy, xx = f"y0 + {a}", f"x0 + {b}"
                lines.append(f"let d{a}_{b} = select(0.0, f32(ld_x(base + u32(clamp({yy}, 0, h - 1) * w + "
                             f"clamp({xx}, 0, w - 1)))), {yy} >= 0 && {yy} < h && {xx} >= 0 && {xx} < w);")
        lines += _sandwich(_BT, "d", _transposed(_BT), "v")
        lines += [f"st_xplanes({4 * r + c}u * m(0u) + i, v{r}_{c});" for r in range(4) for c in range(4)]
    else:
        lines = ["let t = i % m(11u);", "let mo = i / m(11u);"] + _TILE
        lines += [f"let q{a}_{b} = ld_planes({4 * a + b}u * m(0u) + i);" for a in range(4) for b in range(4)]
        lines += _sandwich(_AT, "q", _transposed(_AT), "y")
        for r in range(2):
            for c in range(2):
                lines.append(f"if (ty * 2u + {r}u < m(5u) && tx * 2u + {c}u < m(6u)) {{ let at = ((n * m(2u) + mo) * "
                             f"m(5u) + ty * 2u + {r}u) * m(6u) + tx * 2u + {c}u; var s = y{r}_{c}; {add} "
                             f"st_y(at, {out_ctype}(act(s, mf(12u), mf(13u)))); }}")
    return "\n  ".join(lines)


def winograd_fits(device, g, c, m, n):
    """Whether a conv of geometry `g` runs as Winograd F(2×2, 3×3): 3×3, stride 1, no dilation, group 1, 2-D, big
    enough, and its 16 transformed planes within the device's binding size."""
    if len(g.kernel) != 2 or g.kernel != (3, 3) or g.strides != (1, 1) or g.dilations != (1, 1) or g.group != 1:
        return False
    tiles = n * -(-g.out[0] // 2) * -(-g.out[1] // 2)
    limit = device.limits.get("max-storage-buffer-binding-size", 1 << 27)
    return c >= WINOGRAD_MIN[0] and m >= WINOGRAD_MIN[1] and tiles >= WINOGRAD_MIN[2] and \
        16 * 4 * max(c * tiles, m * tiles, m * c) <= limit


def winograd(device, x, w, b, z, y, g, act):
    """y = act(conv(x, w) + b + z) by Winograd F(2×2, 3×3): transform the weights and the input's tiles, 16 GEMMs,
    transform back."""
    n, c = x.shape[:2]
    m = w.shape[0]
    th, tw = -(-g.out[0] // 2), -(-g.out[1] // 2)
    tiles = n * th * tw
    geo = [c, m] + list(g.in_shape) + list(g.out) + [th, tw] + list(g.pads_begin) + [tiles, P.f32_word(act[1]),
                                                                                       P.f32_word(act[2])]

    def stage(name, inputs, out, items, add=""):
        decls = [(k, t.dtype) for k, t in inputs]

        def wgsl():
            return P.render("winograd", INTERFACE=P.interface(decls, [(out[0], out[1].dtype)]),
                            COMMON=P.template("common"), ACT=L.activation_fn(act[0]), WORKGROUP=P.WORKGROUP,
                            LINEAR=P.LINEAR, BODY=_winograd_body(name, P.ctype(out[1].dtype), add))

        key = ("winograd", name, act[0] if name == "output" else "", add, tuple(d.str for _, d in decls),
               out[1].dtype.str)
        device.dispatch(key, wgsl, [t for _, t in inputs], [out[1]], [items] + geo, items)

    u = device.alloc((16, m, c), F32)
    v = device.alloc((16, c, tiles), F32)
    stage("weights", [("w", w)], ("wplanes", u), m * c)
    stage("input", [("x", x)], ("xplanes", v), c * tiles)
    planes = L.product(device, u, v, None, (16, m, tiles), m, tiles, c, (c, 1), (tiles, 1), [(16, m * c, c * tiles)])
    device.release(u)
    device.release(v)
    inputs = [("planes", planes)] + ([("bias", b)] if b is not None else []) + ([("z", z)] if z is not None else [])
    add = " ".join(s for s, t in (("s += f32(ld_bias(mo));", b), ("s += f32(ld_z(at));", z)) if t is not None)
    stage("output", inputs, ("y", y), m * tiles, add)
    device.release(planes)
    return y


# --- claims ---------------------------------------------------------------------------------------------------------

def _claim(device, spec):
    if not L.usable(device, spec):
        return None
    rank = next((len(s) for s in spec.input_shapes[:2] if s is not None), None)
    if rank is None or not 3 <= rank <= 5:
        return None
    act = ("none", 0.0, 0.0)
    if spec.op_type == "FusedConv":
        act = L.fused_activation(spec)
        if act is None:
            return None
        if len(spec.node.inputs) > 3 and spec.node.inputs[3]:  # Z: added as it is, so it must be Y's shape
            zs, ys = spec.input_shapes[3], spec.output_shapes[0]
            if zs is None or ys is None or list(zs) != list(ys) or any(d is None for d in zs):
                return None
    transposed = spec.op_type == "ConvTranspose"
    op = spec.op_type

    def run(x, w, b=None, z=None, *, ctx=None, **attrs):
        name = f"{op} node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) else op
        return conv(device, x, w, b, z, transposed=transposed, act=act, attrs=attrs, name=name)
    return run


CLAIMS.add(["Conv", "ConvTranspose"], FLOAT, _claim)
CLAIMS.add(["FusedConv"], FLOAT, _claim, domain=MS_DOMAIN)
