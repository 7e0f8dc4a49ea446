"""Conv-family geometry, parsed once per node and read by every kernel set (numpy, WASM, native, GPU): kernel,
strides, dilations, pads (auto_pad resolved), group, output dims — with one-line errors for what the ONNX spec
rejects — and the output-shape rule type / shape inference uses."""
import math
from dataclasses import dataclass

from ..errors import Fail, InvalidArgument
from ..runtime import limits


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
            return cls(in_shape, kernel, _moot_strides(st, out), dil, tuple(pb), tuple(pe), tuple(out), group,
                       bool(ceil_mode))
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
        return cls(in_shape, kernel, _moot_strides(st, out), dil, pb, pe, tuple(out), group, bool(ceil_mode))

    def _checked(self, n, c, name, size_check):
        """self, after the memory limit check of its output (n × c × out, float32 at least)."""
        if size_check:
            limits.check(n * c * math.prod(self.out) * 4, "{} output of {} per channel", name, self.out)
        return self

    @classmethod
    def conv(cls, x_shape, w_shape, name="Conv", *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
             pads=None, strides=None, size_check=True, **_other_attributes):
        """Conv / FusedConv / ConvInteger / QLinearConv / DeformConv: X (N, C, *S), W (M, C/group, *K)."""
        kernel = _conv_kernel(x_shape, w_shape, kernel_shape, name, auto_pad, pads)
        c, m = x_shape[1], w_shape[0]
        if group <= 0 or c % group or m % group or w_shape[1] * group != c:
            raise InvalidArgument(f"{name}: X channels {c}, W shape {tuple(w_shape)} and group {group} are "
                                  "inconsistent")
        return cls.window(x_shape[2:], kernel, name, auto_pad=auto_pad, strides=strides, dilations=dilations,
                          pads=pads, group=int(group))._checked(x_shape[0], m, name, size_check)

    @classmethod
    def pool(cls, x_shape, name="Pool", *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None,
             pads=None, strides=None, size_check=True, **_other_attributes):
        """MaxPool / AveragePool / LpPool: X (N, C, *S), kernel_shape required."""
        if len(x_shape) < 3:
            raise InvalidArgument(f"{name}: X must be at least 3-D, got shape {tuple(x_shape)}")
        if not kernel_shape:
            raise InvalidArgument(f"{name}: attribute 'kernel_shape' is required")
        nd = len(kernel_shape)
        if pads and (not auto_pad or auto_pad == "NOTSET") and len(pads) == 2 * nd and \
                any(p >= kernel_shape[i % nd] > 0 for i, p in enumerate(pads)):
            raise Fail(f"{name}: pads {list(pads)} must be smaller than kernel_shape {list(kernel_shape)} (onnxruntime: "
                       "Pad should be smaller than kernel.)")
        return cls.window(x_shape[2:], kernel_shape, name, auto_pad=auto_pad, strides=strides, dilations=dilations,
                          pads=pads, ceil_mode=bool(ceil_mode))._checked(x_shape[0], x_shape[1], name, size_check)

    @classmethod
    def conv_transpose(cls, x_shape, w_shape, name="ConvTranspose", *, auto_pad="NOTSET", dilations=None, group=1,
                       kernel_shape=None, output_padding=None, output_shape=None, pads=None, strides=None,
                       size_check=True, **_other_attributes):
        """ConvTranspose: X (N, C, *S), W (C, M/group, *K); the output from output_shape, auto_pad or pads (ONNX's
        rule: with output_shape or SAME_* the total padding splits as auto_pad says, begin pads clamped at 0, so a
        larger output than the natural one grows at the end, as onnxruntime does)."""
        kernel = _conv_kernel(x_shape, w_shape, kernel_shape, name, auto_pad, pads)
        c, ins, nd = x_shape[1], tuple(x_shape[2:]), len(x_shape) - 2
        if group <= 0 or w_shape[0] != c or c % group:
            raise InvalidArgument(f"{name}: X channels {c}, W shape {tuple(w_shape)} and group {group} are "
                                  "inconsistent")
        st = _ints(strides, nd, 1, "strides", name)
        dil = _ints(dilations, nd, 1, "dilations", name)
        if min(kernel + st + dil, default=1) <= 0:
            raise _invalid_window(name, ins, kernel, st, dil, (), ())
        opad = _ints(output_padding, nd, 0, "output_padding", name)
        if min(opad, default=0) < 0 or any(o >= max(s, d) for o, s, d in zip(opad, st, dil)):
            raise InvalidArgument(f"{name}: output_padding must be non-negative and less than max(stride, "
                                  f"dilation) per axis, got {list(opad)}")
        natural = [s * (i - 1) + o + (k - 1) * d + 1 for s, i, o, k, d in zip(st, ins, opad, kernel, dil)]
        auto_pad = auto_pad or "NOTSET"
        if auto_pad not in _AUTO_PADS:
            raise InvalidArgument(f"{name}: unsupported auto_pad '{auto_pad}'")
        target = None
        if output_shape:
            target = [int(v) for v in output_shape][-nd:] if len(output_shape) in (nd, nd + 2) else None
            if target is None:
                raise InvalidArgument(f"{name}: output_shape attribute has {len(output_shape)} elements, expected "
                                      f"{nd} or {nd + 2}.")
            # (a longer output than stride - 1 past the one without output_padding reads no input: onnxruntime
            # refuses it)
            most = [n - o + s - 1 for n, o, s in zip(natural, opad, st)]
            if any(t > m for t, m in zip(target, most)):
                raise InvalidArgument(f"{name}: explicit output_shape {target} is inconsistent with input spatial "
                                      f"dimensions {list(ins)} (at most {most})")
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
        return cls(ins, kernel, st, dil, pb, pe, out, int(group), False, opad)._checked(
            x_shape[0], w_shape[1] * group, name, size_check)

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


def _moot_strides(strides, out):
    """Strides with 1 along axes of one window: the stride is moot there (a huge one would size kernels' views)."""
    if 1 in out and max(strides) > 1:
        return tuple(1 if o == 1 else s for o, s in zip(out, strides))
    return strides


def _conv_kernel(x_shape, w_shape, kernel_shape, name, auto_pad="NOTSET", pads=None):
    if auto_pad not in ("", "NOTSET") and pads:  # (pools allow both: onnxruntime too)
        raise InvalidArgument(f"{name}: a Conv / ConvTranspose node has both 'auto_pad' and 'pads' attributes")
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
        g = ConvGeometry.pool(xs, op_type, **attrs, size_check=False) if pool else \
            _SHAPE_RULES[op_type](xs, ws, op_type, **attrs, size_check=False)
    except (InvalidArgument, TypeError, ValueError):
        return shape
    return shape[:2] + [None if a in unknown and not fixed else o for a, o in enumerate(g.out)]


def spatial_geometry(in_shape, kernel, strides, dilations, pads, auto_pad, name, ceil_mode=False):
    """(out, pads begin, pads end, strides, dilations) as lists: ConvGeometry.window's, for callers taking them
    apart (ops/quant.py's QLinearConv, tests)."""
    g = ConvGeometry.window(in_shape, kernel, name, auto_pad=auto_pad, strides=strides, dilations=dilations,
                            pads=pads, ceil_mode=ceil_mode)
    return list(g.out), list(g.pads_begin), list(g.pads_end), list(g.strides), list(g.dilations)


def _kernel_shape(kernel_shape, w, name):
    """W's kernel checked against kernel_shape, for ops/quant.py's QLinearConv (the others use ConvGeometry.conv)."""
    return list(_conv_kernel(w.shape, w.shape, kernel_shape, name))
