"""The IR classes and their construction from a decoded ModelProto (validation, subgraphs, function inlining)."""
import numpy as np

from .. import dtypes as dt
from ..errors import Fail, InvalidArgument, InvalidGraph, NoModel
from ..proto import schema as S
from ..tensors import sparse_to_numpy, to_numpy


class ValueInfo:
    """A named value's declared type: the TypeProto (or None when undeclared)."""

    __slots__ = ("name", "_type", "doc", "inferred", "entry")

    def __init__(self, name, type_proto=None, doc="", inferred=False, entry=None):
        """`entry`: inference's (elem type, dims) the type is built from (ir/infer.py); with no `type_proto`, the
        TypeProto is built from it when first read (most inferred types are only ever read as entries)."""
        self.name, self._type, self.doc = name, type_proto, doc
        self.inferred = inferred  # True when onnxide's inference, not the model, gave the type
        self.entry = entry

    @property
    def type(self):
        if self._type is None and self.entry is not None:
            from ..ops.inference import type_proto
            self._type = type_proto(*self.entry)
        return self._type

    @type.setter
    def type(self, tp):
        self._type, self.entry = tp, None

    def type_entry(self):
        """The (elem type, dims) entry of the type (ops/inference.py's entry_of), None for no or other types."""
        if self.entry is not None:
            return self.entry
        from ..ops.inference import entry_of
        return entry_of(self._type)

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


def has_subgraphs(node):
    """Whether `node` holds a graph (subgraphs without making a generator: asked of every node on every inference)."""
    for v in node.attrs.values():
        if hasattr(v, "nodes") or type(v) is list and v and hasattr(v[0], "nodes"):
            return True
    return False


def subgraphs(node):
    """The graphs `node`'s attributes hold (If branches, Loop/Scan bodies, GRAPHS lists), in attribute order."""
    for v in node.attrs.values():
        if type(v) is list:
            if v and hasattr(v[0], "nodes"):  # (a GRAPHS list; a list attribute holds one type)
                yield from v
        elif hasattr(v, "nodes"):
            yield v


class Graph:
    """A graph: nodes in order, inputs/outputs as ValueInfo, initializers as numpy arrays, known value types."""

    def __init__(self, name="", nodes=(), inputs=(), outputs=(), initializers=None, value_info=None, doc=""):
        self.name, self.doc = name, doc
        self.nodes = list(nodes)
        self.inputs, self.outputs = list(inputs), list(outputs)
        self.initializers = dict(initializers or {})
        self.value_info = dict(value_info or {})
        self.sparse_initializer_names = set()
        self.reshape_hints = {}  # Reshape output -> its target as a constant with one -1 (optimizer/shape_values.py)

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


# each attribute type's value field (onnx's checker: a set field of another type is a mismatch)
_VALUE_FIELD = {S.ATTR_FLOAT: "f", S.ATTR_INT: "i", S.ATTR_STRING: "s", S.ATTR_TENSOR: "t", S.ATTR_GRAPH: "g",
                S.ATTR_SPARSE_TENSOR: "sparse_tensor", S.ATTR_TYPE_PROTO: "tp", S.ATTR_FLOATS: "floats",
                S.ATTR_INTS: "ints", S.ATTR_STRINGS: "strings", S.ATTR_TENSORS: "tensors", S.ATTR_GRAPHS: "graphs",
                S.ATTR_SPARSE_TENSORS: "sparse_tensors", S.ATTR_TYPE_PROTOS: "type_protos"}


_FIELD_ORDER = {f: i for i, f in enumerate(_VALUE_FIELD.values())}


def _present(v):
    """Whether a decoded field holds a value (a message, a non-empty list / bytes, a non-zero number)."""
    if v is None:
        return False
    return True if hasattr(v, "FIELDS") else bool(len(v)) if hasattr(v, "__len__") else v != 0


def _check_attribute(a, t, where):
    """onnx's checker rule: the value fields set belong to the declared type, one at most."""
    if t not in _VALUE_FIELD:
        raise InvalidGraph(f"{where}attribute '{a.name}' has unsupported type {a.type}")
    # (only the fields decoded or set can hold a value: the others are their class defaults, proto/wire.py)
    used = sorted((f for f, v in vars(a).items() if f in _FIELD_ORDER and _present(v)), key=_FIELD_ORDER.get)
    if len(used) > 1:
        raise InvalidGraph(f"{where}attribute '{a.name}' should not contain more than one value field "
                           f"({', '.join(used)})")
    if used and used[0] != _VALUE_FIELD[t]:
        raise InvalidGraph(f"{where}type field and data field mismatch in attribute {a.name}")


_TENSOR_DATA = ("float_data", "int32_data", "string_data", "int64_data", "raw_data", "double_data", "uint64_data")


