"""Dynamic-quantization fusions onnxruntime makes at the extended level: MatMulInteger → Cast → Mul(scale product)
(+ bias Add) ⇒ com.microsoft MatMulIntegerToFloat, then DynamicQuantizeLinear feeding only such nodes ⇒
com.microsoft DynamicQuantizeMatMul (one per reader; onnxruntime fuses a sole reader only). The fused kernels compute
the same float32 steps in the same order (float(acc) * (a_scale * b_scale), then + bias), so fusing changes no result
bit."""
import numpy as np

from ..ir.infer import dims_of
from ..ir.model import Node
from .graph import constant_value, consumers, graph_output_names, is_float32, needs, producers, single_consumer

MS = "com.microsoft"
_FLOAT = 1  # TensorProto.FLOAT
_WEIGHT_TYPES = (np.dtype(np.uint8), np.dtype(np.int8))


def _op(n, op, domains=("", "ai.onnx")):
    return n is not None and n.op_type == op and n.domain in domains


def _arg(n, i):
    return n.inputs[i] if len(n.inputs) > i else ""


def _scalar(g, name):
    """True when `name` is known to hold one value (a constant of size 1, or declared / inferred rank 0)."""
    v = constant_value(g, name)
    return v.size == 1 if v is not None else dims_of(g, name) == []


def _per_column(v, n):
    return (v.ndim <= 1 and v.size == 1) or v.shape == (n,)


def _weights(g, b_name, scale_name, zp_name):
    """Column count N when B is a constant 2-D 8-bit matrix, its scale a float32 constant per tensor or per column
    and its zero point (if any) a constant of B's type shaped like the scale; else None."""
    b, scale = constant_value(g, b_name), constant_value(g, scale_name)
    if b is None or b.ndim != 2 or b.dtype not in _WEIGHT_TYPES or scale is None or scale.dtype != np.float32:
        return None
    n = b.shape[1]
    if not _per_column(scale, n):
        return None
    if zp_name:
        zp = constant_value(g, zp_name)
        if zp is None or zp.dtype != b.dtype or zp.size != scale.size or not _per_column(zp, n):
            return None
    return n


def _bias(g, add, y, n):
    """The constant float32 length-N vector `add` adds to `y`, or None."""
    if not _op(add, "Add") or len(add.inputs) != 2 or y not in add.inputs or add.inputs[0] == add.inputs[1]:
        return None
    c = add.inputs[1] if add.inputs[0] == y else add.inputs[0]
    v = constant_value(g, c)
    return c if v is not None and v.dtype == np.float32 and v.shape == (n,) else None


def _scales(g, smul):
    """(a_scale, b_scale) read by the scale-product Mul: a float32 scalar activation scale times a constant weight
    scale (either operand order)."""
    if not _op(smul, "Mul") or len(smul.inputs) != 2:
        return None
    for a, b in ((smul.inputs[0], smul.inputs[1]), (smul.inputs[1], smul.inputs[0])):
        if constant_value(g, b) is not None and _scalar(g, a) and is_float32(g, a):
            return a, b
    return None


