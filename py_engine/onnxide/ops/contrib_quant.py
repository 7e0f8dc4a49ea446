"""com.microsoft quantized ops (MatMulNBits, DynamicQuantizeMatMul, MatMulIntegerToFloat, QLinearAdd/Mul/Sigmoid/
LeakyRelu/GlobalAveragePool/Concat/Conv, QuantizeLinear/DequantizeLinear, DynamicQuantizeLSTM): built on the ai.onnx
QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear / MatMulInteger / QLinearConv / LSTM kernels."""
import numpy as np

from ..errors import InvalidArgument
from ..errors import NotImplemented as OrtNotImplemented
from .inference import broadcast, rule, same_as_input
from .linalg import matmul_dims
from .math import lift32
from .quant import dequantize_rule, qlinear_conv_rule, quantize_rule
from .registry import MS_DOMAIN, lookup, op
from .rnn import recurrent_outputs

_RANGES = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127), np.dtype(np.uint16): (0, 65535),
           np.dtype(np.int16): (-32768, 32767)}


def _name(kind, ctx):
    return f"{kind} node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) else kind


def _k(op_type, opset=21):
    return lookup("", op_type, opset).kernel


def _scalar(v, what, name, dtype=np.float32):
    a = np.asarray(v)
    if a.size != 1:
        raise InvalidArgument(f"{name}: {what} must be a scalar, got shape {a.shape}")
    return a.reshape(()).astype(dtype)


# ---------------------------------------------------------------------------------------------------------------------
# per-tensor 8-bit helpers (float32 math, round half to even, saturate: onnxruntime's MLAS quantize)
# ---------------------------------------------------------------------------------------------------------------------

def dequant(x, scale, zp):
    """(x - zp) * scale in float32 for per-tensor parameters."""
    z = np.float32(0) if zp is None else np.asarray(zp).reshape(()).astype(np.float32)
    return (x.astype(np.float32) - z) * np.asarray(scale, np.float32).reshape(())


def quant(y, scale, zp, dtype):
    """Quantize float32 `y` to integer `dtype` with a per-tensor scale / zero point (the ai.onnx kernel)."""
    z = np.zeros((), dtype) if zp is None else np.asarray(zp).reshape(()).astype(dtype)
    return _k("QuantizeLinear")(np.asarray(y, np.float32), np.asarray(scale, np.float32).reshape(()), z)


def _check_type(x, zp, name):
    if x.dtype not in _RANGES:
        raise InvalidArgument(f"{name}: unsupported quantized type {x.dtype}")
    if zp is not None and np.asarray(zp).dtype != x.dtype:
        raise InvalidArgument(f"{name}: zero point type {np.asarray(zp).dtype} differs from input type {x.dtype}")


def lookup_table(dtype, fn, x_scale, x_zp, y_scale, y_zp):
    """A 256-entry table quantize(fn(dequantize(v))) over every 8-bit value v (onnxruntime's LUT kernels)."""
    lo, hi = _RANGES[np.dtype(dtype)]
    values = np.arange(lo, hi + 1).astype(dtype)
    return quant(fn(dequant(values, x_scale, x_zp)), y_scale, y_zp, dtype), lo


def _apply_table(x, table, lo):
    return table[x.astype(np.int64) - lo]


# ---------------------------------------------------------------------------------------------------------------------
# elementwise QLinear ops
# ---------------------------------------------------------------------------------------------------------------------

def _fma32(x, y, z):
    """float32 fused multiply-add (one rounding), as onnxruntime's AVX2 kernels compute."""
    return (x.astype(np.float64) * np.float64(y) + np.asarray(z, np.float64)).astype(np.float32)


def _scalar_spans(x, out_shape):
    """True when `x` is constant along the innermost output axis (a per-span scalar in onnxruntime's broadcast)."""
    if x.size == 1:
        return True
    return len(out_shape) > 0 and out_shape[-1] > 1 and (x.ndim == 0 or x.shape[-1] == 1)


