"""Dynamic (IntegerOps) quantization: weights quantized ahead, activations by DynamicQuantizeLinear at run time."""
import numpy as np

from ..proto.onnx_api import TensorProto, helper
from .base import QuantizerBase
from .graph_utils import topological_sort
from .quant_utils import TENSOR_NAME_QUANT_SUFFIX, ms_domain


class DynamicQuantizer(QuantizerBase):
    """MatMul / Gemm with a constant B become MatMulInteger, Conv becomes ConvInteger, each rescaled to float; Gather
    from a constant table reads it quantized."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.out_nodes = []
        self.dyn = {}
        self.weights = {}
        self.matmul_const_b_only = bool(self.extra_options.get("MatMulConstBOnly", True))

    def dynamic_input(self, name):
        if name not in self.dyn:
            q, s, z = name + TENSOR_NAME_QUANT_SUFFIX, name + "_scale", name + "_zero_point"
            src = name
            if self.types.get(name) == TensorProto.FLOAT16:  # DynamicQuantizeLinear takes float only
                src = name + "_cast_to_float"
                self.out_nodes.append(helper.make_node("Cast", [name], [src], to=TensorProto.FLOAT,
                                                       name=name + "_Cast_to_float"))
            self.out_nodes.append(helper.make_node("DynamicQuantizeLinear", [src], [q, s, z],
                                                   name=name + "_QuantizeLinear"))
            self.dyn[name] = (q, s, z)
        return self.dyn[name]

    def weight(self, name, axis=None, transpose=False, as_activation=False):
        if name not in self.weights:
            q, zp, scale, _ = self.weight_params(name, None, qtype=self.activation_qType, reduce_range=False,
                                                 symmetric=self.is_activation_symmetric) if as_activation \
                else self.weight_params(name, axis)
            q = q.T.copy() if transpose else q
            if not as_activation:  # (multiplied with DynamicQuantizeLinear's float scale, float16 weights too)
                scale = np.asarray(scale).astype(np.float32)
            zn, sn = self.add_init(zp, name + "_zero_point"), self.add_init(scale, name + "_scale")
            self.weights[name] = (self.add_init(q, name + TENSOR_NAME_QUANT_SUFFIX), sn, zn)
        return self.weights[name]

    def quantize_gather(self, node):
        """Gather from a constant table (an embedding): the table is stored quantized in the activation type (uint8,
        asymmetric), the gathered rows are dequantized."""
        ins, out = list(node.input), node.output[0]
        if not self.is_weight(ins[0]) or self.inits[ins[0]].data_type != TensorProto.FLOAT:
            return False
        q, s, z = self.weight(ins[0], as_activation=True)
        gathered = out + TENSOR_NAME_QUANT_SUFFIX
        self.out_nodes.append(helper.make_node("Gather", [q, ins[1]], [gathered], name=(node.name or out) + "_quant",
                                               **{a.name: helper.get_attribute_value(a) for a in node.attribute}))
        self.out_nodes.append(helper.make_node("DequantizeLinear", [gathered, s, z], [out],
                                               name=out + "_DequantizeLinear"))
        return True

    def quantize_embed_layernorm(self, node):
        """com.microsoft EmbedLayerNormalization with constant tables, gamma and beta: QEmbedLayerNormalization
        reading them stored uint8 (asymmetric, per tensor), their scales and zero points after the mask."""
        ins = list(node.input) + [""] * (8 - len(node.input))
        consts = ins[2:7]
        if len(node.input) > 8 and node.input[8] or any(c and (not self.is_weight(c) or self.inits[c].data_type !=
                                                               TensorProto.FLOAT) for c in consts):
            return False  # (position_ids has no place in QEmbedLayerNormalization)
        q = [self.weight(c, as_activation=True) if c else ("", "", "") for c in consts]
        self.out_nodes.append(helper.make_node(
            "QEmbedLayerNormalization", ins[:2] + [w[0] for w in q] + [ins[7]] + [w[1] for w in q] +
            [w[2] for w in q], list(node.output), name=(node.name or node.output[0]) + "_quant", domain=ms_domain,
            **{a.name: helper.get_attribute_value(a) for a in node.attribute}))
        return True

    def quantize_attention(self, node):
        """com.microsoft Attention with a constant float weight: QAttention reading the input quantized at run time
        (uint8) and the weight stored quantized (per column when per_channel), as onnxruntime's tool."""
        ins = list(node.input) + [""] * (5 - len(node.input))
        if not self.is_weight(ins[1]) or self.inits[ins[1]].data_type != TensorProto.FLOAT or \
                self.types.get(ins[0]) != TensorProto.FLOAT or len(node.input) > 5:
            return False
        a = self.dynamic_input(ins[0])
        w = self.weight(ins[1], 1 if self.per_channel else None)
        self.out_nodes.append(helper.make_node(
            "QAttention", [a[0], w[0], ins[2], a[1], w[1], ins[3], a[2], w[2], ins[4]], list(node.output),
            name=(node.name or node.output[0]) + "_quant", domain=ms_domain,
            **{x.name: helper.get_attribute_value(x) for x in node.attribute}))
        return True

    def quantize_node(self, node):
        op, ins, out = node.op_type, list(node.input), node.output[0]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if op == "Gather":
            return self.quantize_gather(node)
        if op == "EmbedLayerNormalization" and node.domain == ms_domain:
            return self.quantize_embed_layernorm(node)
        if op == "Attention" and node.domain == ms_domain:
            return self.quantize_attention(node)
        if op not in ("MatMul", "Conv", "Gemm") or not self.is_weight(ins[1]):
            return False
        if out not in self.types:  # the rescaled output's float type must be known (onnxruntime's tool: mandatory)
            default = self.extra_options.get("DefaultTensorType")
            if default is None:
                raise RuntimeError(f"Unable to find data type for weight_name={out!r}: shape inference could not "
                                   "type it (a node of another domain before it?); extra_options['DefaultTensorType'] "
                                   "gives the type to assume")
            self.types[out] = int(default)
        half = self.types.get(out) == TensorProto.FLOAT16
        if self.types.get(out) != TensorProto.FLOAT and not (half and self.inits[ins[1]].data_type ==
                                                              TensorProto.FLOAT16):
            return False
        if op == "Gemm" and (attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0
                             or attrs.get("beta", 1.0) != 1.0):
            return False
        a = self.dynamic_input(ins[0])
        axis = None
        if self.per_channel and op == "Conv":
            axis = 0
        w = self.weight(ins[1], axis, transpose=op == "Gemm" and bool(attrs.get("transB", 0)))
        base = node.name or out
        if op == "Conv":
            kernel = helper.make_node("ConvInteger", [a[0], w[0], a[2], w[2]], [out + "_output_quantized"],
                                      name=base + "_quant", **attrs)
        else:
            b = w[0]
            kernel = helper.make_node("MatMulInteger", [a[0], b, a[2], w[2]], [out + "_output_quantized"],
                                      name=base + "_quant")
        cast = helper.make_node("Cast", [kernel.output[0]], [out + "_output_quantized_cast_output"],
                                to=TensorProto.FLOAT, name=base + "_quant_cast")
        scales = helper.make_node("Mul", [a[1], w[1]], [out + "_quant_scales_mul_output"],
                                  name=base + "_quant_scales_mul")
        bias = ins[2] if len(ins) > 2 and ins[2] else ""
        mul_out = out + "_quant_output" if bias else out
        mul = helper.make_node("Mul", [cast.output[0], scales.output[0]], [mul_out + "_float" if half else mul_out],
                               name=base + "_quant_mul")
        if axis is not None:
            self.new_inits[-2].dims[:] = [self.new_inits[-2].dims[0], 1, 1]
        self.out_nodes.extend([kernel, cast, scales, mul])
        if half:  # back to the model's float16
            self.out_nodes.append(helper.make_node("Cast", [mul.output[0]], [mul_out], to=TensorProto.FLOAT16,
                                                   name=base + "_quant_cast_to_float16"))
        if bias:
            if op == "Conv":
                shape = self.add_init(np.array([1, -1, 1, 1], "int64"), out + "_bias_reshape_shape")
                self.out_nodes.append(helper.make_node("Reshape", [bias, shape], [base + "_bias_reshape_output"],
                                                       name=base + "_bias_reshape"))
                bias = base + "_bias_reshape_output"
            self.out_nodes.append(helper.make_node("Add", [mul_out, bias], [out], name=base + "_quant_add_bias"))
        return True

    def quantize_model(self):
        for node in self.graph.node:
            if not (self.should_quantize_node(node) and self.quantize_node(node)):
                self.out_nodes.append(node)
        used = {i for n in self.out_nodes for i in n.input}
        keep = [i for i in self.graph.initializer if i.name in used]
        del self.graph.initializer[:]
        self.graph.initializer.extend(self.new_inits + keep)
        del self.graph.node[:]
        self.graph.node.extend(self.out_nodes)
        topological_sort(self.graph)
        return self.model.model
