"""QOperator format: selected nodes become their QLinear* / integer forms, with Q / DQ only at the edges."""

from ..proto.onnx_api import helper, numpy_helper
from .base import FLOAT8, QuantizerBase
from .graph_utils import ensure_opset, topological_sort
from .quant_utils import TENSOR_NAME_QUANT_SUFFIX, ms_domain, quantize_nparray

DIRECT = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "MaxPool", "Resize", "Slice", "Flatten", "Gather",
          "Split", "Pad", "DepthToSpace", "SpaceToDepth", "Expand", "Tile"}
UNARY_MS = {"LeakyRelu": "QLinearLeakyRelu", "Sigmoid": "QLinearSigmoid"}
BINARY_MS = {"Add": "QLinearAdd", "Mul": "QLinearMul"}


class QOperatorQuantizer(QuantizerBase):
    """Walks the nodes in order; `qv` maps a float tensor to its quantized tensor, scale and zero point names."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.qv = {}
        self.out_nodes = []
        self.float_made = {i.name for i in self.graph.input} | set(self.inits)
        self.arrays = {}
        self.matmul_const_b_only = bool(self.extra_options.get("MatMulConstBOnly", False))
        self.quantize_bias = bool(self.extra_options.get("QuantizeBias", True))

    def _params(self, name, zp, scale):
        zp_name, scale_name = self.add_init(zp, name + "_zero_point"), self.add_init(scale, name + "_scale")
        self.arrays[scale_name] = scale
        return scale_name, zp_name

    def can_quantize(self, name):
        return name in self.qv or (self.is_float(name) and (name in self.inits or self.has_range(name)))

    def quantize_input(self, name, weight=False, axis=None):
        """The (q, scale, zp) names of a float tensor, adding its quantized initializer or its QuantizeLinear."""
        if name in self.qv:
            return self.qv[name]
        q_name = name + TENSOR_NAME_QUANT_SUFFIX
        if name in self.inits:
            q, zp, scale, _ = self.weight_params(name, axis) if weight else self.weight_params(
                name, None, qtype=self.activation_type(name), symmetric=self.is_activation_symmetric,
                reduce_range=False)
            scale_name, zp_name = self._params(name, zp, scale)
            self.add_init(q, q_name)
        else:
            zp, scale, _ = self.activation_params(name)
            scale_name, zp_name = self._params(name, zp, scale)
            self.out_nodes.append(helper.make_node("QuantizeLinear", [name, scale_name, zp_name], [q_name],
                                                   name=name + "_QuantizeLinear"))
        self.qv[name] = (q_name, scale_name, zp_name)
        return self.qv[name]

    def output_params(self, name):
        zp, scale, _ = self.activation_params(name)
        scale_name, zp_name = self._params(name, zp, scale)
        self.qv[name] = (name + TENSOR_NAME_QUANT_SUFFIX, scale_name, zp_name)
        return self.qv[name]

    def keep_float(self, node):
        self.out_nodes.append(node)
        self.float_made.update(node.output)

    def quantize_node(self, node):
        """True when the node was replaced by a quantized form."""
        op, ins, out = node.op_type, list(node.input), node.output[0] if node.output else ""
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if op in ("Conv", "MatMul", "Gemm"):
            if not (self.can_quantize(ins[0]) and self.has_range(out)):
                return False
            if op != "MatMul" and ins[1] not in self.inits:
                return False
            if op == "MatMul" and (self.matmul_const_b_only and ins[1] not in self.inits or
                                   not self.can_quantize(ins[1])):
                return False
            a = self.quantize_input(ins[0])
            axis = (0 if op == "Conv" else None) if self.per_channel else None
            b = self.quantize_input(ins[1], weight=ins[1] in self.inits, axis=axis)
            y = self.output_params(out)
            inputs = [*a, *b]
            bias = ins[2] if len(ins) > 2 and ins[2] else ""
            if op == "Conv":
                q_bias = self._bias(bias, ins[0], ins[1]) if bias else ""
                new = helper.make_node("QLinearConv", inputs + list(y[1:]) + ([q_bias] if q_bias else []),
                                       [y[0]], name=(node.name or node.output[0]) + "_quant", **attrs)
            elif op == "MatMul":
                # float 8: com.microsoft's QLinearMatMul, as onnxruntime's tool writes it (no runtime implements it)
                f8 = {self.activation_qType, self.weight_qType} & set(FLOAT8)
                new = helper.make_node("QLinearMatMul", inputs + list(y[1:]), [y[0]], name=(node.name or node.output[0]) +
                                       "_quant", domain=ms_domain if f8 else "")
            else:
                q_bias = self._bias(bias, ins[0], ins[1], attrs.get("beta", 1.0)) if bias else ""
                attrs.pop("beta", None)
                new = helper.make_node("QGemm", inputs + [q_bias] + list(y[1:]), [y[0]],
                                       name=(node.name or node.output[0]) + "_quant", domain=ms_domain, **attrs)
            self.out_nodes.append(new)
            return True
        if op in ("GlobalAveragePool", "AveragePool") and ins[0] not in self.qv \
                and not self.force_quantize_no_input_check:
            return False
        if op in BINARY_MS or op in UNARY_MS or op in ("GlobalAveragePool", "AveragePool", "Concat", "Softmax", "Where"):
            data = ins[1:] if op == "Where" else ins
            if not (all(self.can_quantize(i) for i in data) and self.has_range(out)):
                return False
            if op == "Where":
                if not self.force_quantize_no_input_check and not all(i in self.qv for i in data):
                    return False
                qs = [self.quantize_input(i) for i in data]
                y = self.output_params(out)
                new = helper.make_node("QLinearWhere", [ins[0], *qs[0], *qs[1], *y[1:]], [y[0]])
                new.name, new.domain = (node.name or out) + "_quant", ms_domain
                self.out_nodes.append(new)
                return True
            qs = [self.quantize_input(i) for i in ins]
            y = self.output_params(out)
            if op == "Concat":
                flat = [n for q in qs for n in q]
                new = helper.make_node("QLinearConcat", list(y[1:]) + flat, [y[0]], **attrs)
            elif op == "AveragePool":
                new = helper.make_node("QLinearAveragePool", [*qs[0], *y[1:]], [y[0]], **attrs)
            elif op == "Softmax":
                new = helper.make_node("QLinearSoftmax", [*qs[0], *y[1:]], [y[0]], opset=self.opset,
                                       axis=attrs.get("axis", -1 if self.opset >= 13 else 1))
            elif op == "GlobalAveragePool":
                new = helper.make_node("QLinearGlobalAveragePool", [*qs[0], *y[1:]], [y[0]], channels_last=0)
            else:
                kind = BINARY_MS.get(op) or UNARY_MS[op]
                new = helper.make_node(kind, [n for q in qs for n in q] + list(y[1:]), [y[0]], **attrs)
            new.name, new.domain = (node.name or node.output[0]) + "_quant", ms_domain
            self.out_nodes.append(new)
            return True
        if op in ("Relu", "Clip"):
            if self.is_activation_symmetric or ins[0] not in self.qv:
                return False
            self.qv[out] = self.qv[ins[0]]
            return True
        if op in DIRECT or op == "ArgMax":
            if ins[0] not in self.qv and not (self.force_quantize_no_input_check and self.can_quantize(ins[0])):
                return False
            q = self.quantize_input(ins[0])
            new = helper.NodeProto()
            new.CopyFrom(node)
            new.input[0] = q[0]
            if op == "Pad" and len(ins) > 2 and ins[2]:
                new.input[2] = self._pad_value(ins[2], q)
            elif op == "Pad" and self.opset >= 11 and attrs.get("mode", b"constant") in (b"constant", "constant"):
                while len(new.input) < 2:
                    new.input.append("")
                if len(new.input) == 2:
                    new.input.append(q[2])
                else:
                    new.input[2] = q[2]
            elif op == "Pad" and attrs.get("mode", b"constant") in (b"constant", "constant"):
                zp = next(numpy_helper.to_array(i) for i in self.new_inits if i.name == q[2])
                scale = self.arrays[q[1]]
                v = quantize_nparray(helper.np_dtype_to_tensor_dtype(zp.dtype), attrs.get("value", 0.0), scale, zp)
                for a in new.attribute:
                    if a.name == "value":
                        a.f = float(v)
                if "value" not in attrs:
                    new.attribute.extend([helper.make_attribute("value", float(v))])
            for i, o in enumerate(node.output):
                if op != "ArgMax" and self.is_float(o):
                    new.output[i] = o + TENSOR_NAME_QUANT_SUFFIX
                    self.qv[o] = (new.output[i], q[1], q[2])
            if op == "ArgMax":
                self.float_made.update(node.output)
            self.out_nodes.append(new)
            return True
        return False

    def _pad_value(self, name, q):
        """Pad's constant value in the quantized input's scale and zero point."""
        scale = self.arrays[q[1]]
        zp = next(numpy_helper.to_array(i) for i in self.new_inits if i.name == q[2])
        out = name + TENSOR_NAME_QUANT_SUFFIX
        if name in self.inits:
            v = numpy_helper.to_array(self.inits[name])
            self.add_init(quantize_nparray(helper.np_dtype_to_tensor_dtype(zp.dtype), v, scale, zp), out)
        else:
            self.out_nodes.append(helper.make_node("QuantizeLinear", [name, q[1], q[2]], [out],
                                                   name=name + "_QuantizeLinear"))
        return out

    def _bias(self, bias, inp, weight, beta=1.0):
        if not self.quantize_bias or bias not in self.inits:
            return bias
        q, _, _ = self.bias_params(bias, self.arrays[self.qv[inp][1]], self.arrays[self.qv[weight][1]], beta)
        return self.add_init(q, bias + TENSOR_NAME_QUANT_SUFFIX)

    def quantize_model(self):
        self.adjust_tensor_ranges()
        self.weight_bias = self.biased_weights()
        for node in self.graph.node:
            if not (self.should_quantize_node(node) and self.quantize_node(node)):
                self.keep_float(node)
        needed = set(self.graph_outputs) | {i for n in self.out_nodes for i in n.input if i}
        for name in sorted(needed - self.float_made):
            if name in self.qv:
                q, s, z = self.qv[name]
                self.out_nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [name],
                                                       name=name + "_DequantizeLinear"))
                self.float_made.add(name)
        used = {i for n in self.out_nodes for i in n.input}
        keep = [i for i in self.graph.initializer if i.name in used or i.name in self.graph_outputs]
        del self.graph.initializer[:]
        self.graph.initializer.extend(self.new_inits + keep)
        del self.graph.node[:]
        self.graph.node.extend(self.out_nodes)
        if any(n.domain == ms_domain for n in self.out_nodes):
            ensure_opset(self.model.model, ms_domain, 1)
        topological_sort(self.graph)
        return self.model.model
