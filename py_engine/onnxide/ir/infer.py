"""Type and shape inference over the main graph: element types and (symbolic) dims for the ops that dominate real
models, so get_outputs() can describe undeclared outputs and the optimizer can check ranks and fold shapes.

A shape is a list of int (static), str (symbolic) or None (unknown) per dim; None for an unknown rank. Unknown
ops leave their outputs unknown — inference never guesses.
"""
import numpy as np

from .. import dtypes as dt
from .. import proto as P
from ..ops.util import slice_bounds
from .model import ValueInfo, subgraphs, type_dims

_SAME = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus",
         "Softsign", "Gelu", "Erf", "Exp", "Log", "Sqrt", "Neg", "Abs", "Reciprocal", "Ceil", "Floor", "Round",
         "Sin", "Cos", "Tan", "Identity", "Dropout", "Softmax", "LogSoftmax", "Hardmax", "Clip",
         "BatchNormalization", "InstanceNormalization", "LayerNormalization", "LRN", "Mish", "Sign",
         "Shrink", "ThresholdedRelu", "PRelu", "CumSum", "FusedConv_", "FastGelu", "QuickGelu", "BiasGelu",
         "SkipLayerNormalization", "GroupNormalization", "RMSNormalization", "MeanVarianceNormalization",
         "LpNormalization", "Not", "BitwiseNot", "IsNaN", "IsInf"}
_BROADCAST = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Mod", "And", "Or", "Xor", "Equal",
              "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Where", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}
_BOOL_OUT = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN",
             "IsInf"}
_INT64_OUT = {"Shape": 0, "Size": 0, "NonZero": 0, "ArgMax": 0, "ArgMin": 0}


def _broadcast(shapes):
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = [d for d in dims if d != 1]
        if not known:
            out.append(1)
        elif all(d == known[0] for d in known) and known[0] is not None:
            out.append(known[0])
        else:
            ints = {d for d in known if isinstance(d, int)}
            out.append(ints.pop() if len(ints) == 1 and len(set(known)) > 1 and None not in known else None)
    return out


def _norm_axis(a, rank):
    return a + rank if a < 0 else a


def _const(consts, name):
    return consts.get(name) if name else None


def dims_of(g, name):
    """A value's declared or inferred dims (int / symbolic name / None each), or None for unknown rank."""
    return type_dims(g.value_type(name))


def _shape_value(n, types, sv):
    """The entries (int / symbolic dim / None) of a small int64 shape tensor the node computes, with a scalar flag."""
    op, ins = n.op_type, n.inputs
    if op == "Shape":
        d = types.get(ins[0], (None, None))[1]
        if d is not None:
            r = len(d)
            s, e = n.attrs.get("start", 0), n.attrs.get("end", r)
            s, e = max(0, min(r, s + r if s < 0 else s)), max(0, min(r, e + r if e < 0 else e))
            return d[s:e], False
    elif op == "Gather" and ins[0] in sv and len(ins) > 1 and ins[1] in sv and n.attrs.get("axis", 0) == 0:
        vals, _ = sv[ins[0]]
        idx, scalar = sv[ins[1]]
        if all(isinstance(i, int) and -len(vals) <= i < len(vals) for i in idx):
            return [vals[i] for i in idx], scalar
    elif op == "Unsqueeze" and ins[0] in sv and sv[ins[0]][1]:
        return sv[ins[0]][0], False
    elif op == "Squeeze" and ins[0] in sv and len(sv[ins[0]][0]) == 1:
        return sv[ins[0]][0], True
    elif op == "Concat" and ins and all(x in sv and not sv[x][1] for x in ins):
        return [v for x in ins for v in sv[x][0]], False
    elif op == "Cast" and ins[0] in sv and n.attrs.get("to") in (dt.INT64, dt.INT32):
        return sv[ins[0]]
    return None


