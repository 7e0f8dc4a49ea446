"""Graph edits the quantizers share: topological order, renaming tensors, the opset of a domain."""

from ..errors import InvalidGraph
from ..proto.onnx_api import onnx


def _refs(node):
    """Every tensor a node reads, its subgraphs' outer references included."""
    names = set(node.input)
    for a in node.attribute:
        graphs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
        for g in graphs:
            for n in g.node:
                names |= _refs(n)
    return names


def topological_sort(graph):
    """Reorders graph.node: nodes without inputs first, then the nodes released as the initializers and graph
    inputs become available (taken in name order), then breadth first from the nodes already placed."""
    nodes = list(graph.node)
    pending = [0] * len(nodes)
    readers = {}
    for i, n in enumerate(nodes):
        for name in n.input:
            if name:
                pending[i] += 1
                readers.setdefault(name, []).append(i)
    order = [i for i in range(len(nodes)) if pending[i] == 0]

    def release(name):
        for i in readers.get(name, []):
            pending[i] -= 1
            if pending[i] == 0:
                order.append(i)

    for name in sorted({t.name for t in graph.initializer} | {t.name for t in graph.input}):
        release(name)
    k = 0
    while k < len(order):
        for out in nodes[order[k]].output:
            if out:
                release(out)
        k += 1
    if len(order) < len(nodes):
        raise InvalidGraph("the graph has a cycle, or a node reads a tensor nothing produces")
    del graph.node[:]
    graph.node.extend(nodes[i] for i in order)


def replace_input(graph, old, new, skip=None):
    for node in graph.node:
        if node is skip:
            continue
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new


def replace_output(graph, old, new):
    for node in graph.node:
        for i, name in enumerate(node.output):
            if name == old:
                node.output[i] = new


def ensure_opset(model, domain, version):
    for o in model.opset_import:
        if o.domain == domain:
            o.version = max(o.version, version) if domain else o.version
            return
    model.opset_import.append(onnx.helper.make_opsetid(domain, version))
