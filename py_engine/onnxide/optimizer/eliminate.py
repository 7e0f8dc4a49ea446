"""Basic passes: Identity/Dropout elimination, dead-node removal, common-subexpression elimination."""
import numpy as np

from ..ir.model import subgraphs

from .graph import consumers, graph_output_names, replace_uses

_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                     "Bernoulli"}


def remove_identity_like(model):
    """Identity, and inference-mode Dropout whose mask is unused, become plain rewiring."""
    g, changed = model.graph, False
    outputs = graph_output_names(g)
    for n in list(g.nodes):
        if n.domain not in ("", "ai.onnx") or not _is_identity_like(n) or not n.inputs or not n.inputs[0]:
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


def _is_identity_like(n):
    if n.op_type == "Identity":
        return True
    if n.op_type != "Dropout" or (len(n.outputs) > 1 and n.outputs[1]):
        return False
    return not (len(n.inputs) >= 3 and n.inputs[2])  # a training_mode input may be true at run time


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
    from ..runtime.executor import free_names
    names = {x for x in n.inputs if x}
    for sg in subgraphs(n):
        names |= free_names(sg)
    return names


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
