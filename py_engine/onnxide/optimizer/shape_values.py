"""Reshape targets from shape arithmetic: Shape→Gather→Unsqueeze→Concat chains whose entries are constants or the
input's own (symbolic) dims become constant targets with 0 (copy the dim, allowzero off), so the chain is dead code.
A target with one entry known only at run time stays (a -1 there would let a reshape to a wrong size succeed); the
constant form with that -1 goes to `graph.reshape_hints` for the fusions, which consume the node."""
import numpy as np

from ..ir.infer import dims_of, infer_shapes
from .graph import constant_value, fresh_name


def simplify_reshape_targets(model):
    g, changed = model.graph, False
    sv = None
    for n in g.nodes:
        if n.op_type != "Reshape" or n.domain not in ("", "ai.onnx") or len(n.inputs) < 2 or \
                constant_value(g, n.inputs[1]) is not None:
            continue
        if sv is None:
            sv = infer_shapes(model)[1]
        if n.inputs[1] not in sv:
            continue
        entries, _ = sv[n.inputs[1]]
        if n.attrs.get("allowzero", 0) and 0 in entries:
            continue  # a literal 0 means an empty dim there; the constant target below uses 0 as "copy"
        dims = dims_of(g, n.inputs[0]) or []
        target, free, guessed = [], 0, False
        for i, e in enumerate(entries):
            if isinstance(e, int):
                target.append(e)
                free += e == -1
            elif e is not None and i < len(dims) and dims[i] == e:
                target.append(0)  # the same symbolic dim as the input's at this position: copy it
            else:
                target.append(-1)
                free += 1
                guessed = True
        if free > 1:
            continue
        if guessed:  # (an entry known only at run time: the node keeps its target, which the kernel checks)
            g.reshape_hints[n.outputs[0]] = np.asarray(target, dtype=np.int64)
            continue
        name = fresh_name(g, n.inputs[1] + "_const")
        g.initializers[name] = np.asarray(target, dtype=np.int64)
        n.inputs = [n.inputs[0], name]
        if n.attrs.get("allowzero", 0):  # copying a dim gives the same size, even an empty one
            n.attrs["allowzero"] = 0
            n.attr_protos = [a for a in n.attr_protos if a.name != "allowzero"]
        changed = True
    return changed
