"""Attention fusion: the multi-head attention that torch's exporters emit — per-head Reshape/Transpose of Q, K, V,
MatMul(Q, Kᵀ), scaling, an additive mask, Softmax, MatMul(·, V), Transpose/Reshape back — becomes one
com.microsoft MultiHeadAttention (which onnxruntime also runs). A [B,1,1,S] padding mask is expanded to the
[B,1,S,S] attention_bias that operator takes."""
import numpy as np

from ..ir.infer import dims_of
from ..ir.model import Node
from .graph import constant_value, consumers, fresh_name, graph_output_names, needs, producers, single_consumer


def _is(n, op, domain=("", "ai.onnx")):
    return n is not None and n.op_type == op and n.domain in domain


def _perm(n):
    return list(n.attrs.get("perm") or [])


def _keeps_leading(g, reshape, target):
    """Whether a Reshape's constant `target` keeps its input's dims 0 and 1: each entry 0 (copy) or that dim, static
    (a batch-dynamic export's [0, 197, 3, 64]), or one of them -1 where the other entries account for the rest of
    the input (a sequence-dynamic export's [0, -1, 6, 64] of a [batch, seq, 384] input)."""
    dims = dims_of(g, reshape.inputs[0]) or []
    if len(dims) < 2:
        return False
    lead = [int(t) == 0 or (isinstance(d, int) and int(t) == d) for t, d in zip(target[:2], dims)]
    if all(lead):
        return True
    rest = dims[2:]
    return (sorted(lead) == [False, True] and -1 in (int(target[0]), int(target[1]))
            and all(isinstance(d, int) for d in rest) and int(np.prod(rest)) == int(np.prod(target[2:])))


def _target(g, reshape):
    """A Reshape's target as a constant: its initializer, or the form with one -1 shape_values found for it."""
    target = constant_value(g, reshape.inputs[1])
    return target if target is not None else g.reshape_hints.get(reshape.outputs[0])


def _heads(g, reshape, prod):
    """(3-D input, N, H) when `reshape` splits the last dim into [N, H] keeping dims 0 and 1, else None."""
    if not _is(reshape, "Reshape") or reshape.attrs.get("allowzero", 0):
        return None
    target = _target(g, reshape)
    if target is None or target.size != 4 or not _keeps_leading(g, reshape, target):
        return None
    n, h = int(target[2]), int(target[3])
    return (reshape.inputs[0], n, h) if n > 0 and h > 0 else None


def _scalar(g, name):
    v = constant_value(g, name) if name else None
    return float(v.reshape(-1)[0]) if v is not None and v.size == 1 and v.dtype.kind == "f" else None


def _rank4_dims(g, name):
    dims = dims_of(g, name)
    return dims if dims is not None and len(dims) == 4 else None


def _shared_const(g, value):
    """One initializer per value, so the nodes built from it stay identical across layers (CSE merges them)."""
    name = "_onnxide_const_" + "_".join(str(int(v)) for v in value.reshape(-1))
    g.initializers.setdefault(name, value)
    return name


