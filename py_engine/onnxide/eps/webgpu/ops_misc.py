"""WebGPU CumSum, Pad, Resize, ConstantOfShape, Trilu, bias activations, MultiHeadAttention, RNN / LSTM / GRU."""
import re

import numpy as np

from ...errors import InvalidArgument
from ...ops import resize as R
from ...ops import rnn as RNN
from ...ops.contrib_attention import _causal
from ...ops.registry import MS_DOMAIN
from ...ops.util import ints, norm_axes, norm_axis
from . import ops_data as D
from . import ops_elementwise as E
from . import ops_linalg as L
from . import programs as P
from .claims import DEVICE_TYPES, F16, F32, FLOAT, MOVABLE, U32
from .device import STORAGE
from .ops_data import strided_copy_into
from .ops_norm import softmax
from .ops_reduce import claim, contiguous_strides, rows, store


def per_element(device, name, body, inputs, out, meta, rank=0):
    """Run `body` (WGSL: i is the output element; p0, p1 and m(k) read `meta`, whose word 0 is the count) over
    `out`; `inputs` / out: (WGSL name, GpuTensor, interface dtype)."""
    decls = [(k, d) for k, _, d in inputs]

    def wgsl():
        return P.render("elementwise", INTERFACE=P.interface(decls, [(out[0], out[2])]), COMMON=P.template("common"),
                        RANK=rank, WORKGROUP=P.WORKGROUP, LINEAR=P.LINEAR, OFFSETS="", BODY=body)

    key = ("per_element", name, body, rank, tuple(np.dtype(d).str for _, d in decls), np.dtype(out[2]).str)
    device.dispatch(key, wgsl, [t for _, t, _ in inputs], [out[1]], meta, out[1].size)


