"""QDQ format: QuantizeLinear / DequantizeLinear pairs around the quantized nodes, the nodes kept as they are."""
import numpy as np

from ..proto.onnx_api import TensorProto, helper, numpy_helper
from .base import FLOAT8, NARROW, QDQ_DIRECT_OPS, QuantizerBase
from .graph_utils import ensure_opset, replace_input, replace_output, topological_sort
from .quant_utils import DEQUANT_OUTPUT_SUFFIX, QUANT_INPUT_SUFFIX, ms_domain

NORM_OPS = ("InstanceNormalization", "LayerNormalization", "BatchNormalization")
DEFAULT_AXIS = {"Conv": 0, "ConvTranspose": 1, "MatMul": 1, "InstanceNormalization": 0, "LayerNormalization": -1,
                "BatchNormalization": 0}


class QDQQuantizer(QuantizerBase):
    """Marks the tensors each selected node needs quantized, then inserts one Q/DQ pair (or DQ) per tensor."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        x = self.extra_options
        self.dedicated = bool(x.get("DedicatedQDQPair", False))
        self.add_qdq_pair_to_weight = bool(x.get("AddQDQPairToWeight", False))
        self.keep_removable = bool(x.get("QDQKeepRemovableActivations", False))
        self.exclude_output_ops = set(x.get("OpTypesToExcludeOutputQuantization", []) or [])
        self.quantize_bias = bool(x.get("QuantizeBias", True))
        # 16 / 4-bit overrides below opset 21 put every Q / DQ in com.microsoft, as onnxruntime's tool does
        self.use_contrib = bool(x.get("UseQDQContribOps", False)) or (
            self.opset < 21 and bool(self.overridden_types() & set(NARROW)))
        self.axes = dict(DEFAULT_AXIS, **(x.get("QDQOpTypePerChannelSupportToAxis", {}) or {}))
        self.marks = {}
        self.params = {}
        self.converted = {}  # tensor with a 'convert' override: (its recv_nodes, the converted (scale, zp) params)

    # --- marking ---------------------------------------------------------------------------------------------
    def quantized(self, name):
        return name in self.marks

    def mark_act(self, name):
        if name in self.marks or not self.is_float(name):
            return name in self.marks
        if name in self.inits:
            self.marks[name] = ("init_act",)
        elif self.has_range(name):
            self.marks[name] = ("act",)
        return name in self.marks

    def mark_weight(self, name, axis):
        axis = self._override(name).get("axis", axis)
        if name not in self.marks and self.is_weight(name):
            self.marks[name] = ("weight", axis)

    def mark_outputs(self, node, same_as=None):
        if node.op_type in self.exclude_output_ops:
            return
        for out in node.output:
            if out in self.marks or not self.is_float(out):
                continue
            if same_as is not None:
                self.marks[out] = ("same", same_as)
            else:
                self.mark_act(out)

    def _axis(self, node, weight):
        if not self.per_channel or self.opset < 13:
            return None
        if node.op_type == "Gemm":
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            return 0 if trans_b else 1
        return self.axes.get(node.op_type)

    def prequantized(self, name):
        """Whether `name` (an input or a weight) is a DequantizeLinear's output with a constant scale: it stays as it
        is and its parameters are recorded (a bias beside it is quantized with that scale)."""
        dq = next((n for n in self.graph.node if n.op_type == "DequantizeLinear" and name in n.output), None)
        if dq is None or dq.input[1] not in self.inits:
            return False
        zp = dq.input[2] if len(dq.input) > 2 else ""
        qtype = self.inits[zp].data_type if zp in self.inits else TensorProto.UINT8
        self.params[name] = (dq.input[1], zp, numpy_helper.to_array(self.inits[dq.input[1]]), qtype)
        return True

    def mark_node(self, node):
        op, ins = node.op_type, list(node.input)
        if op in ("Conv", "ConvTranspose", "Gemm", "MatMul") or op in NORM_OPS:
            a = self.prequantized(ins[0]) or self.mark_act(ins[0])
            prequantized = self.prequantized(ins[1])
            if self.is_weight(ins[1]):
                self.mark_weight(ins[1], self._axis(node, ins[1]))
            elif not prequantized:
                self.mark_act(ins[1])  # a computed weight (an Identity of a shared initializer) is an activation
            bias = ins[2] if len(ins) > 2 and op != "MatMul" else ""
            if bias and bias in self.overrides and self.is_weight(bias):
                self.mark_weight(bias, None)  # a bias with overrides is quantized as a weight
            elif bias and self.is_weight(bias) and a and self.quantize_bias and (prequantized or (
                    self.quantized(ins[1]) and self.marks[ins[1]][0] in ("weight", "act"))):
                self.marks[bias] = ("bias", ins[0], ins[1], node.name)
            self.mark_outputs(node)
        elif op in ("Relu", "Clip"):
            if self.force_quantize_no_input_check:
                self.mark_act(ins[0])
            if not self.quantized(ins[0]) or self.marks[ins[0]][0] == "weight":
                return
            if not self.remove_activation(node):
                self.mark_outputs(node)
        elif op == "Pad":
            if self.mark_act(ins[0]):
                mode = next((a.s.decode() for a in node.attribute if a.name == "mode"), "constant")
                value = ins[2] if len(ins) > 2 and ins[2] else ""
                attr_value = next((a.f for a in node.attribute if a.name == "value"), 0.0)
                zero = (not value and attr_value == 0) or (value in self.inits and
                                                           not numpy_helper.to_array(self.inits[value]).any())
                if value:
                    self.mark_act(value)
                if mode != "constant" or zero:
                    if self.is_float(node.output[0]) and op not in self.exclude_output_ops:
                        self.marks.setdefault(node.output[0], ("same", ins[0]))
                else:
                    self.mark_outputs(node)
        elif op in QDQ_DIRECT_OPS:
            if self.force_quantize_no_input_check or (ins[0] in self.inits and self.is_float(ins[0])):
                self.mark_act(ins[0])  # a constant input (an embedding table) is stored quantized
            if self.quantized(ins[0]) and self.marks[ins[0]][0] != "weight":
                outs = node.output[:1] if op == "TopK" else node.output
                for out in outs:
                    if self.is_float(out) and out not in self.marks and op not in self.exclude_output_ops:
                        self.marks[out] = ("same", ins[0])
        elif op == "Where":
            if self.force_quantize_no_input_check or (self.quantized(ins[1]) and self.quantized(ins[2])):
                self.mark_act(ins[1])
                self.mark_act(ins[2])
                self.mark_outputs(node)
        else:
            for name in ins:
                self.mark_act(name)
            self.mark_outputs(node)

    def remove_activation(self, node):
        """Relu / Clip go when activations are asymmetric: the Q of their input saturates to the same range."""
        if self.is_activation_symmetric or self.keep_removable:
            return False
        src, out = node.input[0], node.output[0]
        if sum(list(n.input).count(src) for n in self.graph.node) != 1 or src in self.graph_outputs \
                or not any(src in n.output for n in self.graph.node):
            return False
        self.graph.node.remove(node)
        # the upstream node writes the activation's output name (as onnxruntime's tool does)
        replace_output(self.graph, src, out)
        replace_input(self.graph, src, out)
        self.marks = {out if k == src else k: (("same", out) if v == ("same", src) else v)
                      for k, v in self.marks.items()}
        return True

    # --- emitting --------------------------------------------------------------------------------------------
    def _domain(self, qtype):
        if self.use_contrib or (qtype in NARROW and self.opset < 21):
            ensure_opset(self.model.model, ms_domain, 1)
            return ms_domain
        return ""

    def _pair(self, name, scale, zp, qtype, consumers, suffix=""):
        dom = self._domain(qtype)
        q_out, dq_out = f"{name}_QuantizeLinear_Output{suffix}", f"{name}{DEQUANT_OUTPUT_SUFFIX}{suffix}"
        src = name
        if name in self.graph_outputs and not suffix:
            src, dq_out = name + QUANT_INPUT_SUFFIX, name
            replace_output(self.graph, name, src)
        q = helper.make_node("QuantizeLinear", [src, scale, zp], [q_out], name=f"{name}_QuantizeLinear{suffix}",
                             domain=dom)
        dq = helper.make_node("DequantizeLinear", [q_out, scale, zp], [dq_out],
                              name=f"{name}_DequantizeLinear{suffix}", domain=dom)
        self.graph.node.extend([q, dq])
        if dq_out != name:
            for c in consumers:
                replace_input_node(c, name, dq_out)
        return q, dq

    def emit_activation(self, name, zp, scale, qtype):
        zp_name, scale_name = self.add_init(zp, name + "_zero_point"), self.add_init(scale, name + "_scale")
        self.params[name] = (scale_name, zp_name, scale, qtype)
        self._emit_pairs(name, scale_name, zp_name, qtype)

    def _emit_convert(self, name, scale_name, zp_name, qtype, convert):
        """Q → DQ in the tensor's type for its other readers (and a graph output of that name), then Q → DQ in the
        'convert' type for its recv_nodes (all readers when none are named). A graph output takes the converted
        value when every reader does."""
        ov = {k: v for k, v in convert.items() if k != "recv_nodes"}
        zp2, scale2, qtype2 = self.activation_params(name, ov)
        z2, s2 = self.add_init(zp2, name + "_zero_point_convert"), self.add_init(scale2, name + "_scale_convert")
        consumers = [n for n in self.graph.node if name in n.input]
        recv = set(convert.get("recv_nodes") or {c.name for c in consumers})
        conv = [c for c in consumers if c.name in recv]
        orig = [c for c in consumers if c.name not in recv]
        self.converted[name] = (recv, (s2, z2, scale2, qtype2))
        is_out = name in self.graph_outputs
        src = name
        if is_out:
            src = name + QUANT_INPUT_SUFFIX
            replace_output(self.graph, name, src)
        split = bool(orig)
        q1_out = f"{name}_QuantizeLinear_Output"
        dq1_out = name if is_out and split else name + DEQUANT_OUTPUT_SUFFIX
        mid = f"{name}_convert_DequantizeLinear_Input" if split else dq1_out
        q2_out = f"{name}_convert_QuantizeLinear_Output"
        dq2_out = name if is_out and not split else f"{name}_convert{DEQUANT_OUTPUT_SUFFIX}"
        d1, d2 = self._domain(qtype), self._domain(qtype2)
        nodes = [helper.make_node("QuantizeLinear", [src, scale_name, zp_name], [q1_out],
                                  name=f"{name}_QuantizeLinear", domain=d1),
                 helper.make_node("DequantizeLinear", [q1_out, scale_name, zp_name], [dq1_out],
                                  name=f"{name}_DequantizeLinear", domain=d1)]
        if split:
            nodes.append(helper.make_node("DequantizeLinear", [q1_out, scale_name, zp_name], [mid],
                                          name=f"{name}_DequantizeLinear_convert_input", domain=d1))
        nodes += [helper.make_node("QuantizeLinear", [mid, s2, z2], [q2_out], name=f"{name}_convert_QuantizeLinear",
                                   domain=d2),
                  helper.make_node("DequantizeLinear", [q2_out, s2, z2], [dq2_out],
                                   name=f"{name}_convert_DequantizeLinear", domain=d2)]
        for c in orig:
            replace_input_node(c, name, dq1_out)
        for c in conv:
            replace_input_node(c, name, dq2_out)
        self.graph.node.extend(nodes)

    def _emit_pairs(self, name, scale_name, zp_name, qtype):
        convert = self._override(name).get("convert")
        if convert is not None:
            return self._emit_convert(name, scale_name, zp_name, qtype, convert)
        consumers = [n for n in self.graph.node if name in n.input]
        if self.dedicated and len(consumers) > 1 and name not in self.graph_outputs:
            for i, c in enumerate(consumers):
                self._pair(name, scale_name, zp_name, qtype, [c], suffix=f"_{i + 1}")
        else:
            self._pair(name, scale_name, zp_name, qtype, consumers)

    def emit_initializer(self, name, q, zp, scale, qtype, axis=None):
        zp_name, scale_name = self.add_init(zp, name + "_zero_point"), self.add_init(scale, name + "_scale")
        self.params[name] = (scale_name, zp_name, scale, qtype)
        kw = {"axis": axis} if axis is not None and np.ndim(scale) > 0 else {}
        dom = self._domain(qtype)
        consumers = [n for n in self.graph.node if name in n.input]
        dq_out = name + DEQUANT_OUTPUT_SUFFIX
        if self.add_qdq_pair_to_weight:
            q_out = name + "_QuantizeLinear_Output"
            self.graph.node.append(helper.make_node("QuantizeLinear", [name, scale_name, zp_name], [q_out],
                                                    name=name + "_QuantizeLinear", domain=dom, **kw))
            src = q_out
        else:
            src = self.add_init(q, name + "_quantized")
            self.drop.add(name)
        self.graph.node.append(helper.make_node("DequantizeLinear", [src, scale_name, zp_name], [dq_out],
                                                name=name + "_DequantizeLinear", domain=dom, **kw))
        for c in consumers:
            replace_input_node(c, name, dq_out)

    def duplicate_shared_biases(self):
        """A bias initializer read by several nodes that quantize it to int32 (each with its own scale) gets a copy
        per node after the first, named BIAS_dup_K."""
        seen = {}
        for node in self.graph.node:
            bias = node.input[2] if node.op_type in ("Conv", "ConvTranspose", "Gemm") and len(node.input) > 2 else ""
            if not bias or not self.is_weight(bias) or bias in self.overrides or not self.should_quantize_node(node):
                continue
            seen[bias] = seen.get(bias, 0) + 1
            if seen[bias] > 1:
                dup = numpy_helper.from_array(numpy_helper.to_array(self.inits[bias]), f"{bias}_dup_{seen[bias] - 1}")
                self.graph.initializer.append(dup)
                self.inits[dup.name] = dup
                self.types[dup.name] = dup.data_type
                node.input[2] = dup.name

    def quantize_model(self):
        self.adjust_tensor_ranges()
        if self.quantize_bias:
            self.duplicate_shared_biases()
        self.weight_bias = self.biased_weights()
        for node in list(self.graph.node):
            if self.should_quantize_node(node):
                self.mark_node(node)
        self.drop = set()
        for name, mark in self.marks.items():
            kind = mark[0]
            if kind == "act":
                self.emit_activation(name, *self.activation_params(name))
            elif kind == "same":
                scale_name, zp_name, scale, qtype = self.params[mark[1]]
                self.params[name] = self.params[mark[1]]
                self._emit_pairs(name, scale_name, zp_name, qtype)
            elif kind == "init_act":
                q, zp, scale, qtype = self.weight_params(name, None, qtype=self.activation_type(name),
                                                         symmetric=self.is_activation_symmetric, reduce_range=False)
                self.emit_initializer(name, q, zp, scale, qtype)
            elif kind == "weight":
                q, zp, scale, qtype = self.weight_params(name, mark[1])
                self.emit_initializer(name, q, zp, scale, qtype, mark[1])
            elif kind == "bias":
                self.emit_bias(name, *mark[1:])
        keep = [i for i in self.graph.initializer if i.name not in self.drop]
        del self.graph.initializer[:]
        self.graph.initializer.extend(self.new_inits + keep)
        topological_sort(self.graph)
        return self.model.model

    def emit_bias(self, name, inp, weight, node_name=None):
        if inp not in self.params or weight not in self.params:
            return
        def read(t):  # the parameters of the type the node reads t in (a 'convert' override's, for its readers)
            recv, converted = self.converted.get(t, ((), None))
            return converted if node_name in recv else self.params[t]
        consumers = [n for n in self.graph.node if name in n.input]
        if read(inp)[3] in FLOAT8:  # float 8 activations: no int32 bias, it stays float behind a Cast (as onnxruntime)
            b = self.inits[name]
            self.new_inits.append(numpy_helper.from_array(numpy_helper.to_array(b), name + "_quantized"))
            cast_out = name + "_Cast_Output"
            self.graph.node.append(helper.make_node("Cast", [name + "_quantized"], [cast_out], name=name + "_Cast",
                                                    to=b.data_type))
            for c in consumers:
                replace_input_node(c, name, cast_out)
            self.drop.add(name)
            return
        q, zp, scale = self.bias_params(name, read(inp)[2], read(weight)[2])
        q_name = self.add_init(q, name + "_quantized")
        # as onnxruntime's tool writes them: the scale 1-D in raw bytes (size 1 per tensor), the zero point a
        # scalar per tensor
        per_channel = np.size(scale) > 1
        scale_name = name + "_quantized_scale"
        self.new_inits.append(numpy_helper.from_array(np.asarray(scale).reshape(-1), scale_name))
        zp_name = self.add_init(np.reshape(zp, -1 if per_channel else ()), name + "_quantized_zero_point")
        kw = {"axis": 0} if per_channel else {}
        dq_out = name + DEQUANT_OUTPUT_SUFFIX
        dom = self._domain(TensorProto.INT32)
        self.graph.node.append(helper.make_node("DequantizeLinear", [q_name, scale_name, zp_name], [dq_out],
                                                name=name + "_DequantizeLinear", domain=dom, **kw))
        for c in consumers:
            replace_input_node(c, name, dq_out)
        self.drop.add(name)


def replace_input_node(node, old, new):
    for i, n in enumerate(node.input):
        if n == old:
            node.input[i] = new

