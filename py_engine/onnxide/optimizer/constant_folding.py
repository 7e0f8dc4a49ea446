"""Constant folding: nodes whose inputs are all constants are run once (numpy kernels) and become initializers."""
import numpy as np

from ..runtime.providers import resolve_opdef
from .eliminate import _NONDETERMINISTIC
from .graph import constant_value

_MAX_FOLDED_BYTES = 64 << 20  # don't materialise huge tensors (e.g. ConstantOfShape of a big shape)


class _FoldContext:
    """The KernelContext a kernel sees while folding (no subgraphs: nodes with graph attributes are not folded)."""

    def __init__(self, node, opsets):
        self.num_outputs = len(node.outputs)
        self.opset = resolve_opdef(node, opsets)[1]
        self.node_name = node.name
        self.input_types = [None] * len(node.inputs)

    def run_graph(self, graph, inputs):
        raise RuntimeError("no subgraphs while constant folding")


def fold_constants(model):
    g, changed = model.graph, False
    kept = []
    for n in g.nodes:
        folded = _try_fold(model, n)
        if folded is None:
            kept.append(n)
            continue
        for name, value in zip(n.outputs, folded):
            if name:
                g.initializers[name] = value
        changed = True
    g.nodes = kept
    return changed


def _try_fold(model, n):
    if n.op_type in _NONDETERMINISTIC or any(hasattr(v, "nodes") or isinstance(v, list) and v and
                                             hasattr(v[0], "nodes") for v in n.attrs.values()):
        return None
    g = model.graph
    args = []
    for x in n.inputs:
        if not x:
            args.append(None)
            continue
        v = constant_value(g, x)
        if v is None:
            return None
        args.append(v)
    if any(o in {v.name for v in g.outputs} for o in n.outputs):
        return None
    try:
        opdef, _ = resolve_opdef(n, model.opsets)
    except Exception:
        return None
    kwargs = dict(n.attrs)
    if opdef.wants_ctx:
        kwargs["ctx"] = _FoldContext(n, model.opsets)
    try:
        with np.errstate(all="ignore"):
            out = opdef.kernel(*args, **kwargs)
    except Exception:
        return None  # leave it to run time, where the error is reported against the node
    outs = list(out) if isinstance(out, tuple) else [out]
    if len(outs) < len([o for o in n.outputs if o]):
        return None
    result = []
    for v in outs:
        if isinstance(v, np.generic):
            v = np.asarray(v)
        if not isinstance(v, np.ndarray) or v.nbytes > _MAX_FOLDED_BYTES:
            return None
        result.append(v)
    return result