@needs({"Softmax"})
def fuse_attention(model):
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    for sm in list(g.nodes):
        if not _is(sm, "Softmax") or sm not in g.nodes or sm.attrs.get("axis", -1) not in (-1, 3):
            continue
        if model.opsets.get("", 1) < 13 and sm.attrs.get("axis", 1) != 3:
            continue  # Softmax before 13 flattens: axis must be the last one explicitly
        prod = producers(g)
        # scores → [Add mask] → [Div/Mul scale] ← MatMul(Q, Kᵀ)
        node, mask, scale = prod.get(sm.inputs[0]), None, None
        chain = []
        if _is(node, "Add"):
            a, b = node.inputs
            pa = prod.get(a)
            scores_side = a if _is(pa, "Div") or _is(pa, "Mul") or _is(pa, "MatMul") else b
            mask = b if scores_side == a else a
            chain.append(node)
            node = prod.get(scores_side)
        if _is(node, "Div") and _scalar(g, node.inputs[1]):
            scale = 1.0 / _scalar(g, node.inputs[1])
            chain.append(node)
            node = prod.get(node.inputs[0])
        elif _is(node, "Mul") and (_scalar(g, node.inputs[1]) or _scalar(g, node.inputs[0])):
            scale = _scalar(g, node.inputs[1]) or _scalar(g, node.inputs[0])
            chain.append(node)
            node = prod.get(node.inputs[0] if _scalar(g, node.inputs[1]) else node.inputs[1])
        qk = node
        if not _is(qk, "MatMul"):
            continue
        tq, tk = prod.get(qk.inputs[0]), prod.get(qk.inputs[1])
        pv = single_consumer(uses, sm.outputs[0], outputs)
        if not (_is(tq, "Transpose") and _perm(tq) == [0, 2, 1, 3] and _is(tk, "Transpose")
                and _perm(tk) == [0, 2, 3, 1] and _is(pv, "MatMul") and pv.inputs[0] == sm.outputs[0]):
            continue
        tv = prod.get(pv.inputs[1])
        to = single_consumer(uses, pv.outputs[0], outputs)
        ro = single_consumer(uses, to.outputs[0], outputs) if _is(to, "Transpose") else None
        if not (_is(tv, "Transpose") and _perm(tv) == [0, 2, 1, 3] and _perm(to) == [0, 2, 1, 3]
                and _is(ro, "Reshape")):
            continue
        hq, hk, hv = (_heads(g, prod.get(t.inputs[0]), prod) for t in (tq, tk, tv))
        target = _target(g, ro)
        if None in (hq, hk, hv) or target is None or target.size != 3 or not _keeps_leading(g, ro, target) \
                or ro.attrs.get("allowzero", 0):
            continue
        (q3, n, h), (k3, nk, hk_), (v3, nv, hv_) = hq, hk, hv
        if not (n == nk == nv and h == hk_ == hv_ and int(target[2]) == n * h):
            continue
        inner = [tq, tk, tv, prod.get(tq.inputs[0]), prod.get(tk.inputs[0]), prod.get(tv.inputs[0]), qk, sm, pv, to]
        if any(len(uses.get(x.outputs[0], [])) != 1 for x in inner + chain):
            continue
        attrs = {"num_heads": n}
        if scale is not None and abs(scale - 1 / np.sqrt(h)) > 1e-7 * scale:
            attrs["scale"] = float(scale)
        elif scale is None:
            attrs["scale"] = 1.0
        new, bias = [], ""
        if mask is not None:
            mdims = _rank4_dims(g, mask)
            if mdims is None or mdims[1] != 1:
                continue  # a per-head or unknown-rank mask: leave it
            bias = mask
            if mdims[2] != 1 and mdims[2] is None:
                continue
            if mdims[2] == 1:  # [B,1,1,S_kv] → [B,1,S_q,S_kv]: onnxruntime wants dim 2 = sequence length
                base = fresh_name(g, (sm.name or "attn") + "_bias")
                seq, tgt, bias = (base + s for s in ("_seq", "_shape", "_expanded"))
                ones, ones1 = _shared_const(g, np.ones(2, np.int64)), _shared_const(g, np.ones(1, np.int64))
                qdims = dims_of(g, q3) or [None, None]
                # self-attention: S_q is the mask's own last dim, so every layer's expansion is the same (CSE)
                src, at_dim = (mask, 3) if mdims[3] is not None and mdims[3] == qdims[1] else (q3, 1)
                new += [Node("Shape", [src], [seq], {"start": at_dim, "end": at_dim + 1}, "", seq),
                        Node("Concat", [ones, seq, ones1], [tgt], {"axis": 0}, "", tgt),
                        Node("Expand", [mask, tgt], [bias], {}, "", bias)]
                if model.opsets.get("", 1) < 15:
                    continue  # Shape's start/end need opset 15
        mha = Node("MultiHeadAttention", [q3, k3, v3, "", "", bias] if bias else [q3, k3, v3],
                   [ro.outputs[0]], attrs, "com.microsoft", (sm.name or "attn") + "_mha")
        at = g.nodes.index(ro)
        g.nodes[at:at + 1] = new + [mha]
        for x in inner + chain:
            g.nodes.remove(x)
        model.opsets.setdefault("com.microsoft", 1)
        uses = consumers(g)
        changed = True
    return changed
