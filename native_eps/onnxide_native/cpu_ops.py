"""NativeCPUExecutionProvider's kernels: numpy keeps the GEMMs (OpenBLAS), libonnxide_cpu does every pass numpy
would split into several — activations with their bias / residual, LayerNorm, softmax, im2col, depthwise conv,
max pooling. Each kernel has the numpy kernel's calling convention and returns
FALLBACK for what it does not do exactly (dtype, rank, broadcast, extra outputs), so the numpy kernel runs."""
import math

import numpy as np

from onnxide.errors import InvalidArgument
from onnxide.ops import conv_direct, conv_winograd
from onnxide.ops.conv import spatial_geometry
from onnxide.runtime.providers import FALLBACK

F32 = np.dtype(np.float32)
# OpenMP threads per native kernel. One: OpenBLAS's workers spin for a while after each GEMM, and OpenMP regions
# started meanwhile fought them for the cores (PP-OCR det at 2 threads: 36 ms with one kernel thread, 79 ms with
# two; docs/design.md). The kernels keep the parameter for when the GEMMs are native too.
KERNEL_THREADS = 1


def threads():
    return KERNEL_THREADS
ACT = {"none": 0, "relu": 1, "leaky": 2, "sigmoid": 3, "tanh": 4, "hardsigmoid": 5, "hardswish": 6, "clip": 7,
       "erf": 8, "gelu": 9, "gelu_tanh": 10}


def _f32(*arrays):
    return all(type(a) is np.ndarray and a.dtype == F32 for a in arrays)


def _addr(a):
    return a.ctypes.data if a is not None else None


def _outputs(ctx):
    return max(1, ctx.num_outputs) if ctx is not None else 1


# ---- element-wise ------------------------------------------------------------------------------------------------

def act(lib, x, code, a=0.0, b=0.0, bias=None):
    """act(x + bias) with bias None or 1-D over x's last axis."""
    if not _f32(x) or (bias is not None and (not _f32(bias) or bias.ndim != 1 or x.ndim == 0
                                            or bias.shape[0] != x.shape[-1])):
        return FALLBACK
    x = np.ascontiguousarray(x)
    y = np.empty(x.shape, F32)
    if x.size == 0:
        return y
    if bias is None:
        lib.nx_act(x.size, x.ctypes.data, y.ctypes.data, None, code, a, b, threads())
    else:
        cols = x.shape[-1]
        lib.nx_bias_act(x.size // cols, cols, x.ctypes.data, y.ctypes.data, bias.ctypes.data, None, 1, None, code,
                        a, b, threads())
    return y


BINARY = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3}
SMALL = 4096  # below this many outputs numpy's call is cheaper than the native one
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
            i, j = (dims[0], dims[-1] + 1) if dims else (len(out), len(out))
            plan = (math.prod(out[:i]), math.prod(out[i:j]), math.prod(out[j:]))
        if len(_PLANS) > 4096:
            _PLANS.clear()
        _PLANS[key] = plan
    return _PLANS[key]


def binary(lib, code, a, b):
    """a op b for float32 with b (or a) full-shape, and the other full, scalar or one contiguous block of dims."""
    if not _f32(a, b):
        return FALLBACK
    if a.shape == b.shape:
        out = a.shape
    else:
        try:
            out = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            return FALLBACK
    if math.prod(out) < SMALL:
        return FALLBACK
    b_first = a.shape != out
    full, other = (b, a) if b_first else (a, b)
    if full.shape != out:
        return FALLBACK
    full, other = np.ascontiguousarray(full), np.ascontiguousarray(other)
    y = np.empty(out, F32)
    if other.shape == out:
        lib.nx_binary(code, int(b_first), 1, full.size, 1, 1, full.ctypes.data, other.ctypes.data, y.ctypes.data,
                      threads())
        return y
    plan = _broadcast_plan(out, other.shape)
    if plan is None:
        return FALLBACK
    lib.nx_binary(code, int(b_first), *plan, 0, full.ctypes.data, other.ctypes.data, y.ctypes.data, threads())
    return y


