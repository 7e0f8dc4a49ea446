"""Graph edits the quantizers share: topological order, renaming tensors, the opset of a domain."""
import onnx

from ..errors import InvalidGraph


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
    """Reorders graph.node breadth first from the nodes whose inputs are all graph inputs, initializers or
    nothing (Kahn's algorithm with a FIFO queue: consumers are released in graph order)."""
    from collections import deque
    nodes = list(graph.node)
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    pending = [0] * len(nodes)
    consumers = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        deps = {producer[r] for r in _refs(n) if r in producer and producer[r] != i}
        pending[i] = len(deps)
        for d in sorted(deps):
            consumers[d].append(i)
    for c in consumers:
        c.sort()
    queue = deque(i for i in range(len(nodes)) if pending[i] == 0)
    order = []
    while queue:
        i = queue.popleft()
        order.append(nodes[i])
        for c in consumers[i]:
            pending[c] -= 1
            if pending[c] == 0:
                queue.append(c)
    if len(order) < len(nodes):
        raise InvalidGraph("the graph has a cycle, or a node reads a tensor nothing produces")
    del graph.node[:]
    graph.node.extend(order)


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
