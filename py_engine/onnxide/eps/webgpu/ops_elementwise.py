"""Element-wise kernels on the WebGPU device: unary ops (the activation table's and the rest of ai.onnx's), binary
ops with broadcasting, Where, Clip, the variadic Sum / Mean / Max / Min, and Cast. One WGSL template
(webgpu_shaders/elementwise.wgsl); each op is an expression over its operands a, b, c and parameters p0, p1."""
import numpy as np

from ...errors import InvalidArgument
from . import programs as P

F32, F16, I32, U32, BOOL, I64 = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.uint32, np.bool_,
                                                        np.int64))
FLOATS = (F32, F16)
INTS = (I32, U32)

# op -> (WGSL expression of a (as f32 for floats), attribute -> parameter slot with its default)
UNARY_FLOAT = {
    "Relu": ("select(a, 0.0, a < 0.0)", ()), "Sigmoid": ("sigmoid_f32(a)", ()), "Tanh": ("tanh_f32(a)", ()),
    "Exp": ("exp(a)", ()), "Log": ("log_f32(a)", ()), "Sqrt": ("sqrt_f32(a)", ()), "Abs": ("abs(a)", ()),
    "Neg": ("-a", ()), "Ceil": ("ceil(a)", ()), "Floor": ("floor(a)", ()), "Round": ("round(a)", ()),
    "Sin": ("sin(a)", ()), "Cos": ("cos(a)", ()), "Tan": ("tan(a)", ()), "Asin": ("asin(a)", ()),
    "Acos": ("acos(a)", ()), "Atan": ("atan(a)", ()), "Sinh": ("sinh(a)", ()), "Cosh": ("cosh(a)", ()),
    "Asinh": ("asinh(a)", ()), "Acosh": ("acosh(a)", ()), "Atanh": ("atanh(a)", ()),
    "Reciprocal": ("1.0 / a", ()), "Softplus": ("softplus_f32(a)", ()), "Softsign": ("a / (1.0 + abs(a))", ()),
    "Sign": ("sign(a)", ()), "Erf": ("erf_f32(a)", ()),
    "LeakyRelu": ("select(a, a * p0, a < 0.0)", (("alpha", 0.01),)),
    "HardSigmoid": ("clamp(p0 * a + p1, 0.0, 1.0)", (("alpha", 0.2), ("beta", 0.5))),
    "HardSwish": ("a * clamp(a / 6.0 + 0.5, 0.0, 1.0)", ()),
    "Elu": ("select(a, p0 * (exp(a) - 1.0), a < 0.0)", (("alpha", 1.0),)),
    "Selu": ("p1 * select(a, p0 * (exp(a) - 1.0), a <= 0.0)", (("alpha", 1.6732632423543772),
                                                              ("gamma", 1.0507009873554805))),
    "Celu": ("max(a, 0.0) + min(0.0, p0 * (exp(a / p0) - 1.0))", (("alpha", 1.0),)),
    "Mish": ("a * tanh_f32(softplus_f32(a))", ()),
    "ThresholdedRelu": ("select(0.0, a, a > p0)", (("alpha", 1.0),)),
    "Shrink": ("select(select(0.0, a + p1, a < -p0), a - p1, a > p0)", (("lambd", 0.5), ("bias", 0.0))),
    "Swish": ("a * sigmoid_f32(p0 * a)", (("alpha", 1.0),)),
    "Gelu": (None, ()),  # per `approximate`, below
    "QuickGelu": ("a * sigmoid_f32(p0 * a)", (("alpha", 1.702),)),
}
GELU = {"none": "0.5 * a * (1.0 + erf_f32(a * 0.7071067811865476))",
        "tanh": "0.5 * a * (1.0 + tanh_f32(0.7978845608028654 * (a + 0.044715 * a * a * a)))"}
CLIP_FLOAT = "min_nan(max_nan(a, p0), p1)"  # Clip between p0 and p1 (NaN stays NaN)
UNARY_INT = {"Abs": "abs(a)", "Neg": "-a", "Sign": "sign(a)", "Relu": "max(a, 0)"}

BINARY_FLOAT = {"Add": "a + b", "Sub": "a - b", "Mul": "a * b", "Div": "a / b", "Pow": "pow_signed(a, b)",
                "Max": "max_nan(a, b)", "Min": "min_nan(a, b)", "PRelu": "select(a, a * b, a < 0.0)",
                "Mod": "a % b"}  # (WGSL's float % truncates: onnxruntime's fmod=1)
BINARY_INT = {"Add": "a + b", "Sub": "a - b", "Mul": "a * b", "Div": "a / b", "Max": "max(a, b)",
              "Min": "min(a, b)", "BitwiseAnd": "a & b", "BitwiseOr": "a | b", "BitwiseXor": "a ^ b"}
COMPARE = {"Equal": "a == b", "Less": "a < b", "Greater": "a > b", "LessOrEqual": "a <= b",
           "GreaterOrEqual": "a >= b"}
LOGIC = {"And": "a && b", "Or": "a || b", "Xor": "a != b"}
DIV_BY_ZERO = 2  # device.ERRORS' code