def _qlinear_add_values(a, za, ra, b, zb, rb, zc):
    """onnxruntime's float32 QLinearAdd: zc - (ra*za + rb*zb) + a*ra + b*rb with its FMA grouping; the operand that
    is a per-span scalar is folded into the fixed part first."""
    f32 = np.float32
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    af, bf = a.astype(f32), b.astype(f32)
    if _scalar_spans(b, out_shape) or not _scalar_spans(a, out_shape):
        fixed = f32(zc) - (ra * f32(za) + rb * f32(zb))
        if _scalar_spans(b, out_shape):
            return _fma32(af, ra, _fma32(bf, rb, fixed))
        return _fma32(af, ra, _fma32(bf, rb, fixed))
    fixed = f32(zc) - (ra * f32(za) + rb * f32(zb))  # A is the scalar: onnxruntime folds A first
    return _fma32(bf, rb, _fma32(af, ra, fixed))


def _qlinear_binary(kind, a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp, name):
    _check_type(a, a_zp, name)
    _check_type(b, b_zp, name)
    if a.dtype != b.dtype or (c_zp is not None and np.asarray(c_zp).dtype != a.dtype):
        raise InvalidArgument(f"{name}: A, B and C must share one type")
    sa, sb, sc = (_scalar(s, w, name) for s, w in ((a_scale, "A_scale"), (b_scale, "B_scale"), (c_scale, "C_scale")))

    def zp(z):
        return 0 if z is None else int(np.asarray(z).reshape(()))

    za, zb, zc = zp(a_zp), zp(b_zp), zp(c_zp)
    if kind == "add":
        v = _qlinear_add_values(a, za, sa / sc, b, zb, sb / sc, zc)
    else:  # (a - za) * (b - zb) as an exact integer, times sa*sb/sc, plus zc, all in float32
        prod = (a.astype(np.int32) - np.int32(za)) * (b.astype(np.int32) - np.int32(zb))
        v = prod.astype(np.float32) * np.float32(sa * sb / sc) + np.float32(zc)
    lo, hi = _RANGES[a.dtype]
    return np.clip(np.rint(v), lo, hi).astype(a.dtype)


@op("QLinearAdd", since=1, domain=MS_DOMAIN)
def qlinear_add(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point=None, *, ctx=None):
    return _qlinear_binary("add", a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point,
                           _name("QLinearAdd", ctx))


@op("QLinearMul", since=1, domain=MS_DOMAIN)
def qlinear_mul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point=None, *, ctx=None):
    return _qlinear_binary("mul", a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point,
                           _name("QLinearMul", ctx))


@rule("QLinearAdd", "QLinearMul", domain=MS_DOMAIN)
def _qlinear_binary_rule(f):
    """A's type; A and B broadcast."""
    return [(f.type(0), broadcast([f.dims(0), f.dims(3)]))]


def _qlinear_unary(fn, x, x_scale, x_zp, y_scale, y_zp, name):
    _check_type(x, x_zp, name)
    if x.dtype.itemsize != 1:
        raise InvalidArgument(f"{name}: input must be uint8 or int8, got {x.dtype}")
    table, lo = lookup_table(x.dtype, fn, _scalar(x_scale, "X_scale", name), x_zp, _scalar(y_scale, "Y_scale", name),
                             y_zp)
    return _apply_table(x, table, lo)


@op("QLinearSigmoid", since=1, domain=MS_DOMAIN)
def qlinear_sigmoid(x, x_scale, x_zero_point, y_scale, y_zero_point=None, *, ctx=None):
    return _qlinear_unary(_k("Sigmoid", 13), x, x_scale, x_zero_point, y_scale, y_zero_point,
                          _name("QLinearSigmoid", ctx))