def _infer_node(n, types, consts, opset, sv):
    """[(elem_type, shape)] for the node's outputs, or None where unknown."""
    ins = [types.get(x, (None, None)) if x else (None, None) for x in n.inputs]
    t0, s0 = ins[0] if ins else (None, None)
    op, a = n.op_type, n.attrs
    if op in _SAME:
        return [(t0, s0)]
    if op in _BROADCAST:
        elem = dt.BOOL if op in _BOOL_OUT else (ins[1][0] if op == "Where" else t0)
        return [(elem, _broadcast([s for _, s in ins]))]
    if op == "Cast":
        return [(a.get("to"), s0)]
    if op == "CastLike":
        return [(ins[1][0], s0)]
    if op in _INT64_OUT:
        if op == "Shape":
            r = None if s0 is None else len(s0)
            if r is not None:
                start, end = a.get("start", 0), a.get("end", r)
                start, end = max(0, min(r, _norm_axis(start, r))), max(0, min(r, _norm_axis(end, r)))
                r = max(0, end - start)
            return [(dt.INT64, None if r is None else [r])]
        if op == "Size":
            return [(dt.INT64, [])]
        if op in ("ArgMax", "ArgMin") and s0 is not None:
            ax, keep = _norm_axis(a.get("axis", 0), len(s0)), a.get("keepdims", 1)
            return [(dt.INT64, [1 if i == ax else d for i, d in enumerate(s0)] if keep else
                     [d for i, d in enumerate(s0) if i != ax])]
        return [(dt.INT64, None)]
    if op in ("MatMul", "FusedMatMul") and s0 is not None and ins[1][1] is not None:
        s1 = ins[1][1]
        if len(s0) >= 2 and len(s1) >= 2 and not a.get("transA") and not a.get("transB"):
            batch = _broadcast([s0[:-2], s1[:-2]])
            return [(t0, None if batch is None else batch + [s0[-2], s1[-1]])]
        if len(s0) >= 1 and len(s1) == 2:
            return [(t0, s0[:-1] + [s1[-1]])]
        return [(t0, None)]
    if op in ("Gemm", "FusedGemm") and s0 is not None and ins[1][1] is not None and len(s0) == 2:
        m = s0[1] if a.get("transA") else s0[0]
        nn = ins[1][1][0] if a.get("transB") else ins[1][1][1]
        return [(t0, [m, nn])]
    if op in ("Conv", "FusedConv", "MaxPool", "AveragePool") and s0 is not None and len(s0) >= 3:
        return [(t0, _conv_shape(n, s0, ins[1][1] if op in ("Conv", "FusedConv") else None))] + \
            [(dt.INT64, None)] * (len(n.outputs) - 1)
    if op in ("GlobalAveragePool", "GlobalMaxPool") and s0 is not None:
        return [(t0, s0[:2] + [1] * (len(s0) - 2))]
    if op == "Flatten" and s0 is not None:
        ax = _norm_axis(a.get("axis", 1), len(s0))
        return [(t0, [_prod(s0[:ax]), _prod(s0[ax:])])]
    if op == "Transpose" and s0 is not None:
        perm = a.get("perm") or list(range(len(s0)))[::-1]
        return [(t0, [s0[p] for p in perm])]
    if op == "Reshape":
        shape = _const(consts, n.inputs[1]) if len(n.inputs) > 1 else np.asarray(a.get("shape", []))
        if shape is None and len(n.inputs) > 1 and n.inputs[1] in sv:
            entries = sv[n.inputs[1]][0]
            return [(t0, [(s0[i] if s0 is not None and i < len(s0) else None) if e == 0 and not a.get("allowzero")
                          else (e if isinstance(e, str) or (isinstance(e, int) and e > 0) else None)
                          for i, e in enumerate(entries)])]
        return [(t0, _reshape(s0, shape, a.get("allowzero", 0)))]
    if op == "Range" and all(x in sv for x in n.inputs[:3]):
        (start,), (limit,), (delta,) = (sv[x][0] for x in n.inputs[:3])
        if start == 0 and delta == 1 and limit is not None:
            return [(t0, [limit])]
        return [(t0, [None])]
    if op == "Expand" and len(n.inputs) > 1 and n.inputs[1] in sv and s0 is not None:
        return [(t0, _broadcast([s0, [e if isinstance(e, (str, int)) and e != -1 else None
                                      for e in sv[n.inputs[1]][0]]]))]
    if op in ("Unsqueeze", "Squeeze"):
        axes = a.get("axes")
        if axes is None and len(n.inputs) > 1:
            v = _const(consts, n.inputs[1])
            axes = None if v is None else [int(x) for x in v.reshape(-1)]
        if s0 is None or (axes is None and op == "Unsqueeze"):
            return [(t0, None)]
        if op == "Unsqueeze":
            r = len(s0) + len(axes)
            ax = {_norm_axis(x, r) for x in axes}
            it = iter(s0)
            return [(t0, [1 if i in ax else next(it) for i in range(r)])]
        if axes is None:
            return [(t0, [d for d in s0 if d != 1]) if all(isinstance(d, int) for d in s0) else (t0, None)]
        ax = {_norm_axis(x, len(s0)) for x in axes}
        return [(t0, [d for i, d in enumerate(s0) if i not in ax])]
    if op == "Concat" and all(s is not None for _, s in ins):
        ax = _norm_axis(a.get("axis", 1), len(s0))
        dims = [s[ax] for _, s in ins]
        total = sum(dims) if all(isinstance(d, int) for d in dims) else None
        return [(t0, [total if i == ax else d for i, d in enumerate(s0)])]
    if op == "Gather" and s0 is not None and ins[1][1] is not None:
        ax = _norm_axis(a.get("axis", 0), len(s0))
        return [(t0, s0[:ax] + ins[1][1] + s0[ax + 1:])]
    if op.startswith("Reduce") and s0 is not None:
        axes = a.get("axes")
        if axes is None and len(n.inputs) > 1 and n.inputs[1]:
            v = _const(consts, n.inputs[1])
            if v is None:
                return [(t0, None)]
            axes = [int(x) for x in v.reshape(-1)]
        if not axes:
            if a.get("noop_with_empty_axes", 0):
                return [(t0, s0)]
            axes = list(range(len(s0)))
        ax = {_norm_axis(x, len(s0)) for x in axes}
        keep = a.get("keepdims", 1)
        return [(t0, [1 if i in ax else d for i, d in enumerate(s0)] if keep else
                 [d for i, d in enumerate(s0) if i not in ax])]
    if op == "Constant":
        v = next(iter(a.values()), None)
        if isinstance(v, np.ndarray):
            return [(dt.code_of(v.dtype), list(v.shape))]
    if op == "ConstantOfShape":
        v = a.get("value")
        shape = _const(consts, n.inputs[0])
        return [(dt.code_of(v.dtype) if isinstance(v, np.ndarray) else dt.FLOAT,
                 None if shape is None else [int(x) for x in shape.reshape(-1)])]
    if op == "Pad" and s0 is not None and len(n.inputs) > 1:
        pads = _const(consts, n.inputs[1])
        axes = _const(consts, n.inputs[3]) if len(n.inputs) > 3 and n.inputs[3] else None
        if pads is not None and (len(n.inputs) <= 3 or not n.inputs[3] or axes is not None):
            return [(t0, _padded(s0, [int(p) for p in pads.reshape(-1)],
                                 None if axes is None else [int(x) for x in axes.reshape(-1)]))]
    if op == "Slice" and s0 is not None and len(n.inputs) >= 3:
        params = [_const(consts, x) if x else None for x in (list(n.inputs[1:5]) + ["", ""])[:4]]
        if all(p is not None for p in params[:2]) and all(p is not None or not x for p, x in
                                                            zip(params[2:], n.inputs[3:5])):
            return [(t0, _sliced(s0, *[None if p is None else [int(v) for v in p.reshape(-1)] for p in params]))]
    if op in ("LSTM", "GRU", "RNN") and s0 is not None and len(s0) == 3 and a.get("hidden_size"):
        dirs = 2 if a.get("direction") == "bidirectional" else 1
        hs = a["hidden_size"]
        t, b = (s0[1], s0[0]) if a.get("layout") else (s0[0], s0[1])
        y = [b, t, dirs, hs] if a.get("layout") else [t, dirs, b, hs]
        state = [b, dirs, hs] if a.get("layout") else [dirs, b, hs]
        return [(t0, y)] + [(t0, state)] * (len(n.outputs) - 1)
    if op in ("Split", "Slice", "Expand", "Tile", "Pad", "Resize", "TopK", "Range", "Einsum", "Upsample"):
        elems = [t0] * len(n.outputs)
        if op == "TopK" and len(elems) > 1:
            elems[1] = dt.INT64
        rank = 1 if op == "Range" else None if s0 is None or op in ("Einsum", "Expand") else len(s0)
        return [(e, None if rank is None else [None] * rank) for e in elems]
    return None


