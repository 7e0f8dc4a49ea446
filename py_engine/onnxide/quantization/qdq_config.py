"""get_qdq_config: a StaticQuantConfig for QDQ quantization of every op type a model holds."""

from ..proto.onnx_api import onnx
from .base import NARROW, opset_of
from .calibrate import CalibrationMethod
from .quant_utils import QuantFormat, QuantType, model_or_path, onnx_type
from .quantize import StaticQuantConfig

CALIB_ARGS = {"symmetric": "CalibTensorRangeSymmetric", "moving_average": "CalibMovingAverage",
              "averaging_constant": "CalibMovingAverageConstant",
              "max_intermediate_outputs": "CalibMaxIntermediateOutputs", "num_bins": "CalibNumBins",
              "num_quantized_bins": "CalibNumQuantizedBins", "percentile": "CalibPercentile",
              "scenario": "CalibScenario"}


def get_qdq_config(model_input, calibration_data_reader, calibrate_method=CalibrationMethod.MinMax,
                   calibrate_args=None, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                   activation_symmetric=False, weight_symmetric=None, per_channel=False, reduce_range=False,
                   keep_removable_activations=False, min_real_range=None, tensor_quant_overrides=None,
                   calibration_providers=None, op_types_to_quantize=None, nodes_to_exclude=None, extra_options=None):
    """Every op type of the model quantized (nodes_to_exclude, a list or a callable(model, node), left out);
    16-bit / 4-bit types on an opset below 21 use com.microsoft's Q / DQ."""
    model = model_or_path(model_input)
    if callable(nodes_to_exclude):
        excluded = [n.name for n in model.graph.node if nodes_to_exclude(model, n)]
    else:
        excluded = list(nodes_to_exclude or [])
    op_types = set(op_types_to_quantize or [n.op_type for n in model.graph.node if n.name not in excluded])
    overrides = tensor_quant_overrides or {}
    types = {onnx_type(activation_type), onnx_type(weight_type)}
    for entries in overrides.values():
        types |= {onnx_type(e["quant_type"]) for e in entries if "quant_type" in e}
    extra = {
        "MinimumRealRange": min_real_range,
        "QDQKeepRemovableActivations": keep_removable_activations,
        "ActivationSymmetric": activation_symmetric,
        "WeightSymmetric": weight_symmetric if weight_symmetric is not None else
        weight_type in (QuantType.QInt8, QuantType.QInt16, QuantType.QInt4, QuantType.QFLOAT8E4M3FN),
        "ForceQuantizeNoInputCheck": True,
        "TensorQuantOverrides": overrides,
    }
    if opset_of(model) < 21 and types & set(NARROW):
        extra["UseQDQContribOps"] = True
    for k, v in (calibrate_args or {}).items():
        if k in CALIB_ARGS:
            extra[CALIB_ARGS[k]] = v
    extra.update(extra_options or {})
    return StaticQuantConfig(calibration_data_reader, calibrate_method=calibrate_method,
                             quant_format=QuantFormat.QDQ, activation_type=activation_type, weight_type=weight_type,
                             op_types_to_quantize=sorted(op_types), nodes_to_exclude=excluded,
                             per_channel=per_channel, reduce_range=reduce_range,
                             use_external_data_format=model.ByteSize() > onnx.checker.MAXIMUM_PROTOBUF,
                             calibration_providers=calibration_providers, extra_options=extra)