@op("QLinearLeakyRelu", since=1, domain=MS_DOMAIN)
def qlinear_leaky_relu(x, x_scale, x_zero_point, y_scale, y_zero_point=None, *, alpha=0.009999999776482582,
                       ctx=None):
    def fn(v):
        return _k("LeakyRelu", 16)(v, alpha=alpha)

    return _qlinear_unary(fn, x, x_scale, x_zero_point, y_scale, y_zero_point, _name("QLinearLeakyRelu", ctx))


rule("QLinearSigmoid", "QLinearLeakyRelu", domain=MS_DOMAIN)(same_as_input)


@op("QLinearGlobalAveragePool", since=1, domain=MS_DOMAIN)
def qlinear_global_average_pool(x, x_scale, x_zero_point, y_scale, y_zero_point, *, channels_last=0, ctx=None):
    name = _name("QLinearGlobalAveragePool", ctx)
    _check_type(x, x_zero_point, name)
    if x.ndim < 3:
        raise InvalidArgument(f"{name}: input must have rank >= 3, got shape {x.shape}")
    axes = tuple(range(1, x.ndim - 1)) if channels_last else tuple(range(2, x.ndim))
    size = int(np.prod([x.shape[a] for a in axes]))
    zx = np.int64(0) if x_zero_point is None else np.asarray(x_zero_point).reshape(()).astype(np.int64)
    acc = np.sum(x.astype(np.int64), axis=axes, keepdims=True) - zx * size
    mult = np.float32(_scalar(x_scale, "x_scale", name) / (_scalar(y_scale, "y_scale", name) * np.float32(size)))
    return quant(acc.astype(np.float32) * mult, np.float32(1), y_zero_point, x.dtype)


@rule("QLinearGlobalAveragePool", domain=MS_DOMAIN)
def _qlinear_global_average_pool_rule(f):
    """x's type; the spatial dims pooled to 1 (channels first, or last with channels_last)."""
    d = f.dims(0)
    if d is None:
        return [(f.type(0), None)]
    if f.attr("channels_last", 0):
        return [(f.type(0), d[:1] + [1] * (len(d) - 2) + d[-1:])]
    return [(f.type(0), d[:2] + [1] * (len(d) - 2))]


@op("QLinearConcat", since=1, domain=MS_DOMAIN)
def qlinear_concat(y_scale, y_zero_point, *inputs, axis, ctx=None):
    name = _name("QLinearConcat", ctx)
    if not inputs or len(inputs) % 3:
        raise InvalidArgument(f"{name}: inputs must be (tensor, scale, zero_point) triples")
    ys = _scalar(y_scale, "Y_scale", name)
    yz = np.asarray(y_zero_point)
    parts = []
    for i in range(0, len(inputs), 3):
        x, xs, xz = inputs[i], _scalar(inputs[i + 1], "scale", name), inputs[i + 2]
        _check_type(x, xz, name)
        if x.dtype != yz.dtype:
            raise InvalidArgument(f"{name}: input {i // 3} type {x.dtype} differs from Y's {yz.dtype}")
        if xs == ys and np.array_equal(np.asarray(xz).reshape(()), yz.reshape(())):
            parts.append(x)
        else:
            table, lo = lookup_table(x.dtype, lambda v: v, xs, xz, ys, yz)
            parts.append(_apply_table(x, table, lo))
    rank = parts[0].ndim
    if not -rank <= axis < rank:
        raise InvalidArgument(f"{name}: axis {axis} is out of range for rank {rank}")
    return np.concatenate(parts, axis=axis)


@rule("QLinearConcat", domain=MS_DOMAIN)
def _qlinear_concat_rule(f):
    return [(f.type(1), None)]


@op("QLinearConv", since=1, domain=MS_DOMAIN)
def ms_qlinear_conv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, b=None, *,
                    auto_pad="NOTSET", channels_last=0, dilations=None, group=1, kernel_shape=None, pads=None,
                    strides=None, ctx=None):
    if channels_last:
        x = np.moveaxis(x, -1, 1)
    y = _k("QLinearConv", 10)(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, b,
                              auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape,
                              pads=pads, strides=strides, ctx=ctx)
    return np.ascontiguousarray(np.moveaxis(y, 1, -1)) if channels_last else y


