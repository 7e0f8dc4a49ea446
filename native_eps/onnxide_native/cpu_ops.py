"""NativeCPUExecutionProvider's kernels over libonnxide_cpu: GEMMs on weights packed once, convolutions (depthwise,
Winograd, GEMM on shifted input rows), ConvTranspose (kernel == stride), pooling, nearest upsampling, attention,
inference BatchNormalization, and the passes numpy splits into several (activations with bias / residual, binary
ops, LayerNorm, softmax). Each kernel has the numpy kernel's calling convention and returns
FALLBACK for what it does not do exactly (dtype, rank, broadcast, extra outputs) or would do slower (small work),
so the numpy kernel runs; batched GEMMs inside attention use numpy too."""
import math
import weakref

import numpy as np

from onnxide.errors import InvalidArgument
from onnxide.ops import activations, conv_winograd, resize, weight_cache
from onnxide.ops.conv_geometry import ConvGeometry
from onnxide.runtime import threads as session_threads
from onnxide.runtime.providers import FALLBACK

F32 = np.dtype(np.float32)
# the activations nx_eltwise.c's nx_act implements: name -> code (the table's; nx_act_codes.h is generated from it)
ACT = activations.codes(("none", "relu", "leaky", "sigmoid", "tanh", "hardsigmoid", "hardswish", "clip", "sqrt", "erf",
                         "gelu", "gelu_tanh", "log", "swish"))
# the activation attributes of the fused ops (no activation in the table takes FusedGemm's activation_gamma)
_FUSED_ATTRS = {"FusedConv": ("activation", "activation_params"),
                "FusedGemm": ("activation", "activation_alpha", "activation_beta", "activation_gamma")}
# GEMMs (and convs) of fewer multiply-adds stay in numpy: the native call's fixed costs (packed-weight lookup, ctypes)
# outweigh its speed there (silero VAD's 1-D convs and LSTM-side MatMuls)
SMALL_GEMM = 1 << 17
SMALL_N = 16        # GEMMs with fewer output columns than this use under half of the 32-wide tiles
SMALL_ACT = 4096    # element-wise: below this many elements numpy's ufunc call is cheaper than a ctypes call
WINOGRAD_F4 = True
CONV_WINDOWS = True  # tests and tests/bench/ab_native.py switch the "windows" conv off
POOL_IN_CONV = True  # a chain's 2×2 max pool made by the shifted conv before it (chain_lower; ab_native.py A/Bs it)
NATIVE_ATTENTION = True  # tests/bench/micro.py switches it off to time the two attention paths


def fused_act(node, opdef, attrs):
    """(code, a, b) of a FusedConv / FusedGemm node's activation (its activation attributes taken out of `attrs`),
    (0, 0.0, 0.0) for a plain Conv / Gemm, None when the kernels lack it."""
    if node.op_type not in ("FusedConv", "FusedGemm"):
        return 0, 0.0, 0.0
    p = activations.fused_activation(node.op_type, attrs, opdef.attrs, ACT)
    for k in _FUSED_ATTRS[node.op_type]:
        attrs.pop(k, None)
    return None if p is None else (ACT[p[0]], p[1], p[2])


def threads():
    """Threads for a kernel's loops (nx_pool.c): the running session's intra_op_num_threads (the EP has own_threads,
    so OpenBLAS runs on one thread meanwhile and its spinning workers do not fight these)."""
    return session_threads.current()


def _f32(*arrays):
    for a in arrays:  # (a loop: this runs for every node, also the ones handed back to numpy)
        if type(a) is not np.ndarray or a.dtype != F32:
            return False
    return True


def _addr(a):
    return a.ctypes.data if a is not None else None


def _outputs(ctx):
    return max(1, ctx.num_outputs) if ctx is not None else 1


# ---- element-wise ------------------------------------------------------------------------------------------------

def act(lib, x, code, a=0.0, b=0.0, bias=None):
    """act(x + bias) with bias None or 1-D over x's last axis."""
    if not _f32(x) or x.size < SMALL_ACT or (bias is not None and (not _f32(bias) or bias.ndim != 1 or x.ndim == 0
                                            or bias.shape[0] != x.shape[-1])):
        return FALLBACK
    x = np.ascontiguousarray(x)
    y = np.empty(x.shape, F32)
    if bias is None:
        lib.nx_act(x.size, x.ctypes.data, y.ctypes.data, None, code, a, b, threads())
    else:
        cols = x.shape[-1]
        lib.nx_bias_act(x.size // cols, cols, x.ctypes.data, y.ctypes.data, bias.ctypes.data, code, a, b,
                        threads())
    return y


BINARY = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3, "Max": 4, "Min": 5}  # (Max / Min: two inputs, opset 8 on)
_PLANS = {}


