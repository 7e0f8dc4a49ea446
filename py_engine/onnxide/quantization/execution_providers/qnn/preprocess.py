"""qnn_preprocess_model: the QNN fusions (Gelu, LpNormalization, optionally LayerNormalization) and channel-last
graph inputs / outputs (a Transpose beside each), saved to a new file."""
from pathlib import Path

from ....proto.onnx_api import helper, onnx
from ...fusions import FusionGelu, FusionLayerNormalization
from ...onnx_model import ONNXModel
from .fusion_lpnorm import FusionLpNormalization


def _rank(vi):
    t = vi.type.tensor_type
    return len(t.shape.dim) if t.HasField("shape") else None


def _permute_shape(vi, perm):
    dims = [onnx.TensorShapeProto.Dimension() for _ in perm]
    for new, old in zip(dims, perm):
        new.CopyFrom(vi.type.tensor_type.shape.dim[old])
    del vi.type.tensor_type.shape.dim[:]
    vi.type.tensor_type.shape.dim.extend(dims)


def _channel_last(model, inputs, outputs):
    """Graph inputs / outputs named in `inputs` / `outputs` become N, spatial..., C; a Transpose restores N, C,
    spatial... inside. ValueError for a name that is not there or of rank < 3."""
    graph = model.model.graph
    for names, ios, kind in ((inputs, graph.input, "input"), (outputs, graph.output, "output")):
        for name in names:
            vi = next((v for v in ios if v.name == name), None)
            if vi is None:
                raise ValueError(f"Model does not have an {kind} named '{name}'")
            rank = _rank(vi)
            if rank is None or rank < 3:
                raise ValueError(f"Expected {kind} '{name}' to be of rank >= 3 to make it channel-last (rank is "
                                 f"{rank})")
            inner = f"{name}_channel_first"
            last = [0] + list(range(2, rank)) + [1]  # N, C, spatial -> N, spatial, C
            first = [0, rank - 1] + list(range(1, rank - 1))
            if kind == "input":
                model.replace_input_of_all_nodes(name, inner)
                model.add_node(helper.make_node("Transpose", [name], [inner], name=f"{name}_to_channel_first",
                                                perm=first))
            else:
                model.replace_output_of_all_nodes(name, inner)
                model.replace_input_of_all_nodes(name, inner)
                model.add_node(helper.make_node("Transpose", [inner], [name], name=f"{name}_to_channel_last",
                                                perm=last))
            _permute_shape(vi, last)
    return bool(inputs or outputs)


def qnn_preprocess_model(model_input, model_output, fuse_layernorm=False, save_as_external_data=False,
                         all_tensors_to_one_file=False, external_data_location=None,
                         external_data_size_threshold=1024, external_data_convert_attribute=False,
                         inputs_to_make_channel_last=None, outputs_to_make_channel_last=None):
    """Applies the fusions (and channel-last I/O) to model_input and saves model_output when anything changed;
    returns whether it did."""
    model = model_input if isinstance(model_input, onnx.ModelProto) else onnx.load(str(Path(model_input)))
    onnx_model = ONNXModel(model)
    modified = FusionGelu(onnx_model).apply()
    modified = FusionLpNormalization(onnx_model).apply() or modified
    if fuse_layernorm:
        modified = FusionLayerNormalization(onnx_model).apply() or modified
    modified = _channel_last(onnx_model, list(inputs_to_make_channel_last or []),
                             list(outputs_to_make_channel_last or [])) or modified
    if modified:
        onnx_model.topological_sort()
        onnx.save_model(onnx_model.model, str(model_output), save_as_external_data=save_as_external_data,
                        all_tensors_to_one_file=all_tensors_to_one_file, location=external_data_location,
                        size_threshold=external_data_size_threshold,
                        convert_attribute=external_data_convert_attribute)
    return modified
