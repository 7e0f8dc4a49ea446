"""Name scoping across control-flow bodies: which names a graph (and the bodies nested in it) reads from the
graphs that enclose it."""
from .model import subgraphs


def free_names(graph):
    """Names `graph` and its nested subgraphs read from enclosing scopes (including outputs it passes through)."""
    local = set(graph.initializers) | {v.name for v in graph.inputs}
    free = set()
    for n in graph.nodes:
        for x in n.inputs:
            if x and x not in local:
                free.add(x)
        for g in subgraphs(n):
            free.update(x for x in free_names(g) if x not in local)
        local.update(n.outputs)
    free.update(o.name for o in graph.outputs if o.name not in local)
    return free


def body_reads(node):
    """Names `node`'s subgraphs read from the graph `node` is in (its implicit inputs)."""
    names = set()
    for g in subgraphs(node):
        names |= free_names(g)
    return names