def _broadcast_plan(out, shape):
    """(outer, mid, inner) when `shape` (right-aligned to `out`) is one contiguous block of out's dims with ones
    around it, else None."""
    key = (out, shape)
    if key not in _PLANS:
        padded = (1,) * (len(out) - len(shape)) + tuple(shape)
        dims = [i for i, d in enumerate(padded) if d != 1]
        plan = None
        if all(padded[i] == out[i] for i in dims) and (not dims or dims == list(range(dims[0], dims[-1] + 1))):
            i, j = (dims[0], dims[-1] + 1) if dims else (0, 0)  # a scalar: one row of everything
            plan = (math.prod(out[:i]), math.prod(out[i:j]), math.prod(out[j:]))
        if len(_PLANS) > 4096:
            _PLANS.clear()
        _PLANS[key] = plan
    return _PLANS[key]


def binary_plan(sa, sb):
    """How nx_binary computes a ⊙ b for shapes sa, sb: (output shape, b_first, (outer, mid, inner), b_full), the
    operand of the output's shape first; None where neither operand has it or the other is not one block of dims."""
    try:
        out = tuple(np.broadcast_shapes(sa, sb)) if sa != sb else tuple(sa)
    except ValueError:
        return None
    b_first = tuple(sa) != out
    full, other = (sb, sa) if b_first else (sa, sb)
    if tuple(full) != out:
        return None
    if tuple(other) == out:
        return out, b_first, (1, math.prod(out), 1), 1
    plan = _broadcast_plan(out, tuple(other))
    return None if plan is None else (out, b_first, plan, 0)


def binary(lib, code, a, b):
    """a op b for float32 with b (or a) full-shape, and the other full, scalar or one contiguous block of dims."""
    if not _f32(a, b):
        return FALLBACK
    bp = binary_plan(a.shape, b.shape)
    if bp is None or math.prod(bp[0]) < SMALL_ACT:
        return FALLBACK
    out, b_first, plan, b_full = bp
    full, other = (np.ascontiguousarray(b), np.ascontiguousarray(a)) if b_first else \
        (np.ascontiguousarray(a), np.ascontiguousarray(b))
    y = np.empty(out, F32)
    lib.nx_binary(code, int(b_first), *plan, b_full, full.ctypes.data, other.ctypes.data, y.ctypes.data, threads())
    return y


def batch_norm(lib, x, scale, b, mean, var, *, epsilon=1e-5, **_):
    """Inference BatchNormalization of float32 (N, C, ...) as one pass y = x·a + (b − mean·a), a = scale/√(var+ε)
    per channel (a and the shift computed as the numpy kernel computes them)."""
    if not _f32(x, scale, b, mean, var) or x.ndim < 3 or x.size < SMALL_ACT:
        return FALLBACK
    c = x.shape[1]
    if any(p.shape != (c,) for p in (scale, b, mean, var)):
        return FALLBACK
    a = scale / np.sqrt(var + np.float32(epsilon))
    shift = b - mean * a
    x = np.ascontiguousarray(x)
    y = np.empty_like(x)
    lib.nx_channel_affine(x.shape[0], c, x.size // (x.shape[0] * c), x.ctypes.data, a.ctypes.data,
                          shift.ctypes.data, y.ctypes.data, threads())
    return y


def layer_norm(lib, x, scale, b=None, *, axis=-1, epsilon=1e-5, stash_type=1, ctx=None):
    if not _f32(x, scale) or (b is not None and not _f32(b)) or stash_type != 1 or x.ndim == 0:
        return FALLBACK
    a = axis + x.ndim if axis < 0 else axis
    if not 0 <= a < x.ndim:
        return FALLBACK
    norm = x.shape[a:]
    cols = math.prod(norm)
    if not all(p is None or p.shape == norm for p in (scale, b)) or cols == 0:  # (broadcast ones: numpy)
        return FALLBACK
    x = np.ascontiguousarray(x)
    rows = x.size // cols
    y = np.empty(x.shape, F32)
    n = _outputs(ctx)
    stats = (np.empty(x.shape[:a] + (1,) * len(norm), F32), np.empty(x.shape[:a] + (1,) * len(norm), F32)) \
        if n > 1 else (None, None)
    scale, b = np.ascontiguousarray(scale), None if b is None else np.ascontiguousarray(b)  # (held: a copy's
    if rows:  # address is only good while the copy lives)
        lib.nx_layernorm(rows, cols, x.ctypes.data, None, None, scale.ctypes.data, _addr(b), float(epsilon),
                         y.ctypes.data, None, _addr(stats[0]), _addr(stats[1]), threads())
    return y if n == 1 else (y,) + stats[:n - 1]


