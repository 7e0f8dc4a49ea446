"""Extended pattern fusions: LayerNormalization, GELU (Erf form), HardSwish, MatMul+Add → Gemm."""
import math

import numpy as np

from ..ir.infer import dims_of
from ..ir.model import Node
from .graph import constant_value, consumers, fresh_name, graph_output_names, needs, producers, single_consumer


def _is(n, op):
    return n is not None and n.op_type == op and n.domain in ("", "ai.onnx")


def _scalar(g, name):
    v = constant_value(g, name) if name else None
    if v is None or v.size != 1 or v.dtype.kind != "f":
        return None
    return float(v.reshape(-1)[0])


def _other(n, name):
    """The other input of a binary node."""
    return n.inputs[1] if n.inputs[0] == name else n.inputs[0] if n.inputs[1] == name else None


def _reduce_axes(g, n):
    if "axes" in n.attrs:
        return list(n.attrs["axes"])
    if len(n.inputs) > 1 and n.inputs[1]:
        v = constant_value(g, n.inputs[1])
        return None if v is None else [int(a) for a in v.reshape(-1)]
    return None


@needs({"ReduceMean"})
def fuse_layernorm(model):
    """x - mean(x) → pow 2 → mean → +eps → sqrt → divide → *gamma → +beta  ⇒  LayerNormalization (opset ≥ 17)."""
    if model.opsets.get("", 1) < 17:
        return False
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    for mean in list(g.nodes):
        if not _is(mean, "ReduceMean") or mean not in g.nodes or _reduce_axes(g, mean) != [-1] or \
                not mean.attrs.get("keepdims", 1):
            continue
        x = mean.inputs[0]
        subs = [n for n in uses.get(mean.outputs[0], []) if _is(n, "Sub") and n.inputs == [x, mean.outputs[0]]]
        if len(subs) != 1 or len(uses.get(mean.outputs[0], [])) != 1:
            continue
        sub = subs[0]
        d = sub.outputs[0]
        readers = uses.get(d, [])
        pow_ = next((n for n in readers if _is(n, "Pow") and n.inputs[0] == d and _scalar(g, n.inputs[1]) == 2.0),
                    None)
        if pow_ is None:
            pow_ = next((n for n in readers if _is(n, "Mul") and n.inputs == [d, d]), None)
        div = next((n for n in readers if _is(n, "Div") and n.inputs[0] == d), None)
        if pow_ is None or div is None or len(readers) != 2:
            continue
        var = single_consumer(uses, pow_.outputs[0], outputs)
        if not _is(var, "ReduceMean") or _reduce_axes(g, var) != [-1]:
            continue
        add = single_consumer(uses, var.outputs[0], outputs)
        eps = _scalar(g, _other(add, var.outputs[0])) if _is(add, "Add") else None
        sqrt = single_consumer(uses, add.outputs[0], outputs) if eps is not None else None
        if not _is(sqrt, "Sqrt") or div.inputs[1] != sqrt.outputs[0] or \
                single_consumer(uses, sqrt.outputs[0], outputs) is not div:
            continue
        mul = single_consumer(uses, div.outputs[0], outputs)
        gamma = _other(mul, div.outputs[0]) if _is(mul, "Mul") else None
        gv = constant_value(g, gamma) if gamma else None
        if gv is None or gv.ndim != 1:
            continue
        tail, beta = mul, None
        badd = single_consumer(uses, mul.outputs[0], outputs)
        if _is(badd, "Add"):
            bname = _other(badd, mul.outputs[0])
            bv = constant_value(g, bname) if bname else None
            if bv is not None and bv.ndim == 1:
                tail, beta = badd, bname
        chain = [mean, sub, pow_, var, add, sqrt, div, mul] + ([tail] if tail is not mul else [])
        ln = Node("LayerNormalization", [x, gamma] + ([beta] if beta else []), [tail.outputs[0]],
                  {"axis": -1, "epsilon": eps}, "", (mean.name or "ln") + "_fused")
        g.nodes[g.nodes.index(mean)] = ln
        for n in chain[1:]:
            g.nodes.remove(n)
        uses = consumers(g)
        changed = True
    return changed


def _near(v, target):
    return v is not None and abs(v - target) < 1e-4


