"""Extended passes on convolutions and GEMMs: BatchNormalization and constant Mul/Add folded into Conv weights and
bias (after a Conv, or before one that pads nothing); a Conv's residual Add and Conv / Gemm followed by an activation
fused into com.microsoft FusedConv (its Z input) / FusedGemm, which onnxruntime also runs."""
import numpy as np

from ..ir.model import Node
from ..ir.infer import dims_of
from .graph import constant_value, consumers, fresh_name, graph_output_names, needs, single_consumer, taken_names

_FUSABLE = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Clip"}


def _onnx(n, *types):
    return n is not None and n.domain in ("", "ai.onnx") and n.op_type in types


def _folded_names(g, conv, taken):
    """Fresh names for `conv`'s new weight and bias (the old weight may feed other Convs)."""
    return (fresh_name(g, conv.inputs[1] + "_folded", taken),
            fresh_name(g, (conv.name or conv.outputs[0]) + "_folded_bias", taken))


def _absorb(g, conv, w_new, b_new, folded, taken):
    """Give `conv` new weight/bias initializers and take over the output of the node `folded` into it, which is
    removed; `taken`: the graph's names (taken_names)."""
    w_name, b_name = _folded_names(g, conv, taken)
    g.initializers[w_name], g.initializers[b_name] = w_new, b_new
    conv.inputs = [conv.inputs[0], w_name, b_name]
    conv.outputs = [folded.outputs[0]]
    g.nodes.remove(folded)