def skip_layer_norm(lib, x, skip, gamma, beta=None, bias=None, *, epsilon=1e-12, ctx=None):
    n = _outputs(ctx)
    if (not _f32(x, skip, gamma) or any(p is not None and not _f32(p) for p in (beta, bias)) or x.ndim < 2
            or skip.shape != x.shape or n not in (1, 4)):
        return FALLBACK
    h = x.shape[-1]
    if any(p is not None and p.shape != (h,) for p in (gamma, beta, bias)) or h == 0:
        return FALLBACK
    x, skip = np.ascontiguousarray(x), np.ascontiguousarray(skip)
    rows = x.size // h
    y = np.empty(x.shape, F32)
    if n == 1:
        mean = inv = total = None
    else:
        mean, inv = np.empty(x.shape[:-1] + (1,), F32), np.empty(x.shape[:-1] + (1,), F32)
        total = np.empty(x.shape, F32)
    if rows:
        lib.nx_layernorm(rows, h, x.ctypes.data, skip.ctypes.data, _addr(bias), gamma.ctypes.data, _addr(beta),
                         float(epsilon), y.ctypes.data, _addr(total), _addr(mean), _addr(inv), threads())
    return y if n == 1 else (y, mean, inv, total)


def softmax(lib, x, axis, log, coerced):
    """Softmax / LogSoftmax along the last axis (opset 13+), or over the 2-D coercion at `axis` (before 13)."""
    if not _f32(x) or x.ndim == 0:
        return FALLBACK
    a = axis + x.ndim if axis < 0 else axis
    if not 0 <= a < x.ndim or (not coerced and a != x.ndim - 1):
        return FALLBACK
    cols = math.prod(x.shape[a:])
    x = np.ascontiguousarray(x)
    y = np.empty(x.shape, F32)
    if x.size:
        lib.nx_softmax(x.size // cols, cols, x.ctypes.data, y.ctypes.data, 1.0, None, 1, 1, 0, 0, int(log), threads())
    return y


def attention(lib, q, k, v, num_heads, scale, bias=None):
    """Scaled dot-product attention of 3-D (B, S, N*H) q, k, v with an optional additive attention bias
    (B or 1, N or 1, S, T). On several threads nx_attention (heads over the threads: MiniLM's 12 heads 0.33 ->
    0.24 ms on two); on one, numpy's batched GEMMs around the native softmax, in place on the scores (~10% faster
    there than nx_attention's short-K GEMMs; tests/bench/micro.py times both)."""
    if not _f32(q, k, v) or q.ndim != 3 or k.ndim != 3 or v.ndim != 3 or (bias is not None and not _f32(bias)):
        return FALLBACK
    b, s, d = q.shape
    n = int(num_heads)
    if n <= 0 or d % n or k.shape[0] != b or v.shape[:2] != k.shape[:2] or k.shape[2] != d or v.shape[2] % n:
        return FALLBACK
    h, t, hv = d // n, k.shape[1], v.shape[2] // n
    if bias is not None and (bias.ndim != 4 or bias.shape[0] not in (1, b) or bias.shape[1] not in (1, n)
                             or bias.shape[2:] != (s, t)):
        return FALLBACK  # the numpy kernel reports it
    sc = float(scale) if scale else 1.0 / math.sqrt(h)
    if sc <= 0 or not math.isfinite(sc) or b * s * t == 0:
        return FALLBACK
    bc = None if bias is None else np.ascontiguousarray(bias)
    if threads() > 1 and NATIVE_ATTENTION:  # heads split over the threads (numpy's GEMMs: OpenBLAS on one)
        out = np.empty((b, s, n * hv), F32)
        qc, kc, vc = (np.ascontiguousarray(a) for a in (q, k, v))  # (held while the kernel runs)
        if lib.nx_attention(b, s, t, n, h, hv, qc.ctypes.data, kc.ctypes.data, vc.ctypes.data, _addr(bc),
                            int(bc is not None and bc.shape[0] > 1),
                            int(bc is not None and bc.shape[1] > 1), sc, out.ctypes.data, threads()):
            raise MemoryError("attention: no scratch memory")
        return out
    qh = q.reshape(b, s, n, h).transpose(0, 2, 1, 3)
    kt = k.reshape(b, t, n, h).transpose(0, 2, 3, 1)
    vh = v.reshape(b, t, n, hv).transpose(0, 2, 1, 3)
    scores = np.matmul(qh, kt)                                       # (B, N, S, T), fresh and contiguous
    lib.nx_softmax(b * n * s, t, scores.ctypes.data, scores.ctypes.data, sc, _addr(bc), n, s,
                   int(bc is not None and bc.shape[0] > 1), int(bc is not None and bc.shape[1] > 1), 0, threads())
    out = np.empty((b, s, n, hv), F32)
    np.matmul(scores, vh, out=out.transpose(0, 2, 1, 3))
    return out.reshape(b, s, n * hv)


# ---- GEMM ------------------------------------------------------------------------------------------------------

_once_or_cached = weight_cache.derived


def packed_b(lib, b, trans):
    """B (K×N, or with `trans` N×K: b's first dim is N, the rest K, as a conv's weights) in nx_gemm's column
    panels."""
    def pack(b):
        k, n = (b.size // b.shape[0], b.shape[0]) if trans else b.shape
        bc = np.ascontiguousarray(b)
        bp = conv_winograd.aligned_empty(lib.nx_gemm_packed_size(k, n), F32)
        lib.nx_gemm_pack_b(k, n, bc.ctypes.data, 1 if trans else n, k if trans else 1, bp.ctypes.data)
        return bp
    return _once_or_cached(b, ("nx_gemm_b", trans), pack)


def packed_a(lib, w, m, k):
    """A constant A (w viewed as M×K) in nx_gemm's row panels."""
    def pack(w):
        wc = np.ascontiguousarray(w).reshape(m, k)
        ap = np.empty(lib.nx_gemm_packed_a_size(m, k), F32)
        lib.nx_gemm_pack_a(m, k, wc.ctypes.data, k, ap.ctypes.data)
        return ap
    return _once_or_cached(w, "nx_gemm_a", pack)


def gemm_call(lib, m, n, k, a, bp, c, ldc, bias=None, row_bias=None, res=None, ldr=0, act=(0, 0.0, 0.0), ap=None,
              b=None, ldb=0, lda=None):
    """nx_gemm: A raw (`a`, rows of k, or `lda` apart) or packed (`ap`); B packed (`bp`) or raw (`b`, row stride
    ldb); packing scratch reused per thread (a fresh multi-MB buffer would page-fault on every call)."""
    size = lib.nx_gemm_scratch_size(m, n, k, int(ap is None), int(bp is None))
    scratch = conv_winograd.scratch("nx_gemm", (size,), F32) if size else None
    if lib.nx_gemm(m, n, k, _addr(a), lda or k, _addr(ap), _addr(b), ldb, _addr(bp), c.ctypes.data, ldc, _addr(bias),
                   _addr(row_bias), _addr(res), ldr, act[0], act[1], act[2], _addr(scratch), threads()):
        raise MemoryError(f"GEMM {m}x{k} @ {k}x{n}: no scratch memory")


def matmul(lib, a, b):
    """MatMul of an (..., M, K) float32 A by a 2-D B: one GEMM over all leading rows."""
    if (not _f32(a, b) or b.ndim != 2 or a.ndim < 2 or a.shape[-1] != b.shape[0]
            or 0 in a.shape or 0 in b.shape):
        return FALLBACK
    k, n = b.shape
    m = a.size // k
    if m < 4 or n < SMALL_N or m * n * k < SMALL_GEMM:
        return FALLBACK
    a = np.ascontiguousarray(a)
    y = np.empty(a.shape[:-1] + (n,), F32)
    gemm_call(lib, m, n, k, a, packed_b(lib, b, False), y, n)
    return y


def gemm(lib, a, b, c=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, act=(0, 0.0, 0.0), **_):
    """Gemm / FusedGemm with alpha = 1, no transA, and C absent or a (N,) / (1, N) / (M, 1) / (M, N) addend."""
    if getattr(a, "ndim", 0) != 2 or a.shape[0] < 4:  # GEMV-like (batch 1): numpy, decided before anything else
        return FALLBACK
    if (not _f32(a, b) or (c is not None and not _f32(c)) or alpha != 1.0 or transA
            or a.ndim != 2 or b.ndim != 2):
        return FALLBACK
    m, k = a.shape
    n = b.shape[0] if transB else b.shape[1]
    if (b.shape[1] if transB else b.shape[0]) != k or m < 4 or n < SMALL_N or m * n * k < SMALL_GEMM:
        return FALLBACK  # (a GEMV-like Gemm wastes most of the 16-row tiles: numpy's GEMV is faster)
    bias = row_bias = res = None
    if c is not None:
        if beta != 1.0:
            return FALLBACK
        if c.shape in ((n,), (1, n)):
            bias = np.ascontiguousarray(c).reshape(n)
        elif c.shape == (m, 1) and m != 1:
            row_bias = np.ascontiguousarray(c).reshape(m)
        elif c.shape == (m, n):
            res = np.ascontiguousarray(c)
        else:
            return FALLBACK
    a = np.ascontiguousarray(a)
    y = np.empty((m, n), F32)
    gemm_call(lib, m, n, k, a, packed_b(lib, b, bool(transB)), y, n, bias, row_bias, res, n, act)
    return y


# ---- convolution and pooling -------------------------------------------------------------------------------------

def _geometry(parse, x, *args, **attrs):
    """(x as 4-D, its ConvGeometry made 2-D) for a 1-D or 2-D window op, geometry by ConvGeometry.<parse>(x.shape,
    *args, **attrs), or None (the numpy kernel decides, and reports what is wrong)."""
    if x.ndim not in (3, 4):
        return None
    try:
        g = parse(x.shape, *args, **attrs)
    except InvalidArgument:
        return None
    return (x[:, :, None, :] if x.ndim == 3 else x), g.as_2d()


class ConvPlan:
    """How one float32 Conv runs natively (conv_plan decides; conv and the chain runner carry it out): `kind` is
    "dw" (nx_dwconv), "wino" (nx_winograd_f4), "shifted" (nx_conv_shifted), "gemm" (a 1×1 stride-1 unpadded conv:
    one GEMM per image) or "windows" (an unpadded 1-D conv of one input channel: output position p's taps are the
    input's x[p·stride : p·stride + K], so the input as it lies is a GEMM's A of rows `stride` apart, times the
    weights as B, then the positions × channels result transposed); `packed` the weights in that kernel's form;
    sizes as the kernels take them."""

    __slots__ = ("kind", "n", "c", "h", "w", "m", "ks", "st", "dil", "pb", "out", "y_shape", "packed", "scratch")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


def native_winograd(n, c, m, ks, g, out):
    """Whether nx_winograd_f4 beats nx_conv_shifted on a 3×3 stride-1 conv that conv_winograd's numpy-tuned rule
    leaves to the GEMM: from 64 channels in and out and 20 output 4×4 tiles, and C·M ≤ 8192 × tiles (the 36·M·C
    transformed weights are streamed once for all tiles). Measured on AVX2, 1 thread, kernel alone: 256→256 at
    8×80 15.7 → 6.1 ms, at 4×80 7.4 → 4.7, 96→96 at 20×20 2.0 → 1.1; the CRNN benchmark 41-44 → 22 ms. ResNet-18's
    256→256 at 14×14 (16 tiles: 7.1 → 4.6 ms alone) ran slower in the model, and 512→512 at 7×7 (4 tiles) is
    slower even alone (5.9 → 10.4 ms): both stay shifted."""
    tiles = n * -(-out[0] // 4) * -(-out[1] // 4)
    return (ks == (3, 3) and tuple(g.strides) == (1, 1) and tuple(g.dilations) == (1, 1) and min(g.pads_begin) >= 0
            and min(g.pads_end) >= 0 and c >= 64 and m >= 64 and tiles >= 20 and c * m <= 8192 * tiles)


def conv_plan(lib, x_shape, w, b_shape=None, z_shape=None, small=False, **attrs):
    """The ConvPlan of a Conv of an x of `x_shape` by the constant-or-given weights `w` (bias of `b_shape`, a Z sum
    of `z_shape`), or None for what the native kernels do not do (or, unless `small`, do slower than numpy)."""
    if len(x_shape) != w.ndim or len(x_shape) not in (3, 4):
        return None
    size = math.prod(x_shape)
    if not small and (w.size * size < SMALL_GEMM * w.shape[1] or math.prod(x_shape[2:]) < SMALL_N):
        return None  # (bounds of the work, checked before any geometry)
    try:
        g = ConvGeometry.conv(tuple(x_shape), w.shape, "Conv", **attrs).as_2d()
    except InvalidArgument:
        return None  # the numpy kernel reports it
    x4 = tuple(x_shape) if len(x_shape) == 4 else (x_shape[0], x_shape[1], 1, x_shape[2])
    n, c, hgt, wid = x4
    m = w.shape[0]
    out = g.out
    y_shape = (n, m) + (out[1:] if len(x_shape) == 3 else out)
    if (b_shape is not None and tuple(b_shape) != (m,)) or (z_shape is not None and tuple(z_shape) != y_shape):
        return None
    ks = g.kernel
    group = attrs.get("group") or 1
    depthwise = group == c and m == c and w.shape[1] == 1
    if group != 1 and not depthwise or (not depthwise and w.shape[1] != c):
        return None
    plan = dict(n=n, c=c, h=hgt, w=wid, m=m, ks=ks, st=g.strides, dil=g.dilations, pb=g.pads_begin, out=out,
                y_shape=y_shape)
    if depthwise:
        w4 = w if w.ndim == 4 else w.reshape(m, 1, ks[0], ks[1])
        return ConvPlan(kind="dw", packed=np.ascontiguousarray(w4), **plan)
    # Winograd F(4×4,3×3) natively where conv_winograd would use it or native_winograd says it pays (WINOGRAD_F4:
    # tests switch it off), at any thread count (under OpenMP, two threads took it only from 128 channels; on the
    # pool it pays there too: at 2 threads without / with it CRNN 28.9 / 16.3 ms, ResNet-18 33.1 / 28.2, PP-OCRv4
    # det 24.1 / 22.3, tests/bench/ab_native.py WINOGRAD_F4=False,True); other convs as a GEMM on shifted input rows
    # (a strided 1×1 reads one stride phase), a plain 1×1 as one GEMM on the image; packed weights, epilogue fused
    if len(x_shape) == 4 and WINOGRAD_F4 and (native_winograd(n, c, m, ks, g, out) or (
            conv_winograd.winograd_tile(np.broadcast_to(np.float32(0), x4), w, 1, ks, g.strides, g.dilations,
                                        g.pads_begin, g.pads_end, out) == 4)):
        return ConvPlan(kind="wino", packed=packed_winograd(lib, w), scratch=lib.nx_winograd_f4_scratch(
            c, m, out[0], out[1]), **plan)
    if not small and out[0] * out[1] < SMALL_N:
        return None
    # a spectrogram's frames (one channel, unpadded, 1-D): the input's windows as GEMM rows, where the shifted
    # tiles would need one stride-phase plane per hop phase
    if CONV_WINDOWS and c == 1 and hgt == 1 and ks[0] == 1 and ks[1] > 1 and g.dilations[1] == 1 and z_shape is None \
            and not any(g.pads_begin) and not any(g.pads_end):
        return ConvPlan(kind="windows", packed=packed_b(lib, w, True), **plan)
    ap = packed_a(lib, w, m, c * ks[0] * ks[1])
    if ks == (1, 1) and g.strides == (1, 1) and g.pads_begin == (0, 0) and out == (hgt, wid):
        return ConvPlan(kind="gemm", packed=ap, **plan)
    return ConvPlan(kind="shifted", packed=ap, scratch=_shifted_floats(lib, c, ks, g.strides, g.dilations, out, 1),
                    **plan)


def _shifted_floats(lib, c, ks, st, dil, out, copies):
    """Floats of nx_conv_shifted's scratch with `copies` copies of its input planes."""
    return lib.nx_conv_shifted_scratch(c, *ks, *st, *dil, *out, copies)


# a chain's shifted conv keeps a copy of its input planes per thread up to this size (each thread makes the rows its
# tiles read: nx_conv_shifted's copies; what it saves, a loop and the lines the cores pass each other, is felt on
# small maps: docs/design.md, tests/bench/ab_native.py; on larger ones no change was measured through the noise)
PLANES_PER_THREAD_BYTES = 256 << 10


def shifted_scratch(lib, cp, threads):
    """(scratch floats, plane copies) of a chain's shifted conv `cp` run with `threads`."""
    copy = _shifted_floats(lib, cp.c, cp.ks, cp.st, cp.dil, cp.out, 2) - cp.scratch  # (one copy's floats)
    copies = threads if threads > 1 and 4 * copy <= PLANES_PER_THREAD_BYTES else 1
    return cp.scratch + (copies - 1) * copy, copies


def conv(lib, x, w, b=None, z=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None,
         strides=None, act_code=0, act_a=0.0, act_b=0.0, ctx=None):
    """Conv / FusedConv for float32 1-D / 2-D convs, group 1 or depthwise, the bias, the Z sum and the activation
    fused into the last pass."""
    if not _f32(x, w) or (b is not None and not _f32(b)) or (z is not None and not _f32(z)):
        return FALLBACK
    nt = threads()
    cp = conv_plan(lib, x.shape, w, None if b is None else b.shape, None if z is None else z.shape,
                   auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape, pads=pads,
                   strides=strides)
    if cp is None:
        return FALLBACK
    x4 = np.ascontiguousarray(x.reshape(cp.n, cp.c, cp.h, cp.w))
    ks, st, dil, pb, (oh, ow), m, n = cp.ks, cp.st, cp.dil, cp.pb, cp.out, cp.m, cp.n
    y = np.empty((n, m, oh, ow), F32)
    zc = None if z is None else np.ascontiguousarray(z).reshape(n, m, oh * ow)
    if cp.kind == "dw":
        code = act_code if z is None else 0
        if lib.nx_dwconv(n, cp.c, cp.h, cp.w, ks[0], ks[1], st[0], st[1], dil[0], dil[1], pb[0], pb[1], oh, ow,
                         x4.ctypes.data, cp.packed.ctypes.data, _addr(b), y.ctypes.data, code, act_a, act_b, nt):
            raise MemoryError(f"depthwise Conv: no scratch memory for a {cp.h}x{cp.w} plane")
        if z is not None:
            lib.nx_act(y.size, y.ctypes.data, y.ctypes.data, zc.ctypes.data, act_code, act_a, act_b, nt)
    elif cp.kind == "wino":
        return winograd_f4(lib, x4, w, b, zc, pb, cp.out, (act_code, act_a, act_b)).reshape(cp.y_shape)
    elif cp.kind == "shifted":  # each tap's row read in place from the input's stride-phase planes: no im2col matrix
        scratch = conv_winograd.scratch("nx_conv_shifted", (cp.scratch,), F32)
        for i in range(n):
            if lib.nx_conv_shifted(cp.c, cp.h, cp.w, ks[0], ks[1], st[0], st[1], dil[0], dil[1], pb[0], pb[1], oh, ow,
                                   x4[i].ctypes.data, m, cp.packed.ctypes.data, y[i].ctypes.data, _addr(b),
                                   None if zc is None else zc[i].ctypes.data, act_code, act_a, act_b,
                                   scratch.ctypes.data, 1, None, nt):
                raise MemoryError(f"Conv {cp.c}->{m} channels: no scratch memory")
    elif cp.kind == "windows":  # the input's windows as A's rows (lda = the stride), the weights as B
        yt = np.empty((n, ow, m), F32)
        for i in range(n):
            gemm_call(lib, ow, m, ks[1], x4[i], cp.packed, yt[i], m, bias=b, act=(act_code, act_a, act_b), lda=st[1])
        y[:, :, 0, :] = yt.transpose(0, 2, 1)
    else:  # a 1×1 stride-1 unpadded conv: one GEMM on the image itself
        p = oh * ow
        for i in range(n):
            gemm_call(lib, m, p, cp.c, None, None, y[i], p, None, b, None if zc is None else zc[i], p,
                      (act_code, act_a, act_b), ap=cp.packed, b=x4[i], ldb=p)
    return y.reshape(cp.y_shape)


def winograd_f4(lib, x, w, b, z, pb, out, act):
    """3×3 stride-1 conv of a 4-D x through nx_winograd_f4 (weights packed once by packed_winograd)."""
    n, c, hgt, wid = x.shape
    m = w.shape[0]
    scratch = conv_winograd.scratch("nx_winograd", (lib.nx_winograd_f4_scratch(c, m, out[0], out[1]),), F32)
    y = np.empty((n, m, out[0], out[1]), F32)
    up = packed_winograd(lib, w)  # (held while the kernel runs: a weight made at run time is packed anew, uncached)
    if lib.nx_winograd_f4(n, c, hgt, wid, m, pb[0], pb[1], out[0], out[1], x.ctypes.data, up.ctypes.data, _addr(b),
                          _addr(z), y.ctypes.data, scratch.ctypes.data, act[0], act[1], act[2], threads()):
        raise MemoryError(f"Winograd conv {c}->{m} channels: no scratch memory")
    return y


def packed_winograd(lib, w):
    """U = G w Gᵀ (conv_winograd's transform) of 3×3 weights, in nx_winograd_f4's packed panels, once per weight."""
    m, c = w.shape[:2]
    ua = lib.nx_gemm_packed_a_size(m, c)

    def pack(w):
        u = conv_winograd.weight_transform(w, 4)  # (36, M, C)
        up = np.empty(36 * ua, F32)
        for xi in range(36):
            lib.nx_gemm_pack_a(m, c, u[xi].ctypes.data, c, up[xi * ua:].ctypes.data)
        return up

    return _once_or_cached(w, "nx_winograd_u", pack)


def max_pool(lib, x, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None, storage_order=0,
             strides=None, ctx=None):
    if not _f32(x) or _outputs(ctx) > 1 or not kernel_shape:
        return FALLBACK
    geo = _geometry(ConvGeometry.pool, x, "MaxPool", auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations,
                    kernel_shape=kernel_shape, pads=pads, strides=strides)
    if geo is None:
        return FALLBACK
    x4, g = geo
    ks, out, pb, st, dil = g.kernel, g.out, g.pads_begin, g.strides, g.dilations
    x4 = np.ascontiguousarray(x4)
    n, c, hgt, wid = x4.shape
    y = np.empty((n, c) + tuple(out), F32)
    lib.nx_maxpool(n * c, hgt, wid, ks[0], ks[1], st[0], st[1], dil[0], dil[1], pb[0], pb[1], out[0], out[1],
                   x4.ctypes.data, y.ctypes.data, threads())
    return y.reshape(x.shape[:2] + (out[1:] if x.ndim == 3 else out))


def upsample(lib, x, roi=None, scales=None, sizes=None, **attrs):
    """Resize that is nearest upsampling by whole factors (ops.resize.integer_nearest_factors decides)."""
    if not _f32(x) or x.size < SMALL_ACT:
        return FALLBACK
    f = resize.integer_nearest_factors(x.shape, scales, sizes, **attrs)
    if f is None:
        return FALLBACK
    n, c, h, w = x.shape
    x = np.ascontiguousarray(x)
    y = np.empty((n, c, h * f[0], w * f[1]), F32)
    lib.nx_upsample_nearest(n * c, h, w, f[0], f[1], x.ctypes.data, y.ctypes.data, threads())
    return y


_FORESTS = weakref.WeakKeyDictionary()  # forest -> the addresses of its arrays (taken once: ~1.5 us each, measured
                                         # at the time)


def tree_leaves(lib, forest, rows):
    """ops/ml_trees.py's forest walked natively for float64 `rows` (N, features): the (N, trees) leaves; None for
    trees with set-membership nodes (the numpy walk's)."""
    if forest.member_sets:
        return None
    arrays = _FORESTS.get(forest)
    if arrays is None:
        arrays = _FORESTS[forest] = (forest.roots.size, forest.roots.ctypes.data, forest.feature.ctypes.data,
                                     forest.threshold.ctypes.data, forest.mode.ctypes.data, forest.tchild.ctypes.data,
                                     forest.fchild.ctypes.data, forest.missing_true.ctypes.data, forest.depth)
    rows = np.ascontiguousarray(rows, np.float64)
    leaves = np.empty((rows.shape[0], forest.roots.size), np.int64)
    lib.nx_tree_walk(rows.shape[0], rows.shape[1], rows.ctypes.data, *arrays, leaves.ctypes.data, threads())
    return leaves


def global_average_pool(lib, x, **_):
    if not _f32(x) or x.ndim < 3 or x.size < SMALL_ACT:
        return FALLBACK
    x = np.ascontiguousarray(x)
    planes = x.shape[0] * x.shape[1]
    y = np.empty(x.shape[:2] + (1,) * (x.ndim - 2), F32)
    lib.nx_global_avg(planes, x.size // planes, x.ctypes.data, y.ctypes.data, threads())
    return y


def conv_transpose(lib, x, w, b=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
                   output_padding=None, output_shape=None, pads=None, strides=None, ctx=None):
    """2-D ConvTranspose with kernel == stride (upsampling heads), no padding. Group 1, on two or more threads: one
    GEMM of the weights (as M·kh·kw × C, packed once) with the image, the bias in its epilogue, then the taps placed
    (nx_place_taps); depthwise: one multiply-add per output (nx_dw_transpose)."""
    if not _f32(x, w) or (b is not None and not _f32(b)) or x.ndim != 4 or w.ndim != 4:
        return FALLBACK
    geo = _geometry(ConvGeometry.conv_transpose, x, w.shape, "ConvTranspose", auto_pad=auto_pad, dilations=dilations,
                    group=group, kernel_shape=kernel_shape, output_padding=output_padding, output_shape=output_shape,
                    pads=pads, strides=strides)
    if geo is None:
        return FALLBACK
    g = geo[1]
    c, m, kh, kw = w.shape
    depthwise = group == c and m == 1
    if group != 1 and not depthwise:
        return FALLBACK
    if depthwise:
        m = c
    if (g.strides != g.kernel or g.dilations != (1, 1) or any(g.pads_begin) or any(g.pads_end)
            or any(g.output_padding) or (b is not None and b.shape != (m,))):
        return FALLBACK  # (taps overlap or the output is cropped / grown)
    n, _, h, wd = x.shape
    rows, p = m * kh * kw, h * wd
    x = np.ascontiguousarray(x)
    y = np.empty((n, m, h * kh, wd * kw), F32)
    if depthwise:
        if rows * p < SMALL_ACT:
            return FALLBACK
        wc = np.ascontiguousarray(w)
        for i in range(n):
            lib.nx_dw_transpose(c, kh, kw, h, wd, x[i].ctypes.data, wc.ctypes.data, _addr(b), y[i].ctypes.data,
                                threads())
        return y
    if rows * p * c < SMALL_GEMM or p < SMALL_N or threads() == 1:
        return FALLBACK  # (one thread: numpy's GEMM is ~13% faster on these short-K products, tests/bench/micro.py)

    def pack(w):
        wt = np.ascontiguousarray(w.reshape(c, rows).T)
        ap = np.empty(lib.nx_gemm_packed_a_size(rows, c), F32)
        lib.nx_gemm_pack_a(rows, c, wt.ctypes.data, c, ap.ctypes.data)
        return ap

    ap = _once_or_cached(w, "nx_conv_transpose_a", pack)
    row_bias = None if b is None else np.repeat(b, kh * kw)
    taps = conv_winograd.scratch("nx_conv_transpose", (rows, p), F32)
    for i in range(n):
        gemm_call(lib, rows, p, c, None, None, taps, p, row_bias=row_bias, ap=ap, b=x[i], ldb=p)
        lib.nx_place_taps(m, kh, kw, h, wd, taps.ctypes.data, y[i].ctypes.data, threads())
    return y

