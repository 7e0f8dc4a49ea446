"""The WASM EP's op kernels: per op, a claim check on the node's attributes and a kernel calling the wasm module.

Each `claim_<op>(rt, node, opdef, attrs)` returns a kernel with the numpy kernel's calling convention, or None to
decline. Attributes are checked at claim time; dtypes and shapes are only known at run time, so every kernel
checks them and hands anything it does not support exactly (non-float32, odd ranks, negative pads, errors to
report) to the numpy kernel — never a silently different result.
"""
import math
import weakref
from typing import NamedTuple

import numpy as np

from ..errors import InvalidArgument
from ..ops import activations
from ..ops.conv_geometry import ConvGeometry
from ..ops.fused import activate
from ..runtime.providers import FALLBACK, guarded  # noqa: F401  (wasm_ops_* import them from here)
from .wasm_runtime import In, Out, Scratch

F32 = np.dtype(np.float32)

# the activations ox_common.h's v_act implements: name -> code (the table's; ox_act_codes.h is generated from it)
ACT = activations.codes(("none", "relu", "leaky", "sigmoid", "tanh", "hardsigmoid", "hardswish", "clip", "exp", "sqrt",
                         "erf", "gelu", "gelu_tanh", "elu", "abs", "neg", "swish", "selu", "log"))
BINOP = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3, "Max": 4, "Min": 5, "PRelu": 6}


def _is_f32(*arrays):
    return all(isinstance(a, (np.ndarray, np.generic)) and a.dtype == F32 for a in arrays)


def _contig(a):
    return np.ascontiguousarray(a, dtype=F32)  # no copy for a C-contiguous float32 array (numpy's own buffer)


_SCRATCH = {}


def scratch_floats(rt, fn, geometry):
    """The kernel's scratch size for this geometry, asked of the module once per (module, geometry)."""
    key = (id(rt.backend), fn, geometry)
    n = _SCRATCH.get(key)
    if n is None:
        if len(_SCRATCH) > 4096:
            _SCRATCH.clear()
        n = _SCRATCH[key] = rt.call(fn, list(geometry))
    return n


# ---- GEMM family ------------------------------------------------------------------------------------------------

def gemm_call(rt, batch, m, n, k, a, rsa, csa, sa, b, rsb, csb, sb, c, ldc, sc, alpha=1.0, bias=None, bsm=0,
              bsn=0, sbias=0, beta=1.0, act=0, a0=0.0, a1=0.0):
    rt.call("ox_gemm", [batch, m, n, k, In(a), rsa, csa, sa, In(b), rsb, csb, sb, Out(c), ldc, sc,
                        float(alpha), In(bias) if bias is not None else 0, bsm, bsn, sbias, float(beta),
                        act, float(a0), float(a1), Scratch(rt.gemm_scratch)])


def pack_b(rt, b, k, n, rsb, csb):
    """B (element (k, j) at b[k*rsb + j*csb], C-contiguous float32) packed for ox_gemm_pb."""
    packed = np.empty(rt.call("ox_gemm_packed_b_floats", [k, n]), F32)
    rt.call("ox_gemm_pack_b", [k, n, In(b), rsb, csb, Out(packed)])
    return packed


class PackedB:
    """Per-node cache of a constant B operand packed for the GEMM. An initializer is the same read-only array
    object every run: B is packed on its second sighting and reused while that array (same buffer, shape, strides)
    lives. Writeable arrays (feeds a caller may refill in place) are never cached."""
    __slots__ = ("ref", "key", "packed")

    def __init__(self):
        self.ref = self.key = self.packed = None

    def get(self, rt, src, b, k, n, rsb, csb):
        """The packed copy of `b` (C-contiguous float32 view of the node's input `src`), or None (not yet seen
        twice); identity is the input object `src` (a '<f4' initializer gets a new float32 view every call)."""
        if src.flags.writeable:
            return None
        key = (b.shape, b.strides, rsb, csb, b.__array_interface__["data"][0])
        if self.ref is not None and self.ref() is src and key == self.key:
            if self.packed is None:
                self.packed = pack_b(rt, b, k, n, rsb, csb)
            return self.packed
        self.ref, self.key, self.packed = weakref.ref(src), key, None
        return None


