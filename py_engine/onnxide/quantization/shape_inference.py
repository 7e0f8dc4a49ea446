"""quant_pre_process: opset 11 at least, onnx shape inference (with data propagation for the symbolic pass), and
onnxide's basic graph optimizations, before quantization."""
import os
import tempfile
from pathlib import Path

from ..proto.onnx_api import onnx
from .base import opset_of
from .quant_utils import add_infer_metadata, model_or_path


def _save(model, path, save_as_external_data, all_tensors_to_one_file, external_data_location,
          external_data_size_threshold):
    onnx.save_model(model, str(path), save_as_external_data=save_as_external_data,
                    all_tensors_to_one_file=all_tensors_to_one_file,
                    location=external_data_location if save_as_external_data else None,
                    size_threshold=external_data_size_threshold)


def _upsample_to_resize(model):
    """Upsample (deprecated) as the Resize of opset 10 it equals; the version converter then carries it on."""
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx") and o.version < 10:
            return set()
    done = set()
    for node in model.graph.node:
        if node.op_type == "Upsample" and node.domain in ("", "ai.onnx") and len(node.input) == 2:
            mode = next((a.s for a in node.attribute if a.name == "mode"), b"nearest")
            node.op_type = "Resize"
            del node.attribute[:]
            node.attribute.extend([onnx.helper.make_attribute("mode", mode.decode())])
            done.add(node.output[0])
    return done


def quant_pre_process(input_model=None, output_model_path=None, skip_optimization=False, skip_onnx_shape=False,
                      skip_symbolic_shape=False, auto_merge=False, int_max=2**31 - 1, guess_output_rank=False,
                      verbose=0, save_as_external_data=False, all_tensors_to_one_file=False,
                      external_data_location=None, external_data_size_threshold=1024, **deprecated_kwargs):
    """Writes output_model_path: the model upgraded to opset 11 when older (Upsample becomes Resize), its shapes
    inferred, and (unless skip_optimization) optimized by an onnxide session at the basic level."""
    if input_model is None:
        input_model = deprecated_kwargs.pop("input_model_path", None)
    model = model_or_path(input_model)
    if opset_of(model) < 11:
        resized = _upsample_to_resize(model)
        model = onnx.version_converter.convert_version(model, 11)
        for node in model.graph.node:
            if node.op_type == "Resize" and node.output[0] in resized:  # Upsample's (and Resize-10's) coordinates
                node.attribute.extend([onnx.helper.make_attribute("coordinate_transformation_mode", "asymmetric"),
                                       onnx.helper.make_attribute("nearest_mode", "floor")])
    if not skip_symbolic_shape:
        model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    if not skip_onnx_shape:
        model = onnx.shape_inference.infer_shapes(model)
    if not skip_optimization:
        from ..runtime.options import GraphOptimizationLevel, SessionOptions
        from ..runtime.session import InferenceSession
        with tempfile.TemporaryDirectory(prefix="onnxide.pre_process.") as d:
            opt_path = os.path.join(d, "optimized.onnx")
            so = SessionOptions()
            so.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_BASIC
            so.optimized_model_filepath = opt_path
            InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            model = onnx.load(opt_path)
        if not skip_onnx_shape:
            model = onnx.shape_inference.infer_shapes(model)
    add_infer_metadata(model)
    _save(model, Path(output_model_path), save_as_external_data, all_tensors_to_one_file,
          external_data_location or Path(output_model_path).name + ".data", external_data_size_threshold)
