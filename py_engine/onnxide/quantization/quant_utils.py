"""Quantization types, ranges and the scale / zero-point arithmetic of onnxruntime's quantization tool."""
import os
import tempfile
from enum import Enum
from pathlib import Path

import numpy as np

from .. import dtypes as dt
from ..errors import InvalidArgument, NotImplemented  # noqa: A004 - onnxruntime's name
from ..proto.onnx_api import TensorProto, onnx

ms_domain = "com.microsoft"
QUANT_OP_NAME = "QuantizeLinear"
DEQUANT_OP_NAME = "DequantizeLinear"
QUANT_INPUT_SUFFIX = "_QuantizeLinear_Input"
DEQUANT_OUTPUT_SUFFIX = "_DequantizeLinear_Output"
TENSOR_NAME_QUANT_SUFFIX = "_quantized"
INFER_KEY, INFER_VALUE = "onnx.infer", "onnxruntime.quant"


class _NpTypes(dict):
    """Element type -> numpy dtype of the quantized types; a type without one (int4 / float8 without ml_dtypes)
    raises NotImplemented naming it."""

    def __missing__(self, code):
        raise NotImplemented(f"quantizing to {dt.NAMES.get(code, code)} needs the ml_dtypes package, which is not "
                             "installed")


ONNX_TYPE_TO_NP_TYPE = _NpTypes({
    TensorProto.INT8: np.dtype(np.int8), TensorProto.UINT8: np.dtype(np.uint8),
    TensorProto.INT16: np.dtype(np.int16), TensorProto.UINT16: np.dtype(np.uint16),
    TensorProto.INT32: np.dtype(np.int32),
})
if dt.HAVE_ML_DTYPES:  # (absent in Pyodide: quantizing to these types raises, see _NpTypes)
    ONNX_TYPE_TO_NP_TYPE.update((c, dt.np_dtype(c)) for c in (TensorProto.INT4, TensorProto.UINT4,
                                                               TensorProto.FLOAT8E4M3FN))
ONNX_INT_TYPE_RANGE = {
    TensorProto.UINT8: (0, 255), TensorProto.INT8: (-128, 127), TensorProto.UINT16: (0, 65535),
    TensorProto.INT16: (-32768, 32767), TensorProto.UINT4: (0, 15), TensorProto.INT4: (-8, 7),
}
ONNX_INT_TYPE_SYMMETRIC_RANGE = {
    TensorProto.INT8: (-127, 127), TensorProto.INT16: (-32767, 32767),
}
ONNX_INT_TYPE_REDUCED_RANGE = {
    TensorProto.UINT8: (0, 127), TensorProto.INT8: (-64, 64), TensorProto.UINT16: (0, 32767),
    TensorProto.INT16: (-16384, 16384), TensorProto.UINT4: (0, 7), TensorProto.INT4: (-4, 3),
}


class _NamedEnum(Enum):
    """An enum printed by its member name and parsed from it (ValueError for an unknown name), as onnxruntime's."""

    def __str__(self):
        return self.name

    @classmethod
    def from_string(cls, name):
        try:
            return cls[name]
        except KeyError:
            raise ValueError() from None


class QuantizationMode(_NamedEnum):
    IntegerOps = 0
    QLinearOps = 1


class QuantizedValueType(_NamedEnum):
    Input = 0
    Initializer = 1


class QuantType(_NamedEnum):
    QInt8 = 0
    QUInt8 = 1
    QFLOAT8E4M3FN = 2
    QInt16 = 3
    QUInt16 = 4
    QInt4 = 5
    QUInt4 = 6

    @property
    def tensor_type(self):
        return _QTYPE_TO_ONNX[self]


_QTYPE_TO_ONNX = {
    QuantType.QInt8: TensorProto.INT8, QuantType.QUInt8: TensorProto.UINT8, QuantType.QUInt16: TensorProto.UINT16,
    QuantType.QInt16: TensorProto.INT16, QuantType.QFLOAT8E4M3FN: TensorProto.FLOAT8E4M3FN,
    QuantType.QUInt4: TensorProto.UINT4, QuantType.QInt4: TensorProto.INT4,
}


class QuantFormat(_NamedEnum):
    QOperator = 0
    QDQ = 1