def gemm_pb_call(rt, batch, m, n, k, a, rsa, csa, sa, pb, c, ldc, sc, alpha=1.0, bias=None, bsm=0, bsn=0,
                 sbias=0, beta=1.0, act=0, a0=0.0, a1=0.0):
    rt.call("ox_gemm_pb", [batch, m, n, k, In(a), rsa, csa, sa, In(pb), Out(c), ldc, sc, float(alpha),
                           In(bias) if bias is not None else 0, bsm, bsn, sbias, float(beta), act, float(a0),
                           float(a1), Scratch(rt.gemm_scratch)])


class MatMulGeometry(NamedTuple):
    """How ox_gemm computes op(A) @ op(B) (numpy's matmul rules): A and B as (batch..., rows, cols) `a_shape` /
    `b_shape`, the product's `batch` dims, m, n, k, A's and B's row / column strides, `fold` (one shared 2-D B:
    A's batch folded into its rows), per-batch steps of A and B (0: shared), whether A / B must first be broadcast
    to the batch (`a_copy`, `b_copy`), and the output's shape (1-D operands' dims dropped)."""
    a_shape: tuple
    b_shape: tuple
    batch: tuple
    m: int
    n: int
    k: int
    rsa: int
    csa: int
    rsb: int
    csb: int
    fold: bool
    a_step: int
    b_step: int
    a_copy: bool
    b_copy: bool
    out: tuple


def matmul_geometry(sa, sb, trans_a=0, trans_b=0):
    """The MatMulGeometry of shapes `sa` @ `sb`, or None (empty, mismatched or 0-D operands: the numpy kernel)."""
    if not sa or not sb:
        return None
    a1, b1 = len(sa) == 1, len(sb) == 1
    if (trans_a and a1) or (trans_b and b1):
        return None
    sa2 = (1,) + tuple(sa) if a1 else tuple(sa)
    sb2 = tuple(sb) + (1,) if b1 else tuple(sb)
    m, k = sa2[-2:][::-1] if trans_a else sa2[-2:]
    k2, n = sb2[-2:][::-1] if trans_b else sb2[-2:]
    if k != k2 or m == 0 or n == 0 or k == 0:
        return None
    try:
        batch = np.broadcast_shapes(sa2[:-2], sb2[:-2])
    except ValueError:
        return None
    out = batch + (m, n)
    if a1:
        out = out[:-2] + (n,)
    if b1:
        out = out[:-1]
    a_step = 0 if math.prod(sa2[:-2]) == 1 else m * k
    b_step = 0 if math.prod(sb2[:-2]) == 1 else k * n
    return MatMulGeometry(sa2, sb2, batch, m, n, k, *((1, m) if trans_a else (k, 1)), *((1, k) if trans_b else (n, 1)),
                          len(sb2) == 2 and not trans_a, a_step, b_step, bool(a_step) and sa2[:-2] != batch,
                          bool(b_step) and sb2[:-2] != batch, out)


def matmul_fast(rt, a, b, trans_a=0, trans_b=0, alpha=1.0, pack=None):
    if not _is_f32(a, b):
        return FALLBACK
    g = matmul_geometry(a.shape, b.shape, trans_a, trans_b)
    if g is None:
        return FALLBACK
    m, n, k = g.m, g.n, g.k
    a2, b2 = _contig(a.reshape(g.a_shape)), _contig(b.reshape(g.b_shape))
    y = np.empty(g.batch + (m, n), F32)
    if g.fold:  # shared B: fold A's batch into its rows
        rows = a2.size // k
        pb = pack.get(rt, b, b2, k, n, g.rsb, g.csb) if pack is not None and b.ndim > 1 else None
        if pb is not None:
            gemm_pb_call(rt, 1, rows, n, k, a2, k, 1, 0, pb, y, n, 0, alpha)
        else:
            gemm_call(rt, 1, rows, n, k, a2, k, 1, 0, b2, g.rsb, g.csb, 0, y, n, 0, alpha)
    else:
        if g.a_copy:
            a2 = _contig(np.broadcast_to(a2, g.batch + a2.shape[-2:]))
        if g.b_copy:
            b2 = _contig(np.broadcast_to(b2, g.batch + b2.shape[-2:]))
        gemm_call(rt, math.prod(g.batch), m, n, k, a2, g.rsa, g.csa, g.a_step, b2, g.rsb, g.csb, g.b_step, y, n,
                  m * n, alpha)
    return y.reshape(g.out)


