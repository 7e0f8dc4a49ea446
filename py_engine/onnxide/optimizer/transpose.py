"""Transpose cancellation: consecutive Transposes compose into one, or vanish when they compose to identity."""
from .graph import consumers, graph_output_names, needs, replace_uses, single_consumer


@needs({"Transpose"})
def cancel_transposes(model):
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    for first in list(g.nodes):
        if first not in g.nodes or first.op_type != "Transpose" or first.domain not in ("", "ai.onnx"):
            continue
        second = single_consumer(uses, first.outputs[0], outputs)
        if second is None or second.op_type != "Transpose" or second.domain not in ("", "ai.onnx"):
            continue
        p1, p2 = first.attrs.get("perm"), second.attrs.get("perm")
        if p1 is None or p2 is None or len(p1) != len(p2):
            continue  # default perm (reverse) needs the rank: leave it
        composed = [p1[i] for i in p2]
        g.nodes.remove(first)
        if composed == list(range(len(composed))) and second.outputs[0] not in outputs:
            g.nodes.remove(second)
            replace_uses(g, second.outputs[0], first.inputs[0])
        else:
            second.inputs = [first.inputs[0]]
            second.attrs = {"perm": composed}
            second.attr_protos = []
        uses = consumers(g)
        changed = True
    return changed
