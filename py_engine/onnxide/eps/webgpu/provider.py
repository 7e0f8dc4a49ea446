"""WebGpuExecutionProvider: claims, at plan time, the nodes whose op, element types and attributes its WGSL kernels
run exactly (ops_*.py), and hands everything else to the next provider. Kernels take device tensors for data
inputs and host values for the op's host inputs (ops/registry.py), and return device tensors."""
import numpy as np

from ... import dtypes as dt
from ...ops import registry
from ...partition.spec import type_entry
from ...runtime.devices import get_device
from ...runtime.providers import ExecutionProvider
from . import ops_data as D
from . import ops_elementwise as E
from . import ops_norm, ops_reduce, ops_misc  # noqa: F401 (registers claims)
from . import ops_linalg, ops_conv, ops_pool  # noqa: F401 (registers claims)
from .claims import ARITH_INT, BOOL, CLAIMS, DEVICE_TYPES, F16, F32, FLOAT, I32, I64, MOVABLE, U32


def _unary(device, spec):
    op, attrs = spec.op_type, spec.attrs
    if spec.input_types[0] not in (dt.FLOAT, dt.FLOAT16) and op not in E.UNARY_INT:
        return None
    if op == "Gelu" and attrs.get("approximate", "none") not in E.GELU:
        return None
    return lambda x, **kw: E.unary(device, op, x, kw)


def _binary(device, spec):
    op = spec.op_type
    t = DEVICE_TYPES[spec.input_types[0]]
    if spec.input_types[0] != spec.input_types[1] or (t in ARITH_INT and op not in E.BINARY_INT) or \
            (t not in ARITH_INT and op not in E.BINARY_FLOAT):
        return None
    if op == "Mod" and (t in ARITH_INT or not spec.attrs.get("fmod", 0)):
        return None  # (Python-style remainders and their inf / nan cases stay with the CPU EP)
    return lambda a, b, **kw: E.binary(device, op, a, b)


def _variadic(device, spec):
    op, n = spec.op_type, len([x for x in spec.node.inputs if x])
    if len(set(spec.input_types)) != 1 or (op == "Mean" and spec.input_types[0] not in (dt.FLOAT, dt.FLOAT16)):
        return None
    if n == 2 and op in ("Max", "Min"):
        return _binary(device, spec)
    return lambda *xs, **kw: E.variadic(device, op, list(xs))


def _compare(device, spec):
    if spec.input_types[0] != spec.input_types[1] or spec.input_types[0] == dt.INT64:
        return None
    if spec.input_types[0] == dt.BOOL and spec.op_type != "Equal":
        return None
    op = spec.op_type
    return lambda a, b, **kw: E.compare(device, op, a, b)


def _logic(device, spec):
    op = spec.op_type
    if op == "Not":
        return lambda x, **kw: E.run(device, "Not", "!a", [x], BOOL)
    return lambda a, b, **kw: E.logic(device, op, a, b)


def _where(device, spec):
    if spec.input_types[1] != spec.input_types[2] or spec.input_types[1] == dt.INT64:
        return None
    return lambda c, x, y, **kw: E.where(device, c, x, y)


def _clip(device, spec):
    if spec.input_types[0] not in (dt.FLOAT, dt.FLOAT16):
        return None
    if spec.opdef.since < 11:
        return lambda x, *, min=-3.4028234663852886e38, max=3.4028234663852886e38, **kw: E.clip(device, x, min, max)

    def clip11(x, lo=None, hi=None, **kw):
        lo = -np.inf if lo is None else float(np.asarray(lo).reshape(-1)[0])
        hi = np.inf if hi is None else float(np.asarray(hi).reshape(-1)[0])
        return E.clip(device, x, lo, hi)
    return clip11


def _is_nan_inf(device, spec):
    if spec.op_type == "IsNaN":
        return lambda x, **kw: E.run(device, "IsNaN", "is_nan(a)", [x], BOOL, float_math=True)

    def is_inf(x, *, detect_negative=1, detect_positive=1, **kw):
        expr = {(1, 1): "is_inf(a)", (1, 0): "is_inf(a) && a < 0.0", (0, 1): "is_inf(a) && a > 0.0"}.get(
            (int(detect_negative), int(detect_positive)), "false")
        return E.run(device, "IsInf", expr, [x], BOOL, float_math=True)
    return is_inf


