"""Transformer-block fusions onnxruntime also makes, into com.microsoft ops every EP runs: Add(bias) + Gelu ⇒
BiasGelu; Add(residual) + LayerNormalization ⇒ SkipLayerNormalization, taking in the bias Add of a MatMul feeding
it; x · Sigmoid(α·x) (SiLU: α = 1) ⇒ QuickGelu."""
from ..ir.infer import dims_of
from ..ir.model import Node
from .fuse_patterns import _scalar
from .graph import constant_value, consumers, graph_output_names, is_float32, needs, producers, single_consumer

MS = "com.microsoft"


def _op(n, op, domains=("", "ai.onnx")):
    return n is not None and n.op_type == op and n.domain in domains


def _bias_add(g, add, last_dim):
    """(activation input, 1-D constant bias name) when `add` adds a float constant vector of length `last_dim`."""
    if not _op(add, "Add") or len(add.inputs) != 2:
        return None
    for i in (0, 1):
        c, x = add.inputs[i], add.inputs[1 - i]
        v = constant_value(g, c)
        if v is not None and v.ndim == 1 and v.shape[0] == last_dim and v.dtype.kind == "f" and \
                constant_value(g, x) is None:
            return x, c
    return None


def _last_dim(g, name, rank=None):
    d = dims_of(g, name)
    if d is None or (rank is not None and len(d) != rank) or not isinstance(d[-1], int):
        return None
    return d[-1]


@needs({"Gelu"})
def fuse_bias_gelu(model):
    """Add(x, bias) → Gelu (exact)  ⇒  com.microsoft BiasGelu(x, bias)."""
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    for gelu in list(g.nodes):
        exact = _op(gelu, "Gelu", (MS,)) or (_op(gelu, "Gelu") and gelu.attrs.get("approximate", "none") == "none")
        if not exact:
            continue
        add = producers(g).get(gelu.inputs[0])
        last = _last_dim(g, gelu.inputs[0])
        found = _bias_add(g, add, last) if last else None
        if found is None or single_consumer(uses, add.outputs[0], outputs) is not gelu:
            continue
        g.nodes[g.nodes.index(add)] = Node("BiasGelu", list(found), gelu.outputs, {}, MS,
                                           (gelu.name or "gelu") + "_bias")
        g.nodes.remove(gelu)
        model.opsets.setdefault(MS, 1)
        uses = consumers(g)
        changed = True
    return changed


@needs({"Sigmoid"}, {"Mul"})
def fuse_quick_gelu(model):
    """Mul(x, Sigmoid(x)) or Mul(x, Sigmoid(Mul(x, α))) on float32, the Sigmoid (and inner Mul) read by nothing
    else  ⇒  com.microsoft QuickGelu(x, alpha=α): one pass instead of two or three (YOLOv8's SiLU after each conv,
    which the native chains then fold into the conv's epilogue)."""
    g, changed = model.graph, False
    uses, outputs, prod = consumers(g), graph_output_names(g), producers(g)
    for sig in list(g.nodes):
        if not _op(sig, "Sigmoid") or sig not in g.nodes:
            continue
        x, alpha, inner = sig.inputs[0], 1.0, None
        scaled = prod.get(x)
        if _op(scaled, "Mul") and len(scaled.inputs) == 2 and single_consumer(uses, scaled.outputs[0], outputs) is sig:
            for i in (0, 1):
                c = _scalar(g, scaled.inputs[1 - i])
                if c is not None and constant_value(g, scaled.inputs[i]) is None:
                    x, alpha, inner = scaled.inputs[i], c, scaled
                    break
        mul = single_consumer(uses, sig.outputs[0], outputs)
        if not _op(mul, "Mul") or len(mul.inputs) != 2 or sorted(mul.inputs) != sorted([x, sig.outputs[0]]) or \
                not is_float32(g, x):
            continue
        first = inner if inner is not None else sig
        fused = Node("QuickGelu", [x], mul.outputs, {"alpha": alpha}, MS, (mul.name or "silu") + "_quick_gelu")
        g.nodes[g.nodes.index(first)] = fused
        for n in (sig, mul):
            if n in g.nodes:
                g.nodes.remove(n)
        model.opsets.setdefault(MS, 1)
        # the maps kept up to date in place (rebuilding them per fusion was O(n^2): YOLOv8n has 57): x's readers
        # lose the removed nodes and gain the fused one, which now makes the Mul's outputs; the removed nodes'
        # own outputs had no other readers
        uses[x] = [n for n in uses.get(x, ()) if n is not first and n is not mul] + [fused]
        prod.update((o, fused) for o in mul.outputs)
        changed = True
    return changed


@needs({"LayerNormalization"}, {"Add"})
def fuse_skip_layernorm(model):
    """LayerNormalization(a + b) over the last axis of 3-D a, b (the sum read by nothing else), with a bias Add on
    either side folded in  ⇒  com.microsoft SkipLayerNormalization(input, skip, gamma, beta, bias)."""
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    for ln in list(g.nodes):
        if not _op(ln, "LayerNormalization") or len([o for o in ln.outputs if o]) != 1 or ln.outputs[0] == "" or \
                ln.attrs.get("stash_type", 1) != 1:
            continue
        prod = producers(g)
        add = prod.get(ln.inputs[0])
        h = _last_dim(g, ln.inputs[0], rank=3)
        if h is None or ln.attrs.get("axis", -1) not in (-1, 2) or not _op(add, "Add") or \
                single_consumer(uses, add.outputs[0], outputs) is not ln:
            continue
        a, b = add.inputs
        if dims_of(g, a) != dims_of(g, b) or constant_value(g, a) is not None or constant_value(g, b) is not None:
            continue
        gamma = constant_value(g, ln.inputs[1])
        beta = constant_value(g, ln.inputs[2]) if len(ln.inputs) > 2 and ln.inputs[2] else None
        if gamma is None or gamma.shape != (h,) or (len(ln.inputs) > 2 and ln.inputs[2] and
                                                   (beta is None or beta.shape != (h,))):
            continue
        inputs, bias_add = [a, b], None
        for i in (0, 1):
            inner = prod.get(inputs[i])
            found = _bias_add(g, inner, h)
            if found is not None and single_consumer(uses, inner.outputs[0], outputs) is add:
                inputs = [found[0], inputs[1 - i], found[1]]
                bias_add = inner
                break
        node = Node("SkipLayerNormalization",
                    [inputs[0], inputs[1], ln.inputs[1], ln.inputs[2] if len(ln.inputs) > 2 else ""]
                    + inputs[2:], [ln.outputs[0]], {"epsilon": float(ln.attrs.get("epsilon", 1e-5))}, MS,
                    (ln.name or "ln") + "_skip")
        g.nodes[g.nodes.index(ln)] = node
        g.nodes.remove(add)
        if bias_add is not None:
            g.nodes.remove(bias_add)
        model.opsets.setdefault(MS, 1)
        uses = consumers(g)
        changed = True
    return changed
