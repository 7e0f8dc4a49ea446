"""WebGPU MatMul, Gemm, FusedMatMul, FusedGemm on the tiled GEMM (webgpu_shaders/matmul.wgsl) the convolutions share."""
import numpy as np

from ...errors import InvalidArgument
from ...ops import activations
from ...ops.linalg import _check_c
from ...ops.registry import MS_DOMAIN
from . import ops_elementwise as E
from . import programs as P
from .claims import CLAIMS, FLOAT, DEVICE_TYPES

# variant -> (BM, BN, BK, TM, TN): a BM×BN output tile per workgroup, TM×TN per thread, (BM/TM)·(BN/TN) threads.
# Larger blocks per thread load fewer operands per multiply-add (on lavapipe a 512³ product ran 0.28 GFLOP per CPU
# second at 4×4, 0.55 at 8×8, 0.75 at 8×16); thin products take thin tiles, so a tile is mostly inside the matrix.
TILES = {"wide": (4, 64, 16, 1, 4), "tall": (64, 4, 16, 4, 1), "small": (32, 32, 16, 4, 4),
         "flat": (32, 128, 16, 4, 16), "narrow": (128, 32, 16, 16, 4), "large": (64, 64, 16, 8, 8),
         "big": (64, 128, 16, 8, 16)}