def onnx_type(qtype):
    """The TensorProto element type of a QuantType or of an element type already."""
    return qtype.tensor_type if isinstance(qtype, QuantType) else int(qtype)


def get_qmin_qmax_for_qType(qType, reduce_range=False, symmetric=False):  # noqa: N802,N803 - onnxruntime's name
    """(qmin, qmax) as numpy scalars of the quantized type: full, symmetric or 7-bit (reduce_range) range."""
    qType = onnx_type(qType)  # noqa: N806
    if qType == TensorProto.FLOAT8E4M3FN:
        raise InvalidArgument("float 8 types have no integer range")
    if reduce_range:
        qrange = ONNX_INT_TYPE_REDUCED_RANGE.get(qType)
    elif symmetric and qType in ONNX_INT_TYPE_SYMMETRIC_RANGE:
        qrange = ONNX_INT_TYPE_SYMMETRIC_RANGE[qType]
    else:
        qrange = ONNX_INT_TYPE_RANGE.get(qType)
    if qrange is None:
        raise InvalidArgument(f"Unexpected data type {qType} requested. Only INT8, UINT8, INT16, UINT16, INT4 and "
                              "UINT4 have a quantization range")
    dt = ONNX_TYPE_TO_NP_TYPE[qType]
    return np.array(qrange[0], dtype=dt), np.array(qrange[1], dtype=dt)


def get_qrange_for_qType(qType, reduce_range=False, symmetric=False):  # noqa: N802,N803
    qmin, qmax = get_qmin_qmax_for_qType(qType, reduce_range, symmetric)
    return int(qmax) - int(qmin)


def compute_scale_zp(rmin, rmax, qmin, qmax, symmetric=False, min_real_range=None):
    """(zero_point, scale) mapping [rmin, rmax] (widened to hold 0) onto [qmin, qmax]; the zero point is
    rounded half to even; a range of (almost) nothing gives scale 1, zero point 0."""
    rmin, rmax = np.asarray(rmin), np.asarray(rmax)
    fdt = rmax.dtype if rmax.dtype.kind == "f" else np.dtype(np.float32)
    qdt = np.asarray(qmin).dtype
    lo, hi = float(qmin), float(qmax)
    if lo > 0 or hi < 0:
        raise InvalidArgument(f"qmin and qmax must hold zero: qmin={lo}, qmax={hi}")
    rmin = np.minimum(rmin.astype(fdt), fdt.type(0))
    rmax = np.maximum(rmax.astype(fdt), fdt.type(0))
    if min_real_range is not None:
        rmax = np.maximum(rmax, rmin + fdt.type(min_real_range))
    if symmetric:
        absmax = np.maximum(np.abs(rmin), np.abs(rmax))
        rmin, rmax = -absmax, absmax
    scale64 = (rmax.astype(np.float64) - rmin.astype(np.float64)) / (hi - lo)  # the range in double precision
    scale = np.asarray(scale64, dtype=fdt)
    tiny = scale < np.finfo(fdt).tiny
    scale = np.where(tiny, fdt.type(1.0), scale).astype(fdt)
    if symmetric:
        zp = np.full(scale.shape, np.round((lo + hi) / 2.0))
    else:
        zp = np.round(lo - rmin.astype(np.float64) / np.where(tiny, 1.0, scale64))
    zp = np.where(tiny, 0.0, zp)
    return np.asarray(zp).astype(qdt), scale


def quantize_nparray(qType, arr, scale, zero_point, low=None, high=None):  # noqa: N803
    """round(arr / scale) + zero_point (half to even), clipped to [low, high] or the type's range."""
    qType = onnx_type(qType)  # noqa: N806
    dt = ONNX_TYPE_TO_NP_TYPE[qType]
    arr = np.asarray(arr)
    if qType == TensorProto.FLOAT8E4M3FN:
        return (arr.astype(np.float32) / np.float32(scale)).astype(dt)
    q = np.rint(arr.astype(np.float32) / np.asarray(scale, dtype=np.float32)).astype(np.float64)
    q = q + np.asarray(zero_point).astype(np.float64)
    qmin, qmax = ONNX_INT_TYPE_RANGE[qType]
    q = np.clip(q, qmin if low is None else float(low), qmax if high is None else float(high))
    return q.astype(dt)


