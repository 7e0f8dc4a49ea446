"""CumSum, Pad, Resize / Upsample, ConstantOfShape, Trilu, com.microsoft's bias activations (Gelu, BiasGelu,
FastGelu, BiasAdd) and MultiHeadAttention on the WebGPU device. Per-element kernels are bodies in the element-wise
template."""
import re

import numpy as np

from ...errors import InvalidArgument
from ...ops import resize as R
from ...ops.contrib_attention import _causal
from ...ops.registry import MS_DOMAIN
from ...ops.util import ints, norm_axes, norm_axis
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


# --- CumSum ------------------------------------------------------------------------------------------------------

_CUMSUM = """let reverse = pu(0) != 0u;
  let exclusive = pu(1) != 0u;
  var carry = 0.0;
  for (var c = 0u; c < n; c += WG) {
    let j = c + lid;
    let jj = select(j, n - 1u - j, reverse);
    var v = 0.0;
    if (j < n) { v = f32(ld_x(at(base, jj))); }
    let inclusive = wg_scan(v, lid);
    let before = select(0.0, sh[max(lid, 1u) - 1u], lid > 0u);
    if (j < n) { STORE }
    let total = sh[WG - 1u];
    workgroupBarrier();
    carry += total;
  }"""


def cumsum(device, x, axis, exclusive, reverse):
    a = norm_axis(ints(axis)[0], x.ndim, "CumSum")
    y = device.alloc(x.shape, x.dtype)
    if y.size:
        body = _CUMSUM.replace("STORE", store("y", x.dtype, "at(base, jj)",
                                              "select(inclusive, before, exclusive) + carry"))
        rows(device, "CumSum", body, [("x", x)], [("y", y)], x.shape, [a], [int(bool(reverse)), int(bool(exclusive))])
    return y


# --- Pad ---------------------------------------------------------------------------------------------------------

_PAD_MODES = {  # t: the coordinate in the (cropped) input, outside [0, len)
    "constant": "inside = false; t = 0;",
    "edge": "t = clamp(t, 0, len - 1);",
    "wrap": "t = ((t % len) + len) % len;",
    "reflect": "if (len == 1) { t = 0; } else { let q = 2 * (len - 1); t = abs(t) % q; if (t >= len) { t = q - t; } }",
}
_PAD = """var rem = i;
  var src = 0u;
  var inside = true;
  for (var d = 0u; d < RANK; d++) {
    let e = RANK - 1u - d;
    let c = i32(rem % m(3u + e));
    rem = rem / m(3u + e);
    let len = mi(3u + RANK + e);
    var t = c - mi(3u + 2u * RANK + e);
    if (t < 0 || t >= len) { MODE }
    src += u32(t + mi(3u + 3u * RANK + e)) * m(3u + 4u * RANK + e);
  }
  if (inside) { COPY } else { FILL }"""


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
        body = _PAD.replace("MODE", _PAD_MODES[mode]).replace("COPY", copy).replace("FILL", fill)
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

_RESIZE = """let n_in = m(3u);
  let n_out = m(4u);
  let inner = m(5u);
  let k = m(6u);
  let o = (i / inner) % n_out;
  var acc = 0.0;
  if (ld_t(2u * n_out * k + o) != 0u) {
    acc = p0;
  } else {
    let base = (i / (inner * n_out)) * n_in * inner + i % inner;
    for (var q = 0u; q < k; q++) {
      acc += bitcast<f32>(ld_t(n_out * k + o * k + q)) * f32(ld_x(base + ld_t(o * k + q) * inner));
    }
  }
  STORE"""


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
            per_element(d, "Resize", _RESIZE.replace("STORE", store("y", y.dtype, "i", "acc")),
                        [("x", cur, cur.dtype), ("t", table, U32)], ("y", y, y.dtype), meta)
            d.release(cur)
            cur = y
        return cur


def _key(v):
    return None if v is None else (np.asarray(v).dtype.str, np.asarray(v).tobytes())


def _resize_claim(device, spec):
    a = spec.attrs
    if spec.op_type == "Upsample":
        def upsample(x, scales_in=None, *, scales=None, height_scale=None, width_scale=None, mode="nearest", **kw):
            s = scales_in if scales_in is not None else scales
            if s is None:
                s = [1.0] * (x.ndim - 2) + [height_scale, width_scale]
            s, p = R.upsample_params(x.ndim, s, mode)
            return _Resize(device, p)(x, None, s, None)  # (a fresh table per call: Upsample is rare)
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


def _merged(device, y4, dtype):
    """(B, N, S, H) -> (B, S, N*H) of `dtype`."""
    b, n, s, h = y4.shape
    y = device.alloc((b, s, n * h), F32 if dtype != y4.dtype else dtype)
    strided_copy_into(device, y4, y, [b, s, n, h], [n * s * h, h, s * h, 1])
    if y.dtype == dtype:
        return y
    out = E.cast(device, y, dtype)
    device.release(y)
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
    y = _merged(device, y4, query.dtype)
    device.release(y4)
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


claim(["CumSum"], FLOAT, lambda device, spec: lambda x, axis, *, exclusive=0, reverse=0, **kw:
      cumsum(device, x, axis, exclusive, reverse), since=11)
claim(["Pad"], MOVABLE, _pad_claim)
claim(["Resize", "Upsample"], FLOAT, _resize_claim)
claim(["ConstantOfShape"], MOVABLE, _constant_claim, since=9)
claim(["Trilu"], MOVABLE, lambda device, spec: lambda x, k=None, *, upper=1, **kw:
      trilu(device, x, 0 if k is None else ints(k)[0], upper), since=14)
claim(["Gelu", "BiasGelu", "FastGelu", "BiasAdd"], FLOAT, _bias_claim, domain=MS_DOMAIN)
claim(["MultiHeadAttention"], FLOAT, _mha_claim, domain=MS_DOMAIN)
