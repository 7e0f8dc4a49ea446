"""Type and shape inference over a graph: each node's rule — registered next to its op's kernel, in the vocabulary of
ops/inference.py — runs in graph order, so get_outputs() can describe undeclared outputs, the optimizer can check
ranks and fold shapes, and the partitioner knows each node's input types at plan time.

A shape is a list of int (static), str (symbolic) or None (unknown) per dim; None for an unknown rank. Ops without a
rule leave their outputs unknown — inference never guesses. A rule with a `body_inputs` attribute (Loop, Scan,
SequenceMap: ops/control.py) also says what its node hands its body's inputs.
"""
import numpy as np

from .. import dtypes as dt
from ..errors import Fail, OnnxideError
from ..ops.inference import UNKNOWN, Facts, OptionalOf, SequenceOf, type_proto, type_string
from ..ops.registry import resolve_opdef
from .model import ValueInfo, has_subgraphs, subgraphs, type_dims


def dims_of(g, name):
    """A value's declared or inferred dims (int / symbolic name / None each), or None for unknown rank."""
    return type_dims(g.value_type(name))


# ---------------------------------------------------------------------------------------------------------------
# the pass
# ---------------------------------------------------------------------------------------------------------------

def _rule_of(node, opsets):
    """(rule, opset version) for `node`: its op's registered rule (or one still kept here); (None, None) without."""
    try:
        opdef, version = resolve_opdef(node, opsets)
    except OnnxideError:
        return None, None
    return opdef.infer, version


_FAILURES = (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError, AttributeError)  # (a malformed node)


def _facts(node, opsets, types, consts, sv):
    """(the node's rule, its Facts); (None, None) for an op without a rule."""
    rule, version = _rule_of(node, opsets)
    if rule is None:
        return None, None
    return rule, Facts(node, [types.get(x, UNKNOWN) if x else UNKNOWN for x in node.inputs], version, consts, sv)


def _apply(rule, facts):
    """(output entries or None, shape entries output 0 holds or None) of one node."""
    try:
        return rule(facts), facts.value
    except _FAILURES:
        return None, None


def _body_inputs(rule, facts):
    """The entries a node's body inputs get from the node (its rule's `body_inputs`: Loop, Scan, SequenceMap), or
    None."""
    given = getattr(rule, "body_inputs", None) if facts is not None else None
    try:
        return None if given is None else given(facts)
    except _FAILURES:
        return None


def _constants(g, types, consts, sv):
    """Record the initializers' types, and the small ones that are not overridable inputs as constants (the int
    vectors among them as shape values)."""
    overridable = {v.name for v in g.inputs}
    for name, arr in g.initializers.items():
        if isinstance(arr, np.ndarray):
            try:
                types[name] = (dt.code_of(arr.dtype), list(arr.shape))
            except KeyError:
                continue
            if name not in overridable and arr.size <= 64:
                consts[name] = arr
                if arr.dtype.kind in "iu" and arr.ndim <= 1:
                    sv[name] = ([int(v) for v in arr.reshape(-1)], arr.ndim == 0)


def infer_shapes(model, check=False):
    """Fill graph.value_info (and untyped graph outputs, and a body's untyped inputs) with inferred types; declared
    types win. A body whose outputs are not all declared is inferred on the way (before its node: the node's rule
    reads them), with what the node hands its inputs and the enclosing graphs' types visible. `check` (at session
    creation): every body, and Fail where a declared output type disagrees with what its node gives.

    Returns (types, shape_values): name -> (elem_type, dims), and name -> (entries, is_scalar) for the small
    int64 tensors that hold shapes (entries are ints, symbolic dim names or None)."""
    return _infer(model, every_body=check, check=check)


def infer_bodies(model):
    """Infer a graph with If / Loop / Scan bodies again, every body included (nested ones too), so the partitioner
    knows what a body's values are."""
    if any(has_subgraphs(n) for n in model.graph.nodes):
        _infer(model, every_body=True)


