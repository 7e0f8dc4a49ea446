"""Constant folding: nodes whose inputs are all constants are run once (numpy kernels) and become initializers; an
If whose condition is constant is replaced by the branch it takes."""
import numpy as np

from ..ir.infer import dims_of
from ..ir.model import Node, has_subgraphs, subgraphs
from ..ops.registry import resolve_opdef
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
    g = model.graph
    outer = getattr(model, "outer_constants", {})
    local = {v.name for v in g.inputs} | {o for n in g.nodes for o in n.outputs} if outer else set()
    return _fold_nodes(g, lambda n: _try_fold(model, n, outer, local))


def fold_constant_nodes(model):
    """Constant nodes ⇒ initializers, as fold_constants folds them (optimize runs this on every graph outermost
    first, so that each body starts with the constants of the graphs around it)."""
    return _fold_nodes(model.graph, lambda n: _try_fold(model, n, {}, set())
                       if n.op_type == "Constant" and n.domain in ("", "ai.onnx") else None)


def _fold_nodes(g, fold):
    """The nodes of `g` that `fold(node)` gives values for become initializers; True when any did."""
    kept = []
    for n in g.nodes:
        folded = fold(n)
        if folded is None:
            kept.append(n)
            continue
        for name, value in zip(n.outputs, folded):
            if name:
                g.initializers[name] = value
    changed = len(kept) != len(g.nodes)
    g.nodes = kept
    return changed


def _static_shape(model, name):
    """The value's dims when all are known: declared / inferred here, or (in a body) an enclosing graph's value."""
    dims = dims_of(model.graph, name)
    if dims is None and hasattr(model, "outer_type") and not _defined_in(model.graph, name):
        t = model.outer_type(name)
        dims = t[1] if t is not None else None
    return dims if dims is not None and all(isinstance(d, int) for d in dims) else None


def _defined_in(g, name):
    return name in g.initializers or any(v.name == name for v in g.inputs) or any(name in n.outputs for n in g.nodes)


def _fold_shape(model, n):
    """Shape / Size of a value whose dims are all known statically (the shape sub-graphs of exported models)."""
    if n.domain not in ("", "ai.onnx") or n.op_type not in ("Shape", "Size") or not n.inputs:
        return None
    dims = _static_shape(model, n.inputs[0])
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
    shape = _fold_shape(model, n)
    if shape is not None and n.outputs[0] not in {v.name for v in model.graph.outputs}:
        return shape
    if n.op_type in _NONDETERMINISTIC or has_subgraphs(n):
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
    if opdef.custom is not None:  # a user's function runs when the session runs, never at load
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


def inline_constant_if(model):
    """An If with a constant condition ⇒ the nodes of the branch it takes, in its place (its initializers move to
    this graph; Identity nodes give the branch's outputs the If's output names and are then rewired away). Skipped
    when a name the branch defines is already taken anywhere in this graph or its other subgraphs."""
    g, changed = model.graph, False
    outer = getattr(model, "outer_constants", {})
    for n in list(g.nodes):
        if n.op_type != "If" or n.domain not in ("", "ai.onnx") or not n.inputs:
            continue
        cond = constant_value(g, n.inputs[0])
        if cond is None and not _defined_in(g, n.inputs[0]):
            cond = outer.get(n.inputs[0])
        if cond is None or cond.size != 1:
            continue
        branch = n.attrs.get("then_branch" if bool(cond.reshape(-1)[0]) else "else_branch")
        if branch is None or branch.inputs or len(branch.outputs) != len(n.outputs):
            continue
        defined = set(branch.initializers) | {o for bn in branch.nodes for o in bn.outputs if o}
        if defined & _all_names(g, skip=n):
            continue
        at = g.nodes.index(n)
        g.initializers.update(branch.initializers)
        renames = [Node("Identity", [bo.name], [io], {}, "", (n.name or io) + "_inlined_" + str(i))
                   for i, (bo, io) in enumerate(zip(branch.outputs, n.outputs)) if io]
        g.nodes[at:at + 1] = list(branch.nodes) + renames
        changed = True
    return changed


def _all_names(g, skip=None):
    """Every name defined in `g` and in the subgraphs of its nodes (except node `skip`'s)."""
    names = set(g.initializers) | {v.name for v in g.inputs}
    for n in g.nodes:
        if n is skip:
            continue
        names.update(o for o in n.outputs if o)
        for sg in subgraphs(n):
            names |= _all_names(sg)
    return names
