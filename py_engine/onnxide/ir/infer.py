"""Type and shape inference over a graph: each node's rule — registered next to its op's kernel, in the vocabulary of
ops/inference.py — runs in graph order, so get_outputs() can describe undeclared outputs, the optimizer can check
ranks and fold shapes, and the partitioner knows each node's input types at plan time.

A shape is a list of int (static), str (symbolic) or None (unknown) per dim; None for an unknown rank. Ops without a
rule leave their outputs unknown — inference never guesses. The rules of ops/conv.py, ops/pool.py, ops/fused.py and
ops/control.py are still kept here (`_NOT_MOVED`), until those modules can take them.
"""
import numpy as np

from .. import dtypes as dt
from ..errors import OnnxideError
from ..ops.inference import UNKNOWN, Facts, SequenceOf, entry_of, positive_axis, type_proto, unknown_dims
from ..ops.inference import tensor_type  # noqa: F401 - the session types its inputs with it
from ..ops.conv import conv_output_shape
from ..ops.linalg import gemm_rule, matmul_rule
from ..ops.registry import MS_DOMAIN, ONNX_DOMAIN, resolve_opdef
from .model import ValueInfo, subgraphs, type_dims


def dims_of(g, name):
    """A value's declared or inferred dims (int / symbolic name / None each), or None for unknown rank."""
    return type_dims(g.value_type(name))


# ---------------------------------------------------------------------------------------------------------------
# rules still to move next to their kernels (ops/conv.py, ops/pool.py, ops/fused.py, ops/control.py)
# ---------------------------------------------------------------------------------------------------------------

def _conv_rule(f):
    """Conv / FusedConv / ConvTranspose: X's type; the window geometry's dims (ops/conv.py's conv_output_shape)."""
    return [(f.common_type([0, 1]), conv_output_shape(f.node.op_type, f.node.attrs, f.dims(0), f.dims(1)))]


def _conv_integer_rule(f):
    return [(dt.INT32, conv_output_shape(f.node.op_type, f.node.attrs, f.dims(0), f.dims(1)))]


def _pool_rule(f):
    """MaxPool / AveragePool / LpPool: X's type and the window geometry's dims; MaxPool's indices are int64."""
    dims = conv_output_shape(f.node.op_type, f.node.attrs, f.dims(0))
    return [(f.type(0), dims)] + [(dt.INT64, dims)] * (f.n_outputs - 1)


def _global_pool_rule(f):
    s0 = f.dims(0)
    return [(f.type(0), None if s0 is None else s0[:2] + [1] * (len(s0) - 2))]


def _rank_kept_rule(f):
    """X's type and rank (DeformConv, MaxUnpool)."""
    return [(f.type(0), unknown_dims(f.rank(0)))]


def _causal_conv_rule(f):
    s0, w = f.dims(0), f.dims(1)
    k = w[2] if w is not None and len(w) == 3 else None
    state = None if s0 is None or len(s0) != 3 else [s0[0], s0[1], k - 1 if isinstance(k, int) else None]
    return [(f.type(0), s0), (f.type(0), state)]


def _max_roi_pool_rule(f):
    return [(f.type(0), unknown_dims(4))]


def _col2im_rule(f):
    return [(f.type(0), None)]


def _merged(a, b):
    """The entry two branches' outputs agree on: the type when equal, each dim where equal."""
    if a is None or b is None or a[0] != b[0]:
        return UNKNOWN
    da, db = a[1], b[1]
    same_rank = da is not None and db is not None and len(da) == len(db)
    return (a[0], [x if x == y else None for x, y in zip(da, db)] if same_rank else None)


def _if_rule(f):
    """If: each output as both branches declare it."""
    then, other = f.attr("then_branch"), f.attr("else_branch")
    return [_merged(entry_of(x.type), entry_of(y.type)) for x, y in zip(then.outputs, other.outputs)]


def _body_output(body, i):
    """The entry body output i has (declared, or inferred with its node), UNKNOWN when none."""
    return (entry_of(body.outputs[i].type) if i < len(body.outputs) else None) or UNKNOWN