def layer_norm(lib, x, scale, b=None, *, axis=-1, epsilon=1e-5, stash_type=1, ctx=None):
    if not _f32(x, scale) or (b is not None and not _f32(b)) or stash_type != 1 or x.ndim == 0:
        return FALLBACK
    a = axis + x.ndim if axis < 0 else axis
    if not 0 <= a < x.ndim:
        return FALLBACK
    norm = x.shape[a:]
    cols = math.prod(norm)
    if not all(p is None or p.shape == norm or p.shape == (cols,) for p in (scale, b)) or cols == 0:
        return FALLBACK
    x = np.ascontiguousarray(x)
    rows = x.size // cols
    y = np.empty(x.shape, F32)
    n = _outputs(ctx)
    stats = (np.empty(x.shape[:a] + (1,) * len(norm), F32), np.empty(x.shape[:a] + (1,) * len(norm), F32)) \
        if n > 1 else (None, None)
    if rows:
        lib.nx_layernorm(rows, cols, x.ctypes.data, None, None, np.ascontiguousarray(scale).ctypes.data,
                         None if b is None else np.ascontiguousarray(b).ctypes.data, float(epsilon), y.ctypes.data,
                         None, _addr(stats[0]), _addr(stats[1]), threads())
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
        lib.nx_softmax(x.size // cols, cols, x.ctypes.data, y.ctypes.data, 1.0, int(log), threads())
    return y


def attention(lib, q, k, v, num_heads, scale):
    """Scaled dot-product attention of 3-D (B, S, N*H) q, k, v without masks: numpy's batched GEMMs around the
    native softmax, computed in place on the scores."""
    if not _f32(q, k, v) or q.ndim != 3 or k.ndim != 3 or v.ndim != 3:
        return FALLBACK
    b, s, d = q.shape
    n = int(num_heads)
    if n <= 0 or d % n or k.shape[0] != b or v.shape[:2] != k.shape[:2] or k.shape[2] != d or v.shape[2] % n:
        return FALLBACK
    h, t, hv = d // n, k.shape[1], v.shape[2] // n
    sc = float(scale) if scale else 1.0 / math.sqrt(h)
    if sc <= 0 or not math.isfinite(sc) or b * s * t == 0:
        return FALLBACK
    qh = q.reshape(b, s, n, h).transpose(0, 2, 1, 3)
    kt = k.reshape(b, t, n, h).transpose(0, 2, 3, 1)
    vh = v.reshape(b, t, n, hv).transpose(0, 2, 1, 3)
    scores = np.matmul(qh, kt)                                       # (B, N, S, T), fresh and contiguous
    lib.nx_softmax(b * n * s, t, scores.ctypes.data, scores.ctypes.data, sc, 0, threads())
    out = np.empty((b, s, n, hv), F32)
    np.matmul(scores, vh, out=out.transpose(0, 2, 1, 3))
    return out.reshape(b, s, n * hv)


# ---- convolution and pooling -------------------------------------------------------------------------------------

def _geometry(x, w_shape, kernel_shape, strides, dilations, pads, auto_pad, name, ceil_mode=False):
    """(x as 4-D, kernel, out, pads begin, pads end, strides, dilations) for a 1-D or 2-D window op, all 2-D, or
    None (the numpy kernel decides, and reports what is wrong)."""
    if x.ndim not in (3, 4):
        return None
    ks = [int(k) for k in kernel_shape] if kernel_shape else list(w_shape[2:])
    if len(ks) != x.ndim - 2:
        return None
    try:
        out, pb, pe, st, dil = spatial_geometry(x.shape[2:], ks, strides, dilations, pads, auto_pad, name,
                                                ceil_mode=ceil_mode)
    except InvalidArgument:
        return None
    if min(pb) < 0 or min(pe) < 0 or min(out) <= 0:
        return None
    if x.ndim == 3:
        return x[:, :, None, :], [1] + ks, [1] + out, [0] + pb, [0] + pe, [1] + st, [1] + dil
    return x, ks, out, pb, pe, st, dil


def conv(lib, x, w, b=None, z=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None,
         strides=None, act_code=0, act_a=0.0, act_b=0.0, ctx=None):
    """Conv / FusedConv (activation and the Z sum fused into one epilogue pass) for float32 1-D / 2-D convs with
    group 1 or depthwise; Winograd-sized 3×3 layers keep the numpy Winograd path and get the native epilogue."""
    if not _f32(x, w) or (b is not None and not _f32(b)) or (z is not None and not _f32(z)) or w.ndim != x.ndim:
        return FALLBACK
    geo = _geometry(x, w.shape, kernel_shape, strides, dilations, pads, auto_pad, "Conv")
    if geo is None:
        return FALLBACK
    x4, ks, out, pb, pe, st, dil = geo
    n, c, hgt, wid = x4.shape
    m = w.shape[0]
    if b is not None and b.shape != (m,):
        return FALLBACK
    y_shape = (n, m) + tuple(out[1:] if x.ndim == 3 else out)
    if z is not None and z.shape != y_shape:
        return FALLBACK
    w4 = w if w.ndim == 4 else w.reshape(m, w.shape[1], ks[0], ks[1])  # w itself: Winograd caches by object
    depthwise = group == c and m == c and w.shape[1] == 1
    if group != 1 and not depthwise or (not depthwise and w.shape[1] != c):
        return FALLBACK
    x4 = np.ascontiguousarray(x4)
    nt = threads()
    oh, ow = out
    p = oh * ow
    if depthwise:
        y = np.empty((n, m, oh, ow), F32)
        code = act_code if z is None else 0
        if lib.nx_dwconv(n, c, hgt, wid, ks[0], ks[1], st[0], st[1], dil[0], dil[1], pb[0], pb[1], oh, ow,
                         x4.ctypes.data, np.ascontiguousarray(w4).ctypes.data, _addr(b), y.ctypes.data, code,
                         act_a, act_b, nt):
            raise MemoryError(f"depthwise Conv: no scratch memory for a {hgt}x{wid} plane")
        if z is not None:
            lib.nx_act(y.size, y.ctypes.data, y.ctypes.data, np.ascontiguousarray(z).ctypes.data, act_code, act_a,
                       act_b, nt)
        return y.reshape(y_shape)
    wino = conv_winograd.winograd_tile(x4, w4, 1, ks, st, dil, pb, pe, out) if x.ndim == 4 else 0
    y = None
    if wino:
        y = conv_winograd.winograd_conv3x3(x4, w4, pb, pe, out, wino, b)
    elif m < 32 and c >= 16 and ks != [1, 1]:  # few outputs: numpy's per-tap GEMMs beat a thin im2col GEMM
        y = conv_direct.few_outputs(x4, w4, pb, pe, st, dil, out, b)
    bias_done = y is not None
    if y is None:
        y = np.empty((n, m, oh, ow), F32)
        wm = np.ascontiguousarray(w4).reshape(m, c * ks[0] * ks[1])
        plain = ks == [1, 1] and st == [1, 1] and pb == [0, 0] and out == [hgt, wid]
        col = None if plain else conv_winograd.scratch("nx_im2col", (c * ks[0] * ks[1], p), F32)
        for i in range(n):
            if plain:
                src = x4[i].reshape(c, p)
            else:
                lib.nx_im2col(c, hgt, wid, ks[0], ks[1], st[0], st[1], dil[0], dil[1], pb[0], pb[1], oh, ow,
                              x4[i].ctypes.data, col.ctypes.data, nt)
                src = col
            np.matmul(wm, src, out=y[i].reshape(m, p))
    if (b is not None and not bias_done) or z is not None or act_code:
        zc = None if z is None else np.ascontiguousarray(z)
        lib.nx_bias_act(n * m, p, y.ctypes.data, y.ctypes.data, None, None if bias_done else _addr(b), m,
                        _addr(zc), act_code, act_a, act_b, nt)
    return y.reshape(y_shape)


def max_pool(lib, x, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None, storage_order=0,
             strides=None, ctx=None):
    if not _f32(x) or _outputs(ctx) > 1 or not kernel_shape:
        return FALLBACK
    geo = _geometry(x, None, kernel_shape, strides, dilations, pads, auto_pad, "MaxPool", ceil_mode=bool(ceil_mode))
    if geo is None:
        return FALLBACK
    x4, ks, out, pb, _, st, dil = geo
    x4 = np.ascontiguousarray(x4)
    n, c, hgt, wid = x4.shape
    y = np.empty((n, c) + tuple(out), F32)
    lib.nx_maxpool(n * c, hgt, wid, ks[0], ks[1], st[0], st[1], dil[0], dil[1], pb[0], pb[1], out[0], out[1],
                   x4.ctypes.data, y.ctypes.data, threads())
    return y.reshape(x.shape[:2] + tuple(out[1:] if x.ndim == 3 else out))
