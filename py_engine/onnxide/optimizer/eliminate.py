"""Basic passes: Identity/Dropout/no-op Cast elimination, dead-node removal, common-subexpression elimination, and
chains of shape-only ops (Squeeze / Unsqueeze / Reshape / Flatten) with a static result merged into one Reshape."""
import numpy as np

from ..ir.infer import dims_of
from ..ir.model import Node, subgraphs
from ..ir.scope import body_reads

from .graph import consumers, fresh_name, graph_output_names, replace_uses

_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                     "Bernoulli"}


def remove_identity_like(model):
    """Identity, and inference-mode Dropout whose mask is unused, become plain rewiring."""
    g, changed = model.graph, False
    outputs = graph_output_names(g)
    for n in list(g.nodes):
        if n.domain not in ("", "ai.onnx") or not n.inputs or not n.inputs[0] or not (
                _is_identity_like(g, n) or _is_noop_cast(g, n)):
            continue
        src, dst = n.inputs[0], n.outputs[0]
        if dst not in outputs:
            g.nodes.remove(n)
            replace_uses(g, dst, src)
        else:  # the graph output keeps its name: rename the producer's output instead, when that is safe
            prod = next((p for p in g.nodes if src in p.outputs), None)
            if prod is None or src in outputs or len(consumers(g).get(src, [])) != 1:
                continue
            prod.outputs = [dst if o == src else o for o in prod.outputs]
            g.nodes.remove(n)
        changed = True
    return changed


def _is_noop_cast(g, n):
    """A Cast to the type its input already has (exports cast float to float)."""
    if n.op_type != "Cast" or "to" not in n.attrs:
        return False
    v = g.initializers.get(n.inputs[0])
    if isinstance(v, np.ndarray):
        return False  # constant folding takes it
    t = g.value_type(n.inputs[0])
    elem = t.tensor_type.elem_type if t is not None and t.tensor_type is not None else None
    return bool(elem) and elem == n.attrs["to"]


_SHAPE_ONLY = {"Squeeze", "Unsqueeze", "Reshape", "Flatten"}


def merge_reshape_chains(model):
    """A shape-only op fed by another (its only reader) whose result dims are all static ⇒ one Reshape of the first
    op's input to those dims (an Identity when they are that input's dims); the first op is left to dead-code
    removal."""
    g, changed = model.graph, False
    outputs = graph_output_names(g)
    producer = {o: n for n in g.nodes for o in n.outputs if o}
    uses = None
    for i, n in enumerate(g.nodes):
        if n.domain not in ("", "ai.onnx") or n.op_type not in _SHAPE_ONLY or not n.inputs:
            continue
        p = producer.get(n.inputs[0])
        if p is None or p.domain not in ("", "ai.onnx") or p.op_type not in _SHAPE_ONLY or p.outputs[0] in outputs:
            continue
        uses = uses if uses is not None else consumers(g)
        dims = dims_of(g, n.outputs[0])
        if len(uses.get(p.outputs[0], [])) != 1 or dims is None or not all(isinstance(d, int) and d > 0 for d in dims):
            continue
        src = p.inputs[0]
        if dims_of(g, src) == dims:
            g.nodes[i] = Node("Identity", [src], n.outputs, {}, "", n.name)
        else:
            target = fresh_name(g, n.outputs[0] + "_shape")
            g.initializers[target] = np.asarray(dims, np.int64)
            g.nodes[i] = Node("Reshape", [src, target], n.outputs, {}, "", n.name)
        producer[n.outputs[0]] = g.nodes[i]
        uses = None
        changed = True
    return changed


def _is_identity_like(g, n):
    if n.op_type == "Identity":
        return True
    if n.op_type != "Dropout" or (len(n.outputs) > 1 and n.outputs[1]):
        return False
    if len(n.inputs) >= 3 and n.inputs[2]:
        return False  # a training_mode input may be true at run time
    # a ratio known only at run time, or out of [0, 1), is left to the kernel, which refuses one out of range
    ratio = g.initializers.get(n.inputs[1]) if len(n.inputs) >= 2 and n.inputs[1] else 0.5
    return isinstance(ratio, (float, np.ndarray)) and np.size(ratio) == 1 and 0 <= float(np.ravel(ratio)[0]) < 1


def remove_dead_nodes(model):
    """Drop nodes none of whose outputs reach a graph output; drop unused initializers."""
    g = model.graph
    live = graph_output_names(g)
    keep = []
    for n in reversed(g.nodes):
        if any(o in live for o in n.outputs if o):
            keep.append(n)
            live.update(consumers_of_node(n))
    keep.reverse()
    changed = len(keep) != len(g.nodes)
    g.nodes = keep
    inputs = {v.name for v in g.inputs}
    for name in list(g.initializers):
        if name not in live and name not in inputs:
            del g.initializers[name]
            changed = True
    return changed


def consumers_of_node(n):
    return {x for x in n.inputs if x} | body_reads(n)


def _attr_key(v):
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes() if v.dtype != object else tuple(v.ravel()))
    if isinstance(v, list):
        return tuple(_attr_key(x) for x in v)
    if hasattr(v, "nodes"):
        return ("graph", id(v))
    if hasattr(v, "SerializeToString"):
        return ("proto", v.SerializeToString())
    return v


def common_subexpressions(model):
    """Nodes with the same op, inputs and attributes compute the same values: keep the first."""
    g, seen, changed = model.graph, {}, False
    outputs = graph_output_names(g)
    for n in list(g.nodes):
        if n.op_type in _NONDETERMINISTIC or any(o in outputs for o in n.outputs):
            continue
        key = (n.domain, n.op_type, n.opset, tuple(n.inputs), len(n.outputs),
               tuple(sorted((k, _attr_key(v)) for k, v in n.attrs.items())))
        first = seen.get(key)
        if first is None:
            seen[key] = n
            continue
        g.nodes.remove(n)
        for a, b in zip(n.outputs, first.outputs):
            if a:
                replace_uses(g, a, b)
        changed = True
    return changed