def _per_output_channel(conv, w, k):
    """`k` (one factor per output channel) shaped to multiply `conv`'s weight: Conv weights are (M, C/g, ...),
    ConvTranspose weights (C, M/g, ...) with output channel g·(M/g) + j at [group g's rows, j]."""
    spatial = (1,) * (w.ndim - 2)
    if conv.op_type == "Conv":
        return k.reshape((-1, 1) + spatial)
    group = int(conv.attrs.get("group", 1))
    cin, mg = w.shape[:2]
    return np.broadcast_to(k.reshape((group, 1, mg) + spatial), (group, cin // group, mg) + spatial).reshape(
        (cin, mg) + spatial)


@needs({"Conv", "ConvTranspose"}, {"BatchNormalization"})
def fold_batchnorm_into_conv(model):
    """Conv / ConvTranspose followed by inference BatchNormalization ⇒ the conv with scaled weights and bias."""
    g, changed = model.graph, False
    taken = taken_names(g)
    uses, outputs = consumers(g), graph_output_names(g)
    for conv in list(g.nodes):
        if not _onnx(conv, "Conv", "ConvTranspose") or len(conv.outputs) != 1:
            continue
        bn = single_consumer(uses, conv.outputs[0], outputs)
        if bn is None or not _onnx(bn, "BatchNormalization") or bn.inputs[0] != conv.outputs[0]:
            continue
        if len([o for o in bn.outputs if o]) != 1 or bn.attrs.get("training_mode", 0) or \
                bn.attrs.get("spatial", 1) != 1 or model.opsets.get("", 1) < 7:
            continue
        w = constant_value(g, conv.inputs[1])
        b = constant_value(g, conv.inputs[2]) if len(conv.inputs) > 2 and conv.inputs[2] else None
        stats = [constant_value(g, x) for x in bn.inputs[1:5]]
        if w is None or any(s is None for s in stats) or w.dtype.kind != "f" or \
                (len(conv.inputs) > 2 and conv.inputs[2] and b is None):
            continue
        scale, bias, mean, var = (s.astype(np.float64) for s in stats)
        k = scale / np.sqrt(var + bn.attrs.get("epsilon", 1e-5))
        w_new = (w.astype(np.float64) * _per_output_channel(conv, w, k)).astype(w.dtype)
        b0 = b.astype(np.float64) if b is not None else 0.0
        b_new = ((b0 - mean) * k + bias).astype(w.dtype)
        _absorb(g, conv, w_new, b_new, bn, taken)
        uses = consumers(g)
        changed = True
    return changed


def _activation_params(act):
    a = act.attrs
    if act.op_type == "LeakyRelu":
        return [a.get("alpha", 0.01)]
    if act.op_type == "HardSigmoid":
        return [a.get("alpha", 0.2), a.get("beta", 0.5)]
    return []


@needs({"Conv", "Gemm", "FusedConv"}, _FUSABLE)
def fuse_activation(model):
    """Conv+act → FusedConv (and a FusedConv adding Z with no activation yet takes one); Gemm+act → FusedGemm
    (float only; Clip only with constant or attribute bounds)."""
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    for base in list(g.nodes):
        if not (_onnx(base, "Conv", "Gemm") or _sum_only(base)) or len(base.outputs) != 1:
            continue
        act = single_consumer(uses, base.outputs[0], outputs)
        if act is None or not _onnx(act, *_FUSABLE) or act.inputs[0] != base.outputs[0]:
            continue
        if base.op_type == "Gemm" and act.op_type == "Clip":
            continue  # onnxruntime's FusedGemm has no Clip
        w = constant_value(g, base.inputs[1])
        if w is None or w.dtype != np.float32:
            continue  # fused kernels are float32 in onnxruntime
        params = _activation_params(act)
        if act.op_type == "Clip":
            if "min" in act.attrs or "max" in act.attrs:
                params = [act.attrs.get("min", -3.4028234663852886e38), act.attrs.get("max", 3.4028234663852886e38)]
            else:
                lo = constant_value(g, act.inputs[1]) if len(act.inputs) > 1 and act.inputs[1] else np.float32(-3.4e38)
                hi = constant_value(g, act.inputs[2]) if len(act.inputs) > 2 and act.inputs[2] else np.float32(3.4e38)
                if lo is None or hi is None:
                    continue
                params = [float(lo), float(hi)]
        attrs = dict(base.attrs)
        if base.op_type == "FusedConv":
            base.attrs["activation"] = act.op_type
            if params:
                base.attrs["activation_params"] = [float(p) for p in params]
            base.outputs = act.outputs
            g.nodes.remove(act)  # (`uses` holds for the nodes after: graph.consumers)
            changed = True
            continue
        if base.op_type == "Conv":
            attrs["activation"] = act.op_type
            if params:  # an empty list would encode as INTS
                attrs["activation_params"] = [float(p) for p in params]
            fused = Node("FusedConv", base.inputs, act.outputs, attrs, "com.microsoft", (base.name or base.outputs[0]) + "_fused")
        else:
            if base.attrs.get("broadcast") is not None or model.opsets.get("", 1) < 7:
                continue
            p = params + [0.0, 0.0]
            attrs.update(activation=act.op_type, activation_alpha=float(p[0]), activation_beta=float(p[1]))
            fused = Node("FusedGemm", base.inputs, act.outputs, attrs, "com.microsoft", (base.name or base.outputs[0]) + "_fused")
        _swap_in(model, fused, base, act)  # (`uses` holds for the nodes after: graph.consumers)
        changed = True
    return changed


def _swap_in(model, fused, replaced, removed):
    """Put the com.microsoft node `fused` where `replaced` was and drop `removed`."""
    g = model.graph
    g.nodes[g.nodes.index(replaced)] = fused
    g.nodes.remove(removed)
    model.opsets.setdefault("com.microsoft", 1)


def _sum_only(n):
    """A FusedConv that adds its Z input and applies no activation yet (fuse_conv_add's result)."""
    return n.domain == "com.microsoft" and n.op_type == "FusedConv" and not n.attrs.get("activation")


@needs({"Conv"}, {"Add"})
def fuse_conv_add(model):
    """Conv + Add of a tensor of the Conv's output shape (a residual) ⇒ FusedConv with that tensor as Z; placed
    where the Add was (Z may be computed after the Conv). fuse_activation then takes a following activation."""
    g, changed = model.graph, False
    uses, outputs = consumers(g), graph_output_names(g)
    for conv in list(g.nodes):
        if not _onnx(conv, "Conv") or len(conv.outputs) != 1:
            continue
        add = single_consumer(uses, conv.outputs[0], outputs)
        if not _onnx(add, "Add") or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]:
            continue
        z = add.inputs[1] if add.inputs[0] == conv.outputs[0] else add.inputs[0]
        w = constant_value(g, conv.inputs[1])
        y_dims, z_dims = dims_of(g, conv.outputs[0]), dims_of(g, z)
        if w is None or w.dtype != np.float32 or y_dims is None or y_dims != z_dims or None in y_dims:
            continue  # the same (possibly symbolic) dims: Z never broadcasts
        b = conv.inputs[2] if len(conv.inputs) > 2 else ""
        fused = Node("FusedConv", [conv.inputs[0], conv.inputs[1], b, z], add.outputs, dict(conv.attrs),
                     "com.microsoft", (conv.name or conv.outputs[0]) + "_add")
        _swap_in(model, fused, add, conv)
        uses = consumers(g)
        changed = True
    return changed