def _check_tensor_fields(t, where):
    """onnx's checker rule for a tensor stored in the model: one data field (none when it has no elements). Applied
    to node attributes but Constant's (onnxruntime makes a Constant an initializer before its checker runs)."""
    if t is None or getattr(t, "data_location", 0) == 1:
        return
    fields = sum(_present(getattr(t, f, None)) for f in _TENSOR_DATA)
    empty = any(d == 0 for d in t.dims)
    if fields != (0 if empty else 1):
        why = "is 0-element but contains data!" if empty else "should contain one and only one value field."
        raise InvalidGraph(f"This is an invalid model. {where}Error TensorProto (tensor name: {t.name}) {why}")


def attribute_value(a, base_dir, build_graph, where=""):
    """Convert an AttributeProto to a Python value (see ops/registry.py for the mapping); `where` names its node in
    errors."""
    t = a.type
    if t == 0:  # untyped (very old models): infer from which field is set
        t = _guess_attr_type(a)
    _check_attribute(a, t, where)
    field = {S.ATTR_TENSOR: "t", S.ATTR_GRAPH: "g", S.ATTR_SPARSE_TENSOR: "sparse_tensor", S.ATTR_TYPE_PROTO: "tp"}
    if t in field and getattr(a, field[t]) is None:
        raise InvalidGraph(f"{where}attribute '{a.name}' of type {t} carries no value")
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
    return list(a.type_protos)  # S.ATTR_TYPE_PROTOS (_check_attribute refused any other type)


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


def _check_types(vis, where, used=None):
    """A declared tensor type's element type must be one ONNX defines, and not 0 (undefined) where the value is used:
    `used` names them, None for all; a sequence, optional or map must declare what it holds (onnxruntime:
    InvalidArgument)."""
    for v in vis:
        tp = v.type
        while tp is not None:
            if tp.tensor_type is not None or tp.sparse_tensor_type is not None:
                code = (tp.tensor_type or tp.sparse_tensor_type).elem_type
                if code not in dt.NAMES and (code or used is None or v.name in used):
                    raise InvalidArgument(f"Failed to load model with error: Invalid tensor data type {code} "
                                          f"(of {where} '{v.name}')")
                break
            inner = tp.sequence_type or tp.optional_type
            nested = inner is not None or tp.map_type is not None
            tp = inner.elem_type if inner is not None else tp.map_type.value_type if tp.map_type is not None else None
            if nested and _declared(tp) is None:  # (a sequence, optional or map of nothing)
                raise InvalidArgument(f"Failed to load model with error: Unsupported type proto value case:0 (the "
                                      f"element type of {where} '{v.name}' declares nothing)")


def _node_label(n, i):
    return f"Node '{n.name or n.op_type + str(i)}' ({n.op_type})"


def _check_definitions(gp, inits, main, scope=frozenset(), owner=None):
    """onnxruntime's load checks of one graph: unique input names (and initializer names in a body: onnx's checker
    runs on each node with a body; the main graph's last initializer of a name counts), typed main-graph inputs, every
    value defined once (node outputs never redefine an input, an initializer or another node's output, nor, in a
    body, a name its enclosing graphs define before its node — `scope`, the node `owner`: onnx's SSA rule; a body's
    inputs and initializers may hide such names), no node reading its own output, named inputs, unique node names
    (Constants aside), declared element types ONNX defines. Returns the names the graph defines."""
    if owner is not None and not gp.name:  # (onnx's checker on each node with a body, in onnxruntime)
        raise InvalidGraph(f"This is an invalid model. In Node, (\"{owner.name}\", {owner.op_type}, \"{owner.domain}\", "
                           "-1) , Error Field 'name' of 'graph' is required to be non-empty.")
    seen = set()
    for t in list(gp.initializer) + [st.values for st in gp.sparse_initializer if st.values is not None]:
        if t.name in seen and owner is not None:  # (the main graph's: onnxruntime keeps the last, with a warning)
            raise InvalidGraph(f"This is an invalid model. In Node, (\"{owner.name}\", {owner.op_type}, "
                               f"\"{owner.domain}\", -1) , Error {t.name} initializer name is not unique")
        seen.add(t.name)
    defined = set(inits)
    for v in gp.input:
        if not v.name:
            raise Fail(f"This is an invalid model. Graph '{gp.name}' has an input without a name.")
        if v.name in defined and v.name not in inits:
            raise Fail(f"Error: Duplicate definition-site for ({v.name}).")
        if main and v.name not in inits and _declared(v.type) is None:
            raise Fail(f"This is an invalid model. Model input ({v.name}) does not have type information.")
        defined.add(v.name)
    node_names = set()
    for n in gp.node:
        for o in n.output:
            if o and o in defined:
                raise Fail(f"This is an invalid model. Error: Duplicate definition of name ({o}).")
            if o and o in scope:
                raise InvalidGraph(f"This is an invalid model. In Node, (\"{owner.name}\", {owner.op_type}, "
                                   f"\"{owner.domain}\", -1) , Error Graph must be in single static assignment (SSA) "
                                   f"form, however '{o}' has been used as output names multiple times.")
            if o and o in n.input:
                raise Fail(f"This is an invalid model. Error: the graph is not acyclic (node {n.name!r} reads its "
                           f"output '{o}').")
            defined.add(o)
        # (Constant nodes become initializers before onnxruntime checks names: silero VAD's have one name)
        if n.name and not (n.op_type == "Constant" and n.domain in ("", "ai.onnx")):
            if n.name in node_names:
                raise Fail(f"This is an invalid model. Error: two nodes with same node name ({n.name}).")
            node_names.add(n.name)
    if any(not v.name for v in gp.output):
        raise Fail(f"This is an invalid model. Graph '{gp.name}' has an output without a name.")
    _check_types(gp.input, "input")
    _check_types(gp.output, "output")
    _check_types(gp.value_info, "value", defined)
    _check_initializer_inputs(gp)
    return defined


