"""Graph-editing helpers for the passes: producers/consumers (subgraph reads included), constants, rewiring."""
import numpy as np

from ..ir.model import subgraphs
from ..ir.scope import free_names


def needs(*groups):
    """Marks a pass that can only change a graph holding, for each group, a node of one of its op types (any domain):
    the driver skips it on graphs without one — most passes find nothing on most graphs, and the consumers map a
    pass builds first is the costly part of a session's creation."""
    def mark(fn):
        fn.needs = tuple(frozenset(g) for g in groups)
        return fn
    return mark


def producers(graph):
    return {o: n for n in graph.nodes for o in n.outputs if o}


def consumers(graph):
    """name -> list of nodes reading it (a node whose subgraph reads a name counts as reading it). Written for speed:
    building it is much of a session's optimizing time. A pass that walks the nodes in order, asks the map only
    about the outputs of the node it is at, and rewrites there only by removing readers of that node's outputs that
    read nothing else but earlier values and constants, and by making nodes read earlier values, keeps the map it
    built first: no reader of a later node's output is removed or added (fuse_activation, the Conv folds,
    fuse_hardswish). Other passes build it again after each rewrite."""
    uses = {}
    for n in graph.nodes:
        for x in n.inputs:
            if x:
                readers = uses.get(x)
                if readers is None:
                    uses[x] = [n]
                else:
                    readers.append(n)
        if n.attrs:
            for g in subgraphs(n):
                for x in free_names(g):
                    uses.setdefault(x, []).append(n)
    return uses


def graph_output_names(graph):
    return {o.name for o in graph.outputs}


def constant_value(graph, name):
    """The initializer's array when `name` is a non-overridable initializer, else None."""
    if name in graph.initializers and name not in {v.name for v in graph.inputs}:
        v = graph.initializers[name]
        return v if isinstance(v, np.ndarray) else None
    return None


def is_float32(graph, name):
    """Whether value `name` is float32: an initializer's array, else its declared or inferred type."""
    v = constant_value(graph, name)
    if v is not None:
        return v.dtype == np.float32
    t = graph.value_type(name)
    return t is not None and t.tensor_type is not None and t.tensor_type.elem_type == 1  # (TensorProto.FLOAT)


def replace_uses(graph, old, new):
    """Make every reader of `old` (incl. subgraph reads) read `new`; graph outputs keep their names."""
    for n in graph.nodes:
        n.inputs = [new if x == old else x for x in n.inputs]
        for g in subgraphs(n):
            _replace_in_subgraph(g, old, new)


def _replace_in_subgraph(g, old, new):
    local = {v.name for v in g.inputs} | set(g.initializers)
    if old in local:
        return
    for n in g.nodes:
        if old in n.outputs:
            return
        n.inputs = [new if x == old else x for x in n.inputs]
        for sg in subgraphs(n):
            _replace_in_subgraph(sg, old, new)
    for o in g.outputs:
        if o.name == old:
            o.name = new


def taken_names(graph):
    """The value names `graph` defines (initializers, node outputs, inputs)."""
    return set(graph.initializers) | {o for n in graph.nodes for o in n.outputs} | {v.name for v in graph.inputs}


def fresh_name(graph, base, taken=None):
    """`base`, or `base_<i>`, a name `graph` does not define; a pass naming many values passes one `taken`
    (taken_names, which this extends with the new name) instead of having the graph scanned per name."""
    if taken is None:
        taken = taken_names(graph)
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    taken.add(name)
    return name


def dedupe_node_names(graph):
    """Rename the nodes of `graph` whose non-empty name an earlier node already has (passes name fused nodes after
    what they replace, so two unnamed patterns give two "gelu_fused"): onnxruntime refuses a saved model with
    duplicate node names."""
    taken = {n.name for n in graph.nodes}
    seen = set()
    for n in graph.nodes:
        if n.name and n.name in seen:
            i = 1
            while f"{n.name}_{i}" in taken:
                i += 1
            n.name = f"{n.name}_{i}"
            taken.add(n.name)
        seen.add(n.name)


def single_consumer(uses, name, outputs):
    """The only node reading `name`, or None (also None when `name` is a graph output)."""
    readers = uses.get(name, [])
    return readers[0] if len(readers) == 1 and name not in outputs else None
