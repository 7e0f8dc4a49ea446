"""The IR classes and their construction from a decoded ModelProto (validation, subgraphs, function inlining)."""
import numpy as np

from .. import dtypes as dt
from ..errors import InvalidGraph, NoModel
from ..proto import schema as S
from ..tensors import sparse_to_numpy, to_numpy


class ValueInfo:
    """A named value's declared type: the TypeProto (or None when undeclared)."""

    __slots__ = ("name", "type", "doc", "inferred")

    def __init__(self, name, type_proto=None, doc="", inferred=False):
        self.name, self.type, self.doc = name, type_proto, doc
        self.inferred = inferred  # True when onnxide's inference, not the model, gave the type

    @property
    def elem_type(self):
        t = self.type
        return t.tensor_type.elem_type if t is not None and t.tensor_type is not None else None

    @property
    def shape(self):
        """List of int / str / None per dim, or None when the rank is unknown."""
        return type_dims(self.type)


def type_dims(tp):
    """A TypeProto's tensor dims as int (static) / str (symbolic) / None (unknown) each; None for unknown rank.
    A negative dim_value (seen in the wild) means unknown, as in onnxruntime."""
    if tp is None or tp.tensor_type is None or tp.tensor_type.shape is None:
        return None
    return [d.dim_value if d.dim_value is not None and d.dim_value >= 0 else (d.dim_param or None)
            for d in tp.tensor_type.shape.dim]


class Node:
    """One operator application; `attrs` holds converted attribute values, `attr_protos` the originals."""

    __slots__ = ("op_type", "domain", "name", "inputs", "outputs", "attrs", "attr_protos", "opset", "doc")

    def __init__(self, op_type, inputs, outputs, attrs=None, domain="", name="", attr_protos=None, opset=None):
        self.op_type, self.domain, self.name = op_type, domain, name
        self.inputs, self.outputs = list(inputs), list(outputs)
        self.attrs = dict(attrs or {})
        self.attr_protos = list(attr_protos or [])
        self.opset = opset  # per-node override (function bodies with their own opset imports)
        self.doc = ""

    def __repr__(self):
        return f"Node({self.op_type}, {self.name!r}, {self.inputs} -> {self.outputs})"


def subgraphs(node):
    """The graphs `node`'s attributes hold (If branches, Loop/Scan bodies, GRAPHS lists), in attribute order."""
    for v in node.attrs.values():
        for g in (v if isinstance(v, list) else [v]):
            if hasattr(g, "nodes"):
                yield g


class Graph:
    """A graph: nodes in order, inputs/outputs as ValueInfo, initializers as numpy arrays, known value types."""

    def __init__(self, name="", nodes=(), inputs=(), outputs=(), initializers=None, value_info=None, doc=""):
        self.name, self.doc = name, doc
        self.nodes = list(nodes)
        self.inputs, self.outputs = list(inputs), list(outputs)
        self.initializers = dict(initializers or {})
        self.value_info = dict(value_info or {})
        self.sparse_initializer_names = set()

    def value_type(self, name):
        for vi in self.inputs:
            if vi.name == name:
                return vi.type
        for vi in self.outputs:
            if vi.name == name:
                return vi.type
        vi = self.value_info.get(name)
        return vi.type if vi is not None else None


class Model:
    """A loaded model: the main graph, opset per domain, metadata, and the proto it came from."""

    def __init__(self, graph, opsets, ir_version=0, producer_name="", producer_version="", domain="",
                 model_version=0, doc="", metadata=None, functions=()):
        self.graph, self.opsets = graph, dict(opsets)
        self.ir_version, self.producer_name, self.producer_version = ir_version, producer_name, producer_version
        self.domain, self.model_version, self.doc = domain, model_version, doc
        self.metadata = dict(metadata or {})
        self.functions = list(functions)


def attribute_value(a, base_dir, build_graph):
    """Convert an AttributeProto to a Python value (see ops/registry.py for the mapping)."""
    t = a.type
    if t == 0:  # untyped (very old models): infer from which field is set
        t = _guess_attr_type(a)
    field = {S.ATTR_TENSOR: "t", S.ATTR_GRAPH: "g", S.ATTR_SPARSE_TENSOR: "sparse_tensor", S.ATTR_TYPE_PROTO: "tp"}
    if t in field and getattr(a, field[t]) is None:
        raise InvalidGraph(f"Attribute '{a.name}' of type {t} carries no value")
    if t == S.ATTR_FLOAT:
        return float(a.f)
    if t == S.ATTR_INT:
        return int(a.i)
    if t == S.ATTR_STRING:
        return bytes(a.s).decode("utf-8", errors="surrogateescape")
    if t == S.ATTR_TENSOR:
        return to_numpy(a.t, base_dir)
    if t == S.ATTR_GRAPH:
        return build_graph(a.g)
    if t == S.ATTR_SPARSE_TENSOR:
        return sparse_to_numpy(a.sparse_tensor, base_dir)
    if t == S.ATTR_TYPE_PROTO:
        return a.tp
    if t == S.ATTR_FLOATS:
        return [float(v) for v in a.floats]
    if t == S.ATTR_INTS:
        return [int(v) for v in a.ints]
    if t == S.ATTR_STRINGS:
        return [bytes(s).decode("utf-8", errors="surrogateescape") for s in a.strings]
    if t == S.ATTR_TENSORS:
        return [to_numpy(x, base_dir) for x in a.tensors]
    if t == S.ATTR_GRAPHS:
        return [build_graph(g) for g in a.graphs]
    if t == S.ATTR_SPARSE_TENSORS:
        return [sparse_to_numpy(x, base_dir) for x in a.sparse_tensors]
    if t == S.ATTR_TYPE_PROTOS:
        return list(a.type_protos)
    raise InvalidGraph(f"Attribute '{a.name}' has unsupported type {a.type}")