def _check_initializer_inputs(gp):
    """An initializer that is also a graph input must have the element type and the dims the input declares, as
    onnxruntime's graph construction checks (Fail, its messages)."""
    inits = {t.name: t for t in gp.initializer}
    for v in gp.input:
        t, tt = inits.get(v.name), v.type.tensor_type if v.type is not None else None
        if t is None or tt is None:
            continue
        if tt.elem_type and t.data_type != tt.elem_type:
            raise Fail(f"Tensor element type mismatch. {t.data_type} != {tt.elem_type} (initializer and graph input "
                       f"'{v.name}')")
        if tt.shape is None:
            continue
        dims = list(t.dims)
        if len(dims) != len(tt.shape.dim):
            raise Fail(f"Output:{v.name} [ShapeInferenceError] Mismatch between number of inferred and declared "
                       f"dimensions. inferred={len(dims)} declared={len(tt.shape.dim)}")
        for i, (have, d) in enumerate(zip(dims, tt.shape.dim)):
            if d.dim_value is not None and d.dim_value >= 0 and not d.dim_param and d.dim_value != have:
                raise Fail(f"Output:{v.name} [ShapeInferenceError] Can't merge shape info. Both inferred and declared "
                           f"dimension have values but they differ. Inferred={have} Declared={d.dim_value} "
                           f"Dimension={i}")


def build_graph(gp, base_dir, outer_names=frozenset(), check=True, main=False, scope=frozenset(), owner=None):
    """IR Graph from a GraphProto; checks that every value is defined once and every node input is defined (in
    this graph — in any order in the main graph, before the node in a body, as onnx's checker — or in an enclosing
    one). A body's `scope`: what its enclosing graphs define before its node `owner` (its node outputs may not
    redefine those)."""
    inits = {}
    for t in gp.initializer:
        if not t.name:
            raise InvalidGraph(f"Graph '{gp.name}' has an initializer without a name")
        inits[t.name] = to_numpy(t, base_dir)
    defined = _check_definitions(gp, inits, main, scope if check else frozenset(), owner)
    g = Graph(gp.name, (), _value_infos(gp.input), _value_infos(gp.output), inits,
              {v.name: ValueInfo(v.name, _declared(v.type)) for v in gp.value_info}, gp.doc_string)
    for st in gp.sparse_initializer:
        g.initializers[st.values.name] = sparse_to_numpy(st, base_dir)
        g.sparse_initializer_names.add(st.values.name)
    known = frozenset(outer_names) | defined | set(g.initializers)
    before = set(scope) | {v.name for v in gp.input} | set(g.initializers)  # (defined before the node at hand)
    n = None

    def sub(sgp):
        return build_graph(sgp, base_dir, known, check, scope=frozenset(before), owner=n)

    for i, n in enumerate(gp.node):
        if check:
            for name in n.input:
                if name and name not in known:
                    raise InvalidGraph(
                        f"{_node_label(n, i)} input '{name}' is not a graph input, initializer, or output of a node")
                if name and not main and name not in before and name not in outer_names:  # (as onnx's checker)
                    raise InvalidGraph(f"This is an invalid model. Error: Nodes in a graph must be topologically "
                                       f"sorted, however input '{name}' of node: name: {n.name} OpType: {n.op_type} "
                                       "is not output of any previous nodes.")
        attrs, where = {}, f"{_node_label(n, i)}: "
        for a in n.attribute:
            if a.name in attrs:
                raise InvalidGraph(f"{where}attribute '{a.name}' appeared multiple times")
            if a.ref_attr_name:
                attrs[a.name] = AttrRef(a.ref_attr_name)
            else:
                attrs[a.name] = attribute_value(a, base_dir, sub, where)
                if n.op_type != "Constant" or n.domain not in ("", "ai.onnx"):
                    _check_tensor_fields(a.t, where)
        g.nodes.append(Node(n.op_type, n.input, n.output, attrs, n.domain, n.name, n.attribute))
        before.update(o for o in n.output if o)
    if check:
        for o in g.outputs:
            if o.name not in known:
                raise InvalidGraph(f"Graph output '{o.name}' is not produced by any node or input")
            if not main and o.name not in defined and o.name not in g.initializers:
                raise Fail(f"This is an invalid model. Subgraph output ({o.name}) is an outer scope value being "
                           "returned directly. Please update the model to add an Identity node between the outer "
                           "scope value and the subgraph output.")
    own = {o for n in g.nodes for o in n.outputs}
    ready = known - own
    reads = _reads(g.nodes, own)
    g.nodes = _sorted(g.nodes, ready, reads)
    if check:  # (what _sorted could not order reads a value of its own cycle)
        produced = set(ready)
        for n in g.nodes:
            late = [x for x in reads.get(id(n), n.inputs) if x and x not in produced]
            if late:
                raise Fail(f"This is an invalid model. Error: the graph is not acyclic (graph '{gp.name}', node "
                           f"'{n.name}' ({n.op_type}) reads '{late[0]}' before it is produced)")
            produced.update(n.outputs)
    return g