def _stacked(entry, axis, count=None):
    """A scan output: the body's per-iteration entry stacked along `axis` (`count` entries)."""
    t, d = entry
    return (t, None if d is None else d[:positive_axis(axis, len(d) + 1)] + [count] +
            d[positive_axis(axis, len(d) + 1):])


def _loop_rule(f):
    """Loop: loop-carried values keep their initial values' types; scan outputs stack the body's outputs."""
    carried = max(len(f.ins) - 2, 0)
    body = f.attr("body")
    return [(f.type(2 + i), None) for i in range(carried)] + \
        [_stacked(_body_output(body, 1 + carried + j), 0) for j in range(f.n_outputs - carried)]


def _loop_body_inputs(f):
    """Loop's body reads the iteration number, the condition and the loop-carried values."""
    return [(dt.INT64, []), (dt.BOOL, [])] + [(f.type(2 + i), None) for i in range(max(len(f.ins) - 2, 0))]


def _scan_states(f):
    """(index of the first state input, number of state variables): Scan 8 takes sequence_lens first."""
    return (1 if f.opset < 9 else 0), len(f.attr("body").inputs) - f.attr("num_scan_inputs", 0)


def _scan_rule(f):
    """Scan: state variables keep their initial values' types; scan outputs stack the body's outputs (along
    scan_output_axes, as many as the first scan input has along its axis)."""
    body = f.attr("body")
    first, states = _scan_states(f)
    if f.opset < 9:
        return [(f.type(first + i), None) for i in range(states)] + \
            [(_body_output(body, states + j)[0], None) for j in range(f.n_outputs - states)]
    in_axes = f.attr("scan_input_axes") or [0] * f.attr("num_scan_inputs", 0)
    out_axes = f.attr("scan_output_axes") or [0] * (f.n_outputs - states)
    x = f.dims(states)
    count = x[positive_axis(in_axes[0], len(x))] if x is not None and in_axes else None
    return [(f.type(i), None) for i in range(states)] + \
        [_stacked(_body_output(body, states + j), out_axes[j], count) for j in range(f.n_outputs - states)]


def _scan_body_inputs(f):
    """Scan's body reads the state variables and one slice of each scan input (without its scan axis)."""
    first, states = _scan_states(f)
    if f.opset < 9:
        return [(f.type(first + i), None) for i in range(len(f.ins) - first)]
    in_axes = f.attr("scan_input_axes") or [0] * (len(f.ins) - states)
    sliced = []
    for j, a in enumerate(in_axes):
        t, d = f.ins[states + j]
        sliced.append((t, None if d is None else d[:positive_axis(a, len(d))] + d[positive_axis(a, len(d)) + 1:]))
    return list(f.ins[:states]) + sliced


def _sequence_map_rule(f):
    body = f.attr("body")
    return [(SequenceOf((_body_output(body, j)[0], None)), None) for j in range(f.n_outputs)]


def _sequence_map_body_inputs(f):
    """SequenceMap's body reads one element of each sequence input (other inputs as they are)."""
    return [t.of if isinstance(t, SequenceOf) else (t, d) for t, d in f.ins]


_NOT_MOVED = {
    (ONNX_DOMAIN, "Conv"): _conv_rule, (MS_DOMAIN, "FusedConv"): _conv_rule,
    (ONNX_DOMAIN, "MaxPool"): _pool_rule, (ONNX_DOMAIN, "AveragePool"): _pool_rule, (ONNX_DOMAIN, "LpPool"): _pool_rule,
    (ONNX_DOMAIN, "GlobalAveragePool"): _global_pool_rule, (ONNX_DOMAIN, "GlobalMaxPool"): _global_pool_rule,
    (ONNX_DOMAIN, "GlobalLpPool"): _global_pool_rule,
    (ONNX_DOMAIN, "ConvTranspose"): _conv_rule, (ONNX_DOMAIN, "DeformConv"): _rank_kept_rule,
    (ONNX_DOMAIN, "MaxUnpool"): _rank_kept_rule, (ONNX_DOMAIN, "ConvInteger"): _conv_integer_rule,
    (ONNX_DOMAIN, "CausalConvWithState"): _causal_conv_rule, (ONNX_DOMAIN, "MaxRoiPool"): _max_roi_pool_rule,
    (ONNX_DOMAIN, "Col2Im"): _col2im_rule,
    (MS_DOMAIN, "FusedGemm"): gemm_rule, (MS_DOMAIN, "FusedMatMul"): matmul_rule,
    (ONNX_DOMAIN, "If"): _if_rule, (ONNX_DOMAIN, "Loop"): _loop_rule, (ONNX_DOMAIN, "Scan"): _scan_rule,
    (ONNX_DOMAIN, "SequenceMap"): _sequence_map_rule,
}
_BODY_INPUTS = {"Loop": _loop_body_inputs, "Scan": _scan_body_inputs, "SequenceMap": _sequence_map_body_inputs}