def _per_channel(c, m, nd):
    """A constant broadcastable per output channel of a Conv with m channels and nd spatial dims, as shape (m,),
    or None (scalars and [m,1..1] / [1,m,1..1] shapes qualify)."""
    if c.size == 1 and c.ndim <= nd + 2:
        return np.full(m, c.reshape(-1)[0], dtype=np.float64)
    shape = list(c.shape)
    while shape and shape[0] == 1 and len(shape) > nd + 1:
        shape.pop(0)
    if len(shape) == nd + 1 and shape[0] == m and all(d == 1 for d in shape[1:]):
        return c.reshape(m).astype(np.float64)
    return None


@needs({"Conv"}, {"Mul", "Add"})
def fold_scale_shift_into_conv(model):
    """Conv → Mul(constant) / Add(constant), per-channel or scalar: folded into the Conv's weights and bias."""
    g, changed = model.graph, False
    taken = taken_names(g)
    uses, outputs = consumers(g), graph_output_names(g)
    for conv in list(g.nodes):
        if not _onnx(conv, "Conv") or conv not in g.nodes or len(conv.outputs) != 1:
            continue
        nxt = single_consumer(uses, conv.outputs[0], outputs)
        if not _onnx(nxt, "Mul", "Add"):
            continue
        other = nxt.inputs[1] if nxt.inputs[0] == conv.outputs[0] else nxt.inputs[0]
        c = constant_value(g, other) if other != conv.outputs[0] else None
        w = constant_value(g, conv.inputs[1])
        has_b = len(conv.inputs) > 2 and bool(conv.inputs[2])
        b = constant_value(g, conv.inputs[2]) if has_b else None
        if c is None or w is None or w.dtype.kind != "f" or c.dtype != w.dtype or (has_b and b is None):
            continue
        k = _per_channel(c, w.shape[0], w.ndim - 2)
        if k is None:
            continue
        b64 = b.astype(np.float64) if b is not None else np.zeros(w.shape[0])
        if nxt.op_type == "Mul":
            w_new = (w.astype(np.float64) * _per_output_channel(conv, w, k)).astype(w.dtype)
            b_new = (b64 * k).astype(w.dtype)
        else:
            w_new, b_new = w, (b64 + k).astype(w.dtype)
        _absorb(g, conv, w_new, b_new, nxt, taken)  # (`uses` holds for the nodes after: graph.consumers)
        changed = True
    return changed


@needs({"Mul", "Add"}, {"Conv"})
def fold_affine_into_next_conv(model):
    """Mul / Add by a constant (scalar or per input channel) whose only reader is a group-1 Conv's input: the
    factor goes into the Conv's weights, the shift into its bias (a shift only where the Conv pads nothing — padded
    positions would otherwise see it). PP-LCNet's learnable affine blocks before pointwise convs fold this way."""
    g, changed = model.graph, False
    taken = taken_names(g)
    uses, outputs = consumers(g), graph_output_names(g)
    for aff in list(g.nodes):
        if not _onnx(aff, "Mul", "Add") or aff not in g.nodes or len(aff.inputs) != 2:
            continue
        conv = single_consumer(uses, aff.outputs[0], outputs)
        if not _onnx(conv, "Conv") or conv.inputs[0] != aff.outputs[0] or int(conv.attrs.get("group", 1)) != 1 or \
                aff.outputs[0] in conv.inputs[1:]:
            continue
        consts = [constant_value(g, i) for i in aff.inputs]
        if (consts[0] is None) == (consts[1] is None):
            continue
        x, c = (aff.inputs[1], consts[0]) if consts[0] is not None else (aff.inputs[0], consts[1])
        w = constant_value(g, conv.inputs[1])
        has_b = len(conv.inputs) > 2 and bool(conv.inputs[2])
        b = constant_value(g, conv.inputs[2]) if has_b else None
        if w is None or w.dtype.kind != "f" or c.dtype != w.dtype or (has_b and b is None):
            continue
        k = _per_channel(c, w.shape[1], w.ndim - 2)
        if k is None:
            continue
        in_channel = k.reshape((1, -1) + (1,) * (w.ndim - 2))
        b64 = b.astype(np.float64) if b is not None else np.zeros(w.shape[0])
        if aff.op_type == "Mul":
            w_new, b_new = (w.astype(np.float64) * in_channel).astype(w.dtype), b64.astype(w.dtype)
        else:
            pads = conv.attrs.get("pads")
            if conv.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID", "") or (pads and any(pads)):
                continue
            w_new = w
            b_new = (b64 + (w.astype(np.float64) * in_channel).reshape(w.shape[0], -1).sum(axis=1)).astype(w.dtype)
        w_name, b_name = _folded_names(g, conv, taken)
        g.initializers[w_name], g.initializers[b_name] = w_new, b_new
        conv.inputs = [x, w_name, b_name]
        g.nodes.remove(aff)  # (`uses` holds for the nodes after: graph.consumers)
        changed = True
    return changed
