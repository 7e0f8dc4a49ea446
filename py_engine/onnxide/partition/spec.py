"""NodeSpec: what an execution provider sees of a node when it claims it — the node, its OpDef and opset, and its
inputs' and outputs' types and shapes as far as the graph fixes them — and the type table it is read from."""
import numpy as np

from .. import dtypes as dt
from ..ir.model import has_subgraphs, type_dims

SEQUENCE, MAP, OPTIONAL, SPARSE = "sequence", "map", "optional", "sparse"  # the non-tensor kinds of a type


def type_entry(tp):
    """(element type code, dims) for a tensor TypeProto, (kind, None) for a sequence / map / optional / sparse
    tensor, None when unknown."""
    if tp is None:
        return None
    if tp.tensor_type is not None:
        return (tp.tensor_type.elem_type or None, type_dims(tp))
    for kind, field in ((SEQUENCE, "sequence_type"), (MAP, "map_type"), (OPTIONAL, "optional_type"),
                        (SPARSE, "sparse_tensor_type")):
        if getattr(tp, field, None) is not None:
            return (kind, None)
    return None


def graph_types(graph, outer=None):
    """name -> (type, dims) for what `graph` can read: the enclosing graphs' values (`outer`), then its own
    initializers, inputs, outputs and declared / inferred value_info."""
    types = dict(outer or {})
    for name, arr in graph.initializers.items():
        if isinstance(arr, np.ndarray):
            try:
                types[name] = (dt.code_of(arr.dtype), list(arr.shape))
            except KeyError:
                types[name] = None
    for vi in list(graph.value_info.values()) + list(graph.outputs) + list(graph.inputs):
        entry = type_entry(vi.type)
        if entry is not None or vi.name not in types:
            types[vi.name] = entry
    return types


class NodeSpec:
    """The claim question: `node`, `opdef` (ops/registry.py, with its host / meta inputs) at `opset`;
    `input_types` / `output_types`: an element type code per value, a kind string (SEQUENCE, MAP, OPTIONAL,
    SPARSE) for non-tensors, None when unknown or absent; `input_shapes` / `output_shapes`: dims lists (int,
    symbolic name or None each) or None."""

    __slots__ = ("node", "opdef", "opset", "input_types", "input_shapes", "output_types", "output_shapes")

    def __init__(self, node, opdef, opset, types):
        self.node, self.opdef, self.opset = node, opdef, opset
        ins = [types.get(x) if x else None for x in node.inputs]
        outs = [types.get(x) if x else None for x in node.outputs]
        self.input_types = [e[0] if e else None for e in ins]
        self.input_shapes = [e[1] if e else None for e in ins]
        self.output_types = [e[0] if e else None for e in outs]
        self.output_shapes = [e[1] if e else None for e in outs]

    @property
    def op_type(self):
        return self.node.op_type

    @property
    def domain(self):
        return self.node.domain

    @property
    def attrs(self):
        return self.node.attrs

    def static_shape(self, i):
        """Input i's shape as a tuple of ints when the graph fixes every dim, else None."""
        dims = self.input_shapes[i] if i < len(self.input_shapes) else None
        return tuple(dims) if dims is not None and all(isinstance(d, int) for d in dims) else None

    def static_shapes(self):
        return [self.static_shape(i) if x else None for i, x in enumerate(self.node.inputs)]

    def has_subgraphs(self):
        return has_subgraphs(self.node)

    def tensor_inputs(self):
        """True when every present input is a tensor of a known element type."""
        return all(isinstance(t, int) for x, t in zip(self.node.inputs, self.input_types) if x)