@op("QuantizeLinear", since=1, domain=MS_DOMAIN)
def ms_quantize_linear(x, y_scale, y_zero_point=None, *, axis=1, ctx=None):
    return _k("QuantizeLinear")(x, y_scale, y_zero_point, axis=axis, ctx=ctx)


@op("DequantizeLinear", since=1, domain=MS_DOMAIN)
def ms_dequantize_linear(x, x_scale, x_zero_point=None, *, axis=1, ctx=None):
    return _k("DequantizeLinear")(x, x_scale, x_zero_point, axis=axis, ctx=ctx)


rule("QLinearConv", domain=MS_DOMAIN)(qlinear_conv_rule)
rule("QuantizeLinear", domain=MS_DOMAIN)(quantize_rule)
rule("DequantizeLinear", domain=MS_DOMAIN)(dequantize_rule)


# ---------------------------------------------------------------------------------------------------------------------
# quantized matmuls
# ---------------------------------------------------------------------------------------------------------------------

def _per_column(v, n, what, name):
    a = np.asarray(v)
    if a.size == 1:
        return a.reshape(())
    if a.ndim != 1 or a.shape[0] != n:
        raise InvalidArgument(f"{name}: {what} must be a scalar or have {n} values (one per column of B)")
    return a


def _finish(acc, multiplier, bias, out_dtype):
    y = acc.astype(np.float32) * multiplier.astype(np.float32)
    if bias is not None:
        y = y + lift32(bias)[0].astype(np.float32)
    return y.astype(out_dtype)


@op("MatMulIntegerToFloat", since=1, domain=MS_DOMAIN)
def matmul_integer_to_float(a, b, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None, *, ctx=None):
    name = _name("MatMulIntegerToFloat", ctx)
    n = b.shape[-1]
    acc = _k("MatMulInteger", 10)(a, b, a_zero_point, None if b_zero_point is None else
                                  _per_column(b_zero_point, n, "b_zero_point", name), ctx=ctx)
    sa = lift32(np.asarray(a_scale))[0].astype(np.float32)
    if sa.size != 1:
        raise OrtNotImplemented(f"{name}: a_scale must be a scalar")
    mult = sa.reshape(()) * lift32(_per_column(b_scale, n, "b_scale", name))[0].astype(np.float32)
    return _finish(acc, mult, bias, np.asarray(a_scale).dtype)


@op("DynamicQuantizeMatMul", since=1, domain=MS_DOMAIN)
def dynamic_quantize_matmul(a, b, b_scale, b_zero_point=None, bias=None, *, ctx=None):
    name = _name("DynamicQuantizeMatMul", ctx)
    n = b.shape[-1]
    aq, a_scale, a_zp = _k("DynamicQuantizeLinear", 11)(a)
    acc = _k("MatMulInteger", 10)(aq, b, a_zp, None if b_zero_point is None else
                                  _per_column(b_zero_point, n, "b_zero_point", name), ctx=ctx)
    mult = np.asarray(a_scale, np.float32) * _per_column(b_scale, n, "b_scale", name).astype(np.float32)
    return _finish(acc, mult, bias, a.dtype)


@rule("MatMulIntegerToFloat", domain=MS_DOMAIN)
def _matmul_integer_to_float_rule(f):
    """a_scale's type; matmul dims."""
    return [(f.type(2), matmul_dims(f.dims(0), f.dims(1)))]


@rule("DynamicQuantizeMatMul", domain=MS_DOMAIN)
def _dynamic_quantize_matmul_rule(f):
    return [(f.type(0), matmul_dims(f.dims(0), f.dims(1)))]


