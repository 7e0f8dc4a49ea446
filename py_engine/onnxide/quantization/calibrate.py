"""Calibration: run the float model on onnxide over a data reader and record each tensor's range."""
import abc
from enum import Enum

import numpy as np

from ..errors import InvalidArgument
from ..proto.onnx_api import TensorProto, helper, numpy_helper, onnx
from .quant_utils import model_or_path

FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16)


class CalibrationMethod(Enum):
    MinMax = 0
    Entropy = 1
    Percentile = 2
    Distribution = 3


class CalibrationDataReader(metaclass=abc.ABCMeta):
    """Yields input feeds (dicts of name -> array) through get_next(), None when done."""

    @classmethod
    def __subclasshook__(cls, subclass):
        return hasattr(subclass, "get_next") and callable(subclass.get_next) or NotImplemented

    @abc.abstractmethod
    def get_next(self) -> dict:
        raise NotImplementedError

    def __iter__(self):
        return self

    def __next__(self):
        result = self.get_next()
        if result is None:
            raise StopIteration
        return result

    def __len__(self):
        raise NotImplementedError

    def set_range(self, start_index, end_index):
        raise NotImplementedError


class TensorData:
    """One tensor's calibration result: lowest / highest, and optionally hist, bins, avg, std."""
    _allowed = frozenset(["avg", "std", "lowest", "highest", "hist", "hist_edges", "bins"])
    _floats = frozenset(["avg", "std", "lowest", "highest", "hist_edges"])

    def __init__(self, **kwargs):
        self._attrs = list(kwargs)
        for k, v in kwargs.items():
            if k not in TensorData._allowed:
                raise ValueError(f"Unexpected value {k!r} not in {TensorData._allowed}.")
            if k in TensorData._floats:
                if not hasattr(v, "dtype"):
                    raise ValueError(f"Unexpected type {type(v)} for k={k!r}")
                if v.dtype not in (np.float16, np.float32):
                    raise ValueError(f"Unexpected dtype {v.dtype} for k={k!r}")
            setattr(self, k, v)

    @property
    def range_value(self):
        if "lowest" not in self._attrs or "highest" not in self._attrs:
            raise AttributeError(f"Attributes 'lowest' and/or 'highest' missing in {dir(self)}.")
        return (self.lowest, self.highest)

    @property
    def avg_std(self):
        if "avg" not in self._attrs or "std" not in self._attrs:
            raise AttributeError(f"Attributes 'avg' and/or 'std' missing in {dir(self)}.")
        return (self.avg, self.std)

    def to_dict(self):
        return {k: getattr(self, k) for k in self._attrs}


class TensorsData:
    """The calibration results of every tensor, by name."""

    def __init__(self, calibration_method, data):
        self.calibration_method = calibration_method
        self.data = {}
        for k, v in data.items():
            if not isinstance(k, str):
                raise TypeError(f"Keys must be strings not {type(k)}.")
            if isinstance(v, tuple):
                if calibration_method == CalibrationMethod.MinMax and len(v) == 2:
                    self.data[k] = TensorData(lowest=v[0], highest=v[1])
                    continue
                raise TypeError(f"Unexpected tuple for {k!r} with {calibration_method}.")
            if not isinstance(v, TensorData):
                raise TypeError(f"Values must be TensorData not {type(v)}.")
            self.data[k] = v

    def __iter__(self):
        yield from self.data

    def __contains__(self, key):
        return key in self.data

    def __getitem__(self, key):
        return self.data[key]

    def __setitem__(self, key, value):
        if key not in self.data:
            raise RuntimeError(f"Only an existing tensor can be modified, {key!r} is not.")
        self.data[key] = value

    def keys(self):
        return self.data.keys()

    def values(self):
        return self.data.values()

    def items(self):
        return self.data.items()


def value_types(model):
    """Element type of every typed tensor of the (shape-inferred) main graph."""
    types = {}
    for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        if vi.type.HasField("tensor_type"):
            types[vi.name] = vi.type.tensor_type.elem_type
    return types


