"""Native chains (issue 16 item 1): a run of consecutive host steps of a plan whose values are float32 of fixed shapes
and whose ops the native kernels implement becomes one step that runs them all from one call into C (nx_chain_run,
native_eps/cpu_kernels/nx_chain.c) over one arena per run, so Python works only at the chain's borders. Small nodes,
which the EP otherwise leaves to numpy, run natively inside a chain: there the per-call costs they avoid are gone."""
import math
import threading

import numpy as np

from onnxide.errors import InvalidArgument
from onnxide.ops import activations, registry, resize
from onnxide.ops.conv_geometry import ConvGeometry
from onnxide.plan import Step
from onnxide.plan.lifetimes import arena_offsets

from . import cpu_ops as K

F32 = np.dtype(np.float32)
STAGED = 1 << 16  # chain inputs up to this many bytes are copied into the arena (numpy's .ctypes.data costs ~2.5 us)
RECORD = 40  # longs per instruction (nx_chain.c's nx_instr)
OP = {name: i + 1 for i, name in enumerate(("gemm", "act", "bias_act", "binary", "softmax", "layernorm", "affine",
                                            "maxpool", "gavg", "dwconv", "conv_shifted", "winograd", "copy", "strided",
                                            "upsample", "attention", "fill"))}
HOST_EPS = ("NativeCPUExecutionProvider", "CPUExecutionProvider")
VIEWS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout")  # the output is the input's buffer
MIN_KERNELS = 2  # a chain of one kernel saves nothing


class Decline(Exception):
    """This node does not lower (an op, attribute, type or shape the chain kernels do not take)."""


class _Builder:
    """Lowers steps into instructions over tensors: arena buffers (values made inside, scratch) and external pointers
    (the chain's inputs, constants, packed weights). `consts` holds the plan's constants by key."""

    def __init__(self, lib, types, consts, nt, known=None):
        self.lib, self.types, self.consts, self.nt = lib, types, consts, nt
        self.known = known if known is not None else {}  # key -> shape the lowering of an earlier step gave it
        self.code = []          # [(op, p, t, f, act)]
        self.tensors = []       # ("buf", buffer id) | ("ext", ext index)
        self.ext = []           # fixed addresses (constants); None for an input slot, filled per run
        self.keep = []          # arrays whose addresses the program holds
        self.buffers = []       # bytes per arena buffer
        self.life = []          # [first, last] instruction per buffer
        self.where = {}         # key -> ("buf", buffer id, shape) | ("in", input index, shape)
        self.inputs = []        # keys read from outside, in order
        self.in_shapes = []
        self.staged = []        # (input index, arena buffer) of the inputs copied in
        self.ext_of_input = []  # (input index, ext index) of the inputs read in place

    # --- values --------------------------------------------------------------------------------------------------
    def shape(self, key):
        """The fixed float32 shape of value `key`, else Decline."""
        if key in self.where:
            return self.where[key][2]
        if key in self.known:  # (a graph output may declare less than the node makes)
            return self.known[key]
        if key in self.consts:
            c = self.consts[key]
            if not isinstance(c, np.ndarray) or c.dtype != F32:
                raise Decline(key)
            return c.shape
        name = key if isinstance(key, str) else key[0]
        entry = self.types.get(name)
        if not entry or entry[0] != 1 or entry[1] is None or not all(
                isinstance(d, (int, np.integer)) and d > 0 for d in entry[1]):
            raise Decline(name)
        return tuple(int(d) for d in entry[1])

    def const(self, key):
        """The constant array of `key`, or None when it is not a constant."""
        return self.consts.get(key) if key is not None else None

    def src(self, key):
        """The tensor to read value `key` from (None: no tensor). A chain input of up to STAGED bytes is copied into
        the arena at the start of a run (cheaper than taking its address), a larger one is read where it is."""
        if key is None:
            return -1
        if key not in self.where:
            shape = self.shape(key)
            if key in self.consts:
                return self.fixed(np.ascontiguousarray(self.consts[key]))
            self.inputs.append(key)
            self.in_shapes.append(shape)
            if 4 * math.prod(shape) <= STAGED:
                ref = self._buffer(4 * math.prod(shape))
                self.life[ref][0] = 0
                self.staged.append((len(self.inputs) - 1, ref))
                self.where[key] = ("buf", ref, shape)
            else:
                self.ext.append(None)
                self.ext_of_input.append((len(self.inputs) - 1, len(self.ext) - 1))
                self.where[key] = ("in", len(self.ext) - 1, shape)
        kind, ref, _ = self.where[key]
        if kind == "buf":
            self.life[ref][1] = len(self.code)
        return self._tensor(kind if kind == "buf" else "ext", ref)

    def dst(self, key, shape):
        """A new arena buffer for value `key` of `shape`, written by the next instruction."""
        self.where[key] = ("buf", self._buffer(4 * math.prod(shape)), tuple(shape))
        return self._tensor("buf", self.where[key][1])

    def alias(self, out_key, in_key, shape):
        """Value `out_key` is value `in_key` (same elements) in `shape`."""
        if in_key in self.consts:
            raise Decline("a view of a constant")  # (constant folding's work)
        self.src(in_key)
        kind, ref, _ = self.where[in_key]
        self.where[out_key] = (kind, ref, tuple(shape))

    def fixed(self, array):
        self.keep.append(array)
        self.ext.append(array.ctypes.data)
        return self._tensor("ext", len(self.ext) - 1)

    def scratch(self, floats):
        return self._tensor("buf", self._buffer(4 * floats)) if floats else -1

    def emit(self, op, p=(), t=(), f=(), act=0):
        self.code.append((OP[op], list(p), list(t), list(f), act))

    def _buffer(self, nbytes):
        self.buffers.append(nbytes)
        self.life.append([len(self.code), len(self.code)])
        return len(self.buffers) - 1

    def _tensor(self, kind, ref):
        self.tensors.append((kind, ref))
        return len(self.tensors) - 1