def raw(dtype):
    """(interface dtype, words per element) moving elements of `dtype` bit for bit (f16 as f16, else u32 words)."""
    size = STORAGE[np.dtype(dtype)][1]
    return (F16, 1) if size == 2 else (U32, size // 4)


def value_words(value, dtype):
    """Meta words holding `value` as one element of `dtype` (f16: an f32 word, converted in the kernel)."""
    dtype = np.dtype(dtype)
    if dtype == F16:
        return [P.f32_word(float(value))]
    if dtype == np.bool_:
        return [int(bool(value))]
    return [int(w) for w in np.asarray(value).astype(dtype).reshape(1).view(np.uint32)]


def value_expr(dtype, at, w):
    """WGSL of word w of the constant whose words start at meta word `at` (see value_words)."""
    return f"f16(mf({at}u))" if np.dtype(dtype) == F16 else f"m({at + w}u)"


def _permuted(device, t, perm):
    """`t` transposed by `perm` (a strided copy)."""
    shape, strides = [t.shape[p] for p in perm], contiguous_strides(t.shape)
    out = device.alloc(shape, t.dtype)
    strided_copy_into(device, t, out, shape, [strides[p] for p in perm])
    return out


def _converted(device, t, dtype, perm=None):
    """`t` as `dtype`, transposed by `perm` when given (t is released)."""
    u = t if t.dtype == dtype else E.cast(device, t, dtype)
    v = u if perm is None else _permuted(device, u, perm)
    for w in {id(t): t, id(u): u}.values():
        if w is not v:
            device.release(w)
    return v


# --- CumSum ------------------------------------------------------------------------------------------------------

def cumsum(device, x, axis, exclusive, reverse):
    a = norm_axis(ints(axis)[0], x.ndim, "CumSum")
    y = device.alloc(x.shape, x.dtype)
    if y.size:
        body = P.render("cumsum_row", STORE=store("y", x.dtype, "at(base, jj)",
                                                  "select(inclusive, before, exclusive) + carry"))
        rows(device, "CumSum", body, [("x", x)], [("y", y)], x.shape, [a], [int(bool(reverse)), int(bool(exclusive))])
    return y


# --- Pad ---------------------------------------------------------------------------------------------------------

_PAD_MODES = {  # (webgpu_shaders/pad_element.wgsl's t: the coordinate in the cropped input, outside [0, len))
    "constant": "inside = false; t = 0;",
    "edge": "t = clamp(t, 0, len - 1);",
    "wrap": "t = ((t % len) + len) % len;",
    "reflect": "if (len == 1) { t = 0; } else { let q = 2 * (len - 1); t = abs(t) % q; if (t >= len) { t = q - t; } }",
}
def pad(device, x, pads, mode, value, axes=None):
    """Pad (negative pads crop first, as the CPU EP's): one kernel mapping each output element to its source."""
    r = x.ndim
    axes = list(range(r)) if axes is None else norm_axes(axes, r, "Pad")
    if len(pads) != 2 * len(axes):
        raise InvalidArgument(f"Pad: {len(pads)} pads given for {len(axes)} axes")
    if mode not in _PAD_MODES:
        raise InvalidArgument(f"Pad: unsupported mode '{mode}'")
    before, after = [0] * r, [0] * r
    for i, a in enumerate(axes):
        before[a], after[a] = int(pads[i]), int(pads[i + len(axes)])
    crop = [max(-b, 0) for b in before]
    lens = [d - c - max(-e, 0) for d, c, e in zip(x.shape, crop, after)]
    if any(n < 0 for n in lens):
        raise InvalidArgument("Pad: negative pads remove more than the whole dimension")
    out_shape = [n + max(b, 0) + max(e, 0) for n, b, e in zip(lens, before, after)]
    for a in range(r):
        if mode != "constant" and lens[a] == 0 and out_shape[a]:
            raise InvalidArgument(f"Pad: cannot {mode}-pad the empty axis {a}")
    y = device.alloc(out_shape, x.dtype)
    if y.size:
        decl, words = raw(x.dtype)
        const_at = 3 + 5 * r
        copy = " ".join(f"st_y(i * {words}u + {w}u, ld_x(src * {words}u + {w}u));" for w in range(words))
        fill = " ".join(f"st_y(i * {words}u + {w}u, {value_expr(x.dtype, const_at, w)});" for w in range(words))
        body = P.render("pad_element", MODE=_PAD_MODES[mode], COPY=copy, FILL=fill)
        meta = [y.size, 0, 0] + out_shape + lens + [max(b, 0) for b in before] + crop + \
            contiguous_strides(x.shape) + value_words(0 if value is None else value, x.dtype)
        per_element(device, "Pad", body, [("x", x, decl)], ("y", y, decl), meta, r)
    return y


def _scalar(v):
    """A host input's one value (None when absent or empty)."""
    a = None if v is None else np.asarray(v).reshape(-1)
    return None if a is None or not a.size else a[0]


def _pad_claim(device, spec):
    if spec.opdef.since >= 11:  # pads, constant_value and axes as host inputs
        return lambda x, pads, value=None, axes=None, *, mode="constant", **kw: pad(
            device, x, ints(pads), mode, _scalar(value), ints(axes))
    return lambda x, *, mode="constant", pads=None, paddings=None, value=0.0, **kw: pad(
        device, x, ints(pads if pads is not None else paddings), mode, value)


# --- Resize / Upsample --------------------------------------------------------------------------------------------

def _tables(device, shape, passes, p):
    """Per pass: (axis, n_out, taps, a u32 table on the device: source indices, f32 weights, extrapolation flags)."""
    out = []
    for a, n_out, scale, roi in passes:
        if n_out and not shape[a]:
            raise InvalidArgument(f"Resize: cannot interpolate the empty axis {a}")
        idx, w, extrap = R.axis_taps(shape[a], n_out, scale, roi, p) if n_out else (np.zeros((0, 1)), None, None)
        w = np.ones(idx.shape, np.float32) if w is None else np.asarray(w, np.float32)
        flags = np.zeros(n_out, np.uint32) if extrap is None else extrap.astype(np.uint32)
        table = np.concatenate([idx.astype(np.uint32).ravel(), w.ravel().view(np.uint32), flags])
        out.append((a, n_out, idx.shape[1], device.upload(table)))
    return out


class _Resize:
    """A Resize / Upsample node's kernel: tap tables made on the host from ops/resize.py (kept for the last few
    input shapes and parameters), then one interpolation pass per resized axis."""

    def __init__(self, device, params):
        self.device, self.params, self.cache = device, params, {}

    def __call__(self, x, roi, scales, sizes, axes=None, policy="stretch"):
        d = self.device
        key = (x.shape, _key(roi), _key(scales), _key(sizes), axes, policy)
        hit = self.cache.get(key)
        if hit is None:
            out_shape, passes = R.resize_plan(x.shape, roi, scales, sizes, self.params, axes, policy)
            if len(self.cache) >= 8:
                for *_, table in self.cache.pop(next(iter(self.cache)))[1]:
                    d.release(table)
            hit = self.cache[key] = (out_shape, _tables(d, x.shape, passes, self.params))
        out_shape, tables = hit
        if not tables or not all(out_shape):
            return d.view(x, x.shape) if not tables else d.alloc(out_shape, x.dtype)
        cur, shape = d.share(x), list(x.shape)
        for n, (a, n_out, k, table) in enumerate(tables):
            n_in, shape[a] = shape[a], n_out
            y = d.alloc(shape, x.dtype if n == len(tables) - 1 else F32)
            inner = int(np.prod(shape[a + 1:], dtype=np.int64))
            meta = [y.size, P.f32_word(self.params["extrapolation_value"]), 0, n_in, n_out, inner, k]
            per_element(d, "Resize", P.render("resize_axis", STORE=store("y", y.dtype, "i", "acc")),
                        [("x", cur, cur.dtype), ("t", table, U32)], ("y", y, y.dtype), meta)
            d.release(cur)
            cur = y
        return cur


def _key(v):
    return None if v is None else (np.asarray(v).dtype.str, np.asarray(v).tobytes())


def _resize_claim(device, spec):
    a = spec.attrs
    if spec.op_type == "Upsample":
        runs = {}  # (one entry: the node's mode fixes the parameters)

        def upsample(x, scales_in=None, *, scales=None, height_scale=None, width_scale=None, mode="nearest", **kw):
            s = scales_in if scales_in is not None else scales
            if s is None:
                s = [1.0] * (x.ndim - 2) + [height_scale, width_scale]
            s, p = R.upsample_params(x.ndim, s, mode)
            run = runs.get(p["mode"]) or runs.setdefault(p["mode"], _Resize(device, p))
            return run(x, None, s, None)
        return upsample
    if spec.opdef.since < 11:
        run10 = _Resize(device, R._params(a.get("mode", "nearest"), "asymmetric", "simple", -0.75, 0, 0.0))
        return lambda x, scales, **kw: run10(x, None, scales, None)
    p = R._params(a.get("mode", "nearest"), a.get("coordinate_transformation_mode", "half_pixel"),
                  a.get("nearest_mode", "round_prefer_floor"), a.get("cubic_coeff_a", -0.75),
                  a.get("exclude_outside", 0), a.get("extrapolation_value", 0.0), a.get("antialias", 0))
    run = _Resize(device, p)
    axes = a.get("axes")
    axes = None if axes is None else tuple(int(v) for v in axes)
    policy = a.get("keep_aspect_ratio_policy", "stretch")
    return lambda x, roi=None, scales=None, sizes=None, **kw: run(x, roi, scales, sizes, axes, policy)


# --- ConstantOfShape, Trilu ----------------------------------------------------------------------------------------

def fill(device, shape, value, dtype):
    """A new tensor of `shape` holding `value` everywhere (zeros by clearing the buffer)."""
    shape = [int(d) for d in shape]
    if any(d < 0 for d in shape):
        raise InvalidArgument(f"ConstantOfShape: negative dimension in {shape}")
    if not np.asarray(value).astype(dtype).tobytes().strip(b"\0"):  # (all bits zero: -0.0 is not)
        return device.zeros(shape, dtype)
    y = device.alloc(shape, dtype)
    if y.size:
        decl, words = raw(dtype)
        body = " ".join(f"st_y(i * {words}u + {w}u, {value_expr(dtype, 3, w)});" for w in range(words))
        per_element(device, "Fill", body, [], ("y", y, decl), [y.size, 0, 0] + value_words(value, dtype))
    return y


def _constant_claim(device, spec):
    dims = spec.output_shapes[0]
    if dims is None or any(d is None for d in dims):
        return None  # (a size nothing bounds: the light model zoo builds its weights so, past the binding size)
    v = spec.attrs.get("value")
    v = np.zeros(1, np.float32) if v is None else np.asarray(v)
    if v.size != 1 or v.dtype not in DEVICE_TYPES.values():
        return None
    return lambda shape, **kw: fill(device, ints(shape), v.reshape(-1)[0], v.dtype)


def trilu(device, x, k, upper):
    if x.ndim < 2:
        raise InvalidArgument(f"Trilu: input must have rank >= 2, got shape {x.shape}")
    y = device.alloc(x.shape, x.dtype)
    if y.size:
        decl, words = raw(x.dtype)
        zero = f"{P.TYPES[np.dtype(decl)][1]}(0)"
        cmp = ">=" if upper else "<="
        body = f"let cols = m(3u); let diff = i32(i % cols) - i32((i / cols) % m(4u));\n  let keep = diff {cmp} mi(5u);"
        body += "".join(f"\n  st_y(i * {words}u + {w}u, select({zero}, ld_x(i * {words}u + {w}u), keep));"
                        for w in range(words))
        per_element(device, "Trilu", body, [("x", x, decl)], ("y", y, decl),
                    [y.size, 0, 0, x.shape[-1], x.shape[-2], k])
    return y


# --- com.microsoft bias activations ------------------------------------------------------------------------------

def _with_bias(expr):
    """An activation formula of a (ops_elementwise's tables) applied to a + b."""
    return re.sub(r"\ba\b", "(a + b)", expr)


def _check_bias(op, x, bias):
    if bias.ndim != 1 or (x.ndim and bias.shape[0] != x.shape[-1]):
        raise InvalidArgument(f"{op}: bias of shape {bias.shape} does not match the last dimension of input {x.shape}")


def bias_activation(device, op, x, bias=None, skip=None):
    if op == "BiasAdd":
        if x.ndim != 3 or skip.shape != x.shape:
            raise InvalidArgument(f"BiasAdd: X {x.shape} and skip {skip.shape} must be the same 3D shape (N, S, C)")
        _check_bias(op, x, bias)
        return E.run(device, op, "a + b + c", [x, bias, skip], x.dtype, out_shape=x.shape, float_math=True)
    expr = E.GELU["tanh" if op == "FastGelu" else "none"]
    if bias is None:
        return E.run(device, op, expr, [x], x.dtype, float_math=True)
    _check_bias(op, x, bias)
    return E.run(device, op, _with_bias(expr), [x, bias], x.dtype, out_shape=x.shape, float_math=True)


def _bias_claim(device, spec):
    op = spec.op_type
    return lambda *xs, **kw: bias_activation(device, op, *xs)


# --- com.microsoft MultiHeadAttention ------------------------------------------------------------------------------

def _split(x, n, what, parts=1, part=0):
    """(dims (B, N, S, H), element strides, first element) of x's heads: (B, S, N*H), or packed (B, S, N, parts, H)
    taking `part`, or already (B, N, S, H)."""
    name = "MultiHeadAttention"
    if x.ndim == 4:
        return list(x.shape), contiguous_strides(x.shape), 0
    if x.ndim == 5:
        b, s, heads, k, h = x.shape
        if heads != n or k != parts:
            raise InvalidArgument(f"{name}: packed {what} must be (batch, seq, num_heads, {parts}, head_size), got "
                                  f"{x.shape}")
        return [b, n, s, h], [s * n * k * h, k * h, n * k * h, 1], part * h
    if x.ndim != 3:
        raise InvalidArgument(f"{name}: {what} must be 3D, 4D or 5D, got shape {x.shape}")
    b, s, hidden = x.shape
    if n <= 0 or hidden % n:
        raise InvalidArgument(f"{name}: {what} hidden size {hidden} is not divisible by num_heads={n}")
    h = hidden // n
    return [b, n, s, h], [s * hidden, h, hidden, 1], 0


def _heads(device, x, layout, bias=None, boff=0):
    """A (B, N, S, H) f32 tensor of x's heads (`layout` from _split), plus bias[boff:boff + N*H] by head."""
    dims, strides, base = layout
    t = device.alloc(dims, x.dtype)
    strided_copy_into(device, x, t, dims, strides, ibase=base)
    if bias is None and x.dtype == F32:
        return t
    ins = [t]
    if bias is not None:
        n, h = dims[1], dims[3]
        ins.append(device.alloc((n, 1, h), bias.dtype))
        strided_copy_into(device, bias, ins[1], [n, 1, h], [h, 0, 1], ibase=boff)
    out = E.run(device, "MultiHeadAttention", "a + b" if bias is not None else "a", ins, F32, out_shape=tuple(dims),
                float_math=True)
    for u in ins:
        device.release(u)
    return out


def _add(device, scores, mask):
    out = E.run(device, "MultiHeadAttention", "a + b", [scores, mask], F32, out_shape=scores.shape, float_math=True)
    device.release(scores)
    return out


def multi_head_attention(device, query, key, value, bias, attention_bias, n, scale, unidirectional, n_out):
    """softmax(scale · Q·Kᵀ + attention_bias (+ causal mask)) · V per head: head splits as strided copies, the two
    products through ops_linalg's matmul, the softmax row kernel (rows summing to 0 give zeros, as the CPU EP's)."""
    name = "MultiHeadAttention"
    if query.ndim == 5:
        if key is not None or value is not None:
            raise InvalidArgument(f"{name}: packed QKV must be (batch, seq, num_heads, 3, head_size) without key/value")
        q_at, k_at, v_at = (_split(query, n, "QKV", 3, i) for i in range(3))
        key = value = query
    elif query.ndim == 3:
        if key is None:
            raise InvalidArgument(f"{name}: key is required unless query is packed QKV")
        q_at = _split(query, n, "query")
        if key.ndim == 5:
            if value is not None:
                raise InvalidArgument(f"{name}: packed KV must be (batch, kv_seq, num_heads, 2, head_size)")
            k_at, v_at = (_split(key, n, "KV", 2, i) for i in range(2))
            value = key
        elif key.ndim in (3, 4) and value is not None and value.ndim == key.ndim:
            k_at, v_at = _split(key, n, "key"), _split(value, n, "value")
        else:
            raise InvalidArgument(f"{name}: key {key.shape} and value {None if value is None else value.shape} must "
                                  "both be 3D or 4D")
    else:
        raise InvalidArgument(f"{name}: query must be 3D or packed 5D, got shape {query.shape}")
    d = q_at[0][1] * q_at[0][3]
    kv_bias = bias if key.ndim != 4 else None
    if bias is not None and (bias.ndim != 1 or bias.shape[0] - 2 * d <= 0):
        raise InvalidArgument(f"{name}: bias shape {bias.shape} does not match hidden size {d}")
    q4 = _heads(device, query, q_at, bias, 0)
    k4 = _heads(device, key, k_at, kv_bias, d)
    v4 = _heads(device, value, v_at, kv_bias, 2 * d)
    b, _, s, h = q4.shape
    t = k4.shape[2]
    if attention_bias is not None and (attention_bias.ndim != 4 or attention_bias.shape[0] not in (1, b) or
                                       attention_bias.shape[1] not in (1, n) or attention_bias.shape[2:] != (s, t)):
        raise InvalidArgument(f"{name}: attention_bias shape {attention_bias.shape} must be (batch_size or 1, "
                              f"num_heads or 1, {s}, {t})")
    scores = L.matmul(device, q4, k4, float(scale) if scale else 1.0 / np.sqrt(h), False, True, name)
    device.release(q4)
    if attention_bias is not None:
        scores = _add(device, scores, attention_bias)
    if unidirectional:
        causal = device.upload(_causal(s, t, 0))
        scores = _add(device, scores, causal)
        device.release(causal)
    probs = softmax(device, "Softmax", scores, -1, False, zero_sum=True)
    device.release(scores)
    y4 = L.matmul(device, probs, v4, name=name)
    device.release(probs)
    y_bsnh = _converted(device, y4, query.dtype, (0, 2, 1, 3))
    y = device.view(y_bsnh, (b, s, y_bsnh.shape[2] * y_bsnh.shape[3]))
    device.release(y_bsnh)
    outs = [y]
    for kv in (k4, v4):  # present_key / present_value when asked for: the (B, N, L, H) heads after the bias
        if len(outs) < n_out and kv.dtype == query.dtype:
            outs.append(kv)
            continue
        if len(outs) < n_out:
            outs.append(E.cast(device, kv, query.dtype))
        device.release(kv)
    return tuple(outs) if n_out > 1 else y


def _mha_claim(device, spec):
    present = [i for i, x in enumerate(spec.node.inputs) if x]
    if any(i in present for i in (4, 6, 7, 8, 9)) or len(spec.node.outputs) > 3 or not L.gemm_fits(device):
        return None  # (key padding masks, past key / value and the beam-search inputs stay with the CPU EP)
    n_out = len(spec.node.outputs)

    def kernel(query, key=None, value=None, bias=None, _mask=None, attention_bias=None, *, num_heads, scale=0.0,
               unidirectional=0, **kw):
        return multi_head_attention(device, query, key, value, bias, attention_bias, int(num_heads), scale,
                                    unidirectional, n_out)
    return kernel


# --- RNN / LSTM / GRU ---------------------------------------------------------------------------------------------

# rnn.py's activations whose formula ops_elementwise.UNARY_FLOAT has with the same parameters (affine, scaledtanh and
# thresholdedrelu, which keeps x == alpha where ThresholdedRelu does not, stay with the CPU EP)
_RNN_ACTS = {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid", "leakyrelu": "LeakyRelu",
             "hardsigmoid": "HardSigmoid", "elu": "Elu", "softsign": "Softsign", "softplus": "Softplus"}


def _pre(g, part="xr"):
    """WGSL of gate g's pre-activation for unit j: its input projection (x) and / or recurrent product (r), each
    with its bias."""
    x = f"in_dot(d, b, src, {g}u * hidden + j) + f32(ld_bias(bias + {g}u * hidden + j))"
    r = f"rec_dot(d, b, {g}u * hidden + j) + f32(ld_bias(bias + (G + {g}u) * hidden + j))"
    return "(" + " + ".join(e for k, e in (("x", x), ("r", r)) if k in part) + ")"


def _step_body(op, linear_before_reset, phase, y_dtype):
    """WGSL of one step for a thread: the next state(s) and its Y element (GRU without linear_before_reset: phase 0
    the z gate and r * h, phase 1 the rest)."""
    keep = "st_hn(at, select(hp, 0.0, last_of_empty));"
    if op == "GRU" and not linear_before_reset and phase == 0:
        return f"""let hp = ld_h(at);
  st_zs(at, act(d, 0u, clipped({_pre(0)})));
  st_rh(at, act(d, 0u, clipped({_pre(1)})) * hp);"""
    if op == "RNN":
        new = f"let hn = act(d, 0u, clipped({_pre(0)}));"
    elif op == "GRU":
        z, hh = ("ld_zs(at)", f"{_pre(2, 'x')} + {_pre(2, 'r')}") if not linear_before_reset else \
            (f"act(d, 0u, clipped({_pre(0)}))", f"{_pre(2, 'x')} + act(d, 0u, clipped({_pre(1)})) * {_pre(2, 'r')}")
        new = f"let z = {z};\n    let hn = (1.0 - z) * act(d, 1u, clipped({hh})) + z * hp;"
    else:  # (the peepholes follow the biases in the same buffer: one binding fewer)
        keep += " st_cn(at, select(cp, 0.0, last_of_empty));"
        new = f"""let pb = bias + 2u * G * hidden + j;
    let ig = act(d, 0u, clipped({_pre(0)} + f32(ld_bias(pb)) * cp));
    let fg = select(act(d, 0u, clipped({_pre(2)} + f32(ld_bias(pb + 2u * hidden)) * cp)), 1.0 - ig, m(11u) != 0u);
    let cn = fg * cp + ig * act(d, 1u, clipped({_pre(3)}));
    let hn = act(d, 0u, clipped({_pre(1)} + f32(ld_bias(pb + hidden)) * cn)) * act(d, 2u, cn);
    st_cn(at, cn);"""
    return f"""let hp = ld_h(at);
  {"let cp = ld_c(at);" if op == "LSTM" else ""}
  if (valid) {{
    {new}
    st_hn(at, hn);
    {store("y", y_dtype, "y_at", "hn")}
  }} else {{ {keep} }}"""


def _step(device, op, acts, phase, inputs, outputs, meta, linear_before_reset=0):
    """Dispatch one time step (see recurrent.wgsl); inputs / outputs: [(WGSL name, GpuTensor)]."""
    ins, outs = [(k, t.dtype) for k, t in inputs], [(k, t.dtype) for k, t in outputs]
    y_dtype = dict(outs).get("y", F32)
    state = "ld_rh" if "rh" in dict(ins) else "ld_h"
    cases = "\n    ".join(f"case {i}u: {{ return {E.UNARY_FLOAT[name][0]}; }}" for i, name in enumerate(acts[0]))

    def wgsl():
        return P.render("recurrent", INTERFACE=P.interface(ins, outs), COMMON=P.template("common"),
                        GATES=RNN.GATES[op], FUNCTIONS=len(RNN.DEFAULT_ACTIVATIONS[op]), STATE=state,
                        BIAS_WIDTH="2u * G + 3u" if op == "LSTM" else "2u * G",
                        ACTIVATIONS=cases, WORKGROUP=P.WORKGROUP, LINEAR=P.LINEAR,
                        BODY=_step_body(op, linear_before_reset, phase, y_dtype))

    key = ("recurrent", op, phase, bool(linear_before_reset), tuple(acts[0]), tuple(d.str for _, d in ins + outs))
    device.dispatch(key, wgsl, [t for _, t in inputs], [t for _, t in outputs], meta + list(acts[1]), meta[0])


def recurrence(device, op, attrs, acts, n_out, x, w, r, bias=None, lens=None, h0=None, c0=None, p=None):
    """RNN / LSTM / GRU: checked by rnn.py on data-less stand-ins, then one dispatch per time step (two for GRU
    without linear_before_reset) over every direction, batch row and hidden unit; `acts`: (per direction and
    position the activation's UNARY_FLOAT name, their (alpha, beta) meta words)."""
    gates, layout, direction = RNN.GATES[op], attrs.get("layout", 0), attrs.get("direction", "forward")
    lstm = op == "LSTM"
    stand = [None if t is None else np.broadcast_to(np.zeros((), t.dtype), t.shape) for t in (x, w, r, bias, h0, c0)]
    _, xs, lens, _, dirs, hidden = RNN._prepare(op, *stand[:4], lens, stand[4:6 if lstm else 5], layout,
                                                attrs.get("hidden_size"), direction, gates)
    if p is not None and p.shape != (dirs, 3 * hidden):
        raise InvalidArgument(f"LSTM: P has invalid shape {p.shape}")
    steps, batch, width = xs.shape
    shape = (dirs, batch, hidden)
    biases = device.zeros((dirs, 2 * gates * hidden), w.dtype) if bias is None else device.share(bias)
    if lstm:  # the peepholes after the biases, one buffer: the step stays within 10 storage bindings (Chromium's)
        peep = device.zeros((dirs, 3 * hidden), biases.dtype) if p is None else device.share(p)
        joined = D.concat(device, [biases, peep], 1)
        device.release(biases)
        device.release(peep)
        biases = joined
    temps = [_permuted(device, x, (1, 0, 2)) if layout else device.share(x), device.share(w), device.share(r),
             biases, device.upload(lens.astype(np.int32))]
    base = list(zip(["x", "w", "r", "bias", "lens"], temps))
    states = [_state(device, h0, layout, shape)] + ([_state(device, c0, layout, shape)] if lstm else [])
    y = device.zeros((steps, dirs, batch, hidden), x.dtype)
    clip, lbr = attrs.get("clip"), attrs.get("linear_before_reset", 0)
    meta = [dirs * batch * hidden, 0, steps, batch, hidden, width, int(direction == "reverse"), 1,
            P.f32_word(clip or 0.0), int(clip is not None), dirs, attrs.get("input_forget", 0)]
    gru = [device.alloc(shape, F32), device.alloc(shape, F32)] if op == "GRU" and not lbr else []
    try:
        for t in range(steps):
            meta[1] = t
            if gru:
                _step(device, op, acts, 0, base + [("h", states[0])], list(zip(["zs", "rh"], gru)), meta)
            new = [device.alloc(shape, F32) for _ in states]
            _step(device, op, acts, 1, base + list(zip(["h", "c"], states)) + list(zip(["zs", "rh"], gru)),
                  list(zip(["hn", "cn"], new)) + [("y", y)], meta, lbr)
            for old in states:
                device.release(old)
            states = new
    finally:
        for t_ in temps + gru:
            device.release(t_)
    outs = [_converted(device, y, y.dtype, (2, 0, 1, 3) if layout else None)]
    for i, s_ in enumerate(states):
        outs.append(_converted(device, s_, x.dtype, (1, 0, 2) if layout else None) if i + 1 < n_out else s_)
    for extra in outs[max(n_out, 1):]:
        device.release(extra)
    return tuple(outs[:n_out]) if n_out > 1 else outs[0]


def _state(device, t, layout, shape):
    """An f32 (directions, B, H) copy of initial state `t` (zeros without one)."""
    if t is None:
        return device.zeros(shape, F32)
    return _converted(device, device.share(t), F32, (1, 0, 2) if layout else None)


def _recurrence_claim(device, spec):
    op, a = spec.op_type, spec.attrs
    dirs = 2 if a.get("direction") == "bidirectional" else 1
    try:
        specs = RNN.activation_specs(op, a.get("activations"), a.get("activation_alpha"), a.get("activation_beta"),
                                     RNN.DEFAULT_ACTIVATIONS[op], dirs)
    except InvalidArgument:
        return None  # (the CPU EP reports it)
    flat = [f for per_dir in specs for f in per_dir]
    if any(k not in _RNN_ACTS for k, _, _ in flat):
        return None
    acts = ([_RNN_ACTS[k] for k, _, _ in flat], [P.f32_word(v or 0.0) for _, al, be in flat for v in (al, be)])
    n_out = len(spec.node.outputs)
    return lambda *xs, **kw: recurrence(device, op, a, acts, n_out, *xs)


claim(["CumSum"], FLOAT, lambda device, spec: lambda x, axis, *, exclusive=0, reverse=0, **kw:
      cumsum(device, x, axis, exclusive, reverse), since=11)
claim(["Pad"], MOVABLE, _pad_claim)
claim(["Resize", "Upsample"], FLOAT, _resize_claim)
claim(["ConstantOfShape"], MOVABLE, _constant_claim, since=9)
claim(["Trilu"], MOVABLE, lambda device, spec: lambda x, k=None, *, upper=1, **kw:
      trilu(device, x, 0 if k is None else ints(k)[0], upper), since=14)
claim(["Gelu", "BiasGelu", "FastGelu", "BiasAdd"], FLOAT, _bias_claim, domain=MS_DOMAIN)
claim(["MultiHeadAttention"], FLOAT, _mha_claim, domain=MS_DOMAIN)
claim(["RNN", "LSTM", "GRU"], FLOAT, _recurrence_claim)
