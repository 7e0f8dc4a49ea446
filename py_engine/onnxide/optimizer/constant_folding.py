"""Constant folding: nodes whose inputs are all constants are run once (numpy kernels) and become initializers."""
import numpy as np

from ..ir.infer import dims_of
from ..ir.model import subgraphs
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
    outer = getattr(model, "outer_constants", {})
    local = {v.name for v in g.inputs} | {o for n in g.nodes for o in n.outputs} if outer else set()
    for n in g.nodes:
        folded = _try_fold(model, n, outer, local)
        if folded is None:
            kept.append(n)
            continue
        for name, value in zip(n.outputs, folded):
            if name:
                g.initializers[name] = value
        changed = True
    g.nodes = kept
    return changed


def _static_shape(g, name):
    dims = dims_of(g, name)
    return dims if dims is not None and all(isinstance(d, int) for d in dims) else None


def _fold_shape(g, n):
    """Shape / Size of a value whose dims are all known statically (the shape sub-graphs of exported models)."""
    if n.domain not in ("", "ai.onnx") or n.op_type not in ("Shape", "Size") or not n.inputs:
        return None
    dims = _static_shape(g, n.inputs[0])
    if dims is None:
        return None
    if n.op_type == "Size":
        return [np.asarray(int(np.prod(dims, dtype=np.int64)), dtype=np.int64)]
    r = len(dims)
    start, end = n.attrs.get("start", 0), n.attrs.get("end", r)
    start = max(0, min(r, start + r if start < 0 else start))
    end = max(0, min(r, end + r if end < 0 else end))
    return [np.asarray(dims[start:end], dtype=np.int64)]


def _try_fold(model, n, outer, local):
    """The folded outputs of `n`, or None; `outer` holds enclosing graphs' constants, which names in `local` (the
    graph's own inputs and node outputs) hide."""
    shape = _fold_shape(model.graph, n)
    if shape is not None and n.outputs[0] not in {v.name for v in model.graph.outputs}:
        return shape
    if n.op_type in _NONDETERMINISTIC or next(subgraphs(n), None) is not None:
        return None
    g = model.graph
    args = []
    for x in n.inputs:
        if not x:
            args.append(None)
            continue
        v = constant_value(g, x)
        if v is None and x not in local:
            v = outer.get(x)
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
