"""Direct 2-D convolution without im2col: the padded input split into stride phases and flattened per channel, so
each kernel tap is one contiguous slice. Serves depthwise convs (a multiply-add per tap over channel blocks sized
for the cache) and convs with few output channels (one small GEMM per tap over column chunks)."""
import numpy as np

from . import conv_winograd as _wino

_DEPTHWISE_BLOCK = 1 << 16  # elements per channel block of a depthwise pass (acc and tmp stay in L2)
_DIRECT_CHUNK = 2048        # output columns per GEMM chunk of the direct path


def eligible(kernel, pb, pe):
    """2-D kernels with non-negative pads (1-D convs come here as 1×K)."""
    return len(kernel) == 2 and min(pb) >= 0 and min(pe) >= 0


def _phase_planes(x, pb, pe, stride, kernel, dilation):
    """(planes, wq): planes[a, b, n, c] is the flattened phase grid padded[n, c, a::s, b::s] (row width wq) plus
    enough zero slack that every tap's slice of oh*wq elements stays inside it."""
    n, c, h, w = x.shape
    s, d = stride, dilation
    hq, wq = -(-(h + pb[0] + pe[0]) // s), -(-(w + pb[1] + pe[1]) // s)
    slack = ((kernel[0] - 1) * d // s + 1) * wq + (kernel[1] - 1) * d // s + 1
    planes = _wino.scratch("direct_x", (s, s, n, c, hq * wq + slack), x.dtype)
    planes[...] = 0
    for a in range(s):
        i0, i1 = max(0, -(-(pb[0] - a) // s)), min(hq, (h + pb[0] - a - 1) // s + 1)
        for b in range(s):
            j0, j1 = max(0, -(-(pb[1] - b) // s)), min(wq, (w + pb[1] - b - 1) // s + 1)
            if i1 > i0 and j1 > j0:
                r0, c0 = a + s * i0 - pb[0], b + s * j0 - pb[1]
                grid = planes[a, b, :, :, :hq * wq].reshape(n, c, hq, wq)
                grid[:, :, i0:i1, j0:j1] = x[:, :, r0:r0 + s * (i1 - i0 - 1) + 1:s, c0:c0 + s * (j1 - j0 - 1) + 1:s]
    return planes, wq


def _taps(kernel, stride, dilation, wq):
    """(tap index, phase row, phase col, flat offset) per kernel tap."""
    out = []
    for i in range(kernel[0]):
        oa, a = divmod(i * dilation, stride)
        for j in range(kernel[1]):
            ob, b = divmod(j * dilation, stride)
            out.append((i * kernel[1] + j, a, b, oa * wq + ob))
    return out


def _finish(acc, y, bias, ow):
    """Crop the (…, oh, wq) accumulator rows to ow columns into y, adding the per-channel bias."""
    src = acc[..., :ow]
    if bias is None:
        np.copyto(y, src)
    else:
        np.add(src, bias.reshape(-1, 1, 1).astype(y.dtype, copy=False), out=y)


def _uniform(strides, dilations):
    """(stride, dilation) shared by both axes, which the phase split needs, or None."""
    if strides[0] != strides[1] or dilations[0] != dilations[1]:
        return None
    return strides[0], dilations[0]


def depthwise(x, w, pb, pe, strides, dilations, out, bias=None):
    """Depthwise correlation of x (N, C, H, W) with w (C, 1, KH, KW); None when strides or dilations differ per
    axis."""
    sd = _uniform(strides, dilations)
    if sd is None:
        return None
    s, d = sd
    n, c = x.shape[:2]
    kernel = w.shape[2:]
    planes, wq = _phase_planes(x, pb, pe, s, kernel, d)
    oh, ow = out
    length = oh * wq
    cb = max(1, min(c, _DEPTHWISE_BLOCK // max(length, 1)))
    acc = _wino.scratch("direct_acc", (n, cb, length), x.dtype)
    tmp = _wino.scratch("direct_tmp", (n, cb, length), x.dtype)
    wt = w.reshape(c, -1)
    y = np.empty((n, c, oh, ow), x.dtype)
    taps = _taps(kernel, s, d, wq)
    for c0 in range(0, c, cb):
        c1 = min(c, c0 + cb)
        a_, t_ = acc[:, :c1 - c0], tmp[:, :c1 - c0]
        for k, (t, a, b, off) in enumerate(taps):
            v = planes[a, b, :, c0:c1, off:off + length]
            wc = wt[c0:c1, t].reshape(c1 - c0, 1)
            if k == 0:
                np.multiply(v, wc, out=a_)
            else:
                np.multiply(v, wc, out=t_)
                a_ += t_
        _finish(a_.reshape(n, c1 - c0, oh, wq), y[:, c0:c1], None if bias is None else bias[c0:c1], ow)
    return y


def few_outputs(x, w, pb, pe, strides, dilations, out, bias=None):
    """Group-1 correlation as one (M × C) @ (C × columns) GEMM per tap, accumulated over column chunks: faster than
    im2col when M is small (the im2col matrix would be C·KH·KW rows for only M output rows)."""
    sd = _uniform(strides, dilations)
    if sd is None:
        return None
    s, d = sd
    n = x.shape[0]
    m = w.shape[0]
    kernel = w.shape[2:]
    planes, wq = _phase_planes(x, pb, pe, s, kernel, d)
    oh, ow = out
    length = oh * wq
    wt = np.ascontiguousarray(w.reshape(m, w.shape[1], -1).transpose(2, 0, 1))  # taps, M, C
    acc = _wino.scratch("direct_acc", (m, length), x.dtype)
    tmp = _wino.scratch("direct_tmp", (m, _DIRECT_CHUNK), x.dtype)
    y = np.empty((n, m, oh, ow), x.dtype)
    taps = _taps(kernel, s, d, wq)
    for i in range(n):
        for l0 in range(0, length, _DIRECT_CHUNK):
            l1 = min(length, l0 + _DIRECT_CHUNK)
            a_, t_ = acc[:, l0:l1], tmp[:, :l1 - l0]
            for k, (t, a, b, off) in enumerate(taps):
                v = planes[a, b, i, :, off + l0:off + l1]
                if k == 0:
                    np.matmul(wt[t], v, out=a_)
                else:
                    np.matmul(wt[t], v, out=t_)
                    a_ += t_
        _finish(acc.reshape(m, oh, wq), y[i], bias, ow)
    return y