# ---------------------------------------------------------------------------------------------------------------
# the pass
# ---------------------------------------------------------------------------------------------------------------

def _rule_of(node, opsets):
    """(rule, opset version) for `node`: its op's registered rule (or one still kept here); (None, None) without."""
    try:
        opdef, version = resolve_opdef(node, opsets)
    except OnnxideError:
        return None, None
    return opdef.infer or _NOT_MOVED.get((opdef.domain, node.op_type)), version


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


def _body_inputs(node, facts):
    """The entries a node's body inputs get from the node (Loop, Scan, SequenceMap), or None."""
    given = _BODY_INPUTS.get(node.op_type) if facts is not None and node.domain in ("", "ai.onnx") else None
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


def infer_shapes(model):
    """Fill graph.value_info (and untyped graph outputs, and a body's untyped inputs) with inferred types; declared
    types win. A body whose outputs are not all declared is inferred on the way (before its node: the node's rule
    reads them), with what the node hands its inputs and the enclosing graphs' types visible.

    Returns (types, shape_values): name -> (elem_type, dims), and name -> (entries, is_scalar) for the small
    int64 tensors that hold shapes (entries are ints, symbolic dim names or None)."""
    return _infer(model, every_body=False)


def infer_bodies(model):
    """Infer a graph with If / Loop / Scan bodies again, every body included (nested ones too), so the partitioner
    knows what a body's values are."""
    if any(next(subgraphs(n), None) is not None for n in model.graph.nodes):
        _infer(model, every_body=True)


def _infer(model, every_body):
    g = model.graph
    previous = _forget_inferred(g)
    types, consts, sv = {}, {}, {}
    _constants(g, types, consts, sv)
    _known_types(model, types)
    for n in g.nodes:
        rule, facts = _facts(n, model.opsets, types, consts, sv)
        if every_body or _reads_undeclared_outputs(n):
            for body in subgraphs(n):
                _infer(_Body(body, model.opsets, types, getattr(model, "outer_type", None), _body_inputs(n, facts)),
                       every_body)
        res, value = _apply(rule, facts) if rule is not None else (None, None)
        if value is not None and n.outputs:
            sv[n.outputs[0]] = value
        _record(g, n, res, types, previous)
    for o in g.outputs:
        if o.type is None and o.name in types:
            o.type, o.inferred = type_proto(*types[o.name]), True
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
        k = entry_of(vi.type)
        if k is None and i < len(given) and given[i][0] is not None:
            k, vi.type, vi.inferred = given[i], type_proto(*given[i]), True
        if k is not None:
            types[vi.name] = k
    for vi in g.value_info.values():
        k = entry_of(vi.type)
        if k is not None:
            types[vi.name] = k


def _record(g, node, res, types, previous):
    """Record the rule's entries for the node's outputs that have no type yet (declared types win)."""
    for i, name in enumerate(node.outputs):
        if not name or name in types or res is None or i >= len(res) or res[i] is None or not res[i][0]:
            continue
        types[name] = res[i]
        old = previous.get(name)
        g.value_info[name] = old if old is not None and entry_of(old.type) == res[i] else \
            ValueInfo(name, type_proto(*res[i]), inferred=True)


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
        k = entry_of(vi.type)
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
    return any(o.type is None or o.inferred for body in subgraphs(node) for o in body.outputs)