# --- lowerings: (builder, step, node, opdef, attrs) -> instructions, or Decline -------------------------------------

def _out(step):
    """The step's one output (optional ones it may have are unnamed)."""
    outs = [k for k in step.out_keys if k]
    if len(outs) != 1 or not step.out_keys[0]:
        raise Decline("outputs")
    return outs[0]


def _unary(b, step, node, opdef, attrs):
    p = activations.unary_activation(node.op_type, opdef, attrs, K.ACT)
    if p is None:
        raise Decline(node.op_type)
    x = step.in_keys[0]
    shape = b.shape(x)
    b.emit("act", [math.prod(shape)], [b.src(x), b.dst(_out(step), shape), -1], [p[1], p[2]], K.ACT[p[0]])


def _binary(b, step, node, opdef, attrs):
    if attrs or opdef.since < 7 or len(step.in_keys) != 2:
        raise Decline(node.op_type)
    ka, kb = step.in_keys
    sa, sb = b.shape(ka), b.shape(kb)
    try:
        out = np.broadcast_shapes(sa, sb)
    except ValueError:
        raise Decline("broadcast") from None
    b_first = sa != out
    (full, sf), (other, so) = ((kb, sb), (ka, sa)) if b_first else ((ka, sa), (kb, sb))
    if sf != out:
        raise Decline("broadcast")
    plan, b_full = ((1, math.prod(out), 1), 1) if so == out else (K._broadcast_plan(out, so), 0)
    if plan is None:
        raise Decline("broadcast")
    b.emit("binary", [K.BINARY[node.op_type], int(b_first), *plan, b_full],
           [b.src(full), b.src(other), b.dst(_out(step), out)])


def _gemm_instr(b, m, n, k, a, lda, y, bp=-1, raw_b=-1, ldb=0, bias=-1, row_bias=-1, res=-1, act=(0, 0.0, 0.0),
                ap=-1, batch=1, steps=(0, 0, 0, 0)):
    scratch = b.scratch(b.lib.nx_gemm_scratch_size(m, n, k, int(ap == -1), int(bp == -1)))
    b.emit("gemm", [m, n, k, lda, ldb, n, n, batch, *steps], [a, ap, raw_b, bp, y, bias, row_bias, res, scratch],
           [act[1], act[2]], act[0])


def _matmul(b, step, node, opdef, attrs):
    ka, kb = step.in_keys[:2]
    sa, sb = b.shape(ka), b.shape(kb)
    if len(sb) != 2 or len(sa) < 2 or sa[-1] != sb[0]:
        raise Decline("MatMul shapes")
    k, n = sb
    m = math.prod(sa[:-1])
    wb = b.const(kb)
    a = b.src(ka)
    if wb is not None:
        bp = b.fixed(K.packed_b(b.lib, wb, False))
        _gemm_instr(b, m, n, k, a, k, b.dst(_out(step), sa[:-1] + (n,)), bp=bp)
    else:
        raw = b.src(kb)
        _gemm_instr(b, m, n, k, a, k, b.dst(_out(step), sa[:-1] + (n,)), raw_b=raw, ldb=n)