def _prod(dims):
    if all(isinstance(d, int) for d in dims):
        return int(np.prod(dims, dtype=np.int64))
    return None


def _reshape(s0, shape, allowzero):
    if shape is None:
        return None
    shape = [int(x) for x in np.asarray(shape).reshape(-1)]
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            out.append(s0[i] if s0 is not None and i < len(s0) else None)
        else:
            out.append(d if d != -1 else None)
    if -1 in shape and s0 is not None and _prod(s0) is not None and all(isinstance(d, int) for d in out if d != None):
        known = _prod([d for d in out if d is not None])
        if known:
            out[shape.index(-1)] = _prod(s0) // known
    return out


def _padded(s0, pads, axes):
    """Pad's output dims: pads (begin..., end...) over `axes` (all when None); unknown dims stay unknown."""
    r = len(s0)
    axes = list(range(r)) if axes is None else [x + r if x < 0 else x for x in axes]
    if len(pads) != 2 * len(axes) or any(not 0 <= x < r for x in axes):
        return None
    out = list(s0)
    for i, x in enumerate(axes):
        size = out[x] + pads[i] + pads[i + len(axes)] if isinstance(out[x], int) else -1
        out[x] = size if size >= 0 else None  # (cropping past the whole axis: the kernel reports it)
    return out