GEMM_META = 4  # the family's meta words start here (matmul.wgsl's own: workgroups, rows, cols, depth)
for _bm, _bn, _bk, _tm, _tn in TILES.values():
    assert (_bm // _tm) * (_bn // _tn) == P.WORKGROUP, "a GEMM tile needs one thread per TM×TN block"


def tile_for(rows, cols):
    """The tile variant for a rows × cols product."""
    if rows <= 4 or cols <= 4:
        return "wide" if rows <= cols else "tall"
    if rows <= 32 or cols <= 32:
        return "flat" if cols >= 128 else "narrow" if rows >= 128 else "small"
    return "big" if rows >= 64 and cols >= 128 else "large"


def gemm_fits(device):
    """Whether the device's limits allow every tile variant (workgroup memory, invocations per workgroup)."""
    need = max((bm * bk + bk * bn) * 4 for bm, bn, bk, _, _ in TILES.values())
    return device.limits.get("max-compute-workgroup-storage-size", 16384) >= need and \
        device.limits.get("max-compute-invocations-per-workgroup", 256) >= P.WORKGROUP


def fits(device, spec, weight=None):
    """False when an input or output whose shape the graph fixes exceeds the device's binding size (the kernel could
    not allocate it), or when input `weight`'s dims are not all known: a weight can be that large (Gemm's B in VGG's
    and AlexNet's first fully connected layers: 150-436 MB; onnx's light_* models make them with ConstantOfShape)."""
    limit = device.limits.get("max-storage-buffer-binding-size", 1 << 27)
    if weight is not None and (spec.input_shapes[weight] is None or None in spec.input_shapes[weight]):
        return False
    for types, shapes in ((spec.input_types, spec.input_shapes), (spec.output_types, spec.output_shapes)):
        for t, dims in zip(types, shapes):
            if t in DEVICE_TYPES and dims and all(isinstance(d, int) for d in dims) and \
                    int(np.prod(dims, dtype=np.int64)) * DEVICE_TYPES[t].itemsize > limit:
                return False
    return True


# --- the activation epilogue ---------------------------------------------------------------------------------------

def activation_fn(name):
    """WGSL `fn act(a, p0, p1) -> f32`: activation-table `name` with the element-wise kernels' formula."""
    act = activations.BY_NAME[name]
    if not act.op:
        expr = "a"
    elif act.op == "Clip":
        expr = E.CLIP_FLOAT
    elif act.op == "Gelu":
        expr = E.GELU[dict(act.when)["approximate"]]
    else:
        expr = E.UNARY_FLOAT[act.op][0]
    return f"fn act(a: f32, p0: f32, p1: f32) -> f32 {{ return {expr}; }}"


ACT = tuple(a.name for a in activations.ACTIVATIONS if not a.op or a.op in E.UNARY_FLOAT or a.op == "Clip")


def fused_activation(spec):
    """(name, a, b) of a FusedConv / FusedGemm node's activation, or None when its kernels lack it."""
    return activations.fused_activation(spec.op_type, spec.attrs, spec.opdef.attrs, ACT)


# --- the tiled GEMM ------------------------------------------------------------------------------------------------

def gemm(device, family, inputs, out, rows, cols, depth, batches, meta, *, load_a, load_b, store, prologue="",
         helpers=""):
    """Dispatch matmul.wgsl over `batches` rows × cols products of depth `depth` into `out`: `inputs` [(name,
    tensor)] are bound (ld_<name>), then y; `meta` follows the template's words (at GEMM_META); `family` keys the
    pipeline together with the tile variant and dtypes (the WGSL snippets must follow from it)."""
    variant = tile_for(rows, cols)
    bm, bn, bk, tm, tn = TILES[variant]
    groups = batches * -(-rows // bm) * -(-cols // bn)
    if groups == 0:
        return
    decls = [(name, t.dtype) for name, t in inputs]

    def wgsl():
        return P.render("matmul", INTERFACE=P.interface(decls, [("y", out.dtype)]), COMMON=P.template("common"),
                        HELPERS=helpers, BM=bm, BN=bn, BK=bk, TM=tm, TN=tn, A_TILE=bm * bk, B_TILE=bk * bn,
                        WORKGROUP=P.WORKGROUP, MAX_GROUPS=P.MAX_GROUPS, PROLOGUE=prologue, LOAD_A=load_a,
                        LOAD_B=load_b, **_unrolled(bm, bn, tm, tn, store))

    key = ("gemm", variant, family, tuple(d.str for _, d in decls), out.dtype.str)
    device.dispatch(key, wgsl, [t for _, t in inputs], [out], [groups, rows, cols, depth] + list(meta),
                    groups * P.WORKGROUP)


def _unrolled(bm, bn, tm, tn, store):
    """matmul.wgsl's ACC (the TM×TN accumulators), PRODUCT (one k step: TM + TN loads from the tiles, TM·TN
    multiply-adds) and STORES (STORE for each accumulator inside the output), as straight-line WGSL. A thread's rows
    are BM/TM apart and its columns BN/TN apart, so neighbouring threads read neighbouring tile elements."""
    cells = [(i, j) for i in range(tm) for j in range(tn)]
    ri, cj = bm // tm, bn // tn
    acc = " ".join(f"var c{i}_{j} = 0.0;" for i, j in cells)
    product = "\n      ".join([f"let a{i} = tile_a[at + {i * ri}u];" for i in range(tm)] +
                                [f"let b{j} = tile_b[bt + {j * cj}u];" for j in range(tn)] +
                                [f"c{i}_{j} += a{i} * b{j};" for i, j in cells])
    stores = "\n  ".join(f"if (row0 + tr + {i * ri}u < rows && col0 + tc + {j * cj}u < cols) {{ "
                          f"let row = row0 + tr + {i * ri}u; let col = col0 + tc + {j * cj}u; let v = c{i}_{j}; "
                          f"{store} }}" for i, j in cells)
    return {"ACC": acc, "PRODUCT": product, "STORES": stores}


# MatMul / Gemm meta (from GEMM_META): A's row and depth strides, B's depth and column strides, alpha, beta, C's row
# and column strides, the activation's p0 and p1, then the batch dims, A's and B's batch strides.
_BATCH_AT = GEMM_META + 10
_MM_PROLOGUE = """var a_base = 0u;
  var b_base = 0u;
  var rem = batch;
  for (var d = 0u; d < BR; d++) {
    let e = BR - 1u - d;
    let c = rem % m(AT + e);
    rem = rem / m(AT + e);
    a_base += c * m(AT + BR + e);
    b_base += c * m(AT + 2u * BR + e);
  }"""
_MM_LOAD_A = "f32(ld_a(a_base + row * m(4u) + k * m(5u)))"
_MM_LOAD_B = "f32(ld_b(b_base + k * m(6u) + col * m(7u)))"


def _mm_store(ctype, has_c):
    c = " + mf(9u) * f32(ld_c(row * m(10u) + col * m(11u)))" if has_c else ""
    return f"st_y(batch * rows * cols + row * cols + col, {ctype}(act(mf(8u) * v{c}, mf(12u), mf(13u))));"


def product(device, a, b, c, out_shape, rows, cols, depth, a_strides, b_strides, batch, alpha=1.0, beta=0.0,
             c_strides=(0, 0), act=("none", 0.0, 0.0)):
    """out = act(alpha · A·B + beta · C) over `batch` ([(dim, A stride, B stride)]); strides in elements."""
    out = device.alloc(out_shape, a.dtype)
    br = len(batch)
    inputs = [("a", a), ("b", b)] + ([("c", c)] if c is not None else [])
    meta = list(a_strides) + list(b_strides) + [P.f32_word(alpha), P.f32_word(beta)] + list(c_strides) + \
        [P.f32_word(act[1]), P.f32_word(act[2])] + [d for d, _, _ in batch] + [s for _, s, _ in batch] + \
        [s for _, _, s in batch]
    helpers = f"const BR: u32 = {br}u;\nconst AT: u32 = {_BATCH_AT}u;\n{activation_fn(act[0])}"
    gemm(device, ("matmul", br, c is not None, act[0]), inputs, out, rows, cols, depth,
         int(np.prod([d for d, _, _ in batch], dtype=np.int64)), meta, load_a=_MM_LOAD_A, load_b=_MM_LOAD_B,
         store=_mm_store(P.ctype(a.dtype), c is not None), prologue=_MM_PROLOGUE, helpers=helpers)
    return out


def matmul(device, a, b, alpha=1.0, trans_a=False, trans_b=False, name="MatMul"):
    """numpy's matmul (1-D operands, broadcast batch dims) of A and B, each transposed in its last two dims when
    `trans_*` and at least 2-D (FusedMatMul), scaled by alpha."""
    if a.ndim == 0 or b.ndim == 0:
        raise InvalidArgument(f"{name}: inputs must be at least 1-D, got shapes {a.shape} and {b.shape}")
    trans_a, trans_b = trans_a and a.ndim > 1, trans_b and b.ndim > 1
    sa = (1,) + a.shape if a.ndim == 1 else a.shape[:-2] + (a.shape[-2:][::-1] if trans_a else a.shape[-2:])
    sb = b.shape + (1,) if b.ndim == 1 else b.shape[:-2] + (b.shape[-2:][::-1] if trans_b else b.shape[-2:])
    rows, depth, cols = sa[-2], sa[-1], sb[-1]
    if depth != sb[-2]:
        raise InvalidArgument(f"{name}: inner dimensions differ, shapes {a.shape} and {b.shape}")
    batch = E.broadcast_shape([sa[:-2], sb[:-2]], name)
    out_shape = batch + ((rows,) if a.ndim > 1 else ()) + ((cols,) if b.ndim > 1 else ())
    a_mat, b_mat = rows * depth, depth * cols
    dims = [(d, sx * a_mat, sy * b_mat) for d, sx, sy in zip(batch, E._strides(sa[:-2], batch),
                                                              E._strides(sb[:-2], batch))]
    a_strides = (1, rows) if trans_a else (depth, 1)
    b_strides = (1, depth) if trans_b else (cols, 1)
    return product(device, a, b, None, out_shape, rows, cols, depth, a_strides, b_strides, dims, alpha)


def gemm_op(device, a, b, c=None, *, alpha=1.0, beta=1.0, trans_a=0, trans_b=0, act=("none", 0.0, 0.0),
            name="Gemm"):
    """Gemm / FusedGemm: act(alpha · A'·B' + beta · C), C unidirectionally broadcast to (M, N)."""
    if a.ndim != 2 or b.ndim != 2:
        raise InvalidArgument(f"{name}: A and B must be 2-D, got {a.shape} and {b.shape}")
    rows, depth = a.shape[::-1] if trans_a else a.shape
    kb, cols = b.shape[::-1] if trans_b else b.shape
    if depth != kb:
        raise InvalidArgument(f"{name}: inner dimensions differ, shapes {a.shape} and {b.shape}")
    _check_c(c, rows, cols, name)
    if c is None or beta == 0.0:  # (as the CPU EP: C is not read, so its infs and NaNs do not reach Y)
        c, c_strides = None, (0, 0)
    else:
        c_strides = E._strides(c.shape, (rows, cols))
    return product(device, a, b, c, (rows, cols), rows, cols, depth, (1, rows) if trans_a else (depth, 1),
                   (1, depth) if trans_b else (cols, 1), [], alpha, beta, c_strides, act)


# --- claims ---------------------------------------------------------------------------------------------------------

def _same_types(spec):
    types = [t for x, t in zip(spec.node.inputs, spec.input_types) if x]
    return len(set(types)) == 1


def usable(device, spec, weight=None):
    """Whether the GEMM kernels can take the node: one element type, tiles within the device's limits, every tensor
    within its binding size (see fits)."""
    return _same_types(spec) and gemm_fits(device) and fits(device, spec, weight)


def _matmul(device, spec):
    if not usable(device, spec):  # (B's dims may be data-dependent: AffineGrid's expansion)
        return None
    if spec.op_type == "MatMul":
        return lambda a, b, **kw: matmul(device, a, b)
    if any(spec.attrs.get(k) for k in ("transBatchA", "transBatchB")):
        return None  # (the CPU EP's kernel refuses them too)

    def fused(a, b, *, alpha=1.0, transA=0, transB=0, **kw):
        return matmul(device, a, b, float(alpha), bool(transA), bool(transB), "FusedMatMul")
    return fused


def _gemm(device, spec):
    if not usable(device, spec, weight=1):
        return None
    act = ("none", 0.0, 0.0)
    if spec.op_type == "FusedGemm":
        act = fused_activation(spec)
        if act is None:
            return None
    old = spec.op_type == "Gemm" and spec.opdef.since < 7  # (Gemm-1..6: C must be (M, N) unless broadcast)

    def run(a, b, c=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=0, **kw):
        if old and c is not None and not broadcast:
            rows = a.shape[1] if transA else a.shape[0]
            cols = b.shape[0] if transB else b.shape[1]
            if c.shape != (rows, cols):
                raise InvalidArgument(f"Gemm: C shape {c.shape} must equal ({rows}, {cols}) when broadcast=0")
        return gemm_op(device, a, b, c, alpha=float(alpha), beta=float(beta), trans_a=transA, trans_b=transB,
                       act=act, name=spec.op_type)
    return run


CLAIMS.add(["MatMul"], FLOAT, _matmul)
CLAIMS.add(["FusedMatMul"], FLOAT, _matmul, domain=MS_DOMAIN)
CLAIMS.add(["Gemm"], FLOAT, _gemm)
CLAIMS.add(["FusedGemm"], FLOAT, _gemm, domain=MS_DOMAIN)