def _gemm(b, step, node, opdef, attrs):
    act = K.fused_act(node, opdef, attrs)
    if act is None or set(attrs) - {"alpha", "beta", "transA", "transB"} or attrs.get("alpha", 1.0) != 1.0 \
            or attrs.get("transA", 0) or (node.op_type == "Gemm" and opdef.since < 7):
        raise Decline("Gemm attributes")
    ka, kb = step.in_keys[:2]
    kc = step.in_keys[2] if len(step.in_keys) > 2 else None
    sa, sb = b.shape(ka), b.shape(kb)
    trans = bool(attrs.get("transB", 0))
    if len(sa) != 2 or len(sb) != 2:
        raise Decline("Gemm ranks")
    m, k = sa
    n = sb[0] if trans else sb[1]
    if (sb[1] if trans else sb[0]) != k:
        raise Decline("Gemm shapes")
    wb = b.const(kb)
    if wb is None and trans:
        raise Decline("transposed dynamic B")
    bias = row_bias = res = -1
    a = b.src(ka)
    if kc is not None:
        sc = b.shape(kc)
        if attrs.get("beta", 1.0) != 1.0:
            raise Decline("beta")
        if sc in ((n,), (1, n)):
            bias = b.src(kc)
        elif sc == (m, 1) and m != 1:
            row_bias = b.src(kc)
        elif sc == (m, n):
            res = b.src(kc)
        else:
            raise Decline("Gemm C shape")
    if wb is not None:
        bp, raw = b.fixed(K.packed_b(b.lib, wb, trans)), -1
    else:
        bp, raw = -1, b.src(kb)
    _gemm_instr(b, m, n, k, a, k, b.dst(_out(step), (m, n)), bp=bp, raw_b=raw, ldb=n, bias=bias, row_bias=row_bias,
                res=res, act=act)