class CalibraterBase:
    """Selects the float tensors around the nodes to calibrate and runs the augmented model on onnxide."""

    def __init__(self, model_path, op_types_to_calibrate=None, augmented_model_path="augmented_model.onnx",
                 symmetric=False, use_external_data_format=False, per_channel=False):
        model = model_or_path(model_path)
        self.model = onnx.shape_inference.infer_shapes(model)
        self.op_types_to_calibrate = op_types_to_calibrate
        self.augmented_model_path = str(augmented_model_path)
        self.symmetric = symmetric
        self.use_external_data_format = use_external_data_format
        self.per_channel = per_channel
        self.augment_model = None
        self.infer_session = None
        self.execution_providers = ["CPUExecutionProvider"]

    def set_execution_providers(self, execution_providers=("CPUExecutionProvider",)):
        self.execution_providers = list(execution_providers)
        self.create_inference_session()

    def create_inference_session(self):
        from ..runtime.options import GraphOptimizationLevel, SessionOptions
        from ..runtime.session import InferenceSession
        so = SessionOptions()
        so.graph_optimization_level = GraphOptimizationLevel.ORT_DISABLE_ALL
        self.infer_session = InferenceSession(self.augment_model.SerializeToString(), sess_options=so,
                                              providers=self.execution_providers)

    def select_tensors_to_calibrate(self, model):
        """(tensor names in graph order, their value types): float inputs and outputs of the selected nodes."""
        inits = {i.name for i in model.graph.initializer}
        types = value_types(model)
        chosen = []
        for node in model.graph.node:
            if self.op_types_to_calibrate and node.op_type not in self.op_types_to_calibrate:
                continue
            for name in list(node.input) + list(node.output):
                if name and name not in inits and types.get(name) in FLOAT_TYPES and name not in chosen:
                    chosen.append(name)
        return chosen, types

    def get_augment_model(self):
        return self.augment_model

    def save_augment_model(self):
        onnx.save(self.augment_model, self.augmented_model_path,
                  save_as_external_data=self.use_external_data_format)

    def _run(self, data_reader):
        """Every feed's outputs as {output name: array}."""
        if self.infer_session is None:
            self.create_inference_session()
        names = [o.name for o in self.infer_session.get_outputs()]
        runs = []
        while True:
            feed = data_reader.get_next()
            if not feed:
                break
            runs.append(dict(zip(names, self.infer_session.run(None, feed))))
        if not runs:
            raise ValueError("No data is collected.")
        return runs


class MinMaxCalibrater(CalibraterBase):
    """Ranges as the min / max over every feed (or their moving average), through ReduceMin / ReduceMax nodes."""

    def __init__(self, model_path, op_types_to_calibrate=None, augmented_model_path="augmented_model.onnx",
                 symmetric=False, use_external_data_format=False, moving_average=False, averaging_constant=0.01,
                 max_intermediate_outputs=None, per_channel=False):
        super().__init__(model_path, op_types_to_calibrate, augmented_model_path, symmetric,
                         use_external_data_format, per_channel)
        if moving_average and not 0 <= averaging_constant <= 1:
            raise ValueError("Invalid averaging constant, which should not be < 0 or > 1.")
        self.moving_average = moving_average
        self.averaging_constant = averaging_constant
        self.max_intermediate_outputs = max_intermediate_outputs
        self.intermediate_outputs = []
        self.calibrate_tensors_range = None
        self.tensors = []
        self.augment_graph()

    def augment_graph(self):
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        self.tensors, types = self.select_tensors_to_calibrate(model)
        shape_name, flat_name = "onnxide_calib_reshape_shape", "onnxide_calib_reshape_flat"
        model.graph.initializer.append(numpy_helper.from_array(np.array([1], dtype=np.int64), shape_name))
        model.graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), flat_name))
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        ranks = {vi.name: len(vi.type.tensor_type.shape.dim) for vi in
                 list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)
                 if vi.type.tensor_type.HasField("shape")}
        for name in self.tensors:
            rank = ranks.get(name, 0)
            channels = self.per_channel and rank >= 2
            axes = [0] + list(range(2, rank)) if channels else None
            for kind in ("ReduceMin", "ReduceMax"):
                out = f"{name}_{kind}"
                if channels and opset >= 18:
                    axes_name = f"{out}_axes"
                    model.graph.initializer.append(numpy_helper.from_array(np.array(axes, np.int64), axes_name))
                    red = helper.make_node(kind, [name, axes_name], [out + "_raw"], name=out, keepdims=0)
                elif channels:
                    red = helper.make_node(kind, [name], [out + "_raw"], name=out, keepdims=0, axes=axes)
                else:
                    red = helper.make_node(kind, [name], [out + "_raw"], name=out, keepdims=0)
                model.graph.node.append(red)
                model.graph.node.append(helper.make_node("Reshape", [out + "_raw", flat_name if channels
                                                                     else shape_name], [out], name=out + "_Reshape"))
                model.graph.output.append(helper.make_tensor_value_info(out, types[name], [None if channels else 1]))
        self.augment_model = model

    def clear_collected_data(self):
        self.intermediate_outputs = []

    def collect_data(self, data_reader):
        self.intermediate_outputs.extend(self._run(data_reader))
        self.compute_data()
        self.clear_collected_data()

    def _merge(self, old, new):
        if old is None:
            return new
        if self.moving_average:
            c = self.averaging_constant
            return tuple((o + c * (n - o)).astype(o.dtype) for o, n in zip(old, new))
        return np.minimum(old[0], new[0]), np.maximum(old[1], new[1])

    def compute_data(self):
        if not self.intermediate_outputs:
            return self.calibrate_tensors_range
        ranges = {}
        for name in self.tensors:
            mins = np.array([r[f"{name}_ReduceMin"] for r in self.intermediate_outputs])
            maxs = np.array([r[f"{name}_ReduceMax"] for r in self.intermediate_outputs])
            if self.moving_average:
                lo, hi = np.mean(mins, axis=0, dtype=mins.dtype), np.mean(maxs, axis=0, dtype=maxs.dtype)
            else:
                lo, hi = mins.min(axis=0), maxs.max(axis=0)
            if lo.shape == (1,) and not self.per_channel:
                lo, hi = lo[0], hi[0]
            lo, hi = np.asarray(lo), np.asarray(hi)
            if self.symmetric:
                m = np.maximum(np.abs(lo), np.abs(hi))
                lo, hi = -m, m
            ranges[name] = (lo, hi)
        if self.calibrate_tensors_range is not None:
            old = {k: v.range_value for k, v in self.calibrate_tensors_range.items()}
            ranges = {k: self._merge(old.get(k), v) for k, v in ranges.items()}
        self.calibrate_tensors_range = TensorsData(CalibrationMethod.MinMax,
                                                   {k: TensorData(lowest=lo, highest=hi)
                                                    for k, (lo, hi) in ranges.items()})
        return self.calibrate_tensors_range