def claim_matmul(rt, node, opdef, attrs):
    if attrs:
        return None
    pack = PackedB()
    return guarded(lambda a, b, **kw: matmul_fast(rt, a, b, pack=pack), opdef.kernel)


def gemm_geometry(sa, sb, sc, beta=1.0, transA=0, transB=0):
    """(m, n, k, rsa, csa, rsb, csb, bias steps (bsm, bsn) or None for no bias) of Gemm on 2-D shapes `sa`, `sb`
    and C's shape `sc` (None: no C), or None (the numpy kernel: other ranks, empty output, a C that does not
    broadcast)."""
    if len(sa) != 2 or len(sb) != 2:
        return None
    m, k = (sa[1], sa[0]) if transA else sa
    k2, n = (sb[1], sb[0]) if transB else sb
    if k != k2 or m == 0 or n == 0:
        return None
    steps = None
    if sc is not None and beta != 0.0:
        if len(sc) > 2:
            return None
        cm, cn = ((1,) * (2 - len(sc)) + tuple(sc))
        if cm not in (1, m) or cn not in (1, n):
            return None  # the numpy kernel reports the bad shape
        steps = (cn if cm > 1 else 0), (1 if cn > 1 else 0)
    return m, n, k, *((1, m) if transA else (k, 1)), *((1, k) if transB else (n, 1)), steps


def gemm_fast(rt, a, b, c=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, act=(0, 0.0, 0.0), pack=None, **_):
    if not _is_f32(a, b) or (c is not None and not _is_f32(c)):
        return FALLBACK
    g = gemm_geometry(a.shape, b.shape, None if c is None else c.shape, beta, transA, transB)
    if g is None:
        return FALLBACK
    m, n, k, rsa, csa, rsb, csb, steps = g
    bias, (bsm, bsn) = (None, (0, 0)) if steps is None else (_contig(c), steps)
    b_in = b
    a, b = _contig(a), _contig(b)
    y = np.empty((m, n), F32)
    if k == 0:
        y[...] = 0.0
    pb = pack.get(rt, b_in, b, k, n, rsb, csb) if pack is not None and k > 0 else None
    if pb is not None:
        gemm_pb_call(rt, 1, m, n, k, a, rsa, csa, 0, pb, y, n, 0, alpha, bias, bsm, bsn, 0, beta, *act)
    else:
        gemm_call(rt, 1, m, n, k, a, rsa, csa, 0, b, rsb, csb, 0, y, n, 0, alpha, bias, bsm, bsn, 0, beta, *act)
    return y


def _finite_scales(attrs):
    """Whether alpha / beta are finite (the kernels scale partial sums: an infinite alpha gives NaN from inf * 0)."""
    return all(isinstance(attrs.get(k, 1.0), (int, float)) and math.isfinite(attrs.get(k, 1.0))
               for k in ("alpha", "beta"))


def claim_fused_matmul(rt, node, opdef, attrs):
    if set(attrs) - {"alpha", "transA", "transB"} or not _finite_scales(attrs):
        return None
    pack = PackedB()
    return guarded(lambda a, b, *, alpha=1.0, transA=0, transB=0, **kw: matmul_fast(rt, a, b, transA, transB, alpha,
                                                                                    pack), opdef.kernel)


def _act_code(p):
    """(act code, a0, a1) for an activation table's (name, a, b), or None."""
    return None if p is None else (ACT[p[0]], p[1], p[2])


def fused_act(name, params):
    """(act code, a0, a1) for FusedConv's activation `name` and activation_params, or None when the kernels lack it."""
    return _act_code(activations.fused_activation("FusedConv", {"activation": name, "activation_params": params},
                                                  {}, ACT))


def claim_fused_gemm(rt, node, opdef, attrs):
    if set(attrs) - {"alpha", "beta", "transA", "transB", "activation", "activation_alpha", "activation_beta",
                     "activation_gamma"} or not _finite_scales(attrs):
        return None
    act = _act_code(activations.fused_activation("FusedGemm", attrs, opdef.attrs, ACT))
    if act is None:
        return None
    pack = PackedB()
    return guarded(lambda *a, **kw: gemm_fast(rt, *a, **{**kw, "act": act, "pack": pack}), opdef.kernel)