def quantize_data(data, qType, symmetric, reduce_range=False, min_real_range=None, rmin_override=None,  # noqa: N803
                  rmax_override=None):
    """(zero_point, scale, quantized data) of a tensor quantized as one block."""
    data = np.asarray(data)
    rmin = data.min() if rmin_override is None and data.size else (rmin_override or np.float32(0))
    rmax = data.max() if rmax_override is None and data.size else (rmax_override or np.float32(0))
    qtype = onnx_type(qType)
    if qtype == TensorProto.FLOAT8E4M3FN:
        std = np.std(data.astype(np.float32))
        scale = np.array(std / 16.0 if std > 0 else 1.0, dtype=data.dtype)  # spread over e4m3's fine range
        zp = np.array(0, dtype=ONNX_TYPE_TO_NP_TYPE[qtype])
        return zp, scale, quantize_nparray(qtype, data, scale, zp)
    qmin, qmax = get_qmin_qmax_for_qType(qtype, reduce_range, symmetric=symmetric)
    zp, scale = compute_scale_zp(rmin, rmax, qmin, qmax, symmetric, min_real_range)
    return zp, scale, quantize_nparray(qtype, data, scale, zp)


def pack_bytes_to_4bit(src_8bit):
    """Two 4-bit values a byte, the first in the low nibble (an odd count leaves the last high nibble 0)."""
    src = np.frombuffer(bytes(src_8bit), dtype=np.uint8) & 0x0F
    if src.size % 2:
        src = np.append(src, np.uint8(0))
    return bytearray((src[0::2] | (src[1::2] << 4)).astype(np.uint8).tobytes())


def model_has_infer_metadata(model):
    return any(p.key == INFER_KEY and p.value == INFER_VALUE for p in model.metadata_props)


def add_infer_metadata(model):
    if not model_has_infer_metadata(model):
        model.metadata_props.append(onnx.StringStringEntryProto(key=INFER_KEY, value=INFER_VALUE))


def model_has_external_data(model_path):
    model = onnx.load(str(model_path), load_external_data=False)
    return any(onnx.external_data_helper.uses_external_data(t) for t in model.graph.initializer)


def load_model_with_shape_infer(model_path):
    """The model at model_path (external data read) with onnx's shape inference applied and marked as such."""
    model = onnx.load(str(model_path))
    model = onnx.shape_inference.infer_shapes(model)
    add_infer_metadata(model)
    return model


def save_and_reload_model_with_shape_infer(model):
    with tempfile.TemporaryDirectory(prefix="onnxide.quant.") as d:
        path = Path(d) / "model.onnx"
        onnx.save_model(model, str(path), save_as_external_data=True)
        return load_model_with_shape_infer(path)


def model_or_path(model_input):
    """A ModelProto from a ModelProto, a path, or a pathlib.Path."""
    if isinstance(model_input, onnx.ModelProto):
        return model_input
    if isinstance(model_input, (str, Path, os.PathLike)):
        return onnx.load(str(model_input))
    raise InvalidArgument(f"model_input must be a path or an onnx.ModelProto, not {type(model_input).__name__}")


def find_by_name(item_name, item_list):
    items = [item for item in item_list if item.name == item_name]
    return items[0] if items else None


def attribute_to_kwarg(attribute):
    """(name, value) of a node attribute, value as onnx.helper.make_node takes it."""
    return {attribute.name: onnx.helper.get_attribute_value(attribute)}


def write_calibration_table(calibration_cache, dir="."):  # noqa: A002 - onnxruntime's name
    """Writes the ranges as calibration.json and calibration.cache (name, then lowest and highest) in dir."""
    import json
    plain = {}
    for name, v in dict(calibration_cache.items() if hasattr(calibration_cache, "items") else calibration_cache).items():
        lo, hi = (np.asarray(x, np.float64).ravel() for x in (v.range_value if hasattr(v, "range_value") else v))
        plain[name] = [float(lo[0]), float(hi[0])] if lo.size == 1 else [lo.tolist(), hi.tolist()]
    with open(os.path.join(dir, "calibration.json"), "w") as f:
        json.dump(plain, f)
    with open(os.path.join(dir, "calibration.cache"), "w") as f:
        for name, (lo, hi) in plain.items():
            f.write(f"{name} {json.dumps(lo)} {json.dumps(hi)}\n")
