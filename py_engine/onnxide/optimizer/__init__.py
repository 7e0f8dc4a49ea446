"""The graph optimizer shared by every EP: passes grouped by onnxruntime's levels (basic / extended / all).

Each pass is a function `(scope) -> bool` (True when it changed the graph) that edits `scope.graph` in place,
reading the opsets from `scope.opsets`; a scope is the model for the main graph, or a `GraphScope` for an
If/Loop/Scan body. `optimize` runs a level's passes to a fixed point on every body (innermost first), then on
the main graph. Fused ops are ordinary registered ops, so every EP runs an optimized graph.
"""
import numpy as np

from ..ir.infer import infer_shapes
from ..ir.model import subgraphs, type_dims
from ..ir.scope import free_names
from .graph import constant_value, dedupe_node_names, producers
from . import (constant_folding, eliminate, fuse_attention, fuse_conv, fuse_patterns, fuse_quant, fuse_transformer,
               shape_values, transpose)

BASIC = [eliminate.remove_identity_like, constant_folding.fold_constants, constant_folding.inline_constant_if,
         eliminate.remove_dead_nodes, eliminate.common_subexpressions, transpose.cancel_transposes,
         shape_values.simplify_reshape_targets, eliminate.merge_reshape_chains]
EXTENDED = [fuse_conv.fold_batchnorm_into_conv, fuse_conv.fold_scale_shift_into_conv,
            fuse_conv.fold_affine_into_next_conv, fuse_patterns.fuse_layernorm,
            fuse_patterns.fuse_gelu, fuse_patterns.fuse_hardswish, fuse_patterns.fuse_matmul_add,
            fuse_conv.fuse_conv_add, fuse_conv.fuse_activation, fuse_attention.fuse_attention,
            fuse_transformer.fuse_bias_gelu, fuse_transformer.fuse_skip_layernorm, fuse_transformer.fuse_quick_gelu,
            fuse_quant.fuse_matmul_integer_to_float, fuse_quant.fuse_dynamic_quantize_matmul]


class GraphScope:
    """A subgraph seen by the passes: its own graph, the model's opsets, the constant initializers of the
    enclosing graphs that it can see (constant folding reads those: weights sliced inside If bodies fold once),
    and those graphs' value types (`outer_type`: shapes of enclosing values fold inside the body)."""

    def __init__(self, model, graph, outer_constants=None, enclosing=()):
        self.graph, self.opsets = graph, model.opsets
        self.outer_constants = outer_constants or {}
        self.enclosing = list(enclosing)  # enclosing graphs, outermost first
        self._defined = None

    def outer_type(self, name):
        """(elem type, dims) of an enclosing graph's value `name` (the innermost definition), or None."""
        if self._defined is None:  # the enclosing graphs do not change while this body is optimized
            self._defined = [({v.name for v in g.inputs} | set(g.value_info) |
                               {o for n in g.nodes for o in n.outputs}, g) for g in self.enclosing]
        for names, g in reversed(self._defined):
            if name in g.initializers:
                return None  # a constant: folding reads its value
            if name in names:
                return _known_type(g.value_type(name))
        return None


def _known_type(t):
    dims = type_dims(t)
    elem = getattr(getattr(t, "tensor_type", None), "elem_type", None)
    return (elem, list(dims)) if dims is not None and elem else None


def passes_for(level):
    level = int(level)
    if level <= 0:
        return []
    return BASIC + (EXTENDED if level >= 2 else [])


def _bodies_with_constants(graph, outer=None, enclosing=()):
    """(body, outer constants visible in it, enclosing graphs) for the nested subgraphs of `graph`, innermost
    first. A name that a graph defines itself (input, node output, initializer) hides the enclosing graphs' value of
    that name; initializers that are also graph inputs are overridable, so not constants."""
    outer = dict(outer or {})
    inputs = {v.name for v in graph.inputs}
    for n in graph.nodes:
        for o in n.outputs:
            outer.pop(o, None)
    for name in inputs:
        outer.pop(name, None)
    outer.update({k: v for k, v in graph.initializers.items() if k not in inputs and isinstance(v, np.ndarray)})
    enclosing = list(enclosing) + [graph]
    for n in graph.nodes:
        for g in subgraphs(n):
            yield from _bodies_with_constants(g, outer, enclosing)
            yield g, outer, enclosing