def _infer(model, every_body, check=False):
    g = model.graph
    previous = _forget_inferred(g)
    types, consts, sv = {}, {}, {}
    _constants(g, types, consts, sv)
    _known_types(model, types)
    if check:  # (the graph's declared outputs, every declaration of a name listed twice, and value_info)
        declared = {}
        for o in list(g.outputs) + list(g.value_info.values()):  # (maps, sparse tensors: no entry for them)
            if o.type is not None and (o.type.map_type is not None or o.type.sparse_tensor_type is not None):
                declared.setdefault(o.name, []).append((_NotTensor(o.type), None))
        for o in g.outputs:
            if o.type is not None:
                declared.setdefault(o.name, []).append(o.type_entry())
        for k, v in types.items():
            if k in g.value_info:
                declared.setdefault(k, []).append(v)
    for n in g.nodes:
        rule, facts = _facts(n, model.opsets, types, consts, sv)
        if every_body or _reads_undeclared_outputs(n):
            for body in subgraphs(n):
                _infer(_Body(body, model.opsets, types, getattr(model, "outer_type", None), _body_inputs(rule, facts)),
                       every_body, check)
        res, value = _apply(rule, facts) if rule is not None else (None, None)
        if check:
            _check_declared(n, res, declared)
        if value is not None and n.outputs:
            sv[n.outputs[0]] = value
        _record(g, n, res, types, previous)
    for k, o in enumerate(g.outputs):
        if o.type is None and o.name in types:
            o.type, o.inferred = type_proto(*types[o.name]), True
        elif o.type is not None and not o.inferred and o.name in types:
            merged = _merged(o.type_entry(), types[o.name])  # (as a value_info's, in _record)
            if merged is not None:
                g.outputs[k] = ValueInfo(o.name, type_proto(*merged), o.doc)
    return types, sv


def _forget_inferred(g):
    """Drop what the last inference added to `g`; returns its inferred value_info by name (reused where unchanged:
    building TypeProtos is what inference spends most on)."""
    previous = {k: v for k, v in g.value_info.items() if v.inferred}
    for name in previous:
        del g.value_info[name]
    for o in list(g.inputs) + list(g.outputs):
        if o.inferred:
            o.type, o.inferred = None, False
    return previous


def _known_types(model, types):
    """Add to `types` what is known before any rule runs: the enclosing graphs' values a body reads, the inputs
    (a body's undeclared ones typed by its node) and the declared value_info."""
    g = model.graph
    outer_type = getattr(model, "outer_type", None)
    if outer_type is not None:
        local = {o for n in g.nodes for o in n.outputs}  # (a name the body defines hides the enclosing value)
        for n in g.nodes:
            for x in n.inputs:
                if x and x not in types and x not in local:
                    t = outer_type(x)
                    if t is not None:
                        types[x] = t
    given = getattr(model, "given_inputs", None) or []
    for i, vi in enumerate(g.inputs):
        k = vi.type_entry()
        if k is None and i < len(given) and given[i][0] is not None:
            k, vi.type, vi.inferred = given[i], type_proto(*given[i]), True
        if k is not None:
            types[vi.name] = k
    inputs = {vi.name for vi in g.inputs if vi.type is not None}
    for vi in g.value_info.values():
        k = vi.type_entry()
        if k is not None and vi.name not in inputs:  # (a graph input's own declaration wins, as in onnxruntime)
            types[vi.name] = k


class _NotTensor:
    """A declared map or sparse tensor type in a check of declared outputs (inference gives no such entries: any known
    one differs; no ONNX op gives a sparse tensor)."""

    def __init__(self, tp):
        self.tp = tp


def check_body_inputs(node, types, opsets):
    """Fail, as onnxruntime's subgraph inference, where a body of `node` declares an input of another element type
    than the node hands it (Loop's iteration number is int64, ...), or of another rank (Scan's and SequenceMap's);
    `types`: the value types the node sees (run after the node's input types are checked, as there)."""
    rule, facts = _facts(node, opsets, types, {}, {})
    given = _body_inputs(rule, facts) if rule is not None else None
    for body in subgraphs(node) if given else ():
        for i, (vi, got) in enumerate(zip(body.inputs, given)):
            want = vi.type_entry()
            if want is None or got is None or vi.inferred or not isinstance(want[0], int) or \
                    not isinstance(got[0], int):
                continue
            where = f"Node ({node.name}) Op ({node.op_type}) [TypeInferenceError] Graph attribute inferencing " \
                    "failed: Node:"
            if want[0] and got[0] and want[0] != got[0]:
                raise Fail(f"{where} Tensor element type mismatch. {got[0]} != {want[0]} (body input '{vi.name}')")
            if (node.op_type != "Loop" or i == 1) and isinstance(want[1], list) and isinstance(got[1], list) and \
                    len(want[1]) != len(got[1]):  # (Loop's values may change shape per iteration; its condition not)
                raise Fail(f"{where} Output:{vi.name} [ShapeInferenceError] Mismatch between number of inferred and "
                           f"declared dimensions. inferred={len(got[1])} declared={len(want[1])}")


def _disagree(declared, inferred):
    """True when two element types (codes, SequenceOf / OptionalOf entries; None: unknown) are known and differ."""
    if isinstance(declared, _NotTensor):
        return inferred is not None
    if declared is None or inferred is None:
        return False
    if isinstance(declared, (SequenceOf, OptionalOf)) or isinstance(inferred, (SequenceOf, OptionalOf)):
        return type(declared) is not type(inferred) or _disagree(declared.of[0], inferred.of[0])
    return declared != inferred