def broadcast_shape(shapes, name):
    """numpy's broadcast of `shapes`, or InvalidArgument naming the op."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise InvalidArgument(f"{name}: shapes {[tuple(s) for s in shapes]} cannot be broadcast") from None


def _strides(shape, out):
    """Element strides of a (C-contiguous) input of `shape` read at each dim of `out` (0 where broadcast)."""
    shape = (1,) * (len(out) - len(shape)) + tuple(shape)
    strides, acc = [0] * len(out), 1
    for d in range(len(out) - 1, -1, -1):
        strides[d] = acc if shape[d] != 1 else 0
        acc *= shape[d]
    return strides


def run(device, name, expr, inputs, out_dtype, params=(0.0, 0.0), out_shape=None, float_math=False, check=None):
    """Dispatch `expr` (over a, b, c: the inputs, as f32 with `float_math`, else as their compute types; p0, p1:
    `params`) into a new tensor of `out_dtype` and the inputs' broadcast shape. `check`: (a WGSL condition over the
    same operands, a device.ERRORS code) raising the device's error flag where the condition holds."""
    out_shape = broadcast_shape([t.shape for t in inputs], name) if out_shape is None else out_shape
    out_dtype = np.dtype(out_dtype)
    out = device.alloc(out_shape, out_dtype)
    n = out.size
    flat = all(t.shape == out_shape for t in inputs)
    rank = 0 if flat else len(out_shape)
    dtypes = tuple(t.dtype for t in inputs)

    def wgsl():
        offsets = "\n  ".join(f"let o{k} = i;" for k in range(len(inputs))) if flat else _offset_code(len(inputs))
        load = "f32(ld_x{k}(o{k}))" if float_math else "ld_x{k}(o{k})"
        loads = " ".join(f"let {v} = {load.format(k=k)};" for k, v in enumerate("abc"[:len(inputs)]))
        value = f"f16({expr})" if float_math and out_dtype == F16 else expr
        flag = f"if ({check[0]}) {{ atomicMax(&err[0], {check[1]}u); }}\n  " if check else ""
        return P.render("elementwise", INTERFACE=P.interface([(f"x{k}", d) for k, d in enumerate(dtypes)],
                                                             [("y", out_dtype)], error_flag=bool(check)),
                        COMMON=P.template("common"), RANK=rank, WORKGROUP=P.WORKGROUP, LINEAR=P.LINEAR,
                        OFFSETS=offsets, BODY=f"{loads}\n  {flag}st_y(i, {value});")

    meta = [n, P.f32_word(params[0]), P.f32_word(params[1])]
    if not flat:
        meta += list(out_shape)
        for t in inputs:
            meta += _strides(t.shape, out_shape)
    key = ("elementwise", expr, float_math, tuple(d.str for d in dtypes), out_dtype.str, rank, check)
    device.dispatch(key, wgsl, inputs, [out], meta, n, checked=bool(check))
    return out


def _offset_code(k):
    lines = ["var rem = i;"] + [f"var o{j} = 0u;" for j in range(k)]
    lines += ["for (var d = 0u; d < RANK; d++) {", "    let e = RANK - 1u - d;", "    let dim = m(3u + e);",
              "    let c = rem % dim;", "    rem = rem / dim;"]
    lines += [f"    o{j} += c * m(3u + RANK * {j + 1}u + e);" for j in range(k)]
    lines.append("  }")
    return "\n  ".join(lines)


# --- the kernels the provider claims -----------------------------------------------------------------------------

def unary(device, op, x, attrs):
    if x.dtype in FLOATS:
        expr, params = UNARY_FLOAT[op]
        if op == "Gelu":
            expr = GELU[attrs.get("approximate", "none")]
        p = [float(attrs.get(k, d)) for k, d in params] + [0.0, 0.0]
        return run(device, op, expr, [x], x.dtype, p[:2], float_math=True)
    return run(device, op, UNARY_INT[op], [x], x.dtype)


def binary(device, op, a, b):
    if a.dtype in FLOATS:
        return run(device, op, BINARY_FLOAT[op], [a, b], a.dtype, float_math=True)
    # (WGSL's integer division by zero gives a value; onnxruntime fails: the device's error flag reports it)
    return run(device, op, BINARY_INT[op], [a, b], a.dtype, check=("b == 0", DIV_BY_ZERO) if op == "Div" else None)


def compare(device, op, a, b):
    return run(device, op, COMPARE[op], [a, b], BOOL, float_math=a.dtype in FLOATS)


def logic(device, op, a, b):
    return run(device, op, LOGIC[op], [a, b], BOOL)


def where(device, cond, x, y):
    return run(device, "Where", "select(c, b, a)", [cond, x, y], x.dtype)


def variadic(device, op, xs):
    """Sum / Mean / Max / Min of any number of inputs, broadcast: a chain of binary kernels."""
    expr = {"Sum": "a + b", "Mean": "a + b", "Max": "max_nan(a, b)", "Min": "min_nan(a, b)"}[op] \
        if xs[0].dtype in FLOATS else {"Sum": "a + b", "Max": "max(a, b)", "Min": "min(a, b)"}[op]
    floats = xs[0].dtype in FLOATS
    acc = device.share(xs[0])
    for x in xs[1:]:
        nxt = run(device, op, expr, [acc, x], x.dtype, float_math=floats)
        device.release(acc)
        acc = nxt
    if op == "Mean":
        nxt = run(device, op, "a * p0", [acc], acc.dtype, (1.0 / len(xs), 0.0), float_math=True)
        device.release(acc)
        acc = nxt
    return acc


def clip(device, x, lo, hi):
    if x.dtype in FLOATS:
        return run(device, "Clip", CLIP_FLOAT, [x], x.dtype, (lo, hi), float_math=True)
    return run(device, "Clip", f"clamp(a, {int(lo)}, {int(hi)})", [x], x.dtype)


def cast(device, x, to):
    """x converted to numpy dtype `to` (floats to ints truncate toward zero, as onnxruntime's cast)."""
    ct = P.ctype(to)
    if to == BOOL:
        expr = "a != 0.0" if x.dtype in FLOATS else ("a" if x.dtype == BOOL else f"a != {P.ctype(x.dtype)}(0)")
    elif x.dtype == BOOL:
        expr = f"select({ct}(0), {ct}(1), a)"
    else:
        expr = f"{ct}(a)"
    return run(device, "Cast", expr, [x], to)