def _cast(device, spec):
    to = DEVICE_TYPES.get(spec.attrs.get("to"))
    src = DEVICE_TYPES.get(spec.input_types[0])
    if to is None or to == I64 or src == I64 or (to == F16 and not device.f16):
        return None
    return lambda x, **kw: E.cast(device, x, to)


def _movement(device, spec):
    """View ops: the numpy kernel decides shapes and which elements (ops_data.movement)."""
    kernel = spec.opdef.kernel
    return lambda x, *args, **kw: D.movement(device, x, kernel, args, kw)


def _dropout(device, spec):
    """Dropout at inference (no mask output, no ratio / training_mode inputs): the input itself."""
    if len([o for o in spec.node.outputs if o]) > 1 or len([x for x in spec.node.inputs if x]) > 1:
        return None
    return lambda x, **kw: device.view(x, x.shape)


def _concat(device, spec):
    return lambda *xs, axis, **kw: D.concat(device, list(xs), axis)


def _tile(device, spec):
    return lambda x, repeats, **kw: D.tile(device, x, repeats)


def _control(device, spec):
    """If / Loop / Scan 9+: the generic kernels (ops/control.py), which reach carried values only through the
    device's array_ops — when every value a body hands back is a device tensor type."""
    for body in (g for v in spec.attrs.values() for g in (v if isinstance(v, list) else [v]) if hasattr(g, "nodes")):
        for o in body.outputs:
            entry = type_entry(o.type)
            if entry is not None and entry[0] not in DEVICE_TYPES:
                return None
    return spec.opdef.kernel


def _gather(device, spec):
    if spec.input_types[1] not in (dt.INT32, dt.INT64):
        return None
    elements = spec.op_type == "GatherElements"
    return lambda data, idx, *, axis=0, **kw: D.gather(device, data, idx, axis, elements)


CLAIMS.add([op for op in E.UNARY_FLOAT if op != "QuickGelu"], FLOAT + ARITH_INT, _unary)
CLAIMS.add(["QuickGelu"], FLOAT, _unary, domain=registry.MS_DOMAIN)
CLAIMS.add(["Not"], (BOOL,), _logic)
CLAIMS.add(["And", "Or", "Xor"], (BOOL,), _logic, since=7)
CLAIMS.add(["Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Mod", "BitwiseAnd", "BitwiseOr", "BitwiseXor"],
           FLOAT + ARITH_INT, _binary, since=7)
CLAIMS.add(["Sum", "Mean", "Max", "Min"], FLOAT + ARITH_INT, _variadic, since=8)
CLAIMS.add(list(E.COMPARE), FLOAT + ARITH_INT + (BOOL,), _compare, since=7)
CLAIMS.add(["Where"], (BOOL, F32, F16, I32, U32), _where, since=9)
CLAIMS.add(["Clip"], FLOAT, _clip, since=6)
CLAIMS.add(["IsNaN", "IsInf"], FLOAT, _is_nan_inf, since=9)
CLAIMS.add(["Cast"], (F32, F16, I32, U32, BOOL), _cast, since=6)
CLAIMS.add(["Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Transpose", "Slice", "Split"], MOVABLE,
           _movement)
CLAIMS.add(["Dropout"], MOVABLE, _dropout)
CLAIMS.add(["Expand"], MOVABLE, lambda device, spec: lambda x, shape, **kw: D.expand(device, x, shape), since=8)
CLAIMS.add(["Concat"], MOVABLE, _concat, since=4)
CLAIMS.add(["Tile"], MOVABLE, _tile, since=6)
CLAIMS.add(["Gather"], MOVABLE, _gather)
CLAIMS.add(["If", "Loop"], MOVABLE, _control, bodies=True)
CLAIMS.add(["Scan"], MOVABLE, _control, since=9, bodies=True)
CLAIMS.add(["GatherElements"], MOVABLE, _gather, since=11)


class WebGpuExecutionProvider(ExecutionProvider):
    name = "WebGpuExecutionProvider"

    def __init__(self, options=None):
        super().__init__(options)
        self.device = get_device("webgpu", int(self.options.get("device_id", 0)))

    def claim(self, spec):
        return CLAIMS.find(spec, self.device)