def _softmax(log):
    def lower(b, step, node, opdef, attrs):
        if set(attrs) - {"axis"}:
            raise Decline("Softmax attributes")
        coerced = opdef.since < 13
        shape = b.shape(step.in_keys[0])
        axis = attrs.get("axis", 1 if coerced else -1)
        a = axis + len(shape) if axis < 0 else axis
        if not shape or not 0 <= a < len(shape) or (not coerced and a != len(shape) - 1):
            raise Decline("Softmax axis")
        cols = math.prod(shape[a:])
        b.emit("softmax", [math.prod(shape) // cols, cols, int(log)],
               [b.src(step.in_keys[0]), b.dst(_out(step), shape)])
    return lower


def _layer_norm(b, step, node, opdef, attrs):
    if set(attrs) - {"axis", "epsilon", "stash_type"} or attrs.get("stash_type", 1) != 1:
        raise Decline("LayerNormalization attributes")
    kx, ks = step.in_keys[:2]
    kb = step.in_keys[2] if len(step.in_keys) > 2 else None
    shape = b.shape(kx)
    axis = attrs.get("axis", -1)
    a = axis + len(shape) if axis < 0 else axis
    if not shape or not 0 <= a < len(shape):
        raise Decline("LayerNormalization axis")
    norm = shape[a:]
    if b.shape(ks) != norm or (kb is not None and b.shape(kb) != norm):
        raise Decline("LayerNormalization scale")
    cols = math.prod(norm)
    b.emit("layernorm", [math.prod(shape) // cols, cols], [b.src(kx), b.src(ks), b.src(kb), b.dst(_out(step), shape)],
           [0.0, 0.0, float(attrs.get("epsilon", 1e-5))])


def _skip_layer_norm(b, step, node, opdef, attrs):
    """com.microsoft SkipLayerNormalization's first output: LayerNorm(x + skip + bias) over the last axis."""
    if set(attrs) - {"epsilon"}:
        raise Decline("SkipLayerNormalization attributes")
    kx, kskip, kg, kbeta, kbias = (list(step.in_keys) + [None] * 5)[:5]
    shape = b.shape(kx)
    if len(shape) < 2 or b.shape(kskip) != shape or any(
            k is not None and b.shape(k) != shape[-1:] for k in (kg, kbeta, kbias)):
        raise Decline("SkipLayerNormalization shapes")
    h = shape[-1]
    b.emit("layernorm", [math.prod(shape) // h, h], [b.src(kx), b.src(kg), b.src(kbeta), b.dst(_out(step), shape),
                                                     b.src(kskip), b.src(kbias)],
           [0.0, 0.0, float(attrs.get("epsilon", 1e-12))])


def _contrib_act(b, step, node, opdef, attrs):
    """com.microsoft Gelu / BiasGelu / FastGelu: the activation of x (+ a bias over its last axis)."""
    code = K.ACT.get(activations.CONTRIB[node.op_type].name)
    if code is None or attrs:
        raise Decline(node.op_type)
    kx = step.in_keys[0]
    kbias = step.in_keys[1] if len(step.in_keys) > 1 else None
    shape = b.shape(kx)
    if kbias is None:
        b.emit("act", [math.prod(shape)], [b.src(kx), b.dst(_out(step), shape), -1], [], code)
    elif shape and b.shape(kbias) == shape[-1:]:
        b.emit("bias_act", [math.prod(shape) // shape[-1], shape[-1]],
               [b.src(kx), b.dst(_out(step), shape), b.src(kbias)], [], code)
    else:
        raise Decline("bias shape")


def _attention(b, step, node, opdef, attrs):
    """com.microsoft MultiHeadAttention of 3-D q, k, v with an optional attention_bias (no packed bias, key padding
    mask or past), as the EP's claim takes it."""
    ins = list(step.in_keys) + [None] * (6 - len(step.in_keys))
    if set(attrs) - {"num_heads", "scale", "mask_filter_value"} or "num_heads" not in attrs or len(step.in_keys) > 6 \
            or None in ins[:3] or ins[3] is not None or ins[4] is not None:
        raise Decline("MultiHeadAttention form")
    sq, sk, sv = (b.shape(k) for k in ins[:3])
    n = int(attrs["num_heads"])
    if len(sq) != 3 or len(sk) != 3 or len(sv) != 3 or n <= 0 or sq[2] % n or sk[0] != sq[0] or sv[:2] != sk[:2] \
            or sk[2] != sq[2] or sv[2] % n:
        raise Decline("MultiHeadAttention shapes")
    bs, s, d = sq
    h, t, hv = d // n, sk[1], sv[2] // n
    bias_b = bias_h = 0
    if ins[5] is not None:
        sb = b.shape(ins[5])
        if len(sb) != 4 or sb[0] not in (1, bs) or sb[1] not in (1, n) or sb[2:] != (s, t):
            raise Decline("attention_bias shape")
        bias_b, bias_h = int(sb[0] > 1), int(sb[1] > 1)
    scale = float(attrs.get("scale", 0.0)) or 1.0 / math.sqrt(h)
    if not scale > 0 or not math.isfinite(scale):
        raise Decline("scale")
    b.emit("attention", [bs, s, t, n, h, hv, bias_b, bias_h],
           [b.src(ins[0]), b.src(ins[1]), b.src(ins[2]), b.src(ins[5]), b.dst(_out(step), (bs, s, n * hv))],
           [0.0, 0.0, scale])


def _strided(b, x, y, dims, xs, ys, x_off=0, y_off=0):
    if not 1 <= len(dims) <= 6:
        raise Decline("rank")
    pad = [0] * (6 - len(dims))
    b.emit("strided", [len(dims), x_off, y_off, *dims, *pad, *xs, *pad, *ys, *pad], [x, y])


def _contiguous(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


def _transpose(b, step, node, opdef, attrs):
    shape = b.shape(step.in_keys[0])
    perm = list(attrs.get("perm", range(len(shape) - 1, -1, -1)))
    if sorted(perm) != list(range(len(shape))):
        raise Decline("perm")
    out = tuple(shape[p] for p in perm)
    xs = _contiguous(shape)
    _strided(b, b.src(step.in_keys[0]), b.dst(_out(step), out), out, [xs[p] for p in perm], _contiguous(out))


def _slice(b, step, node, opdef, attrs):
    shape = b.shape(step.in_keys[0])
    if opdef.since < 10:
        starts, ends, axes, steps = attrs.get("starts"), attrs.get("ends"), attrs.get("axes"), None
    else:
        given = [b.const(k) for k in (list(step.in_keys[1:]) + [None] * 4)[:4]]
        if given[0] is None or given[1] is None or any(g is None and k is not None for g, k in zip(
                given[2:], (list(step.in_keys[3:]) + [None, None])[:2])):
            raise Decline("Slice bounds not constant")
        starts, ends, axes, steps = [None if g is None else [int(v) for v in np.ravel(g)] for g in given]
    if starts is None or ends is None:
        raise Decline("Slice bounds")
    axes = list(range(len(starts))) if axes is None else [a + len(shape) if a < 0 else a for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    if len(ends) != len(starts) or len(axes) != len(starts) or len(steps) != len(starts) or 0 in steps or \
            len(set(axes)) != len(axes) or any(not 0 <= a < len(shape) for a in axes):
        raise Decline("Slice arguments")
    xs, offset = _contiguous(shape), 0
    dims, strides = list(shape), list(xs)
    for a, st, en, sp in zip(axes, starts, ends, steps):
        r = range(*slice(st, en, sp).indices(shape[a]))
        dims[a], strides[a] = len(r), xs[a] * sp
        offset += (r.start if len(r) else 0) * xs[a]
    if 0 in dims:
        raise Decline("empty")
    _strided(b, b.src(step.in_keys[0]), b.dst(_out(step), tuple(dims)), dims, strides, _contiguous(dims), x_off=offset)


def _expand(b, step, node, opdef, attrs):
    """Expand to a constant shape: a strided copy reading broadcast dims with stride 0."""
    shape, target = b.shape(step.in_keys[0]), b.const(step.in_keys[1])
    if target is None:
        raise Decline("Expand shape not constant")
    try:
        out = np.broadcast_shapes(shape, tuple(int(d) for d in np.ravel(target)))
    except ValueError:
        raise Decline("Expand shape") from None
    padded = (1,) * (len(out) - len(shape)) + tuple(shape)
    xs = _contiguous(padded)
    _strided(b, b.src(step.in_keys[0]), b.dst(_out(step), out), out,
             [0 if d == 1 and o != 1 else s for d, o, s in zip(padded, out, xs)], _contiguous(out))


def _pad(b, step, node, opdef, attrs):
    """Constant-mode Pad with constant, non-negative pads (and value): fill, then the input copied inside."""
    shape = b.shape(step.in_keys[0])
    if opdef.since < 11 or attrs.get("mode", "constant") != "constant" or len(step.in_keys) > 3:
        raise Decline("Pad form")
    pads = b.const(step.in_keys[1])
    value = b.const(step.in_keys[2]) if len(step.in_keys) > 2 and step.in_keys[2] is not None else np.zeros(1)
    if pads is None or value is None or np.size(value) != 1 or np.size(pads) != 2 * len(shape) or np.min(pads) < 0:
        raise Decline("Pad arguments")
    begin, end = [int(v) for v in np.ravel(pads)[:len(shape)]], [int(v) for v in np.ravel(pads)[len(shape):]]
    out = tuple(d + p + q for d, p, q in zip(shape, begin, end))
    ys = _contiguous(out)
    y = b.dst(_out(step), out)
    b.emit("fill", [math.prod(out)], [y], [0.0, 0.0, float(np.ravel(value)[0])])
    _strided(b, b.src(step.in_keys[0]), y, shape, _contiguous(shape), ys, y_off=sum(p * s for p, s in zip(begin, ys)))
    life = b.life[b.tensors[y][1]]
    life[1] = max(life[1], len(b.code) - 1)


def _concat(b, step, node, opdef, attrs):
    keys = [k for k in step.in_keys if k is not None]
    shapes = [b.shape(k) for k in keys]
    rank = len(shapes[0])
    axis = attrs.get("axis", 0 if opdef.since < 4 else None)
    if axis is None or rank == 0 or not -rank <= axis < rank:
        raise Decline("Concat axis")
    axis %= rank
    if any(len(s) != rank or s[:axis] != shapes[0][:axis] or s[axis + 1:] != shapes[0][axis + 1:] for s in shapes):
        raise Decline("Concat shapes")
    total = sum(s[axis] for s in shapes)
    out = shapes[0][:axis] + (total,) + shapes[0][axis + 1:]
    outer, inner = math.prod(out[:axis]), math.prod(out[axis + 1:])
    y, at = b.dst(_out(step), out), 0
    for k, s in zip(keys, shapes):
        row = s[axis] * inner
        if row:
            _strided(b, b.src(k), y, [outer, row], [row, 1], [total * inner, 1], y_off=at * inner)
        at += s[axis]
    life = b.life[b.tensors[y][1]]
    life[1] = max(life[1], len(b.code) - 1)  # (written by each copy)


def _resize(b, step, node, opdef, attrs):
    """Nearest upsampling by whole factors (resize.integer_nearest_factors decides, as for the EP's claim)."""
    if opdef.since < 11:
        raise Decline("Resize opset")
    kx, *rest = list(step.in_keys) + [None] * 3
    shape = b.shape(kx)
    scales, sizes = b.const(rest[1]), b.const(rest[2])
    if (rest[1] is not None and scales is None) or (rest[2] is not None and sizes is None):
        raise Decline("Resize scales not constant")
    f = resize.integer_nearest_factors(shape, scales, sizes, **attrs)
    if f is None:
        raise Decline("Resize form")
    n, c, h, w = shape
    b.emit("upsample", [n * c, h, w, f[0], f[1]], [b.src(kx), b.dst(_out(step), (n, c, h * f[0], w * f[1]))])


def _batch_norm(b, step, node, opdef, attrs):
    """Inference form with constant parameters: y = x·a + (b − mean·a) per channel, a and the shift computed as the
    native kernel computes them."""
    if opdef.since < 9 or attrs.get("training_mode", 0) or set(attrs) - {"epsilon", "momentum", "training_mode"}:
        raise Decline("BatchNormalization attributes")
    kx, *params = step.in_keys
    shape = b.shape(kx)
    p = [b.const(k) for k in params]
    if len(shape) < 2 or len(p) != 4 or any(v is None or v.dtype != F32 or v.shape != (shape[1],) for v in p):
        raise Decline("BatchNormalization parameters")
    scale, bias, mean, var = p
    a = scale / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5)))
    b.emit("affine", [shape[0], shape[1], math.prod(shape[2:])],
           [b.src(kx), b.fixed(a), b.fixed(bias - mean * a), b.dst(_out(step), shape)])


def _global_average_pool(b, step, node, opdef, attrs):
    shape = b.shape(step.in_keys[0])
    if len(shape) < 3:
        raise Decline("rank")
    b.emit("gavg", [shape[0] * shape[1], math.prod(shape[2:])],
           [b.src(step.in_keys[0]), b.dst(_out(step), shape[:2] + (1,) * (len(shape) - 2))])


def _max_pool(b, step, node, opdef, attrs):
    shape = b.shape(step.in_keys[0])
    if len(shape) not in (3, 4) or not attrs.get("kernel_shape") or set(attrs) - {
            "auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}:
        raise Decline("MaxPool")
    x4 = shape if len(shape) == 4 else shape[:2] + (1, shape[2])
    try:
        g = ConvGeometry.pool(x4 if len(shape) == 4 else shape, "MaxPool", **{
            k: v for k, v in attrs.items() if k != "storage_order"}).as_2d()
    except InvalidArgument:
        raise Decline("MaxPool geometry") from None
    out = g.out
    b.emit("maxpool", [x4[0] * x4[1], x4[2], x4[3], *g.kernel, *g.strides, *g.dilations, *g.pads_begin, *out],
           [b.src(step.in_keys[0]), b.dst(_out(step), shape[:2] + (out[1:] if len(shape) == 3 else out))])


def _conv(b, step, node, opdef, attrs):
    act = K.fused_act(node, opdef, attrs)
    if act is None or set(attrs) - {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}:
        raise Decline("Conv attributes")
    keys = list(step.in_keys) + [None] * (4 - len(step.in_keys))
    kx, kw, kb, kz = keys[:4]
    w = b.const(kw)
    if w is None or w.dtype != F32:
        raise Decline("Conv weights")
    sx = b.shape(kx)
    cp = K.conv_plan(b.lib, sx, w, None if kb is None else b.shape(kb), None if kz is None else b.shape(kz), b.nt,
                     small=True, **attrs)
    if cp is None:
        raise Decline("Conv geometry")
    (kh, kw_), (sh, sw), (dh, dw), (pt, pl), (oh, ow) = cp.ks, cp.st, cp.dil, cp.pb, cp.out
    x, bias, z = b.src(kx), b.src(kb), b.src(kz)
    y = b.dst(_out(step), cp.y_shape)
    n, c, h, wd, m = cp.n, cp.c, cp.h, cp.w, cp.m
    code, fa, fb = act
    if cp.kind == "dw":
        b.emit("dwconv", [n, c, h, wd, kh, kw_, sh, sw, dh, dw, pt, pl, oh, ow], [x, b.fixed(cp.packed), bias, y],
               [fa, fb], 0 if z != -1 else code)
        if z != -1:
            b.emit("act", [n * m * oh * ow], [y, y, z], [fa, fb], code)
    elif cp.kind == "wino":
        b.emit("winograd", [n, c, h, wd, m, pt, pl, oh, ow], [x, b.fixed(cp.packed), bias, z, y, b.scratch(cp.scratch)],
               [fa, fb], code)
    elif cp.kind == "shifted":
        b.emit("conv_shifted", [c, h, wd, kh, kw_, sh, sw, dh, dw, pt, pl, oh, ow, m, n, c * h * wd, m * oh * ow],
               [x, b.fixed(cp.packed), y, bias, z, b.scratch(cp.scratch)], [fa, fb], code)
    else:  # 1×1: one GEMM per image, the image as a raw B
        p = oh * ow
        _gemm_instr(b, m, p, c, -1, c, y, raw_b=x, ldb=p, row_bias=bias, res=z, act=act, ap=b.fixed(cp.packed),
                    batch=n, steps=(0, c * p, m * p, m * p))


def _view(b, step, node, opdef, attrs):
    if node.op_type == "Dropout" and (len([k for k in step.in_keys if k is not None]) != 1 or len(step.out_keys) != 1):
        raise Decline("Dropout")
    out = _out(step)
    shape, out_shape = b.shape(step.in_keys[0]), b.shape(out)
    if math.prod(shape) != math.prod(out_shape):
        raise Decline("view size")
    b.alias(out, step.in_keys[0], out_shape)


LOWER = {"Conv": _conv, "MatMul": _matmul, "Gemm": _gemm, "Softmax": _softmax(False), "LogSoftmax": _softmax(True),
         "LayerNormalization": _layer_norm, "BatchNormalization": _batch_norm, "MaxPool": _max_pool,
         "GlobalAveragePool": _global_average_pool, "Transpose": _transpose, "Slice": _slice, "Concat": _concat,
         "Resize": _resize, "Expand": _expand, "Pad": _pad, **{op: _binary for op in K.BINARY}, **{op: _unary for op in activations.BY_OP},
         **{op: _view for op in VIEWS}}
MS_LOWER = {"FusedConv": _conv, "FusedGemm": _gemm, "SkipLayerNormalization": _skip_layer_norm,
            "MultiHeadAttention": _attention, **{op: _contrib_act for op in activations.CONTRIB}}


def _lower(b, step):
    """Appends `step`'s instructions to builder `b`, or raises Decline (b is then unusable)."""
    node = step.node
    if step.bodies is not None or step.ep is None or step.ep.name not in HOST_EPS or not step.device.is_host:
        raise Decline("step")
    domain = registry.normalize_domain(node.domain)
    lower = (LOWER if domain == "" else MS_LOWER if domain == registry.MS_DOMAIN else {}).get(node.op_type)
    if lower is None:
        raise Decline(node.op_type)
    try:
        opdef = registry.lookup(domain, node.op_type, step.opset)
    except Exception:  # noqa: BLE001 - (a custom op of that name: not ours)
        raise Decline(node.op_type) from None
    if opdef.custom is not None:
        raise Decline("custom op")
    for k in step.out_keys:  # (float32 outputs; their shapes are the lowering's: a graph output may declare a
        entry = b.types.get(k if isinstance(k, str) else k[0])  # symbolic dim the run has fixed)
        if k and (not entry or entry[0] != 1):
            raise Decline(k)
    lower(b, step, node, opdef, dict(node.attrs))


class Program:
    """Lowered steps ready to run: instructions, the tensor table, the external pointers, the arena size, where the
    chain's inputs go and its outputs are."""

    def __init__(self, lib, steps, types, consts, nt, outputs, known):
        b = _Builder(lib, types, consts, nt, known)
        self.owner = []  # the step each instruction comes from
        for i, s in enumerate(steps):
            _lower(b, s)
            self.owner += [i] * (len(b.code) - len(self.owner))
        end = len(b.code)
        for key in outputs:  # values read after the chain live to its end
            kind, ref, _ = b.where[key]
            if kind == "buf":
                b.life[ref][1] = end
        offsets, size = arena_offsets({i: tuple(v) for i, v in enumerate(b.life)},
                                      dict(enumerate(b.buffers)), alignment=64)
        self.arena_bytes = size + 64
        self.offsets = np.array([offsets[ref] if kind == "buf" else -ref - 1 for kind, ref in b.tensors] or [0],
                                np.int64)
        code = np.zeros((max(end, 1), RECORD), np.int64)
        for i, (op, p, t, f, act) in enumerate(b.code):
            code[i, 0] = op
            code[i, 1:1 + len(p)] = p
            code[i, 25:37] = -1
            code[i, 25:25 + len(t)] = t
            code[i, 37:39].view(np.float32)[:len(f)] = f
            code[i, 39] = act
        self.code, self.n = code, end
        self.addresses = (code.ctypes.data, self.offsets.ctypes.data)
        self.ext = np.array([0 if a is None else a for a in b.ext] or [0], np.int64)
        self.keep = b.keep
        self.inputs, self.in_shapes = b.inputs, b.in_shapes
        self.staged = [(i, offsets[ref], b.in_shapes[i]) for i, ref in b.staged]
        self.in_place = b.ext_of_input
        by_ext = {e: i for i, e in b.ext_of_input}
        self.outputs = [(offsets[ref], None, shape) if kind == "buf" else (None, by_ext[ref], shape)
                        for kind, ref, shape in (b.where[k] for k in outputs)]


class _Workspace:
    """One thread's arena for one program (kept between runs: its address and views are made once), and its copy
    of the external pointers."""

    def __init__(self, prog):
        self.arena = np.empty(prog.arena_bytes, np.uint8)
        base = -self.arena.ctypes.data % 64
        self.base = self.arena.ctypes.data + base
        self.ext = prog.ext.copy()
        self.ext_address = self.ext.ctypes.data
        view = lambda off, shape: np.ndarray(shape, F32, self.arena, base + off)  # noqa: E731
        self.staged = [(i, view(off, shape)) for i, off, shape in prog.staged]
        self.outputs = [view(off, shape) if off is not None else None for off, _, shape in prog.outputs]


class NativeChain:
    """The kernel of a chain step: runs the program for the session's thread count (built on first use) in this
    thread's workspace, or the original steps one by one when the inputs are not float32 arrays of the shapes it
    was lowered for. Outputs are fresh arrays (copied out of the arena), so the workspace is reused."""

    def __init__(self, lib, steps, types, consts, outputs, known):
        self.lib, self.steps, self.types, self.consts, self.outputs = lib, steps, types, consts, outputs
        self.known = known
        self.programs = {}
        self.local = threading.local()
        first = self.program(1)
        self.inputs, self.in_shapes = first.inputs, first.in_shapes

    def program(self, nt):
        p = self.programs.get(nt)
        if p is None:
            p = self.programs[nt] = Program(self.lib, self.steps, self.types, self.consts, nt, self.outputs,
                                            self.known)
        return p

    def __call__(self, *inputs):
        nt = K.threads()
        prog = self.programs.get(nt) or self.program(nt)
        for x, shape in zip(inputs, prog.in_shapes):
            if type(x) is not np.ndarray or x.dtype != F32 or x.shape != shape:
                return self.stepwise(inputs)
        spaces = getattr(self.local, "spaces", None)
        if spaces is None:
            spaces = self.local.spaces = {}
        ws = spaces.get(nt)
        if ws is None:
            ws = spaces[nt] = _Workspace(prog)
        for i, view in ws.staged:
            np.copyto(view, inputs[i])
        held = list(inputs)
        for i, slot in prog.in_place:
            x = inputs[i] if inputs[i].flags.c_contiguous else np.ascontiguousarray(inputs[i])
            held[i] = x
            ws.ext[slot] = x.ctypes.data
        rc = self.lib.nx_chain_run(prog.addresses[0], prog.n, prog.addresses[1], ws.base, ws.ext_address, nt)
        if rc:
            raise MemoryError(f"{_label(self.steps[prog.owner[-1 - rc]])}: no scratch memory")
        return tuple(view.copy() if view is not None else held[i].reshape(shape)
                     for view, (_, i, shape) in zip(ws.outputs, prog.outputs))

    def stepwise(self, inputs):
        """The original steps' kernels, one after the other (the chain's own check of what it was built for)."""
        env = dict(self.consts)
        env.update(zip(self.inputs, inputs))
        for s in self.steps:
            r = s.kernel(*[env[k] if k is not None else None for k in s.in_keys], **s.call_kwargs)
            env[s.out_keys[0]] = r[0] if isinstance(r, (tuple, list)) else r
        return tuple(env[k] for k in self.outputs)


def _label(step):
    return f"{step.node.op_type} node '{step.node.name}'"


class ChainNode:
    """The node a chain step reports as (profiling, errors)."""

    op_type, domain, attrs = "NativeChain", "", {}

    def __init__(self, steps, inputs, outputs):
        self.name = f"NativeChain[{steps[0].node.name}..{steps[-1].node.name}]({len(steps)} nodes)"
        self.inputs, self.outputs = list(inputs), list(outputs)


def lowers(lib, step, types, consts, known):
    """Whether `step` lowers on its own (the values it reads from other steps as chain inputs); the shapes it gives
    its outputs go into `known`."""
    b = _Builder(lib, types, consts, 1, known)
    try:
        _lower(b, step)
    except Decline:
        return False
    for k in step.out_keys:
        if k and k in b.where:
            known[k] = b.where[k][2]
    return True


def fuse(plan, lib, ep):
    """`plan.steps` with each run of at least MIN_KERNELS consecutive lowerable steps (views aside) made one chain
    step run by `ep`."""
    consts = {k: v for k, v in plan.const_env.items() if (k if isinstance(k, str) else k[0]) not in plan.input_names}
    known = {}
    ok = [lowers(lib, s, plan.types, consts, known) for s in plan.steps]
    steps, i = [], 0
    while i < len(plan.steps):
        j = i
        while j < len(plan.steps) and ok[j]:
            j += 1
        run = plan.steps[i:j]
        if sum(s.node.op_type not in VIEWS for s in run) >= MIN_KERNELS:
            chained = _chain_step(plan, run, lib, ep, consts, known)
            steps.extend([chained] if chained is not None else run)
        else:
            steps.extend(plan.steps[i:max(j, i + 1)])
        i = max(j, i + 1)
    return steps


def _chain_step(plan, run, lib, ep, consts, known):
    inside = set(id(s) for s in run)
    read_after = set(plan.output_keys)
    for s in plan.steps:
        if id(s) not in inside:
            read_after.update(k for k in list(s.in_keys) + list(s.body_keys) if k is not None)
    outputs = [k for s in run for k in s.out_keys if k and k in read_after]
    try:
        chain = NativeChain(lib, run, plan.types, consts, outputs, known)
    except Decline:  # (a run whose steps lower one by one but not together: as they were)
        return None
    return Step(ChainNode(run, [k if isinstance(k, str) else k[0] for k in chain.inputs], outputs), chain,
                chain.inputs, outputs, ep, run[0].device)