def claim_gemm(rt, node, opdef, attrs):
    if opdef.since < 7 or set(attrs) - {"alpha", "beta", "transA", "transB"} or not _finite_scales(attrs):
        return None
    pack = PackedB()
    return guarded(lambda *a, **kw: gemm_fast(rt, *a, **kw, pack=pack), opdef.kernel)


# ---- convolution and pooling ----------------------------------------------------------------------------------------

def conv_args(rt, x_shape, w_shape, attrs):
    """(winograd?, the kernel's geometry arguments, its scratch floats, the output shape) of a 1-D / 2-D
    convolution, or None (what ConvGeometry rejects and empty outputs: the numpy kernel)."""
    if len(x_shape) not in (3, 4) or len(w_shape) != len(x_shape):
        return None
    n, c = x_shape[:2]
    m, group = w_shape[0], attrs.get("group", 1)
    try:  # (what it rejects, the numpy kernel reports)
        g = ConvGeometry.conv(x_shape, w_shape, "Conv", **{k: attrs.get(k) for k in (
            "auto_pad", "dilations", "group", "kernel_shape", "pads", "strides") if attrs.get(k) is not None})
    except InvalidArgument:
        return None
    g2 = g.as_2d()
    (h, wd), (kh, kw), (sh, sw), (dh, dw), (pt, pl), (oh, ow) = (g2.in_shape, g2.kernel, g2.strides, g2.dilations,
                                                                 g2.pads_begin, g2.out)
    y_shape = (n, m) + tuple(g.out)
    if math.prod(y_shape) == 0:
        return None
    if use_winograd(len(x_shape) - 2, kh, kw, sh, sw, dh, dw, group, c, m, oh, ow):
        return (True, (n, c, h, wd, m, pt, pl, oh, ow),
                scratch_floats(rt, "ox_conv3x3_wino_scratch_floats", (c, m, oh, ow)), y_shape)
    return (False, (n, c, h, wd, m, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, group),
            scratch_floats(rt, "ox_conv2d_scratch_floats", (c, m, group, oh, ow, kh, kw, sh, sw, dh, dw)), y_shape)


def conv_fast(rt, x, w, b=None, *, act=(0, 0.0, 0.0), **attrs):
    if not _is_f32(x, w) or (b is not None and not _is_f32(b)):
        return FALLBACK
    if b is not None and b.shape != (w.shape[0],):
        return FALLBACK
    ca = conv_args(rt, x.shape, w.shape, attrs)
    if ca is None:
        return FALLBACK
    wino, geometry, scratch, y_shape = ca
    y = np.empty(y_shape, F32)
    rt.call("ox_conv3x3_wino" if wino else "ox_conv2d",
            [*geometry, In(_contig(x)), In(_contig(w)), In(_contig(b)) if b is not None else 0, Out(y), act[0],
             float(act[1]), float(act[2]), Scratch(scratch)])
    return y


# Winograd pays off with enough channels and enough 2x2 tiles: its per-call weight transform and A packing cost
# 16*M*C each, its multiplications 2.25x fewer (Chromium: 56x56x64 1.75x and 28x28x128 1.7x faster than the
# im2col GEMM; 14x14x256 even; 7x7x512 2.6x slower)
WINOGRAD_MIN_CHANNELS = 16
WINOGRAD_MIN_TILES = 100