from .calibrate_hist import (  # noqa: E402,F401
    DistributionCalibrater, EntropyCalibrater, HistogramCalibrater, PercentileCalibrater, entropy,
)


def create_calibrator(model, op_types_to_calibrate=None, augmented_model_path="augmented_model.onnx",
                      calibrate_method=CalibrationMethod.MinMax, use_external_data_format=False, providers=None,
                      extra_options=None):
    """The calibrator of calibrate_method, its augmented model built and its session on onnxide created."""
    extra = extra_options or {}
    common = dict(op_types_to_calibrate=op_types_to_calibrate, augmented_model_path=augmented_model_path,
                  use_external_data_format=use_external_data_format)
    if calibrate_method == CalibrationMethod.MinMax:
        cal = MinMaxCalibrater(model, symmetric=extra.get("symmetric", False),
                               moving_average=extra.get("moving_average", False),
                               averaging_constant=extra.get("averaging_constant", 0.01),
                               max_intermediate_outputs=extra.get("max_intermediate_outputs"),
                               per_channel=extra.get("per_channel", False), **common)
    elif calibrate_method == CalibrationMethod.Entropy:
        cal = EntropyCalibrater(model, method="entropy", symmetric=extra.get("symmetric", False),
                                num_bins=extra.get("num_bins", 128),
                                num_quantized_bins=extra.get("num_quantized_bins", 128), **common)
    elif calibrate_method == CalibrationMethod.Percentile:
        cal = PercentileCalibrater(model, method="percentile", symmetric=extra.get("symmetric", True),
                                   num_bins=extra.get("num_bins", 2048),
                                   percentile=extra.get("percentile", 99.999), **common)
    elif calibrate_method == CalibrationMethod.Distribution:
        cal = DistributionCalibrater(model, method="distribution", num_bins=extra.get("num_bins", 2048),
                                     scenario=extra.get("scenario", "same"), **common)
    else:
        raise InvalidArgument(f"Unsupported calibration method {calibrate_method}")
    if providers:
        cal.execution_providers = list(providers)
    cal.create_inference_session()
    return cal


__all__ = ["CalibrationDataReader", "CalibrationMethod", "TensorData", "TensorsData", "create_calibrator",
           "MinMaxCalibrater", "HistogramCalibrater", "EntropyCalibrater", "PercentileCalibrater",
           "DistributionCalibrater", "entropy"]