def unpack_bits(packed, bits, count):
    """Little-endian bit-packed unsigned codes along the last axis: (..., nbytes) uint8 -> (..., count) uint8."""
    packed = np.ascontiguousarray(packed, dtype=np.uint8)
    flat = np.unpackbits(packed[..., None], axis=-1, bitorder="little").reshape(packed.shape[:-1] + (-1,))
    n = flat.shape[-1] // bits
    if n < count:
        raise InvalidArgument(f"MatMulNBits: {packed.shape[-1]} bytes hold {n} {bits}-bit values, need {count}")
    codes = flat[..., :n * bits].reshape(flat.shape[:-1] + (n, bits))
    weights = (1 << np.arange(bits)).astype(np.uint16)
    return (codes.astype(np.uint16) @ weights)[..., :count].astype(np.uint8)


def dequantize_nbits(b, scales, zero_points, g_idx, k, n, bits, block_size, name):
    """The (N, K) float32 weight of MatMulNBits: (code - zero_point) * scale per block of K."""
    k_blocks = -(-k // block_size)
    blob = block_size * bits // 8
    if b.shape != (n, k_blocks, blob):
        raise InvalidArgument(f"{name}: B shape {b.shape} must be ({n}, {k_blocks}, {blob})")
    codes = unpack_bits(b, bits, block_size).reshape(n, k_blocks * block_size)[:, :k]
    sc = lift32(np.asarray(scales))[0].astype(np.float32)
    if sc.size != n * k_blocks:
        raise InvalidArgument(f"{name}: scales must have {n} x {k_blocks} values, got shape {sc.shape}")
    sc = sc.reshape(n, k_blocks)
    if g_idx is not None:
        blk = np.asarray(g_idx).astype(np.int64).reshape(-1)
        if blk.shape != (k,) or blk.min(initial=0) < 0 or blk.max(initial=0) >= k_blocks:
            raise InvalidArgument(f"{name}: g_idx must hold {k} block indices in [0, {k_blocks})")
    else:
        blk = np.arange(k) // block_size
    if zero_points is None:
        zp = np.full((n, k_blocks), 2 ** (bits - 1), np.float32)
    elif np.asarray(zero_points).dtype == np.uint8:
        zbytes = -(-k_blocks * bits // 8)
        zp = unpack_bits(np.asarray(zero_points).reshape(n, zbytes), bits, k_blocks).astype(np.float32)
    else:
        zp = lift32(np.asarray(zero_points))[0].astype(np.float32).reshape(n, k_blocks)
    if g_idx is None and (zero_points is None or np.asarray(zero_points).dtype == np.uint8):
        # the common case is blocked DequantizeLinear with uint8 codes and zero points
        return _k("DequantizeLinear")(codes, sc, zp.astype(np.uint8), axis=1, block_size=block_size)
    return (codes.astype(np.float32) - zp[:, blk]) * sc[:, blk]


@op("MatMulNBits", since=1, domain=MS_DOMAIN)
def matmul_nbits(a, b, scales, zero_points=None, g_idx=None, bias=None, *, K, N, accuracy_level=0, bits=4,
                 block_size, weight_prepacked=0, ctx=None):
    name = _name("MatMulNBits", ctx)
    if weight_prepacked:
        raise OrtNotImplemented(f"{name}: prepacked (CUDA layout) weights are not supported on the CPU EP")
    if not 2 <= bits <= 8 or block_size < 16 or block_size & (block_size - 1):
        raise InvalidArgument(f"{name}: unsupported bits={bits} / block_size={block_size}")
    if a.shape[-1] != K:
        raise InvalidArgument(f"{name}: A's last dimension {a.shape[-1]} differs from K={K}")
    af, dt = lift32(a)
    af = af.astype(np.float32, copy=False)
    out_shape = a.shape[:-1] + (N,)
    if 0 in b.shape:  # an omitted projection: zeros (plus bias)
        y = np.zeros(out_shape, np.float32)
    else:
        w = dequantize_nbits(b, scales, zero_points, g_idx, K, N, bits, block_size, name)
        y = _k("MatMul", 13)(af, np.ascontiguousarray(w.T))
    if bias is not None:
        y = y + lift32(bias)[0].astype(np.float32)
    return y.astype(a.dtype)


@rule("MatMulNBits", domain=MS_DOMAIN)
def _matmul_nbits_rule(f):
    """A's type; A's dims with the last one N."""
    d = f.dims(0)
    return [(f.type(0), None if d is None else d[:-1] + [f.attr("N")])]


# ---------------------------------------------------------------------------------------------------------------------
# DynamicQuantizeLSTM
# ---------------------------------------------------------------------------------------------------------------------

def _fake_quant(x):
    """x through onnxruntime's dynamic uint8 quantization and back (what its quantized GEMMs see)."""
    q, s, z = _k("DynamicQuantizeLinear", 11)(x.astype(np.float32))
    return ((q.astype(np.float32) - np.float32(z)) * np.float32(s)).astype(x.dtype)


def _dequant_weight(w, scale, zp, num_dirs, what, name):
    """[D, in, 4H] quantized weight with per-direction or per-channel parameters -> float32 [D, 4H, in]."""
    w = np.asarray(w)
    s = np.asarray(scale, np.float32)
    z = np.asarray(zp)
    if s.shape == (num_dirs,):
        s, z = s.reshape(num_dirs, 1, 1), z.reshape(num_dirs, 1, 1)
    elif s.shape == (num_dirs, w.shape[2]):
        s, z = s.reshape(num_dirs, 1, -1), z.reshape(num_dirs, 1, -1)
    else:
        raise InvalidArgument(f"{name}: {what}_scale shape {s.shape} must be ({num_dirs},) or "
                              f"({num_dirs}, {w.shape[2]})")
    if z.shape != s.shape or z.dtype != w.dtype:
        raise InvalidArgument(f"{name}: {what}_zero_point must match {what}_scale's shape and {what}'s type")
    return ((w.astype(np.float32) - z.astype(np.float32)) * s).transpose(0, 2, 1)


@op("DynamicQuantizeLSTM", since=1, domain=MS_DOMAIN, host_inputs=(4,))
def dynamic_quantize_lstm(x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None, p=None,
                          w_scale=None, w_zero_point=None, r_scale=None, r_zero_point=None, *, activation_alpha=None,
                          activation_beta=None, activations=None, clip=None, direction="forward", hidden_size=None,
                          input_forget=0, ctx=None):
    from . import rnn

    name = _name("DynamicQuantizeLSTM", ctx)
    if w_scale is None or w_zero_point is None or r_scale is None or r_zero_point is None:
        raise InvalidArgument(f"{name}: W_scale, W_zero_point, R_scale and R_zero_point are required")
    num_dirs = 2 if direction == "bidirectional" else 1
    wf = _dequant_weight(w, w_scale, w_zero_point, num_dirs, "W", name)
    rf = _dequant_weight(r, r_scale, r_zero_point, num_dirs, "R", name)
    xq = _fake_quant(np.asarray(x))
    lstm_step = rnn._lstm_step(clip, input_forget)

    def step_factory(R, Rb, P, acts, H):
        inner = lstm_step(R, Rb, P, acts, H)
        return lambda xw, h, c: inner(xw, _fake_quant(h), c)

    dt = rnn._check_float(name, x)
    pp = None if p is None else np.asarray(p).astype(np.float32)
    return rnn._run(name, xq, wf, rf, b, sequence_lens, [initial_h, initial_c], pp, 0, hidden_size, direction, 4,
                    ["Sigmoid", "Tanh", "Tanh"], activations, activation_alpha, activation_beta, step_factory,
                    ctx.num_outputs if ctx is not None else 3, dt)


@rule("DynamicQuantizeLSTM", domain=MS_DOMAIN)
def _dynamic_quantize_lstm_rule(f):
    return recurrent_outputs(f, f.attr("hidden_size"))