def use_winograd(nd, kh, kw, sh, sw, dh, dw, group, c, m, oh, ow):
    """Dense 3x3 stride-1 convolutions with enough channels and tiles run as Winograd F(2x2, 3x3) (ox_winograd.c)."""
    return (nd == 2 and kh == 3 and kw == 3 and sh == 1 and sw == 1 and dh == 1 and dw == 1 and group == 1
            and c >= WINOGRAD_MIN_CHANNELS and m >= WINOGRAD_MIN_CHANNELS
            and ((oh + 1) // 2) * ((ow + 1) // 2) >= WINOGRAD_MIN_TILES)


def claim_conv(rt, node, opdef, attrs):
    if set(attrs) - {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}:
        return None
    if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER", ""):
        return None
    return guarded(lambda *a, **kw: conv_fast(rt, *a, **kw), opdef.kernel)


def claim_fused_conv(rt, node, opdef, attrs):
    if set(attrs) - {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", "activation",
                     "activation_params"}:
        return None
    if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER", ""):
        return None
    p = activations.fused_activation("FusedConv", attrs, opdef.attrs, ACT)
    if p is None:
        return None
    if len(node.inputs) > 3 and node.inputs[3]:  # the Z (residual) input: added, then activated, in numpy
        return guarded(lambda x, w, b=None, z=None, **kw: conv_sum_fast(rt, x, w, b, z, p, **kw), opdef.kernel)
    act = _act_code(p)
    return guarded(lambda *a, **kw: conv_fast(rt, *a, **{**kw, "act": act}), opdef.kernel)


def conv_sum_fast(rt, x, w, b, z, act, *, activation="", activation_params=None, **kw):
    """FusedConv with Z: the convolution in WASM, the sum and the activation `act` (name, a, b) by numpy
    (ops.fused)."""
    y = conv_fast(rt, x, w, b, **kw)
    if y is FALLBACK or z is None or not _is_f32(z) or z.shape != y.shape:
        return FALLBACK
    y += z
    return activate(y, *act)


def pool_args(rt, x_shape, is_max, attrs):
    """(ox_pool2d's geometry arguments, its scratch floats, the output shape) of a 1-D / 2-D pool, or None (what
    ConvGeometry rejects and empty outputs: the numpy kernel)."""
    if len(x_shape) not in (3, 4):
        return None
    try:  # (what it rejects, the numpy kernel reports)
        g = ConvGeometry.pool(x_shape, "Pool", **{k: attrs[k] for k in (
            "auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides") if k in attrs})
    except InvalidArgument:
        return None
    g2 = g.as_2d()
    (h, w), (kh, kw), (sh, sw), (dh, dw), (pt, pl), (pbot, pr), (oh, ow) = (
        g2.in_shape, g2.kernel, g2.strides, g2.dilations, g2.pads_begin, g2.pads_end, g2.out)
    y_shape = tuple(x_shape[:2]) + tuple(g.out)
    if math.prod(y_shape) == 0:
        return None
    scratch = scratch_floats(rt, "ox_pool2d_scratch_floats", (oh, ow, kh, kw, sh, sw, dh, dw))
    return ((x_shape[0] * x_shape[1], h, w, kh, kw, sh, sw, dh, dw, pt, pl, pbot, pr, oh, ow, int(is_max),
             int(bool(attrs.get("count_include_pad", 0)))), scratch, y_shape)


def pool_fast(rt, is_max, x, **attrs):
    if not _is_f32(x):
        return FALLBACK
    pa = pool_args(rt, x.shape, is_max, attrs)
    if pa is None:
        return FALLBACK
    geometry, scratch, y_shape = pa
    y = np.empty(y_shape, F32)
    rt.call("ox_pool2d", [*geometry, In(_contig(x)), Out(y), Scratch(scratch)])
    return y


def claim_maxpool(rt, node, opdef, attrs):
    if len([o for o in node.outputs if o]) > 1 or len(node.outputs) > 1 and node.outputs[1]:
        return None  # Indices output: the numpy kernel
    if set(attrs) - {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}:
        return None
    return guarded(lambda x, **kw: pool_fast(rt, True, x, **kw), opdef.kernel)


def claim_avgpool(rt, node, opdef, attrs):
    if set(attrs) - {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"}:
        return None
    return guarded(lambda x, **kw: pool_fast(rt, False, x, **kw), opdef.kernel)


def global_pool_fast(rt, is_max, x):
    if not _is_f32(x) or x.ndim < 3 or x.size == 0:
        return FALLBACK
    planes = x.shape[0] * x.shape[1]
    y = np.empty(x.shape[:2] + (1,) * (x.ndim - 2), F32)
    rt.call("ox_global_pool", [planes, x.size // planes, In(_contig(x)), Out(y), int(is_max)])
    return y


def claim_global_pool(is_max):
    def claim(rt, node, opdef, attrs):
        if attrs:
            return None
        return guarded(lambda x, **kw: global_pool_fast(rt, is_max, x), opdef.kernel)
    return claim
