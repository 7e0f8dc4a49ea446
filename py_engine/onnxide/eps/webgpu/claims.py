"""The WebGPU EP's claim table: per op, the first opset it takes, the element types its kernels run on the device,
and a maker(device, spec) returning the kernel (or None to decline this node). Each ops_*.py module adds its ops."""
import numpy as np

from ... import dtypes as dt
from ...ops import registry

F32, F16, I32, U32, I64, BOOL = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.uint32, np.int64,
                                                        np.bool_))
DEVICE_TYPES = {dt.FLOAT: F32, dt.FLOAT16: F16, dt.INT32: I32, dt.UINT32: U32, dt.INT64: I64, dt.BOOL: BOOL}


def _types(spec):
    """numpy dtypes of the node's present inputs, or None when one is unknown or not a device type."""
    out = []
    for x, t in zip(spec.node.inputs, spec.input_types):
        if not x:
            continue
        if t not in DEVICE_TYPES:
            return None
        out.append(DEVICE_TYPES[t])
    return out


def _data_types(spec):
    """Types of the inputs the kernel reads on the device (host and meta inputs left out)."""
    od = spec.opdef
    return [DEVICE_TYPES.get(t) for i, (x, t) in enumerate(zip(spec.node.inputs, spec.input_types))
            if x and i not in od.host_inputs and i not in od.meta_inputs]


class Claims:
    """(domain, op) -> (first opset, accepted data types, kernel maker, whether the op has bodies)."""

    def __init__(self):
        self.table = {}

    def add(self, ops, types, make, since=1, domain="", bodies=False):
        """`make(device, spec)` -> kernel or None for each of `ops` from opset `since`, when the node's data inputs
        are of `types` ("float": f32, and f16 where the device has shader-f16); `bodies`: If / Loop / Scan."""
        for op in ops:
            self.table[(domain, op)] = (since, tuple(types), make, bodies)

    def find(self, spec, device):
        entry = self.table.get((registry.normalize_domain(spec.node.domain), spec.node.op_type))
        if entry is None or spec.opset < entry[0] or (spec.has_subgraphs() and not entry[3]):
            return None
        types = _data_types(spec)
        floats = (F32, F16) if device.f16 else (F32,)
        allowed = {t for a in entry[1] for t in (floats if a == "float" else (a,))}
        if not device.f16:  # (f16 buffers are declared with `enable f16`, which needs shader-f16)
            allowed.discard(F16)
        outs = [DEVICE_TYPES.get(t, "other") for t in spec.output_types if t is not None]
        if any(t is None or t not in allowed for t in types) or "other" in outs or (F16 in outs and not device.f16):
            return None
        return entry[2](device, spec)


CLAIMS = Claims()
FLOAT = ("float",)
MOVABLE = (F32, F16, I32, U32, I64, BOOL)
ARITH_INT = (I32, U32)
