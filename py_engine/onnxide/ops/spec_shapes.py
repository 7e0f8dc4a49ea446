"""Load checks of input shapes that onnx's shape inference (so onnxruntime) refuses, on what is known at load (not in
a node's rule, which also runs on a run's shapes): Resize's `sizes` of another length than its axes or X's rank, or a
graph input of no fixed length; inputs of ops that broadcast whose static dims cannot broadcast (a dead node too);
StringNormalizer's X not of shape [C] or [1, C]."""
import numpy as np

from ..errors import Fail
from .registry import node_opset, normalize_domain


def check_resize_sizes(node, types, graph, opsets):
    """Fail, as onnxruntime, where a Resize (opset 11 on) with a `sizes` input and X of known rank gets sizes whose
    length is not that rank (or the number of `axes`): a known length, or a graph input declaring none (onnx's
    inference then counts 0 elements, so onnxruntime refuses it whatever is fed); a length of 0 counts as no sizes,
    refused unless scales are given; sizes of a known length and scales both given."""
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
    scales = node.inputs[2] if len(node.inputs) > 2 else ""
    with_scales = bool(scales) and not (scales in graph.initializers and np.size(graph.initializers[scales]) == 0)
    if n == 0 and with_scales:
        return  # (the spec's form: sizes empty, scales given)
    if n == 0 or n and with_scales and (types.get(scales) or (None, None))[1] != [0]:
        raise Fail(f"{where} Either `sizes` or `scales` must be provided, but not both of them")
    shown = 0 if n is None else n
    axes = node.attrs.get("axes")
    if axes and n != len(axes):
        raise Fail(f"{where} Number of elements of input 'sizes' ({shown}) does not match the number of axes "
                   f"({len(axes)}).")
    if not axes and n != rank:
        raise Fail(f"{where} Number of elements of input 'sizes' ({shown}) must be same as rank of input 'X' "
                   f"({rank}).")


# ai.onnx ops whose inputs broadcast multidirectionally (numpy) from opset 7 (before, B is broadcast onto A)
BROADCAST = frozenset(("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Less", "Greater",
                       "LessOrEqual", "GreaterOrEqual", "Where", "Max", "Min", "Sum", "Mean", "Mod", "BitShift",
                       "BitwiseAnd", "BitwiseOr", "BitwiseXor"))


def _trusted(graph, name):
    """Whether `name`'s dims are what onnxruntime knows too: an input or initializer of `graph`, or a value whose type
    inference gave (a declared value_info or output that disagrees with inference is merged leniently there: the
    differing dims become unknown)."""
    if name in graph.initializers or any(v.name == name for v in graph.inputs):
        return True
    vi = graph.value_info.get(name) or next((o for o in graph.outputs if o.name == name), None)
    return vi is not None and vi.inferred


def check_broadcast(node, types, graph, opsets):
    """Fail, as onnx's multidirectional broadcast inference, where every input of a broadcasting op has a known rank
    and, at some axis, two inputs have static sizes other than 1 that differ."""
    if node.op_type not in BROADCAST or normalize_domain(node.domain) or node_opset(node, opsets) < 7:
        return
    shapes = []
    for x in node.inputs:
        entry = types.get(x) if x else None
        if entry is None or not isinstance(entry[0], int) or not isinstance(entry[1], list) or \
                not _trusted(graph, x):
            return
        shapes.append(entry[1])
    rank = max((len(s) for s in shapes), default=0)
    for i in range(rank):
        sizes = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        static = {d for d in sizes if isinstance(d, int) and d != 1}
        if len(static) > 1:
            raise Fail(f"Node ({node.name}) Op ({node.op_type}) [ShapeInferenceError] Incompatible dimensions (inputs "
                       f"{[list(s) for s in shapes]})")


def check_string_normalizer(node, types, graph, opsets):
    """Fail, as onnx's inference, where StringNormalizer's X has a known rank other than 1 or 2, or rank 2 with a
    first dim that is not a static 1."""
    if node.op_type != "StringNormalizer" or normalize_domain(node.domain) or not node.inputs:
        return
    entry = types.get(node.inputs[0])
    dims = entry[1] if entry and isinstance(entry[1], list) and _trusted(graph, node.inputs[0]) else None
    if dims is None or len(dims) == 1 or len(dims) == 2 and dims[0] == 1:
        return
    raise Fail(f"Node ({node.name}) Op (StringNormalizer) [ShapeInferenceError] Input shape must have either [C] or "
               "[1,C] dimensions where C > 0")