def _guess_attr_type(a):
    for code, field in ((S.ATTR_FLOATS, "floats"), (S.ATTR_INTS, "ints"), (S.ATTR_STRINGS, "strings"),
                        (S.ATTR_TENSORS, "tensors"), (S.ATTR_GRAPHS, "graphs")):
        if getattr(a, field):
            return code
    if a.t is not None:
        return S.ATTR_TENSOR
    if a.g is not None:
        return S.ATTR_GRAPH
    if len(a.s):
        return S.ATTR_STRING
    if a.f:
        return S.ATTR_FLOAT
    return S.ATTR_INT


_TYPE_FIELDS = ("tensor_type", "sequence_type", "map_type", "optional_type", "sparse_tensor_type")


def _declared(tp):
    """A TypeProto that says something, else None (an empty one declares no type: inference may fill it)."""
    return tp if tp is not None and any(getattr(tp, f, None) is not None for f in _TYPE_FIELDS) else None


def _value_infos(vis):
    return [ValueInfo(v.name, _declared(v.type), v.doc_string) for v in vis]


def build_graph(gp, base_dir, outer_names=frozenset(), check=True):
    """IR Graph from a GraphProto; checks that every node input is defined (in this graph or an outer one)."""
    inits = {}
    for t in gp.initializer:
        if not t.name:
            raise InvalidGraph(f"Graph '{gp.name}' has an initializer without a name")
        inits[t.name] = to_numpy(t, base_dir)
    g = Graph(gp.name, (), _value_infos(gp.input), _value_infos(gp.output), inits,
              {v.name: ValueInfo(v.name, _declared(v.type)) for v in gp.value_info}, gp.doc_string)
    for st in gp.sparse_initializer:
        g.initializers[st.values.name] = sparse_to_numpy(st, base_dir)
        g.sparse_initializer_names.add(st.values.name)
    known = set(outer_names) | set(inits) | {v.name for v in g.inputs}
    inner_scope = [None]

    def sub(sgp):
        return build_graph(sgp, base_dir, frozenset(inner_scope[0]), check)

    for i, n in enumerate(gp.node):
        if check:
            for name in n.input:
                if name and name not in known:
                    raise InvalidGraph(
                        f"Node '{n.name or n.op_type + str(i)}' ({n.op_type}) input '{name}' is not a graph input, "
                        f"initializer, or output of a previous node")
        inner_scope[0] = known
        attrs = {}
        for a in n.attribute:
            if a.ref_attr_name:
                attrs[a.name] = AttrRef(a.ref_attr_name)
            else:
                attrs[a.name] = attribute_value(a, base_dir, sub)
        g.nodes.append(Node(n.op_type, n.input, n.output, attrs, n.domain, n.name, n.attribute))
        known.update(o for o in n.output if o)
    if check:
        for o in g.outputs:
            if o.name not in known:
                raise InvalidGraph(f"Graph output '{o.name}' is not produced by any node or input")
    return g


class AttrRef:
    """An attribute that refers to an attribute of the enclosing function (`ref_attr_name`)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def load_model(mp, base_dir=None):
    """Build the IR Model from a decoded ModelProto: opsets, graph, inlined local functions."""
    if mp.graph is None:
        raise NoModel("Model has no graph")
    opsets = {}
    for o in mp.opset_import:
        opsets["" if o.domain in ("", "ai.onnx") else o.domain] = int(o.version)
    if not mp.opset_import:
        if mp.ir_version >= 3:
            raise InvalidGraph("Model has no opset_import")
        opsets[""] = 1
    graph = build_graph(mp.graph, base_dir, check=not mp.functions)
    model = Model(graph, opsets, mp.ir_version, mp.producer_name, mp.producer_version, mp.domain,
                  mp.model_version, mp.doc_string, {e.key: e.value for e in mp.metadata_props}, mp.functions)
    if mp.functions:
        from .functions import inline_functions  # functions.py builds Nodes: imported here, not at the top
        inline_functions(model, base_dir, build_graph, attribute_value)
    for name, arr in graph.initializers.items():
        if isinstance(arr, np.ndarray) and arr.dtype == object and dt.code_of(arr.dtype) != dt.STRING:
            raise InvalidGraph(f"Initializer '{name}' has an unsupported element type")
    return model
