"""IR → ModelProto, for `optimized_model_filepath` and `onnxide optimize` (functions are already inlined)."""
import numpy as np

from .. import proto as P
from ..proto import schema as S
from ..tensors import from_numpy


def tensor_value_info(name, shape, elem=1):
    """A ValueInfoProto of a tensor: `shape` entries are dim values (int) or dim params (str)."""
    dims = [P.Dimension(dim_param=d) if isinstance(d, str) else P.Dimension(dim_value=d) for d in shape]
    return P.ValueInfoProto(name=name, type=P.TypeProto(tensor_type=P.TypeProtoTensor(
        elem_type=elem, shape=P.TensorShapeProto(dim=dims))))


def make_attribute(name, value):
    """An AttributeProto for a Python value (int, float, str, ndarray, lists of those, or a Graph)."""
    a = P.AttributeProto(name=name)
    if isinstance(value, bool) or isinstance(value, (int, np.integer)):
        a.type, a.i = S.ATTR_INT, int(value)
    elif isinstance(value, (float, np.floating)):
        a.type, a.f = S.ATTR_FLOAT, float(value)
    elif isinstance(value, str):
        a.type, a.s = S.ATTR_STRING, value.encode("utf-8")
    elif isinstance(value, np.ndarray):
        a.type, a.t = S.ATTR_TENSOR, from_numpy(value)
    elif hasattr(value, "nodes"):
        a.type, a.g = S.ATTR_GRAPH, graph_to_proto(value)
    elif isinstance(value, (list, tuple)):
        items = list(value)
        if all(isinstance(v, (int, np.integer)) for v in items):
            a.type, a.ints = S.ATTR_INTS, [int(v) for v in items]
        elif all(isinstance(v, (int, float, np.number)) for v in items):
            a.type, a.floats = S.ATTR_FLOATS, [float(v) for v in items]
        elif all(isinstance(v, str) for v in items):
            a.type, a.strings = S.ATTR_STRINGS, [v.encode("utf-8") for v in items]
        elif all(isinstance(v, np.ndarray) for v in items):
            a.type, a.tensors = S.ATTR_TENSORS, [from_numpy(v) for v in items]
        else:
            a.type, a.graphs = S.ATTR_GRAPHS, [graph_to_proto(v) for v in items]
    else:
        raise TypeError(f"cannot encode attribute {name!r} of type {type(value).__name__}")
    return a


def node_to_proto(n):
    kept = {a.name: a for a in n.attr_protos if not a.ref_attr_name}
    attrs = []
    for name, value in n.attrs.items():
        p = kept.get(name)
        if p is not None and p.type not in (S.ATTR_GRAPH, S.ATTR_GRAPHS):
            attrs.append(p)
        else:
            attrs.append(make_attribute(name, value))
    return P.NodeProto(op_type=n.op_type, domain=n.domain, name=n.name, input=n.inputs, output=n.outputs,
                       attribute=attrs)


def graph_to_proto(g):
    def vi(v):
        return P.ValueInfoProto(name=v.name, type=v.type)

    return P.GraphProto(
        name=g.name, doc_string=g.doc, node=[node_to_proto(n) for n in g.nodes],
        initializer=[from_numpy(a, name) for name, a in g.initializers.items()],
        input=[vi(v) for v in g.inputs], output=[vi(v) for v in g.outputs],
        value_info=[vi(v) for v in g.value_info.values() if v.type is not None])


def model_to_proto(m):
    opsets = dict(m.opsets)
    return P.ModelProto(
        ir_version=max(m.ir_version, 3), producer_name=m.producer_name or "onnxide",
        producer_version=m.producer_version, domain=m.domain, model_version=m.model_version, doc_string=m.doc,
        graph=graph_to_proto(m.graph),
        opset_import=[P.OperatorSetIdProto(domain=d, version=v) for d, v in sorted(opsets.items())],
        metadata_props=[P.StringStringEntryProto(key=k, value=v) for k, v in m.metadata.items()])
