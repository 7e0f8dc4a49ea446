"""The tool's entry points: quantize_static (calibrated, QDQ or QOperator), quantize_dynamic, quantize(config)."""
import copy
import tempfile
from pathlib import Path

from ..errors import InvalidArgument
from ..proto.onnx_api import onnx
from .base import INTEGER_OPS, QDQ_OPS, QLINEAR_OPS, check_types
from .calibrate import CalibrationDataReader, CalibrationMethod, create_calibrator
from .dynamic import DynamicQuantizer
from .qdq import QDQQuantizer
from .qoperator import QOperatorQuantizer
from .quant_utils import QuantFormat, QuantType, add_infer_metadata, model_or_path


class QuantConfig:
    def __init__(self, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, op_types_to_quantize=None,
                 nodes_to_quantize=None, nodes_to_exclude=None, per_channel=False, reduce_range=False,
                 use_external_data_format=False):
        self.op_types_to_quantize = op_types_to_quantize or []
        self.per_channel, self.reduce_range = per_channel, reduce_range
        self.weight_type, self.activation_type = weight_type, activation_type
        self.nodes_to_quantize = nodes_to_quantize or []
        self.nodes_to_exclude = nodes_to_exclude or []
        self.use_external_data_format = use_external_data_format


class StaticQuantConfig(QuantConfig):
    def __init__(self, calibration_data_reader, calibrate_method=CalibrationMethod.MinMax,
                 quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                 op_types_to_quantize=None, nodes_to_quantize=None, nodes_to_exclude=None, per_channel=False,
                 reduce_range=False, use_external_data_format=False, calibration_providers=None,
                 extra_options=None):
        super().__init__(activation_type, weight_type, op_types_to_quantize, nodes_to_quantize, nodes_to_exclude,
                         per_channel, reduce_range, use_external_data_format)
        self.calibration_data_reader = calibration_data_reader
        self.calibrate_method, self.quant_format = calibrate_method, quant_format
        self.calibration_providers = calibration_providers
        self.extra_options = extra_options or {}


class DynamicQuantConfig(QuantConfig):
    def __init__(self, weight_type=QuantType.QInt8, op_types_to_quantize=None, nodes_to_quantize=None,
                 nodes_to_exclude=None, per_channel=False, reduce_range=False, use_external_data_format=False,
                 extra_options=None):
        super().__init__(QuantType.QUInt8, weight_type, op_types_to_quantize, nodes_to_quantize, nodes_to_exclude,
                         per_channel, reduce_range, use_external_data_format)
        self.extra_options = extra_options or {}


def _save(model, path, external):
    add_infer_metadata(model)
    onnx.save_model(model, str(path), save_as_external_data=external, all_tensors_to_one_file=True,
                    location=Path(path).name + ".data" if external else None)


def quantize_static(model_input, model_output, calibration_data_reader: CalibrationDataReader,
                    quant_format=QuantFormat.QDQ, op_types_to_quantize=None, per_channel=False, reduce_range=False,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, nodes_to_quantize=None,
                    nodes_to_exclude=None, use_external_data_format=False, calibrate_method=CalibrationMethod.MinMax,
                    calibration_providers=None, extra_options=None):
    """Calibrates model_input on onnxide with the reader's feeds, quantizes it and saves it to model_output."""
    extra = dict(extra_options or {})
    check_types(activation_type, weight_type)
    if calibration_data_reader is None:
        raise InvalidArgument("quantize_static needs a calibration data reader")
    model = model_or_path(model_input)
    if not op_types_to_quantize:
        op_types_to_quantize = sorted(set(QLINEAR_OPS) | set(QDQ_OPS))
    calib_extra = {k: extra[v] for k, v in (
        ("symmetric", "CalibTensorRangeSymmetric"), ("moving_average", "CalibMovingAverage"),
        ("averaging_constant", "CalibMovingAverageConstant"), ("max_intermediate_outputs", "CalibMaxIntermediateOutputs"),
        ("num_bins", "CalibNumBins"), ("num_quantized_bins", "CalibNumQuantizedBins"), ("percentile", "CalibPercentile"),
        ("scenario", "CalibScenario")) if v in extra}
    with tempfile.TemporaryDirectory(prefix="onnxide.quant.") as d:
        calibrator = create_calibrator(copy.deepcopy(model), op_types_to_quantize,
                                       augmented_model_path=Path(d) / "augmented_model.onnx",
                                       calibrate_method=calibrate_method,
                                       use_external_data_format=use_external_data_format,
                                       providers=calibration_providers, extra_options=calib_extra)
        calibrator.collect_data(calibration_data_reader)
        ranges = calibrator.compute_data()
    ranges = dict(ranges.items())
    cls = QDQQuantizer if quant_format == QuantFormat.QDQ else QOperatorQuantizer
    if quant_format == QuantFormat.QOperator:
        extra.setdefault("MatMulConstBOnly", False)
    quantizer = cls(model, per_channel, reduce_range, weight_type, activation_type, ranges, nodes_to_quantize,
                    nodes_to_exclude, op_types_to_quantize, extra)
    _save(quantizer.quantize_model(), model_output, use_external_data_format)


def quantize_dynamic(model_input, model_output, op_types_to_quantize=None, per_channel=False, reduce_range=False,
                     weight_type=QuantType.QInt8, nodes_to_quantize=None, nodes_to_exclude=None,
                     use_external_data_format=False, extra_options=None):
    """Weights quantized ahead; MatMul / Gemm / Conv with constant weights run as integer kernels."""
    model = model_or_path(model_input)
    quantizer = DynamicQuantizer(model, per_channel, reduce_range, weight_type, QuantType.QUInt8, None,
                                 nodes_to_quantize, nodes_to_exclude, op_types_to_quantize or INTEGER_OPS,
                                 extra_options)
    _save(quantizer.quantize_model(), model_output, use_external_data_format)


def quantize(model_input, model_output, quant_config):
    """quantize_static or quantize_dynamic, as the config says."""
    if isinstance(quant_config, StaticQuantConfig):
        c = quant_config
        quantize_static(model_input, model_output, c.calibration_data_reader, c.quant_format, c.op_types_to_quantize,
                        c.per_channel, c.reduce_range, c.activation_type, c.weight_type, c.nodes_to_quantize,
                        c.nodes_to_exclude, c.use_external_data_format, c.calibrate_method,
                        c.calibration_providers, c.extra_options)
    elif isinstance(quant_config, DynamicQuantConfig):
        c = quant_config
        quantize_dynamic(model_input, model_output, c.op_types_to_quantize, c.per_channel, c.reduce_range,
                         c.weight_type, c.nodes_to_quantize, c.nodes_to_exclude, c.use_external_data_format,
                         c.extra_options)
    else:
        raise TypeError("Invalid quantization config type, it must be either StaticQuantConfig or "
                        "DynamicQuantConfig.")