def _run(scope, passes, max_rounds, inferred=False):
    """Run `passes` on one graph to a fixed point; True when anything changed. `inferred`: the graph's types are
    current (inferred since its last change), so its first round needs no inference."""
    if not inferred:
        infer_shapes(scope)
    any_change = False
    for _ in range(max_rounds):
        changed = False
        present = None  # op types in the graph, for the passes marked with what they need (graph.needs)
        for p in passes:
            need = getattr(p, "needs", None)
            if need:
                if present is None:
                    present = {n.op_type for n in scope.graph.nodes}
                if not all(group & present for group in need):
                    continue
            if p(scope):
                changed, present = True, None
        if not changed:
            break
        any_change = True
        infer_shapes(scope)
    return any_change


def _constant_nodes_outer_first(model):
    """Fold the Constant nodes of the main graph, then of its bodies, outermost first (the sweeps optimize the
    bodies innermost first, and a body whose enclosing graph gains constants afterwards is optimized again); True
    when the main graph changed. A model without bodies is left to the sweeps."""
    bodies = [body for body, _, _ in reversed(list(_bodies_with_constants(model.graph)))]  # (each before its own)
    if not bodies:
        return False
    changed = constant_folding.fold_constant_nodes(model)
    for body in bodies:
        constant_folding.fold_constant_nodes(GraphScope(model, body))
    return changed


IF_BRANCH_FOLDING = [constant_folding.fold_constants, constant_folding.inline_constant_if, eliminate.remove_dead_nodes]


def _inline_constant_ifs_first(model, max_rounds, inferred):
    """Fold the main graph's constants and inline its Ifs of a constant condition before the sweeps optimize the
    bodies, so that a branch that is never taken is never optimized (a specialized silero VAD: its sample-rate If
    holds half the model's 50 bodies). True when the graph changed. Only where an If's condition is a constant or
    a node's of constant inputs (a condition further from the constants is the sweeps' to fold)."""
    g = model.graph
    producer = producers(g)

    def constant(name):
        return constant_value(g, name) is not None

    def foldable(cond):
        n = producer.get(cond)
        return constant(cond) or n is not None and n.inputs and all(constant(x) for x in n.inputs if x)

    if not any(n.op_type == "If" and n.inputs and foldable(n.inputs[0]) for n in g.nodes):
        return False
    return _run(model, IF_BRANCH_FOLDING, max_rounds, inferred=inferred)


def _outer_reads(body, outer):
    """The enclosing graphs' constants `body` reads: {name: array}."""
    return {k: outer[k] for k in free_names(body) if k in outer}


def _at_fixed_point(done, body, outer):
    """Whether `body` reached its fixed point before with the same outer constant objects it reads now (nothing new
    from the enclosing graphs: running it again changes nothing)."""
    last = done.get(id(body))
    if last is None or last[0] is not body:
        return False
    reads = _outer_reads(body, outer)
    return last[1].keys() == reads.keys() and all(last[1][k] is v for k, v in reads.items())


def optimize(model, level, max_rounds=8, max_sweeps=3, inferred=False):
    """Run the passes of `level` (ORT's GraphOptimizationLevel value) on every graph; returns the model.
    `inferred`: the caller has just run infer_shapes on the model (the main graph's first round reuses its types
    where no body changed before it).

    Bodies go innermost first, then the main graph; the sweep repeats while a graph changed and the model has
    subgraphs, since folding an enclosing graph's Constant nodes into initializers lets its bodies fold more."""
    passes = passes_for(level)
    done = {}  # id(body) -> (body, the outer constants it reads at its last fixed point)
    with np.errstate(all="ignore"):  # folding NaN/inf constants is the model's business, not a warning
        if constant_folding.fold_constants in passes:
            if _constant_nodes_outer_first(model):
                inferred = False  # (the main graph changed since)
            if _inline_constant_ifs_first(model, max_rounds, inferred):
                inferred = True  # (_run infers the graph it changed)
        for sweep in range(max_sweeps if passes else 1):
            bodies = list(_bodies_with_constants(model.graph)) if passes else []
            changed = False
            for body, outer, enclosing in bodies:
                if _at_fixed_point(done, body, outer):
                    continue
                changed |= _run(GraphScope(model, body, outer, enclosing), passes, max_rounds)
                done[id(body)] = (body, _outer_reads(body, outer))  # (what it reads at its fixed point: folding
                # may have dropped some reads)
            changed |= _run(model, passes, max_rounds, inferred=inferred and sweep == 0 and not changed)
            if not bodies or not changed:
                break
    if passes:
        for body, _outer, _enclosing in _bodies_with_constants(model.graph):
            dedupe_node_names(body)
        dedupe_node_names(model.graph)
    return model
