"""Partition: the stage between the optimizer and the plan. Orders a graph's nodes, checks each against its op's
schema, and gives each to the first execution provider that claims it — at plan time, with the node's types and
shapes in hand (`NodeSpec`); then small shape computations a GPU EP claimed move to the host where only host
readers need their results (`host_side.py`). Holds no state on the IR."""
from ..errors import Fail, InvalidArgument, InvalidGraph, NotImplemented as OrtNotImplemented
from ..ir.model import AttrRef
from ..ops.registry import resolve_opdef
from .host_side import prefer_host
from .spec import NodeSpec, graph_types  # noqa: F401  (EPs and the planner import them from here)


class Placed:
    """A node with its OpDef, opset version, the EP that runs it, that EP's kernel, and the claim's NodeSpec."""

    __slots__ = ("node", "opdef", "version", "ep", "kernel", "spec")

    def __init__(self, node, opdef, version, ep, kernel, spec):
        self.node, self.opdef, self.version, self.ep, self.kernel, self.spec = node, opdef, version, ep, kernel, spec

    @property
    def device(self):
        return self.ep.device


def node_label(node):
    return f"{node.op_type} node. Name:'{node.name}'"


def topological(graph, outer_names=frozenset()):
    """The graph's nodes in an order where every input is produced before it is read."""
    produced = set(graph.initializers) | {v.name for v in graph.inputs} | set(outer_names)
    pending, ordered = list(graph.nodes), []
    while pending:
        rest = []
        for n in pending:
            if all((not x) or x in produced for x in n.inputs):
                ordered.append(n)
                produced.update(o for o in n.outputs if o)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            missing = sorted({x for n in rest for x in n.inputs if x and x not in produced})
            raise Fail(f"Graph '{graph.name}' has a cycle or undefined inputs: {missing[:5]}")
        pending = rest
    return ordered


def checked_opdef(n, opsets):
    """(OpDef, opset version) for node `n`, after the checks every EP relies on (attributes, input count)."""
    try:
        opdef, version = resolve_opdef(n, opsets)
    except OrtNotImplemented as e:
        raise OrtNotImplemented(f"{e} with name '{n.name}'" if n.name else str(e)) from None
    dangling = [k for k, v in n.attrs.items() if isinstance(v, AttrRef)]
    if dangling:
        raise InvalidGraph(f"{node_label(n)}: attribute(s) {dangling} refer to function attributes outside a "
                           f"function")
    unknown = set(n.attrs) - set(opdef.attrs) - opdef.required
    if unknown and not opdef.any_attrs:
        raise OrtNotImplemented(f"{node_label(n)}: attribute(s) {sorted(unknown)} not supported by onnxide's "
                                f"{n.op_type}({version})")
    missing = opdef.required - set(n.attrs)
    if missing:
        raise InvalidArgument(f"{node_label(n)}: required attribute(s) {sorted(missing)} missing")
    if not opdef.variadic and len(n.inputs) > opdef.n_inputs:
        raise InvalidArgument(f"{node_label(n)}: {len(n.inputs)} inputs given, {n.op_type}({version}) takes at "
                              f"most {opdef.n_inputs}")
    return opdef, version


def claim(spec, providers):
    """(EP, kernel) of the first provider in `providers` that claims `spec`, or (None, None)."""
    for ep in providers:
        kernel = ep.claim(spec)
        if kernel is not None:
            return ep, kernel
    return None, None


def _custom_claim(spec, providers):
    """A custom op's node goes to the CPU EP (its function computes on host numpy arrays), whatever EPs lead."""
    cpu = next((p for p in providers if p.name == "CPUExecutionProvider"), None)
    if cpu is None:
        raise OrtNotImplemented(f"{node_label(spec.node)}: custom op {spec.opdef.custom.name} runs on "
                                f"CPUExecutionProvider, which this session does not have")
    return cpu, spec.opdef.custom.bind(spec)


def partition(graph, opsets, providers, types, input_devices, output_wants, outer_homes):
    """[Placed] for `graph` in execution order.

    `types`: graph_types of the graph (enclosing values included); `input_devices`: name -> Device of each graph
    input; `output_wants`: name -> Device each graph output must end on (None: the main graph, whose outputs go
    where the caller asks at run time); `outer_homes`: name -> Device of the enclosing graphs' values."""
    placed = []
    for n in topological(graph, frozenset(outer_homes)):
        opdef, version = checked_opdef(n, opsets)
        spec = NodeSpec(n, opdef, version, types)
        ep, kernel = claim(spec, providers) if opdef.custom is None else _custom_claim(spec, providers)
        if ep is None:
            raise OrtNotImplemented(f"No execution provider claims {node_label(n)}")
        placed.append(Placed(n, opdef, version, ep, kernel, spec))
    if any(not p.device.is_host for p in placed):
        prefer_host(placed, graph, providers, input_devices, output_wants, outer_homes)
    return placed