@needs({"MatMulInteger"}, {"Cast"})
def fuse_matmul_integer_to_float(model):
    """MatMulInteger(A, B const, a_zp scalar, b_zp const) → Cast(float) → Mul(·, Mul(a_scale, b_scale const))
    [→ Add(const bias[N])]  ⇒  com.microsoft MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp, b_zp[, bias])."""
    g, changed = model.graph, False
    uses, outputs, prod = consumers(g), graph_output_names(g), producers(g)
    for mmi in list(g.nodes):
        if not _op(mmi, "MatMulInteger") or len(mmi.inputs) < 2:
            continue
        a, b, a_zp, b_zp = mmi.inputs[0], mmi.inputs[1], _arg(mmi, 2), _arg(mmi, 3)
        a_dims = dims_of(g, a)
        if a_dims is None or len(a_dims) < 2 or (a_zp and not _scalar(g, a_zp)):
            continue
        cast = single_consumer(uses, mmi.outputs[0], outputs)
        if not _op(cast, "Cast") or cast.attrs.get("to") != _FLOAT:
            continue
        mul = single_consumer(uses, cast.outputs[0], outputs)
        if not _op(mul, "Mul") or len(mul.inputs) != 2 or mul.inputs[0] == mul.inputs[1]:
            continue
        other = mul.inputs[1] if mul.inputs[0] == cast.outputs[0] else mul.inputs[0]
        smul = prod.get(other)
        scales = _scales(g, smul) if single_consumer(uses, other, outputs) is mul else None
        n = _weights(g, b, scales[1], b_zp) if scales else None
        if n is None:
            continue
        tail, bias = mul, None
        add = single_consumer(uses, mul.outputs[0], outputs)
        found = _bias(g, add, mul.outputs[0], n)
        if found is not None:
            tail, bias = add, found
        inputs = [a, b, scales[0], scales[1], a_zp, b_zp] + ([bias] if bias else [])
        while inputs[-1] == "":
            inputs.pop()
        node = _node("MatMulIntegerToFloat", inputs, tail, mmi)
        g.nodes[g.nodes.index(tail)] = node  # every input is available where the chain's last node stood
        for x in {mmi, cast, smul, mul} - {tail}:
            g.nodes.remove(x)
        model.opsets.setdefault(MS, 1)
        uses, prod = consumers(g), producers(g)
        changed = True
    return changed


def _quantized_product(g, mm):
    """Whether MatMulIntegerToFloat `mm` has constant B / b_scale / b_zero_point / bias of the forms
    DynamicQuantizeMatMul takes."""
    if not _op(mm, "MatMulIntegerToFloat", (MS,)) or len(mm.inputs) < 5:
        return False
    bias = _arg(mm, 6)
    n = _weights(g, mm.inputs[1], mm.inputs[3], _arg(mm, 5))
    return n is not None and not (bias and (constant_value(g, bias) is None or constant_value(g, bias).shape != (n,)
                                            or constant_value(g, bias).dtype != np.float32))


@needs({"MatMulIntegerToFloat"}, {"DynamicQuantizeLinear"})
def fuse_dynamic_quantize_matmul(model):
    """DynamicQuantizeLinear(x) whose three outputs only MatMulIntegerToFloat nodes read (each as A, a_scale,
    a_zero_point), with constant B / b_scale / b_zero_point / bias  ⇒  one com.microsoft DynamicQuantizeMatMul(x, B,
    b_scale, b_zp, bias) per reader. With several readers (attention's Q, K, V projections of one x) each quantizes x
    itself — the same values, so no result bit changes — and a chain (native EP) quantizes it once for all of them."""
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    for dql in list(g.nodes):
        if not _op(dql, "DynamicQuantizeLinear") or len(dql.outputs) != 3 or not all(dql.outputs) or \
                any(o in outputs for o in dql.outputs) or not is_float32(g, dql.inputs[0]):
            continue
        readers = uses.get(dql.outputs[0], [])
        if not readers or any(uses.get(o, []) != readers for o in dql.outputs[1:]) or \
                len(set(map(id, readers))) != len(readers) or \
                any(not _quantized_product(g, mm) or [mm.inputs[0], mm.inputs[2], mm.inputs[4]] != dql.outputs
                    for mm in readers):
            continue
        for mm in readers:
            inputs = [dql.inputs[0], mm.inputs[1], mm.inputs[3], _arg(mm, 5), _arg(mm, 6)]
            while inputs[-1] == "":
                inputs.pop()
            g.nodes[g.nodes.index(mm)] = _node("DynamicQuantizeMatMul", inputs, mm, mm)
        g.nodes.remove(dql)
        model.opsets.setdefault(MS, 1)
        uses = consumers(g)
        changed = True
    return changed


def _node(op_type, inputs, tail, first):
    """The fused node, writing `tail`'s output, named after `first` (or that output); optimize() makes node names
    unique once the passes are done."""
    return Node(op_type, inputs, [tail.outputs[0]], {}, MS, (first.name or tail.outputs[0]) + "_" + op_type)