def _reads(nodes, own):
    """id(node) -> what a node with bodies reads of this graph's node outputs, its inputs and its bodies' (a body
    reading its own node's output is a cycle)."""
    from .scope import body_reads  # (scope reads this module's subgraphs)

    return {id(n): list(n.inputs) + sorted(body_reads(n) & own) for n in nodes if has_subgraphs(n)}


def _sorted(nodes, ready, reads=None):
    """`nodes` in an order where each input (`reads[id(node)]` for a node with bodies) is produced before it is read
    (as given where it already is; the stages after loading rely on it); a cycle keeps its nodes at the end."""
    produced, pending, out = set(ready), list(nodes), []
    while pending:
        rest = []
        for n in pending:
            if all(not x or x in produced for x in (reads or {}).get(id(n), n.inputs)):
                out.append(n)
                produced.update(n.outputs)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            return out + rest
        pending = rest
    return out


class AttrRef:
    """An attribute that refers to an attribute of the enclosing function (`ref_attr_name`)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


NEWEST_IR_VERSION = 14  # the newest IR version onnxruntime 1.32 loads (onnxide reads what it reads)


def load_model(mp, base_dir=None, checked=False):
    """Build the IR Model from a decoded ModelProto: opsets, graph, inlined local functions. `checked`: this
    ModelProto was loaded (and its graph checked) before, so the graph's checks are skipped (a session's
    specialized rebuild)."""
    if mp.graph is None:
        raise NoModel("Model has no graph")
    if mp.ir_version > NEWEST_IR_VERSION:
        raise Fail(f"Unsupported model IR version: {mp.ir_version}, max supported IR version: {NEWEST_IR_VERSION}")
    opsets = {}
    for o in mp.opset_import:
        opsets["" if o.domain in ("", "ai.onnx") else o.domain] = int(o.version)
    if not mp.opset_import:
        if mp.ir_version >= 3:
            raise InvalidGraph("Model has no opset_import")
        opsets[""] = 1
    from ..ops.registry import newest_opset  # (ops reads the IR's classes: imported here, not at the top)
    for domain, version in opsets.items():
        newest = newest_opset(domain)
        if newest is not None and version > newest:
            raise Fail(f"Opset {version} of domain {domain or 'ai.onnx'} is newer than the newest released one "
                       f"(onnxide and onnxruntime support it till opset {newest})")
    graph = build_graph(mp.graph, base_dir, check=not mp.functions and not checked, main=True)
    model = Model(graph, opsets, mp.ir_version, mp.producer_name, mp.producer_version, mp.domain,
                  mp.model_version, mp.doc_string, {e.key: e.value for e in mp.metadata_props}, mp.functions)
    if mp.functions:
        from .functions import inline_functions  # functions.py builds Nodes: imported here, not at the top
        inline_functions(model, base_dir, build_graph, attribute_value)
    for name, arr in graph.initializers.items():
        if isinstance(arr, np.ndarray) and arr.dtype == object and dt.code_of(arr.dtype) != dt.STRING:
            raise InvalidGraph(f"Initializer '{name}' has an unsupported element type")
    if not checked:
        from ..ops.validate import check_graph  # (ops reads the IR's classes: imported here, not at the top)
        check_graph(graph, model.opsets)
    return model
