"""Shape computations stay on the host: a node a GPU EP claimed moves to a host EP when its results are shape-like
(integer or boolean, or a few statically known elements), it reads only shape-derived values (small or integer
initializers, results of Shape / Size and of other host shape computations, a body's host inputs — never a model
input's data) and every reader of its results reads them on the host (a host node, an op's host input, a body
output the enclosing node reads on the host). So Shape -> Gather -> Concat -> Reshape's shape input runs where
Reshape reads it, with no transfer either way — onnxruntime's CPU-preferred shape nodes, decided here from the
op facts (ops/registry.py)."""
from .. import dtypes as dt
from ..ir.model import has_subgraphs
from ..ir.scope import body_reads

SMALL = 64  # elements: a float result this small (Resize scales, a computed scalar) counts as shape-like
_INTEGRAL = {dt.INT8, dt.INT16, dt.INT32, dt.INT64, dt.UINT8, dt.UINT16, dt.UINT32, dt.UINT64, dt.BOOL}


def _shape_like(spec):
    """Whether every result of the node is an integer / boolean tensor or has at most SMALL static elements."""
    for t, dims in zip(spec.output_types, spec.output_shapes):
        if t in _INTEGRAL:
            continue
        if t is None or dims is None or not all(isinstance(d, int) for d in dims):
            return False
        size = 1
        for d in dims:
            size *= d
        if size > SMALL:
            return False
    return bool(spec.output_types)


def prefer_host(placed, graph, providers, input_devices, output_wants, outer_homes):
    """Move the qualifying device-placed entries of `placed` (partition.Placed, in order) to the first host EP
    that claims them, in place."""
    producer = {o: p for p in placed for o in p.node.outputs if o}
    candidates = set()  # ids of device nodes that may move; narrowed to those meeting both conditions below

    def on_host(x):
        """Whether x is a shape-derived host value (given the candidates moving)."""
        if not x:
            return True
        if x in graph.initializers:
            v = graph.initializers[x]
            return getattr(v, "size", SMALL + 1) <= SMALL or getattr(v, "dtype", None) is not None and \
                v.dtype.kind in "iub"
        p = producer.get(x)
        if p is not None:
            return (p.device.is_host or id(p) in candidates) and all(
                on_host(y) for i, y in enumerate(p.node.inputs) if i not in p.opdef.meta_inputs)
        if x in input_devices:  # a body's host inputs (a Loop's counter and condition); a model's feeds are data
            return output_wants is not None and input_devices[x].is_host
        return outer_homes.get(x) is not None and outer_homes[x].is_host

    for p in placed:
        if not p.device.is_host and not has_subgraphs(p.node) and _shape_like(p.spec):
            candidates.add(id(p))

    def reads_host_only(p):
        meta = p.opdef.meta_inputs
        return all(on_host(x) for i, x in enumerate(p.node.inputs) if i not in meta)

    if not candidates:
        return
    readers = {}  # name -> [(placed, input index or None for a body read)]
    for p in placed:
        for i, x in enumerate(p.node.inputs):
            if x:
                readers.setdefault(x, []).append((p, i))
        for x in body_reads(p.node):
            readers.setdefault(x, []).append((p, None))
    wants = output_wants or {}
    outputs = {o.name for o in graph.outputs}

    def host_reader(q, i):
        if i is None:  # a body reads it: where depends on the body's own placement, so keep it where it is
            return False
        if i in q.opdef.meta_inputs or q.device.is_host or i in q.opdef.host_inputs:
            return True
        return id(q) in candidates

    changed = True
    while changed:  # both conditions, to a fixed point: dropping one node can disqualify its readers and producers
        changed = False
        for p in placed:
            if id(p) not in candidates:
                continue
            outs = [o for o in p.node.outputs if o]
            ok = reads_host_only(p) and any(readers.get(o) or o in outputs for o in outs)
            for o in outs:
                if o in outputs and not (o in wants and wants[o].is_host):
                    ok = False
                if not all(host_reader(q, i) for q, i in readers.get(o, ())):
                    ok = False
            if not ok:
                candidates.discard(id(p))
                changed = True
    for p in placed:
        if id(p) in candidates:
            for ep in providers:
                if ep.device.is_host:
                    kernel = ep.claim(p.spec)
                    if kernel is not None:
                        p.ep, p.kernel = ep, kernel
                        break