@needs({"Erf"})
def fuse_gelu(model):
    """x * 0.5 * (1 + erf(x / sqrt 2))  ⇒  Gelu (ai.onnx 20) or com.microsoft Gelu."""
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    for erf in list(g.nodes):
        if not _is(erf, "Erf") or erf not in g.nodes:
            continue
        prod = producers(g)
        div = prod.get(erf.inputs[0])
        x = None
        if _is(div, "Div") and _near(_scalar(g, div.inputs[1]), math.sqrt(2)):
            x = div.inputs[0]
        elif _is(div, "Mul"):
            x = next((c for c in div.inputs if _near(_scalar(g, _other(div, c)), 1 / math.sqrt(2))), None)
        if x is None:
            continue
        add = single_consumer(uses, erf.outputs[0], outputs)
        if not _is(add, "Add") or _scalar(g, _other(add, erf.outputs[0])) != 1.0:
            continue
        m1 = single_consumer(uses, add.outputs[0], outputs)
        if not _is(m1, "Mul"):
            continue
        other = _other(m1, add.outputs[0])
        half_mul = prod.get(other)
        chain = [div, erf, add, m1]
        if other == x:  # (x * (1 + erf)) * 0.5
            m2 = single_consumer(uses, m1.outputs[0], outputs)
            if not _is(m2, "Mul") or _scalar(g, _other(m2, m1.outputs[0])) != 0.5:
                continue
            chain.append(m2)
        elif _is(half_mul, "Mul") and x in half_mul.inputs and _scalar(g, _other(half_mul, x)) == 0.5 and \
                len(uses.get(half_mul.outputs[0], [])) == 1:
            chain.insert(0, half_mul)  # (x * 0.5) * (1 + erf)
        else:
            continue
        if len(uses.get(div.outputs[0], [])) != 1:
            continue
        out = chain[-1].outputs[0]
        if model.opsets.get("", 1) >= 20:
            node = Node("Gelu", [x], [out], {}, "", (erf.name or "gelu") + "_fused")
        else:
            node = Node("Gelu", [x], [out], {}, "com.microsoft", (erf.name or "gelu") + "_fused")
            model.opsets.setdefault("com.microsoft", 1)
        first = min(g.nodes.index(n) for n in chain)
        g.nodes[first] = node
        for n in chain:
            if n in g.nodes:
                g.nodes.remove(n)
        uses = consumers(g)
        changed = True
    return changed


@needs({"MatMul"}, {"Add"})
def fuse_matmul_add(model):
    """MatMul(A, B) + C ⇒ Gemm(A, B, C) when A is declared 2-D, B a 2-D constant and C a 1-D/2-D constant."""
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    for mm in list(g.nodes):
        if not _is(mm, "MatMul"):
            continue
        shape = dims_of(g, mm.inputs[0])
        b = constant_value(g, mm.inputs[1])
        add = single_consumer(uses, mm.outputs[0], outputs)
        if shape is None or len(shape) != 2 or b is None or b.ndim != 2 or not _is(add, "Add"):
            continue
        c_name = _other(add, mm.outputs[0])
        c = constant_value(g, c_name) if c_name else None
        if c is None or c.ndim not in (1, 2) or c.dtype != b.dtype or b.dtype.kind != "f":
            continue
        gemm = Node("Gemm", [mm.inputs[0], mm.inputs[1], c_name], add.outputs, {}, "", (mm.name or "mm") + "_gemm")
        g.nodes[g.nodes.index(mm)] = gemm
        g.nodes.remove(add)
        uses = consumers(g)
        changed = True
    return changed


@needs({"Add"}, {"Clip"}, {"Mul"})
def fuse_hardswish(model):
    """x * clip(x + 3, 0, 6) / 6  ⇒  HardSwish(x) (opset ≥ 14) or Mul(x, HardSigmoid(x, 1/6, 1/2)) before it."""
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    opset = model.opsets.get("", 1)
    for add in list(g.nodes):
        if not _is(add, "Add") or add not in g.nodes or opset < 6:
            continue
        x = next((c for c in add.inputs if _scalar(g, _other(add, c)) == 3.0), None)
        clip = single_consumer(uses, add.outputs[0], outputs) if x else None
        if not _is(clip, "Clip") or not _clip_0_6(g, clip):
            continue
        mul = single_consumer(uses, clip.outputs[0], outputs)
        if not _is(mul, "Mul") or _other(mul, clip.outputs[0]) != x:
            continue
        div = single_consumer(uses, mul.outputs[0], outputs)
        if _is(div, "Div") and div.inputs[0] == mul.outputs[0] and _scalar(g, div.inputs[1]) == 6.0:
            tail = div
        elif _is(div, "Mul") and _scalar(g, _other(div, mul.outputs[0])) in (1 / 6, np.float32(1 / 6)):
            tail = div
        else:
            continue
        base = (add.name or x) + "_hardswish"
        if opset >= 14:
            new = [Node("HardSwish", [x], [tail.outputs[0]], {}, "", base)]
        else:
            hs = fresh_name(g, base + "_gate")
            new = [Node("HardSigmoid", [x], [hs], {"alpha": 1 / 6, "beta": 0.5}, "", base + "_gate"),
                   Node("Mul", [x, hs], [tail.outputs[0]], {}, "", base)]
        i = g.nodes.index(add)
        g.nodes[i:i + 1] = new
        for n in (clip, mul, tail):
            g.nodes.remove(n)  # (`uses` holds for the nodes after: graph.consumers)
        changed = True
    return changed


def _clip_0_6(g, clip):
    if "min" in clip.attrs or "max" in clip.attrs:
        return clip.attrs.get("min") == 0.0 and clip.attrs.get("max") == 6.0
    lo = _scalar(g, clip.inputs[1]) if len(clip.inputs) > 1 and clip.inputs[1] else None
    hi = _scalar(g, clip.inputs[2]) if len(clip.inputs) > 2 and clip.inputs[2] else None
    return lo == 0.0 and hi == 6.0
