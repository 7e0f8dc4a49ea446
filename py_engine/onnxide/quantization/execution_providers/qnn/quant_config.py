"""get_qnn_qdq_config: a StaticQuantConfig for QNN's QDQ rules (every op type in the model, fixed Sigmoid / Tanh
parameters at 16 bits, 8-bit weights beside 16-bit MatMul / LayerNormalization inputs, per-tensor MatMul weights)."""
import copy
from pathlib import Path

import numpy as np

from ....proto.onnx_api import onnx
from ...calibrate import CalibrationMethod
from ...quant_utils import QuantType, model_has_external_data
from ...quantize import StaticQuantConfig
from ...tensor_quant_overrides import TensorQuantOverridesHelper
from .mixed_precision_overrides_utils import MixedPrecisionTensorQuantOverridesFixer

Q16 = (QuantType.QUInt16, QuantType.QInt16)
Q8 = (QuantType.QUInt8, QuantType.QInt8)
SIGNED = (QuantType.QInt8, QuantType.QInt16, QuantType.QInt4)
NARROW = (QuantType.QUInt16, QuantType.QInt16, QuantType.QUInt4, QuantType.QInt4)
# (scale, zero point) QNN requires of a 16-bit output of these ops
FIXED_OUTPUT_PARAMS = {
    ("Sigmoid", QuantType.QUInt16): (1.0 / 65536.0, np.uint16(0)),
    ("Sigmoid", QuantType.QInt16): (1.0 / 32768.0, np.int16(0)),
    ("Tanh", QuantType.QUInt16): (1.0 / 32768.0, np.uint16(32768)),
    ("Tanh", QuantType.QInt16): (1.0 / 32768.0, np.int16(0)),
}


def _load(model_input):
    if isinstance(model_input, onnx.ModelProto):
        return model_input, False
    path = Path(model_input)
    return onnx.load(str(path), load_external_data=False), model_has_external_data(path)


def _validate(overrides, model, activation_type):
    inits = {i.name: i for i in model.graph.initializer}
    acts = {n for node in model.graph.node for n in list(node.input) + list(node.output) if n}
    acts |= {v.name for v in list(model.graph.input) + list(model.graph.output)}
    ok, err = overrides.is_valid(inits, acts - set(inits), activation_type)
    if not ok:
        raise ValueError(err)
    for name, entries in overrides.items():  # per-channel axes, from the dims alone (no external data read)
        axis = entries[0].get("axis") if name in inits else None
        rank = len(inits[name].dims) if name in inits else 0
        if axis is not None and not -rank <= axis < rank:
            raise ValueError(f"Axis override {axis} for per-channel quantization of '{name}' is out of range for "
                             f"its rank {rank}")


def get_qnn_qdq_config(model_input, calibration_data_reader, calibrate_method=CalibrationMethod.MinMax,
                       activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8, per_channel=False,
                       init_overrides=None, add_qtype_converts=True, activation_symmetric=False,
                       weight_symmetric=None, keep_removable_activations=False, stride=None,
                       calibration_providers=None, op_types_to_quantize=None, nodes_to_exclude=None):
    """A StaticQuantConfig that quantizes every op type of the model (or op_types_to_quantize) in QDQ format with the
    tensor overrides QNN needs added to init_overrides (which is not changed)."""
    model, external = _load(model_input)
    if weight_symmetric is None:
        weight_symmetric = weight_type in SIGNED
    overrides = TensorQuantOverridesHelper(copy.deepcopy(init_overrides) if init_overrides else {})
    _validate(overrides, model, activation_type)
    if add_qtype_converts and overrides:
        fixer = MixedPrecisionTensorQuantOverridesFixer.create_from_model(overrides, model, activation_type)
        fixer.apply(activation_type, activation_symmetric)
    inits = {i.name for i in model.graph.initializer}
    excluded = set(nodes_to_exclude or [])

    def input_type(name, node):
        return overrides.get_node_input_qtype_info(name, node.name, activation_type, activation_symmetric).quant_type

    def pin_weight(name):
        if name not in overrides:
            overrides[name] = [{"quant_type": weight_type, "symmetric": weight_symmetric}]

    for node in model.graph.node:
        if node.name in excluded:
            continue
        ins = list(node.input)
        if node.op_type == "MatMul":
            for w, other in ((ins[1], ins[0]), (ins[0], ins[1])):
                if w in inits and other not in inits:
                    if (input_type(other, node) in Q16 and weight_type in Q8) or per_channel:
                        pin_weight(w)  # 8-bit weights beside a 16-bit input; QNN has no per-channel MatMul
        elif node.op_type == "LayerNormalization" and len(ins) > 1 and ins[1] in inits:
            if input_type(ins[0], node) in Q16 and weight_type in Q8:
                pin_weight(ins[1])
        elif node.op_type in ("Sigmoid", "Tanh"):
            out = node.output[0]
            qtype = overrides.get_node_output_qtype_info(out, activation_type, activation_symmetric).quant_type
            fixed = FIXED_OUTPUT_PARAMS.get((node.op_type, qtype))
            if fixed is not None:
                overrides[out] = [{"quant_type": qtype, "scale": np.array(fixed[0], dtype=np.float32),
                                   "zero_point": np.array(fixed[1], dtype=fixed[1].dtype)}]
    if op_types_to_quantize is None:
        op_types_to_quantize = {n.op_type for n in model.graph.node if n.name not in excluded}
    used = {activation_type, weight_type} | {d.get(k, {}).get("quant_type") if k == "convert" else d.get(k)
                                             for entries in overrides.get_dict().values() for d in entries
                                             for k in ("quant_type", "convert")}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    extra = {"MinimumRealRange": 0.0001, "DedicatedQDQPair": False,
             "QDQKeepRemovableActivations": keep_removable_activations,
             "TensorQuantOverrides": overrides.get_dict(), "ActivationSymmetric": activation_symmetric,
             "WeightSymmetric": weight_symmetric, "CalibStridedMinMax": stride}
    if opset < 21 and any(t in NARROW for t in used):
        extra["UseQDQContribOps"] = True
    return StaticQuantConfig(calibration_data_reader, calibrate_method=calibrate_method,
                             activation_type=activation_type, weight_type=weight_type,
                             op_types_to_quantize=list(op_types_to_quantize), nodes_to_exclude=nodes_to_exclude,
                             per_channel=per_channel, use_external_data_format=external,
                             calibration_providers=calibration_providers, extra_options=extra)
