"""Load checks of input shapes that onnx's shape inference (so onnxruntime) refuses and that need the graph, not only
a node's facts: Resize's `sizes` of another length than its axes or X's rank, or a graph input of no fixed length."""
import numpy as np

from ..errors import Fail
from .registry import node_opset, normalize_domain


def check_resize_sizes(node, types, graph, opsets):
    """Fail, as onnxruntime, where a Resize (opset 11 on) with a `sizes` input and X of known rank gets sizes whose
    length is not that rank (or the number of `axes`): a known length, or a graph input declaring none (onnx's
    inference then counts 0 elements, so onnxruntime refuses it whatever is fed); a length of 0 counts as no sizes,
    refused unless scales are given."""
    if node.op_type != "Resize" or normalize_domain(node.domain) or node_opset(node, opsets) < 11 or \
            len(node.inputs) < 4 or not node.inputs[3]:
        return
    x = types.get(node.inputs[0])
    rank = len(x[1]) if x and isinstance(x[0], int) and isinstance(x[1], list) else None
    if rank is None:
        return
    sizes = node.inputs[3]
    entry = types.get(sizes)
    dims = entry[1] if entry and isinstance(entry[1], list) else None
    if sizes in graph.initializers:
        n = int(np.size(graph.initializers[sizes]))
    elif dims is not None and len(dims) == 1 and isinstance(dims[0], int):
        n = dims[0]
    elif any(v.name == sizes for v in graph.inputs):
        n = None  # (a graph input of no fixed length: onnx's inference counts 0 elements)
    else:
        return  # (a value whose length inference here does not know: the kernel checks it)
    where = f"Node ({node.name}) Op (Resize) [ShapeInferenceError]"
    if n == 0:
        scales = node.inputs[2] if len(node.inputs) > 2 else ""
        if scales and not (scales in graph.initializers and np.size(graph.initializers[scales]) == 0):
            return  # (the spec's form: sizes empty, scales given)
        raise Fail(f"{where} Either `sizes` or `scales` must be provided, but not both of them")
    shown = 0 if n is None else n
    axes = node.attrs.get("axes")
    if axes and n != len(axes):
        raise Fail(f"{where} Number of elements of input 'sizes' ({shown}) does not match the number of axes "
                   f"({len(axes)}).")
    if not axes and n != rank:
        raise Fail(f"{where} Number of elements of input 'sizes' ({shown}) must be same as rank of input 'X' "
                   f"({rank}).")
