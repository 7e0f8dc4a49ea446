"""ONNXQuantizer: onnxruntime's entry class for the non-QDQ modes (IntegerOps: dynamic, QLinearOps: QOperator)."""
from .dynamic import DynamicQuantizer
from .qoperator import QOperatorQuantizer
from .quant_utils import QuantizationMode


class ONNXQuantizer:
    """Dispatches to the dynamic (IntegerOps) or the QOperator (QLinearOps) quantizer; quantize_model() returns the
    quantized ModelProto and `model` is the ONNXModel being edited."""

    def __init__(self, model, per_channel, reduce_range, mode, static, weight_qType, activation_qType,  # noqa: N803
                 tensors_range, nodes_to_quantize, nodes_to_exclude, op_types_to_quantize, extra_options=None):
        cls = DynamicQuantizer if mode == QuantizationMode.IntegerOps else QOperatorQuantizer
        self.mode, self.static = mode, static
        self.impl = cls(model, per_channel, reduce_range, weight_qType, activation_qType, tensors_range,
                        nodes_to_quantize, nodes_to_exclude, op_types_to_quantize, extra_options)

    @property
    def model(self):
        return self.impl.model

    def quantize_model(self):
        return self.impl.quantize_model()