def _sliced(s0, starts, ends, axes, steps):
    """Slice's output dims (the kernel's bounds, ops.util.slice_bounds); unknown dims stay unknown."""
    r = len(s0)
    axes = list(range(len(starts))) if axes is None else [x + r if x < 0 else x for x in axes]
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps) or any(not 0 <= x < r for x in axes) or 0 in steps:
        return None
    out = list(s0)
    for x, st, en, sp in zip(axes, starts, ends, steps):
        out[x] = len(range(*slice_bounds(out[x], st, en, sp).indices(out[x]))) if isinstance(out[x], int) else None
    return out


def _conv_shape(n, s0, wshape):
    a = n.attrs
    nd = len(s0) - 2
    k = a.get("kernel_shape") or (list(wshape[2:]) if wshape is not None else None)
    if k is None or any(not isinstance(d, int) for d in s0[2:]) or a.get("auto_pad", "NOTSET") != "NOTSET" \
            or a.get("ceil_mode", 0):
        return [s0[0], wshape[0] if wshape is not None else (s0[1] if n.op_type.endswith("Pool") else None)] + \
            [None] * nd
    pads = a.get("pads") or [0] * (2 * nd)
    st = a.get("strides") or [1] * nd
    dil = a.get("dilations") or [1] * nd
    out = [(s0[2 + i] + pads[i] + pads[nd + i] - dil[i] * (k[i] - 1) - 1) // st[i] + 1 for i in range(nd)]
    c = s0[1] if n.op_type.endswith("Pool") else (wshape[0] if wshape is not None else None)
    return [s0[0], c] + out


def tensor_type(elem, shape):
    """A tensor TypeProto of element type `elem` and dims `shape` (int / symbolic name / None each, or None)."""
    tt = P.TypeProtoTensor(elem_type=elem or 0)
    if shape is not None:
        tt.shape = P.TensorShapeProto(dim=[P.Dimension(dim_value=d) if isinstance(d, int) else
                                           P.Dimension(dim_param=d) if isinstance(d, str) else P.Dimension()
                                           for d in shape])
    return P.TypeProto(tensor_type=tt)


def _known(vi):
    if vi is None or vi.type is None or vi.type.tensor_type is None:
        return None
    return (vi.elem_type or None, vi.shape)


def infer_shapes(model):
    """Fill graph.value_info (and untyped graph outputs) with inferred types; declared types win.

    Returns (types, shape_values): name -> (elem_type, dims), and name -> (entries, is_scalar) for the small
    int64 tensors that hold shapes (entries are ints, symbolic dim names or None)."""
    g = model.graph
    for name in [k for k, v in g.value_info.items() if v.inferred]:
        del g.value_info[name]
    for o in g.outputs:
        if o.inferred:
            o.type, o.inferred = None, False
    types, consts, sv = {}, {}, {}
    overridable = {v.name for v in g.inputs}
    for name, arr in g.initializers.items():
        if isinstance(arr, np.ndarray):
            try:
                types[name] = (dt.code_of(arr.dtype), list(arr.shape))
            except KeyError:
                continue
            if name not in overridable and arr.size <= 64:
                consts[name] = arr
                if arr.dtype.kind in "iu" and arr.ndim <= 1:
                    sv[name] = ([int(v) for v in arr.reshape(-1)], arr.ndim == 0)
    outer_type = getattr(model, "outer_type", None)  # a body: the enclosing graphs' values it reads
    if outer_type is not None:
        local = {o for n in g.nodes for o in n.outputs}  # (a name the body defines hides the enclosing value)
        for n in g.nodes:
            for x in n.inputs:
                if x and x not in types and x not in local:
                    t = outer_type(x)
                    if t is not None:
                        types[x] = t
    for vi in list(g.inputs) + list(g.value_info.values()):
        k = _known(vi)
        if k is not None:
            types[vi.name] = k
    for n in g.nodes:
        try:
            res = _infer_node(n, types, consts, model.opsets.get("", 1), sv)
            value = _shape_value(n, types, sv) if n.domain in ("", "ai.onnx") and n.outputs else None
        except (KeyError, IndexError, TypeError, ValueError):
            res, value = None, None
        if value is not None:
            sv[n.outputs[0]] = value
        for i, name in enumerate(n.outputs):
            if not name or name in types:
                continue
            if res is not None and i < len(res) and res[i][0]:
                types[name] = res[i]
                g.value_info[name] = ValueInfo(name, tensor_type(*res[i]), inferred=True)
    for o in g.outputs:
        if o.type is None and o.name in types:
            o.type, o.inferred = tensor_type(*types[o.name]), True
    return types, sv


def value_types(graph):
    """name -> (elem type, dims) for every typed value of `graph` itself: initializers, inputs, outputs and
    value_info (declared or inferred)."""
    out = {}
    for name, arr in graph.initializers.items():
        if isinstance(arr, np.ndarray):
            try:
                out[name] = (dt.code_of(arr.dtype), list(arr.shape))
            except KeyError:
                pass
    for vi in list(graph.value_info.values()) + list(graph.outputs) + list(graph.inputs):
        k = _known(vi)
        if k is not None and k[0]:
            out[vi.name] = k
    return out


class _Body:
    """A body seen by infer_shapes: its graph, the model's opsets, the enclosing graphs' value types."""

    def __init__(self, graph, opsets, outer):
        self.graph, self.opsets, self._outer = graph, opsets, outer

    def outer_type(self, name):
        return self._outer.get(name)


def infer_bodies(model):
    """Infer types inside every If / Loop / Scan body (outermost first), the enclosing graphs' types visible, so the
    partitioner knows what a body's values are even when the optimizer did not run."""

    def visit(graph, outer):
        seen = dict(outer)
        seen.update(value_types(graph))
        for n in graph.nodes:
            for body in subgraphs(n):
                local = {v.name for v in body.inputs} | set(body.initializers)
                infer_shapes(_Body(body, model.opsets, {k: v for k, v in seen.items() if k not in local}))
                visit(body, seen)

    visit(model.graph, {})
