"""onnxruntime's QDQ loss debugging (`qdq_loss_debug`): save a model's intermediate tensors, match a QDQ model's
activations and weights with the float model's, and score each pair by its signal-to-quantization-noise ratio."""
import math
import time
from pathlib import Path

import numpy as np

from ..proto.onnx_api import helper, numpy_helper, onnx
from .calibrate import CalibraterBase
from .quant_utils import (  # noqa: F401 - QUANT_INPUT_SUFFIX is part of this module's API, as in onnxruntime
    DEQUANT_OUTPUT_SUFFIX, QUANT_INPUT_SUFFIX, TENSOR_NAME_QUANT_SUFFIX, find_by_name, load_model_with_shape_infer,
)

_TENSOR_SAVE_POSTFIX = "_ReshapedSavedOutput"
_POST_QDQ_POSTFIX1 = DEQUANT_OUTPUT_SUFFIX + "_1"


def modify_model_output_intermediate_tensors(input_model_path, output_model_path, op_types_for_saving=None,
                                             save_as_external_data=False):
    """Saves input_model_path with every float input / output of the nodes of `op_types_for_saving` (all nodes when
    empty) flattened into an extra graph output named TENSOR + '_ReshapedSavedOutput'."""
    model = load_model_with_shape_infer(Path(input_model_path))
    saver = CalibraterBase(model, op_types_for_saving or [])
    tensors, types = saver.select_tensors_to_calibrate(model)
    shape_name = f"LinearReshape_{time.time()}"
    model.graph.initializer.append(numpy_helper.from_array(np.array([-1], np.int64), shape_name))
    for name in tensors:
        out = name + _TENSOR_SAVE_POSTFIX
        model.graph.node.append(helper.make_node("Reshape", [name, shape_name], [out], name=out))
        model.graph.output.append(helper.make_tensor_value_info(out, types[name], [-1]))
    onnx.save(model, str(output_model_path), save_as_external_data=save_as_external_data)


def collect_activations(augmented_model, input_reader, session_options=None, execution_providers=None):
    """{tensor name: [its value for each feed of input_reader]} from a model augmented by
    modify_model_output_intermediate_tensors, run on onnxide."""
    from ..runtime.options import GraphOptimizationLevel, SessionOptions
    from ..runtime.session import InferenceSession

    if session_options is None:
        session_options = SessionOptions()
        session_options.graph_optimization_level = GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = InferenceSession(str(augmented_model), sess_options=session_options,
                            providers=execution_providers or ["CPUExecutionProvider"])
    runs = [sess.run(None, feed) for feed in input_reader]
    if not runs:
        raise RuntimeError("No data is collected while running augmented model!")
    out = {}
    for values in runs:
        for info, value in zip(sess.get_outputs(), values):
            if info.name.endswith(_TENSOR_SAVE_POSTFIX):
                out.setdefault(info.name[:-len(_TENSOR_SAVE_POSTFIX)], []).append(value)
    return out


def create_activation_matching(qdq_activations, float_activations=None):
    """{activation: {'pre_qdq', 'post_qdq'[, 'float']}}: each QDQ pair's input and output tensors in the QDQ model
    (a graph output's input is NAME + '_QuantizeLinear_Input', an inner tensor's output NAME +
    '_DequantizeLinear_Output'), and the float model's tensor of the same name."""
    pairs = {}
    for name, tensors in qdq_activations.items():
        for suffix, pre_side in ((QUANT_INPUT_SUFFIX, True), (DEQUANT_OUTPUT_SUFFIX, False),
                                 (_POST_QDQ_POSTFIX1, False)):
            if name.endswith(suffix):
                base = name[:-len(suffix)]
                other = qdq_activations.get(base)
                pre, post = (tensors, other) if pre_side else (other, tensors)
                if pre is not None and post is not None:
                    pairs[base] = {"pre_qdq": pre, "post_qdq": post}
                break
    for name, match in pairs.items():
        if float_activations and float_activations.get(name) is not None:
            match["float"] = float_activations[name]
    return pairs


def _dequantize(q, scale, zero_point, axis):
    q = q.astype(np.float32)
    zero_point = np.zeros_like(scale) if zero_point is None else zero_point.astype(np.float32)
    if scale.size > 1:
        shape = [1] * q.ndim
        shape[axis % q.ndim] = -1
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    return ((q - zero_point) * scale).astype(np.float32)


def create_weight_matching(float_model_path, qdq_model_path):
    """{weight: {'float', 'dequantized'}} for every initializer the QDQ model dequantizes (NAME + '_quantized')
    whose float original is in the float model."""
    float_inits = load_model_with_shape_infer(Path(float_model_path)).graph.initializer
    qdq = load_model_with_shape_infer(Path(qdq_model_path))
    inits = qdq.graph.initializer
    matched = {}
    for node in qdq.graph.node:
        if node.op_type != "DequantizeLinear" or not node.input[0].endswith(TENSOR_NAME_QUANT_SUFFIX):
            continue
        q = find_by_name(node.input[0], inits)
        original = find_by_name(node.input[0][:-len(TENSOR_NAME_QUANT_SUFFIX)], float_inits)
        scale = find_by_name(node.input[1], inits)
        if q is None or original is None or scale is None:
            continue
        zp = find_by_name(node.input[2], inits) if len(node.input) > 2 and node.input[2] else None
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        matched[original.name] = {
            "float": numpy_helper.to_array(original),
            "dequantized": _dequantize(numpy_helper.to_array(q), numpy_helper.to_array(scale),
                                       None if zp is None else numpy_helper.to_array(zp), axis)}
    return matched


def compute_signal_to_quantization_noice_ratio(x, y):  # noqa: D103 - onnxruntime's spelling
    """20·log10(‖x‖ / ‖x − y‖) in dB over all the arrays of x and y (an array or a list of arrays each)."""
    xs = np.concatenate([np.ravel(a) for a in (x if isinstance(x, (list, tuple)) else [x])]).astype(np.float64)
    ys = np.concatenate([np.ravel(a) for a in (y if isinstance(y, (list, tuple)) else [y])]).astype(np.float64)
    eps = np.finfo(float).eps
    return 20 * math.log10(max(np.linalg.norm(xs), eps) / max(np.linalg.norm(xs - ys), eps))


def compute_activation_error(activations_match, err_func=compute_signal_to_quantization_noice_ratio):
    """{activation: {'qdq_err': err(pre, post)[, 'xmodel_err': err(float, post)]}}."""
    result = {}
    for name, match in activations_match.items():
        err = {"qdq_err": err_func(match["pre_qdq"], match["post_qdq"])}
        if match.get("float") is not None:
            err["xmodel_err"] = err_func(match["float"], match["post_qdq"])
        result[name] = err
    return result


def compute_weight_error(weights_match, err_func=compute_signal_to_quantization_noice_ratio):
    """{weight: err(float, dequantized)}."""
    return {name: err_func(m["float"], m["dequantized"]) for name, m in weights_match.items()}
