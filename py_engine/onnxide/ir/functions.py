"""Inlining of model-local functions (FunctionProto): call sites become the renamed body nodes."""
import copy
import itertools

from ..errors import InvalidGraph
from .model import Node, subgraphs

_counter = itertools.count()


def inline_functions(model, base_dir, build_graph, attribute_value):
    funcs = {(f.domain, f.name, f.overload): f for f in model.functions}
    by_name = {(f.domain, f.name): f for f in model.functions}
    ctx = (funcs, by_name, model, base_dir, build_graph, attribute_value)
    _inline_graph(model.graph, ctx, depth=0)


def _find(ctx, node):
    funcs, by_name = ctx[0], ctx[1]
    return funcs.get((node.domain, node.op_type, "")) or by_name.get((node.domain, node.op_type))


def _inline_graph(graph, ctx, depth):
    if depth > 64:
        raise InvalidGraph("Function calls nest deeper than 64 levels (recursive functions?)")
    out = []
    for node in graph.nodes:
        for g in subgraphs(node):
            _inline_graph(g, ctx, depth)
        f = _find(ctx, node)
        if f is None:
            out.append(node)
            continue
        body = _expand(node, f, ctx)
        sub = type(graph)(nodes=body)
        _inline_graph(sub, ctx, depth + 1)
        out.extend(sub.nodes)
    graph.nodes = out


def _expand(call, f, ctx):
    model, base_dir, build_graph, attribute_value = ctx[2:]

    prefix = f"_inl{next(_counter)}_{f.name}_"
    rename = {}
    for i, name in enumerate(f.input):
        rename[name] = call.inputs[i] if i < len(call.inputs) else ""
    for i, name in enumerate(f.output):
        rename[name] = call.outputs[i] if i < len(call.outputs) else prefix + name
    # attribute values visible to the body: defaults from attribute_proto, then the call's
    values, protos = {}, {}
    for a in f.attribute_proto:
        values[a.name] = attribute_value(a, base_dir, lambda gp: build_graph(gp, base_dir, check=False))
        protos[a.name] = a
    for a in call.attr_protos:
        protos[a.name] = a
    values.update(call.attrs)
    opsets = {("" if o.domain == "ai.onnx" else o.domain): int(o.version) for o in f.opset_import}
    nodes = []
    for n in f.node:
        attrs, aprotos = {}, []
        for a in n.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name in values:
                    attrs[a.name] = values[a.ref_attr_name]
                    p = copy.copy(protos[a.ref_attr_name])
                    p.name = a.name
                    aprotos.append(p)
                continue
            attrs[a.name] = attribute_value(a, base_dir, lambda gp: build_graph(gp, base_dir, check=False))
            aprotos.append(a)
        ins = [rename.get(x, prefix + x) if x else "" for x in n.input]
        outs = [rename.setdefault(x, prefix + x) if x else "" for x in n.output]
        node = Node(n.op_type, ins, outs, attrs, n.domain, prefix + (n.name or n.op_type), aprotos)
        dom = "" if n.domain == "ai.onnx" else n.domain
        if dom in opsets and opsets[dom] != model.opsets.get(dom):
            node.opset = opsets[dom]
        for g in subgraphs(node):
            _rename_in_subgraph(g, rename, prefix)
        nodes.append(node)
    return nodes


def _rename_in_subgraph(g, rename, prefix):
    """Outer-scope references inside a body node's subgraph follow the renaming of the body's values."""
    local = {v.name for v in g.inputs} | set(g.initializers)
    for n in g.nodes:
        n.inputs = [rename[x] if x in rename and x not in local else x for x in n.inputs]
        local.update(n.outputs)
        for sg in subgraphs(n):
            _rename_in_subgraph(sg, rename, prefix)
    for o in g.outputs:
        if o.name in rename and o.name not in local:
            o.name = rename[o.name]
