"""Fast 2-D Conv paths for conv_nd: Winograd F(4×4,3×3) / F(2×2,3×3) for 3×3 stride-1 convs, reused scratch buffers."""
import threading

import numpy as np

from . import weight_cache

# ---------------------------------------------------------------------------------------------------------------
# Winograd minimal filtering (Lavin & Gray).  Y = A^T [ (G g G^T) ⊙ (B^T d B) ] A per tile; the elementwise product
# summed over input channels is, per tile position (ξ, ν), one GEMM  U[ξν] (M×C) @ V[ξν] (C×tiles).
# Transforms along the outer axes (input rows, both output axes) are small BLAS GEMMs over contiguous data; the
# input column transform is a shared-subexpression add/sub chain over (tiles × channels) blocks.  No Python loop
# ever runs per tile or per channel.
# ---------------------------------------------------------------------------------------------------------------

# F(2,3): tile 4, output 2
_G2 = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
# F(4,3): tile 6, output 4 (interpolation points 0, ±1, ±2, ∞)
_G4 = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
                [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])

ENABLED = True  # tests switch this off to compare against the im2col path

_AT2 = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64)
_AT4 = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], dtype=np.float64)

_BT2 = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64)
_BT4 = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                 [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], dtype=np.float64)


_TLS = threading.local()
_SCRATCH_KEEP = 64 << 20  # scratch buffers up to this many bytes are kept per thread between calls