def _check_declared(node, res, declared):
    """Fail, as onnxruntime's type check at load, when a node's output has a declared type (graph output or
    value_info) whose element type is not the one the node gives (Constant aside: onnxruntime makes it an
    initializer first)."""
    if res is None or node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
        return
    for name, got in zip(node.outputs, res):
        want = next((w for w in declared.get(name, ()) if w is not None and got is not None and
                     _disagree(w[0], got[0])), None)
        if want is not None:
            shown = type_string(want[0].tp) if isinstance(want[0], _NotTensor) else type_string(type_proto(*want))
            raise Fail(f"Type Error: Type ({shown}) of output arg ({name}) of node "
                       f"({node.name}) does not match expected type ({type_string(type_proto(*got))}).")
        ranks = next(((len(w[1]), len(got[1])) for w in declared.get(name, ()) if w is not None and got is not None
                      and isinstance(w[1], list) and isinstance(got[1], list) and len(w[1]) != len(got[1])), None)
        if ranks is not None:
            raise Fail(f"Node ({node.name}) Op ({node.op_type}) [ShapeInferenceError] Inferred shape and existing "
                       f"shape of output ({name}) differ in rank: ({ranks[1]}) vs ({ranks[0]})")


def _record(g, node, res, types, previous):
    """Record the rule's entries for the node's outputs that have no type yet (declared types win, though a declared
    value_info's symbolic or unknown dims take the sizes inference found, as onnx's shape merge does: a quantizer's
    ['batch', 'seq'] declarations must not hide a specialized plan's fixed shapes)."""
    for i, name in enumerate(node.outputs):
        if not name or res is None or i >= len(res) or res[i] is None or not res[i][0]:
            continue
        if name in types:
            declared = g.value_info.get(name)
            merged = _merged(types[name], res[i]) if declared is not None and not declared.inferred else None
            if merged is not None:
                types[name] = merged
                g.value_info[name] = ValueInfo(name, type_proto(*merged), declared.doc)  # (a new object: the
                # declared one may be shared with another session's model)
            continue
        types[name] = res[i]
        old = previous.get(name)
        g.value_info[name] = old if old is not None and old.entry == res[i] else \
            ValueInfo(name, inferred=True, entry=res[i])


def _merged(declared, inferred):
    """The declared tensor entry with its dims set to the static sizes inference found — a symbolic or unknown one,
    and a static one that differs (onnxruntime runs such a model, merging leniently; a plan that trusted the declared
    dims gave outputs of the declared shape) — or None when that changes nothing (or the two differ in element type
    or rank, or the declared type is no tensor's: a map, a sparse tensor)."""
    if declared is None:
        return None
    (de, dd), (ie, idims) = declared, inferred
    if de != ie or not isinstance(de, int) or not isinstance(dd, list) or not isinstance(idims, list) or \
            len(dd) != len(idims):
        return None
    dims = [i if isinstance(i, int) else d for d, i in zip(dd, idims)]
    return (de, dims) if dims != dd else None


def value_types(graph):
    """name -> (elem type, dims) for every typed value of `graph` itself: initializers, inputs, outputs and
    value_info (declared or inferred)."""
    out = {}
    for name, arr in graph.initializers.items():
        if isinstance(arr, np.ndarray):
            try:
                out[name] = (dt.code_of(arr.dtype), list(arr.shape))
            except KeyError:
                pass
    for vi in list(graph.value_info.values()) + list(graph.outputs) + list(graph.inputs):
        k = vi.type_entry()
        if k is not None and k[0]:
            out[vi.name] = k
    return out


class _Body:
    """A body seen by infer_shapes: its graph, the model's opsets, and the enclosing graph's value types (`types`,
    then what that graph sees of its own enclosing graphs), less the names the body defines as inputs or
    initializers."""

    def __init__(self, graph, opsets, types, enclosing, given_inputs=None):
        self.graph, self.opsets, self._types, self._enclosing = graph, opsets, types, enclosing
        self.given_inputs = given_inputs  # entries for the body's inputs where it does not declare them
        self._local = {v.name for v in graph.inputs} | set(graph.initializers)

    def outer_type(self, name):
        if name in self._local:
            return None
        t = self._types.get(name)
        return t if t is not None or self._enclosing is None else self._enclosing(name)


def _reads_undeclared_outputs(node):
    """True when a body of `node` has an output without a declared type (its node's rule needs it inferred)."""
    return has_subgraphs(node) and any(o.type is None or o.inferred for body in subgraphs(node) for o in body.outputs)
