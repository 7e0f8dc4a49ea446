"""Convolutions: Conv, ConvTranspose, ConvInteger, DeformConv, Col2Im, CausalConvWithState; conv_nd picks Winograd
(conv_winograd), the direct paths (conv_direct) or im2col on strided views."""
import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgument
from . import conv_direct as _direct_paths
from . import conv_winograd as _wino
from .math import via_float32
from .registry import op

def compute_dtype(dtype):
    """The dtype a float kernel computes in: float64 stays, everything else (float16, bfloat16, ...) is float32."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def _ints(v, n, fill, what, name):
    if v is None or len(v) == 0:
        return (fill,) * n
    v = tuple(map(int, v))
    if len(v) != n:
        raise InvalidArgument(f"{name}: attribute '{what}' has {len(v)} values, expected {n}")
    return v


def _invalid_window(name, in_shape, kernel, strides, dilations, pb, pe):
    """The InvalidArgument for a window whose values (or output) are out of range."""
    for what, v, low in (("kernel_shape", kernel, 1), ("strides", strides, 1), ("dilations", dilations, 1)):
        if min(v, default=low) < low:
            return InvalidArgument(f"{name}: {what} must be positive, got {list(v)}")
    if min(pb + pe, default=0) < 0:
        return InvalidArgument(f"{name}: pads must be non-negative, got {list(pb + pe)}")
    dk = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    padded = [i + b + e for i, b, e in zip(in_shape, pb, pe)]
    return InvalidArgument(f"{name}: the kernel {list(kernel)} (dilated: {dk}) is larger than the padded input "
                           f"{padded}")


_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@dataclass(slots=True)
class ConvGeometry:
    """The Conv-family geometry of one node, parsed once from its attributes and input shapes, read by every EP's
    kernels (numpy, WASM, native): spatial dims of the input, kernel, strides, dilations, begin / end pads (auto_pad
    resolved), output spatial dims, group, ceil_mode, ConvTranspose's output_padding; read-only (tuples; not frozen:
    that costs every kernel call ~1.5 µs). The constructors (conv, pool, conv_transpose, window) raise a one-line
    InvalidArgument naming what is wrong."""
    in_shape: tuple
    kernel: tuple
    strides: tuple
    dilations: tuple
    pads_begin: tuple
    pads_end: tuple        # ConvTranspose: what the output window leaves of the full result (< 0: it grows there)
    out: tuple
    group: int = 1
    ceil_mode: bool = False
    output_padding: tuple = ()

    @classmethod
    def window(cls, in_shape, kernel, name, *, auto_pad="NOTSET", strides=None, dilations=None, pads=None,
               ceil_mode=False, group=1):
        """A window of `kernel` sliding over spatial dims `in_shape` (the rule Conv and the pools share)."""
        nd = len(in_shape)
        in_shape, kernel = tuple(in_shape), tuple(map(int, kernel))
        if len(kernel) != nd:
            raise InvalidArgument(f"{name}: kernel_shape {list(kernel)} does not match the input's {nd} spatial dims")
        st = _ints(strides, nd, 1, "strides", name)
        dil = _ints(dilations, nd, 1, "dilations", name)
        out = []
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):  # out = ceil(in / stride), the total pad split begin / end
            upper = auto_pad == "SAME_UPPER"
            pb, pe = [], []
            for i, k, s, d in zip(in_shape, kernel, st, dil):
                if k <= 0 or s <= 0 or d <= 0:
                    raise _invalid_window(name, in_shape, kernel, st, dil, (), ())
                o = -(-i // s)
                t = max(0, (o - 1) * s + (k - 1) * d + 1 - i)
                pb.append(t // 2 if upper else t - t // 2)
                pe.append(t - pb[-1])
                out.append(o)
            return cls(in_shape, kernel, st, dil, tuple(pb), tuple(pe), tuple(out), group, bool(ceil_mode))
        if not auto_pad or auto_pad == "NOTSET":
            p = _ints(pads, 2 * nd, 0, "pads", name)
            pb, pe = p[:nd], p[nd:]
        elif auto_pad == "VALID":
            pb = pe = (0,) * nd
        else:
            raise InvalidArgument(f"{name}: unsupported auto_pad '{auto_pad}'")
        for i, k, s, d, b, e in zip(in_shape, kernel, st, dil, pb, pe):
            span = i + b + e - (k - 1) * d - 1
            if ceil_mode:
                o = -(-span // s) + 1 if s > 0 else 0
                if (o - 1) * s >= i + b:  # the last window must start inside the input or its begin pad
                    o -= 1
            else:
                o = span // s + 1 if s > 0 else 0
            if o <= 0 or k <= 0 or d <= 0 or b < 0 or e < 0:
                raise _invalid_window(name, in_shape, kernel, st, dil, pb, pe)
            out.append(o)
        return cls(in_shape, kernel, st, dil, pb, pe, tuple(out), group, bool(ceil_mode))

    @classmethod
    def conv(cls, x_shape, w_shape, name="Conv", *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
             pads=None, strides=None, **_other_attributes):
        """Conv / FusedConv / ConvInteger / QLinearConv / DeformConv: X (N, C, *S), W (M, C/group, *K)."""
        kernel = _conv_kernel(x_shape, w_shape, kernel_shape, name)
        c, m = x_shape[1], w_shape[0]
        if group <= 0 or c % group or m % group or w_shape[1] * group != c:
            raise InvalidArgument(f"{name}: X channels {c}, W shape {tuple(w_shape)} and group {group} are "
                                  "inconsistent")
        return cls.window(x_shape[2:], kernel, name, auto_pad=auto_pad, strides=strides, dilations=dilations,
                          pads=pads, group=int(group))

    @classmethod
    def pool(cls, x_shape, name="Pool", *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None,
             pads=None, strides=None, **_other_attributes):
        """MaxPool / AveragePool / LpPool: X (N, C, *S), kernel_shape required."""
        if len(x_shape) < 3:
            raise InvalidArgument(f"{name}: X must be at least 3-D, got shape {tuple(x_shape)}")
        if not kernel_shape:
            raise InvalidArgument(f"{name}: attribute 'kernel_shape' is required")
        return cls.window(x_shape[2:], kernel_shape, name, auto_pad=auto_pad, strides=strides, dilations=dilations,
                          pads=pads, ceil_mode=bool(ceil_mode))

    @classmethod
    def conv_transpose(cls, x_shape, w_shape, name="ConvTranspose", *, auto_pad="NOTSET", dilations=None, group=1,
                       kernel_shape=None, output_padding=None, output_shape=None, pads=None, strides=None,
                       **_other_attributes):
        """ConvTranspose: X (N, C, *S), W (C, M/group, *K); the output from output_shape, auto_pad or pads (ONNX's
        rule: with output_shape or SAME_* the total padding splits as auto_pad says, begin pads clamped at 0, so a
        larger output than the natural one grows at the end, as onnxruntime does)."""
        kernel = _conv_kernel(x_shape, w_shape, kernel_shape, name)
        c, ins, nd = x_shape[1], tuple(x_shape[2:]), len(x_shape) - 2
        if group <= 0 or w_shape[0] != c or c % group:
            raise InvalidArgument(f"{name}: X channels {c}, W shape {tuple(w_shape)} and group {group} are "
                                  "inconsistent")
        st = _ints(strides, nd, 1, "strides", name)
        dil = _ints(dilations, nd, 1, "dilations", name)
        if min(kernel + st + dil, default=1) <= 0:
            raise _invalid_window(name, ins, kernel, st, dil, (), ())
        opad = _ints(output_padding, nd, 0, "output_padding", name)
        if min(opad, default=0) < 0:
            raise InvalidArgument(f"{name}: output_padding must be non-negative, got {list(opad)}")
        natural = [s * (i - 1) + o + (k - 1) * d + 1 for s, i, o, k, d in zip(st, ins, opad, kernel, dil)]
        auto_pad = auto_pad or "NOTSET"
        if auto_pad not in _AUTO_PADS:
            raise InvalidArgument(f"{name}: unsupported auto_pad '{auto_pad}'")
        target = None
        if output_shape:
            target = [int(v) for v in output_shape][-nd:] if len(output_shape) in (nd, nd + 2) else None
            if target is None:
                raise InvalidArgument(f"{name}: output_shape {list(output_shape)} does not have {nd} spatial dims")
        elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            target = [i * s for i, s in zip(ins, st)]
        if target is not None:
            total = [nat - o for nat, o in zip(natural, target)]
            pb = tuple(max(0, t // 2 if auto_pad == "SAME_UPPER" else t - t // 2) for t in total)
            out = tuple(target)
        else:
            p = (0,) * (2 * nd) if auto_pad == "VALID" else _ints(pads, 2 * nd, 0, "pads", name)
            if min(p, default=0) < 0:
                raise InvalidArgument(f"{name}: pads must be non-negative, got {list(p)}")
            pb = p[:nd]
            out = tuple(nat - p[a] - p[nd + a] for a, nat in enumerate(natural))
        if min(out, default=1) <= 0:
            raise InvalidArgument(f"{name}: computed output shape {list(out)} is not positive")
        pe = tuple(nat - b - o for nat, b, o in zip(natural, pb, out))
        return cls(ins, kernel, st, dil, pb, pe, out, int(group), False, opad)

    @property
    def window_pads_end(self):
        """End pads large enough for every window of `out` to fit (ceil_mode windows may overrun pads_end)."""
        return tuple(max(e, (o - 1) * s + (k - 1) * d + 1 - i - b) for i, o, b, e, s, k, d in zip(
            self.in_shape, self.out, self.pads_begin, self.pads_end, self.strides, self.kernel, self.dilations))

    def as_2d(self):
        """This geometry with 1-D made 2-D (a leading unit axis), for the 2-D kernels; 2-D stays as it is."""
        if len(self.kernel) != 1:
            return self
        one = lambda v, f: (f,) + tuple(v)  # noqa: E731
        return ConvGeometry(one(self.in_shape, 1), one(self.kernel, 1), one(self.strides, 1),
                            one(self.dilations, 1), one(self.pads_begin, 0), one(self.pads_end, 0), one(self.out, 1),
                            self.group, self.ceil_mode, one(self.output_padding, 0) if self.output_padding else ())


def _conv_kernel(x_shape, w_shape, kernel_shape, name):
    if len(x_shape) < 3:
        raise InvalidArgument(f"{name}: X must be at least 3-D, got shape {tuple(x_shape)}")
    if len(w_shape) != len(x_shape):
        raise InvalidArgument(f"{name}: W shape {tuple(w_shape)} does not have X's rank {len(x_shape)}")
    kernel = tuple(w_shape[2:])
    if kernel_shape and tuple(int(k) for k in kernel_shape) != kernel:
        raise InvalidArgument(f"{name}: kernel_shape {list(kernel_shape)} does not match W shape {tuple(w_shape)}")
    return kernel


_SHAPE_RULES = {"Conv": ConvGeometry.conv, "FusedConv": ConvGeometry.conv, "ConvInteger": ConvGeometry.conv,
                "ConvTranspose": ConvGeometry.conv_transpose}
_UNKNOWN_DIM = 1 << 30  # stands in for an unknown spatial dim: axes are independent, so the others stay exact


def conv_output_shape(op_type, attrs, x_shape, w_shape=None):
    """The output shape type / shape inference gives a Conv, FusedConv, ConvInteger, ConvTranspose, MaxPool,
    AveragePool or LpPool node with attributes `attrs` and input shapes X `x_shape`, W `w_shape` (dims: ints,
    symbolic names or None; a shape None when unknown): batch as X's, channels and each spatial dim where the
    known dims fix them, else None. None when X's rank is unknown; unknown spatial dims (not an error) where the
    geometry is invalid: the kernel reports that at run time."""
    if x_shape is None or len(x_shape) < 3:
        return None
    nd = len(x_shape) - 2
    pool = op_type not in _SHAPE_RULES
    unknown = [a for a, d in enumerate(x_shape[2:]) if not isinstance(d, int)]
    fixed = op_type == "ConvTranspose" and bool(attrs.get("output_shape"))  # no output dim depends on the input's
    if pool:
        channels = x_shape[1]
    elif w_shape is None or len(w_shape) != len(x_shape):
        channels = None
    elif op_type == "ConvTranspose":
        channels = w_shape[1] * attrs.get("group", 1) if isinstance(w_shape[1], int) else None
    else:
        channels = w_shape[0]
    shape = [x_shape[0], channels] + [None] * nd
    group = attrs.get("group", 1)
    if not pool:  # the kernel from W's spatial dims (else kernel_shape); channels made consistent: not checked here
        kernel = w_shape[2:] if w_shape is not None and len(w_shape) == len(x_shape) else attrs.get("kernel_shape")
        if not kernel or any(not isinstance(d, int) for d in kernel):
            return shape
        ws = [group, 1] + list(kernel)
    xs = [1, 1 if pool else group] + [_UNKNOWN_DIM if a in unknown else d for a, d in enumerate(x_shape[2:])]
    try:
        g = ConvGeometry.pool(xs, op_type, **attrs) if pool else _SHAPE_RULES[op_type](xs, ws, op_type, **attrs)
    except (InvalidArgument, TypeError, ValueError):
        return shape
    return shape[:2] + [None if a in unknown and not fixed else o for a, o in enumerate(g.out)]


def spatial_geometry(in_shape, kernel, strides, dilations, pads, auto_pad, name, ceil_mode=False):
    """(out, pads begin, pads end, strides, dilations) as lists: ConvGeometry.window's, for callers taking them
    apart (ops/quant.py's QLinearConv, tests)."""
    g = ConvGeometry.window(in_shape, kernel, name, auto_pad=auto_pad, strides=strides, dilations=dilations,
                            pads=pads, ceil_mode=ceil_mode)
    return list(g.out), list(g.pads_begin), list(g.pads_end), list(g.strides), list(g.dilations)


def pad_spatial(x, pb, pe, value=0):
    """Pad the spatial axes (2..) of x; negative pads crop."""
    if not any(pb) and not any(pe):
        return x
    if min(pb) < 0 or min(pe) < 0:
        sl = (slice(None), slice(None)) + tuple(
            slice(max(0, -b), x.shape[2 + i] - max(0, -e) or None) for i, (b, e) in enumerate(zip(pb, pe)))
        x = x[sl]
        pb, pe = [max(0, b) for b in pb], [max(0, e) for e in pe]
    shape = x.shape[:2] + tuple(d + b + e for d, b, e in zip(x.shape[2:], pb, pe))
    xp = np.full(shape, value, dtype=x.dtype) if value else np.zeros(shape, dtype=x.dtype)
    xp[(slice(None), slice(None)) + tuple(slice(b, b + d) for b, d in zip(pb, x.shape[2:]))] = x
    return xp


def windows(xp, kernel, strides, dilations, out):
    """Read-only strided view (N, C, *out, *kernel) of the windows of padded xp."""
    nd = len(kernel)
    st = xp.strides
    shape = xp.shape[:2] + tuple(out) + tuple(kernel)
    strides_ = st[:2] + tuple(st[2 + i] * strides[i] for i in range(nd)) + tuple(
        st[2 + i] * dilations[i] for i in range(nd))
    if xp.flags.c_contiguous and xp.flags.writeable:  # the ndarray constructor costs ~1 µs, as_strided ~10 µs
        view = np.ndarray(shape, xp.dtype, buffer=xp, strides=strides_)
        view.flags.writeable = False
        return view
    return np.lib.stride_tricks.as_strided(xp, shape=shape, strides=strides_, writeable=False)


def conv_nd(x, w, group, kernel, strides, dilations, pb, pe, out, name, fast=False, bias=None):
    """Grouped N-D correlation of x (N,C,*S) with w (M,C/group,*K), plus `bias` (M,) if given; computes in x's
    dtype.

    Paths: with `fast` (float Conv only: the result is not bit-exact), 3×3 stride-1 convs large enough to gain
    run Winograd (conv_winograd); 1×1 unit-stride convs are one GEMM per image; depthwise convs accumulate over
    kernel taps; the rest build im2col columns per image (in a reused buffer) and run one 2-D GEMM per
    (image, group) so BLAS always sees plain matrices.
    """
    n, c = x.shape[:2]
    m = w.shape[0]
    nd = len(kernel)
    if group <= 0 or c % group or m % group or w.shape[1] * group != c:
        raise InvalidArgument(f"{name}: X channels {c}, W shape {w.shape} and group {group} are inconsistent")
    dtype = np.result_type(x.dtype, w.dtype)
    if fast:
        wm = _wino.winograd_tile(x, w, group, kernel, strides, dilations, pb, pe, out)
        if wm:
            return _wino.winograd_conv3x3(x, w, pb, pe, out, wm, bias)
    if group == 1 and x.dtype == w.dtype and c * math.prod(kernel) * math.prod(out) <= SMALL_GATHER:
        return _gathered(x, w, kernel, strides, dilations, pb, out, bias)
    if x.dtype == w.dtype and nd in (1, 2):
        y = _direct(x, w, group, kernel, strides, dilations, pb, pe, out, fast, bias)
        if y is not None:
            return y
    y = _conv_nd(x, w, group, kernel, strides, dilations, pb, pe, out, dtype)
    if bias is not None:
        y += np.asarray(bias, y.dtype).reshape((1, -1) + (1,) * nd)
    return y


SMALL_GATHER = 1 << 15  # column-matrix elements up to which a conv gathers its columns with a cached index
_GATHER_INDEX = {}      # (C, spatial, kernel, strides, dilations, pads, out) -> index into the flat image + a zero


def _gathered(x, w, kernel, strides, dilations, pb, out, bias):
    """A small group-1 conv as one fancy-indexed gather of its column matrix (padding reads an appended zero)
    and one GEMM per image: the index is built once per geometry, so a call is a handful of numpy calls (silero
    VAD's 1-D conv: ~28 → ~19 µs, tests/bench/micro.py)."""
    n, c = x.shape[:2]
    m = w.shape[0]
    key = (c, x.shape[2:], tuple(kernel), tuple(strides), tuple(dilations), tuple(pb), tuple(out))
    idx = _GATHER_INDEX.get(key)
    if idx is None:
        if len(_GATHER_INDEX) > 256:
            _GATHER_INDEX.clear()
        idx = _GATHER_INDEX[key] = _gather_index(c, x.shape[2:], kernel, strides, dilations, pb, out)
    w2 = w.reshape(m, -1)
    zero = np.zeros(1, x.dtype)
    y = np.empty((n, m, idx.shape[1]), np.result_type(x.dtype, w.dtype))
    for i in range(n):
        np.matmul(w2, np.concatenate((x[i].reshape(-1), zero))[idx], out=y[i])
    if bias is not None:
        y += np.asarray(bias, y.dtype).reshape(1, m, 1)
    return y.reshape((n, m) + tuple(out))


def _gather_index(c, spatial, kernel, strides, dilations, pb, out):
    """(C·prod(kernel), prod(out)) positions in one image flattened with a zero appended: row (c, tap), column
    output position; taps reading padding point at the zero."""
    nd = len(kernel)
    size = math.prod(spatial)
    flat = np.zeros((1,) * (2 * nd), np.int64)
    valid = np.ones((1,) * (2 * nd), bool)
    for a in range(nd):  # axes: taps (nd) then output positions (nd)
        tap = np.arange(kernel[a]).reshape((1,) * a + (-1,) + (1,) * (2 * nd - a - 1))
        pos = np.arange(out[a]).reshape((1,) * (nd + a) + (-1,) + (1,) * (nd - a - 1))
        coord = pos * strides[a] + tap * dilations[a] - pb[a]
        valid = valid & (coord >= 0) & (coord < spatial[a])
        flat = flat * spatial[a] + coord
    taps = np.where(valid, flat, -1).reshape(math.prod(kernel), math.prod(out))
    per_channel = taps[None] + (np.arange(c) * size).reshape(c, 1, 1)
    return np.where(taps[None] < 0, c * size, per_channel).reshape(c * math.prod(kernel), math.prod(out))


def _direct(x, w, group, kernel, strides, dilations, pb, pe, out, fast, bias):
    """conv_direct's paths (1-D convs as 1×K): depthwise always, few output channels (M < 32, C >= 16) with
    `fast`; None where neither applies (and for 1×1 kernels, which are one plain GEMM already)."""
    c, m = x.shape[1], w.shape[0]
    if math.prod(kernel) == 1:
        return None
    depthwise = group == c and m == c
    if not (depthwise or (fast and group == 1 and m < 32 and c >= 16)):
        return None
    one_d = len(kernel) == 1
    if one_d:
        x, w = x[:, :, None, :], w[:, :, None, :]
        kernel, strides, dilations = [1] + list(kernel), list(strides) * 2, list(dilations) * 2
        pb, pe, out = [0] + list(pb), [0] + list(pe), [1] + list(out)
    if not _direct_paths.eligible(kernel, pb, pe):
        return None
    run = _direct_paths.depthwise if depthwise else _direct_paths.few_outputs
    y = run(x, w, pb, pe, list(strides), list(dilations), out, bias)
    return y[:, :, 0] if one_d and y is not None else y


def _conv_nd(x, w, group, kernel, strides, dilations, pb, pe, out, dtype):
    n, c = x.shape[:2]
    m = w.shape[0]
    nd = len(kernel)
    cg, mg = c // group, m // group
    kp = math.prod(kernel) if nd else 1
    p = math.prod(out) if nd else 1
    y = np.empty((n, group, mg, p), dtype=dtype)
    wg = w.reshape(group, mg, cg * kp)
    if kp == 1 and not any(pb) and not any(pe) and all(s == 1 for s in strides):
        xr = x.reshape(n, group, cg, p)
        for i in range(n):
            for g in range(group):
                np.matmul(wg[g], xr[i, g], out=y[i, g])
        return y.reshape((n, m) + tuple(out))
    xp = pad_spatial(x, pb, pe)
    view = windows(xp, kernel, strides, dilations, out)  # N, C, *O, *K
    if group == c and mg == 1 and kp > 1:  # depthwise: one multiply-add per kernel tap, vectorised over C and O
        acc = np.zeros((n, c) + tuple(out), dtype=dtype)
        wt = w.reshape(c, kp)
        for t, idx in enumerate(itertools.product(*(range(k) for k in kernel))):
            acc += view[(Ellipsis,) + idx] * wt[:, t].reshape((1, c) + (1,) * nd)
        return acc
    perm = tuple(range(1 + nd, 1 + 2 * nd)) + tuple(range(1, 1 + nd))
    cols = _wino.scratch("im2col", (c,) + tuple(kernel) + tuple(out), xp.dtype)  # reused: no page faults per call
    colsg = cols.reshape(group, cg * kp, p)
    for i in range(n):
        np.copyto(cols, view[i].transpose((0,) + perm))
        for g in range(group):
            np.matmul(wg[g], colsg[g], out=y[i, g])
    return y.reshape((n, m) + tuple(out))


def _kernel_shape(kernel_shape, w, name):
    """W's kernel checked against kernel_shape, for ops/quant.py's QLinearConv (the others use ConvGeometry.conv)."""
    return list(_conv_kernel(w.shape, w.shape, kernel_shape, name))


def _float_in(a):
    ct = compute_dtype(a.dtype)
    return a if a.dtype == ct else a.astype(ct)


@op("Conv", since=1)
@via_float32
def conv(x, w, b=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None,
         ctx=None):
    name = f"Conv node '{ctx.node_name}'" if ctx is not None else "Conv"
    g = ConvGeometry.conv(x.shape, w.shape, name, auto_pad=auto_pad, dilations=dilations, group=group,
                          kernel_shape=kernel_shape, pads=pads, strides=strides)
    y = conv_nd(_float_in(x), _float_in(w), g.group, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                g.out, name, fast=True, bias=None if b is None else _float_in(b).reshape(-1))
    return y.astype(x.dtype, copy=False)


@op("ConvInteger", since=10)
def conv_integer(x, w, x_zero_point=None, w_zero_point=None, *, auto_pad="NOTSET", dilations=None, group=1,
                 kernel_shape=None, pads=None, strides=None, ctx=None):
    name = f"ConvInteger node '{ctx.node_name}'" if ctx is not None else "ConvInteger"
    g = ConvGeometry.conv(x.shape, w.shape, name, auto_pad=auto_pad, dilations=dilations, group=group,
                          kernel_shape=kernel_shape, pads=pads, strides=strides)
    xf = x.astype(np.float64)
    if x_zero_point is not None:
        xf -= np.asarray(x_zero_point).astype(np.float64).reshape(())
    wf = w.astype(np.float64)
    if w_zero_point is not None:
        wz = np.asarray(w_zero_point).astype(np.float64)
        wf -= wz.reshape((-1,) + (1,) * (w.ndim - 1)) if wz.size > 1 else wz.reshape(())
    y = conv_nd(xf, wf, g.group, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end, g.out, name)
    return np.rint(y).astype(np.int32)


@op("ConvTranspose", since=1)
@via_float32
def conv_transpose(x, w, b=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
                   output_padding=None, output_shape=None, pads=None, strides=None, ctx=None):
    name = f"ConvTranspose node '{ctx.node_name}'" if ctx is not None else "ConvTranspose"
    g = ConvGeometry.conv_transpose(x.shape, w.shape, name, auto_pad=auto_pad, dilations=dilations, group=group,
                                    kernel_shape=kernel_shape, output_padding=output_padding,
                                    output_shape=output_shape, pads=pads, strides=strides)
    n, c = x.shape[:2]
    ins, ks, st, dil, pb, out = list(g.in_shape), list(g.kernel), list(g.strides), list(g.dilations), \
        list(g.pads_begin), list(g.out)
    nd = len(ins)
    dk = [(k - 1) * d + 1 for k, d in zip(ks, dil)]
    cg = c // group
    mg = w.shape[1]
    m = mg * group
    kp = math.prod(ks)
    pin = math.prod(ins)
    xf, wf = _float_in(x), _float_in(w)
    xg = xf.reshape(n, group, cg, pin)
    wg = wf.reshape(group, cg, mg * kp).transpose(0, 2, 1)
    cols = np.matmul(wg, xg).reshape((n, m) + tuple(ks) + tuple(ins))  # N, M, *K, *I
    full = [(i - 1) * s + k for i, s, k in zip(ins, st, dk)]
    if nd == 2 and st == list(ks) and dil == [1, 1] and not any(pb) and out == full:
        # kernel == stride (2×2 upsampling heads): every output pixel gets exactly one tap, placed by one copy each
        y = np.empty((n, m) + tuple(out), dtype=xf.dtype)
        dst = y.reshape(n, m, ins[0], ks[0], ins[1], ks[1])
        bias = None if b is None else _float_in(b).reshape(1, -1, 1, 1)
        for ki in range(ks[0]):
            for kj in range(ks[1]):
                if bias is None:
                    dst[:, :, :, ki, :, kj] = cols[:, :, ki, kj]
                else:
                    np.add(cols[:, :, ki, kj], bias, out=dst[:, :, :, ki, :, kj])
        return y.astype(x.dtype, copy=False)
    # place the full (uncropped) result into a buffer covering both it and the requested window (pads_begin >= 0)
    buf_shape = [max(f, b + ou) for f, b, ou in zip(full, pb, out)]
    buf = np.zeros((n, m) + tuple(buf_shape), dtype=xf.dtype)
    for kidx in itertools.product(*[range(k) for k in ks]):
        sl = tuple(slice(k * d, k * d + (i - 1) * s + 1, s) for k, d, i, s in zip(kidx, dil, ins, st))
        buf[(slice(None), slice(None)) + sl] += cols[(slice(None), slice(None)) + kidx]
    y = buf[(slice(None), slice(None)) + tuple(slice(b, b + ou) for b, ou in zip(pb, out))]
    if b is not None:
        y = y + _float_in(b).reshape((1, -1) + (1,) * nd)
    return np.ascontiguousarray(y).astype(x.dtype, copy=False)


@op("Col2Im", since=18, host_inputs=(1, 2))
@via_float32
def col2im(x, image_shape, block_shape, *, dilations=None, pads=None, strides=None, ctx=None):
    name = f"Col2Im node '{ctx.node_name}'" if ctx is not None else "Col2Im"
    img = [int(v) for v in np.asarray(image_shape).reshape(-1)]
    blk = [int(v) for v in np.asarray(block_shape).reshape(-1)]
    nd = len(img)
    if len(blk) != nd:
        raise InvalidArgument(f"{name}: image_shape and block_shape lengths differ")
    g = ConvGeometry.window(img, blk, name, strides=strides, dilations=dilations, pads=pads)  # blocks: its out
    st, dil, pb, pe, nb = g.strides, g.dilations, g.pads_begin, g.pads_end, list(g.out)
    kp = math.prod(blk)
    n, ck, length = x.shape
    if ck % kp:
        raise InvalidArgument(f"{name}: input dim 1 ({ck}) is not a multiple of prod(block_shape) {kp}")
    c = ck // kp
    if math.prod(nb) != length:
        raise InvalidArgument(f"{name}: input dim 2 ({length}) does not match the {nb} blocks the shapes give")
    cols = x.reshape((n, c) + tuple(blk) + tuple(nb))
    padded = [i + b + e for i, b, e in zip(img, pb, pe)]
    buf = np.zeros((n, c) + tuple(padded), dtype=x.dtype)
    for kidx in itertools.product(*[range(k) for k in blk]):
        sl = tuple(slice(k * d, k * d + (q - 1) * s + 1, s) for k, d, q, s in zip(kidx, dil, nb, st))
        buf[(slice(None), slice(None)) + sl] += cols[(slice(None), slice(None)) + kidx]
    return np.ascontiguousarray(buf[(slice(None), slice(None)) + tuple(slice(b, b + i) for b, i in zip(pb, img))])


def _multilinear_gather(x, pos):
    """Sample x (N, C, *S) at fractional positions pos (N, C, *Q, nd) with zero outside: (N, C, *Q)."""
    n, c = x.shape[:2]
    sp = x.shape[2:]
    nd = len(sp)
    qshape = pos.shape[2:-1]
    flat = x.reshape(n, c, -1)
    lo = np.floor(pos)
    frac = pos - lo
    lo = lo.astype(np.int64)
    res = np.zeros((n, c) + qshape, dtype=x.dtype)
    q = math.prod(qshape) if qshape else 1
    for corner in itertools.product((0, 1), repeat=nd):
        wgt = np.ones((n, c) + qshape, dtype=x.dtype)
        idx = np.zeros((n, c) + qshape, dtype=np.int64)
        valid = np.ones((n, c) + qshape, dtype=bool)
        for a in range(nd):
            ia = lo[..., a] + corner[a]
            fa = frac[..., a]
            wgt *= fa if corner[a] else (1 - fa)
            valid &= (ia >= 0) & (ia < sp[a])
            idx = idx * sp[a] + np.clip(ia, 0, sp[a] - 1)
        vals = np.take_along_axis(flat, idx.reshape(n, c, q), axis=2).reshape((n, c) + qshape)
        res += np.where(valid, vals * wgt, 0)
    return res


@op("DeformConv", since=19)
@via_float32
def deform_conv(x, w, offset, b=None, mask=None, *, dilations=None, group=1, kernel_shape=None, offset_group=1,
                pads=None, strides=None, ctx=None):
    name = f"DeformConv node '{ctx.node_name}'" if ctx is not None else "DeformConv"
    n, c = x.shape[:2]
    sp = list(x.shape[2:])
    nd = len(sp)
    g = ConvGeometry.conv(x.shape, w.shape, name, dilations=dilations, group=group, kernel_shape=kernel_shape,
                          pads=pads, strides=strides)
    ks, st, dil, p = list(g.kernel), g.strides, g.dilations, g.pads_begin
    out = list(offset.shape[2:])
    kp = math.prod(ks)
    og = offset_group
    if og <= 0 or c % og or offset.shape[1] != og * kp * nd:
        raise InvalidArgument(f"{name}: offset shape {offset.shape} inconsistent with offset_group {og}, kernel {ks}")
    m = w.shape[0]
    xf = _float_in(x)
    ct = xf.dtype
    off = offset.astype(ct).reshape((n, og) + tuple(ks) + (nd,) + tuple(out))
    # base sampling position per kernel tap and output position: (*K, *O, nd)
    grids = np.meshgrid(*[np.arange(k) * d for k, d in zip(ks, dil)],
                        *[np.arange(o) * s - pb for o, s, pb in zip(out, st, p[:nd])], indexing="ij")
    base = np.stack([grids[a] + grids[nd + a] for a in range(nd)], axis=-1).astype(ct)
    # positions (N, og, *K, *O, nd)
    pos = base + np.moveaxis(off, 2 + nd, -1)
    cpg = c // og
    xs = xf.reshape((n * og, cpg) + tuple(sp))
    q_shape = tuple(ks) + tuple(out)
    pos_b = np.broadcast_to(pos.reshape((n * og, 1) + q_shape + (nd,)), (n * og, cpg) + q_shape + (nd,))
    sampled = _multilinear_gather(xs, pos_b)  # (N*og, cpg, *K, *O)
    if mask is not None:
        mk = mask.astype(ct).reshape((n * og, 1) + q_shape)
        sampled = sampled * mk
    sampled = sampled.reshape((n, c, kp, math.prod(out)))
    cg, mg = c // group, m // group
    cols = sampled.reshape(n, group, cg * kp, -1)
    y = np.matmul(_float_in(w).reshape(group, mg, cg * kp), cols).reshape((n, m) + tuple(out))
    if b is not None:
        y = y + _float_in(b).reshape((1, -1) + (1,) * nd)
    return y.astype(x.dtype, copy=False)


@op("CausalConvWithState", since=27)
@via_float32
def causal_conv_with_state(x, w, b=None, past_state=None, *, activation="none", ctx=None):
    name = f"CausalConvWithState node '{ctx.node_name}'" if ctx is not None else "CausalConvWithState"
    if x.ndim != 3 or w.ndim != 3 or w.shape[0] != x.shape[1] or w.shape[1] != 1:
        raise InvalidArgument(f"{name}: input {x.shape} / weight {w.shape} shapes are inconsistent")
    n, c, length = x.shape
    k = w.shape[2]
    xf = _float_in(x)
    if past_state is not None:
        if past_state.shape != (n, c, k - 1):
            raise InvalidArgument(f"{name}: past_state shape {past_state.shape} is not {(n, c, k - 1)}")
        seq = np.concatenate([_float_in(past_state).astype(xf.dtype, copy=False), xf], axis=2)
    else:
        seq = np.concatenate([np.zeros((n, c, k - 1), xf.dtype), xf], axis=2)
    win = windows(seq, [k], [1], [1], [length])  # N, C, L, K
    y = np.einsum("nclk,ck->ncl", win, _float_in(w).reshape(c, k).astype(xf.dtype, copy=False))
    if b is not None:
        y = y + _float_in(b).reshape(1, c, 1)
    act = (activation or "none").lower()
    if act in ("silu", "swish"):
        y = y / (1 + np.exp(-y))
    elif act != "none":
        raise InvalidArgument(f"{name}: unsupported activation '{activation}'")
    present = np.ascontiguousarray(seq[:, :, seq.shape[2] - (k - 1):]) if k > 1 else np.zeros((n, c, 0), xf.dtype)
    return y.astype(x.dtype, copy=False), present.astype(x.dtype, copy=False)