def aligned_empty(shape, dtype, align=64):
    """An uninitialised C-contiguous array whose data starts on an `align`-byte boundary (numpy's allocator gives
    16: a 32-byte vector load from a packed GEMM panel would then straddle two cache lines; tests/bench/micro.py
    times both)."""
    dtype = np.dtype(dtype)
    count = 1
    for d in (shape if isinstance(shape, tuple) else (shape,)):
        count *= int(d)
    raw = np.empty(count * dtype.itemsize + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


def scratch(slot, shape, dtype):
    """An uninitialised array of `shape` backed by a per-thread buffer reused across calls (fresh large numpy
    allocations are page-faulted in on every call, which costs more than many of these convolutions)."""
    dtype = np.dtype(dtype)
    size = 1
    for d in shape:
        size *= int(d)
    need = size * dtype.itemsize
    if need > _SCRATCH_KEEP:
        return aligned_empty(shape, dtype)
    pool = getattr(_TLS, "pool", None)
    if pool is None:
        pool = _TLS.pool = {}
    buf = pool.get(slot)
    if buf is None or buf.nbytes < need:
        buf = pool[slot] = aligned_empty(max(need, 1 << 16), np.uint8)
    return buf.view(np.uint8)[:need].view(dtype).reshape(shape)


def weight_transform(w, m):
    """U = G w G^T for w (M, C, 3, 3) as (t*t, M, C) contiguous in w's dtype (t = m + 2).

    Cached per weight array object (weights are constant initializers; ops.weight_cache)."""
    return weight_cache.cached(w, ("winograd", m), lambda w: _transform(w, m))


def _transform(w, m):
    g = _G4 if m == 4 else _G2
    t = m + 2
    u = np.einsum("ik,mckl,jl->ijmc", g, w.astype(np.float64), g, optimize=True)
    return np.ascontiguousarray(u.reshape(t * t, w.shape[0], w.shape[1]), dtype=w.dtype)


# --- 1-D transforms over a list of same-shape operands; each writes into `outs` (views allowed) --------------------

def _bt2(d, outs, tmp):
    """B^T for F(2,3): rows (d0-d2, d1+d2, d2-d1, d1-d3)."""
    np.subtract(d[0], d[2], out=outs[0])
    np.add(d[1], d[2], out=outs[1])
    np.subtract(d[2], d[1], out=outs[2])
    np.subtract(d[1], d[3], out=outs[3])


def _bt4(d, outs, tmp):
    """B^T for F(4,3) with shared terms: t0 = d4 - 4 d2, t1 = d3 - 4 d1, t2 = d4 - d2, t3 = 2 (d3 - d1)."""
    a, b = tmp[0], tmp[1]
    np.multiply(d[2], 4, out=a)
    np.subtract(d[4], a, out=a)                  # t0
    np.multiply(d[1], 4, out=b)
    np.subtract(d[3], b, out=b)                  # t1
    np.add(a, b, out=outs[1])
    np.subtract(a, b, out=outs[2])
    # row0 = t0 + 4 d0 - d2
    np.multiply(d[0], 4, out=outs[0])
    np.add(outs[0], a, out=outs[0])
    np.subtract(outs[0], d[2], out=outs[0])
    # row5 = d5 - 4 d3 - t1
    np.multiply(d[3], 4, out=outs[5])
    np.subtract(d[5], outs[5], out=outs[5])
    np.subtract(outs[5], b, out=outs[5])
    np.subtract(d[4], d[2], out=a)               # t2
    np.subtract(d[3], d[1], out=b)
    np.multiply(b, 2, out=b)                     # t3
    np.add(a, b, out=outs[3])
    np.subtract(a, b, out=outs[4])


def winograd_tile(x, w, group, kernel, strides, dilations, pb, pe, out):
    """The Winograd output tile (4 or 2) conv_nd should use for this conv, or 0 for none.

    Eligible: 2-D 3×3, stride 1, dilation 1, group 1, non-negative pads, float32/float64 x and w of one dtype.
    Chosen where it measured faster than im2col + GEMM (single-thread OpenBLAS): at least 32 input and output
    channels, and enough tiles that the t²/9-times larger transformed weights are worth streaming through the
    per-position GEMMs (small spatial sizes at large channel counts stay on im2col)."""
    if (not ENABLED or len(kernel) != 2 or group != 1 or list(kernel) != [3, 3] or list(strides) != [1, 1]
            or list(dilations) != [1, 1] or min(pb) < 0 or min(pe) < 0 or x.dtype != w.dtype
            or x.dtype not in (np.float32, np.float64) or x.ndim != 4):
        return 0
    n, c = x.shape[:2]
    mo = w.shape[0]
    if c < 32 or mo < 32:
        return 0
    ho, wo = out
    t4 = n * -(-ho // 4) * -(-wo // 4)
    if t4 >= 40 and 512 * t4 >= c * mo:
        return 4
    t2 = n * -(-ho // 2) * -(-wo // 2)
    if t2 >= 48 and c * mo >= 128 * 128:
        return 2
    return 0


def winograd_conv3x3(x, w, pb, pe, out, m=4, bias=None):
    """Correlation of x (N, C, H, W) with w (M, C, 3, 3), stride 1, dilation 1, group 1, pads pb/pe (begin/end,
    non-negative), output spatial `out`, optional per-output-channel `bias` (added in the final copy); returns
    (N, M, *out) contiguous in x's dtype.

    Works channels-last inside, with the W axis split by phase (column = m·j + phase), so that every transform
    term is one numpy call over a contiguous (tiles × channels) block: V[ξν] is (tiles, C), the GEMM is
    V[ξν] @ U[ξν]^T → (tiles, M), and only the final copy back to NCHW is a transposition."""
    n, c, h, wd = x.shape
    mo = w.shape[0]
    ho, wo = out
    t = m + 2
    th, tw = -(-ho // m), -(-wo // m)
    dtype = x.dtype
    # padded input, NHWC with W phase-split: xp[n, row, phase, j, c] = padded[n, c, row, m*j + phase]; it covers
    # every tile (the zeros past the requested end pads only reach outputs that are cropped away)
    hp = th * m + 2
    xp = scratch("wg_x", (n, hp, m, tw + 1, c), dtype)
    xp[...] = 0
    for ph in range(m):
        w0 = (ph - pb[1]) % m                      # first input column landing on this phase
        j0 = (pb[1] + w0) // m
        cnt = min(-(-(wd - w0) // m), tw + 1 - j0) if w0 < wd else 0
        if cnt > 0:
            xp[:, pb[0]:pb[0] + h, ph, j0:j0 + cnt] = x[:, :, :, w0:w0 + m * (cnt - 1) + 1:m].transpose(0, 2, 3, 1)
    # input transform, stage 1 (rows) as one batched BLAS pass: r[n, j, ξ] = Σ_k B^T[ξ, k] xp[n, m·j + k]
    row = m * (tw + 1) * c
    tiles = np.lib.stride_tricks.as_strided(xp, shape=(n, th, t, row),
                                            strides=(xp.strides[0], m * xp.strides[1], xp.strides[1],
                                                     xp.itemsize), writeable=False)
    r = scratch("wg_r", (n, th, t, m, tw + 1, c), dtype)
    np.matmul((_BT4 if m == 4 else _BT2).astype(dtype), tiles, out=r.reshape(n, th, t, row))
    # stage 2 (columns m·j + k of each tile; ufunc chains over (tiles × C) blocks) straight into V (t*t, N, th, tw, C)
    ntile = n * th * tw
    v = scratch("wg_v", (t * t, n, th, tw, c), dtype)
    tmp = scratch("wg_t", (2, n, th, tw, c), dtype)
    bt = _bt4 if m == 4 else _bt2
    for i in range(t):
        cols = [r[:, :, i, k % m, k // m:k // m + tw] for k in range(t)]
        bt(cols, list(v[i * t:(i + 1) * t]), list(tmp))
    u = weight_transform(w, m)                                              # (t*t, M, C)
    prod = scratch("wg_p", (t * t, ntile, mo), dtype)
    np.matmul(v.reshape(t * t, ntile, c), u.transpose(0, 2, 1), out=prod)  # (t*t, ntile, M)
    prod = prod.reshape(t, t, ntile, mo)
    # output transform as two BLAS passes over contiguous data: along ν, then along ξ
    at = (_AT4 if m == 4 else _AT2).astype(dtype)
    x_ = ntile * mo
    s = scratch("wg_r", (t, m, x_), dtype)
    np.matmul(at, prod.reshape(t, t, x_), out=s)                           # s[ξ, q] = Σ_ν A^T[q, ν] prod[ξ, ν]
    y = scratch("wg_v", (m, m * x_), dtype)
    np.matmul(at, s.reshape(t, m * x_), out=y)                             # y[p, q] = Σ_ξ A^T[p, ξ] s[ξ, q]
    res = np.empty((n, mo, th * m, tw * m), dtype=dtype)
    yt = y.reshape(m, m, n, th, tw, mo).transpose(2, 5, 3, 0, 4, 1)
    if bias is None:
        res.reshape(n, mo, th, m, tw, m)[...] = yt
    else:
        np.add(yt, np.asarray(bias, dtype).reshape(1, mo, 1, 1, 1, 1), out=res.reshape(n, mo, th, m, tw, m))
    if (ho, wo) != (th * m, tw * m):
        res = np.ascontiguousarray(res[:, :, :ho, :wo])
    return res
