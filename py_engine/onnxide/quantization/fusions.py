"""onnxruntime's pre-quantization fusions (`quantization.fusions`): Erf sequences into com.microsoft Gelu and
ReduceMean sequences into LayerNormalization, on an ONNXModel, before QNN quantization."""
import math

import numpy as np

from ..proto.onnx_api import helper, numpy_helper
from .quant_utils import ms_domain


class Fusion:
    """Finds every match of one pattern, replaces it with one node, and sorts the graph; apply() says if it did."""

    search_op_type = ""

    def __init__(self, model, fused_op_type, search_op_type):
        self.model, self.fused_op_type, self.search_op_type = model, fused_op_type, search_op_type
        self.nodes_to_remove, self.nodes_to_add = [], []
        self._names = {n.name for n in model.nodes()}

    def fuse(self, node, input_name_to_nodes, output_name_to_node):
        raise NotImplementedError

    def create_unique_node_name(self):
        k = len(self._names)
        while f"{self.fused_op_type}_fused_{k}" in self._names:
            k += 1
        name = f"{self.fused_op_type}_fused_{k}"
        self._names.add(name)
        return name

    def apply(self):
        for node in list(self.model.nodes()):
            if node.op_type != self.search_op_type or any(node is r for r in self.nodes_to_remove):
                continue
            self.fuse(node, self.model.input_name_to_nodes(), self.model.output_name_to_node())
        if not self.nodes_to_add:
            return False
        self.model.remove_nodes(self.nodes_to_remove)
        self.model.add_nodes(self.nodes_to_add)
        if any(n.domain == ms_domain for n in self.nodes_to_add):
            self.model.set_opset_import(ms_domain, 1)
        self.model.topological_sort()
        return True

    # --- matching helpers --------------------------------------------------------------------------------------
    def constant(self, name):
        """The value of an initializer (or a Constant node's output), or None."""
        init = self.model.get_initializer(name)
        if init is not None:
            return numpy_helper.to_array(init)
        node = self.model.output_name_to_node().get(name)
        if node is not None and node.op_type == "Constant":
            attr = next((a for a in node.attribute if a.name == "value"), None)
            return None if attr is None else numpy_helper.to_array(attr.t)
        return None

    def is_scalar(self, name, value, rtol=1e-4):
        v = self.constant(name)
        return v is not None and v.size == 1 and math.isclose(float(v.ravel()[0]), value, rel_tol=rtol)

    def other_input(self, node, name):
        """The input of a two-input node that is not `name` (None when `name` is not one of them)."""
        ins = list(node.input)
        if len(ins) != 2 or name not in ins:
            return None
        return ins[1] if ins[0] == name else ins[0]

    def only_child(self, name, op_type, input_name_to_nodes):
        """The single node reading tensor `name` if it is of op_type and `name` is no graph output."""
        readers = input_name_to_nodes.get(name, [])
        if len(readers) != 1 or readers[0].op_type != op_type or self.model.is_graph_output(name):
            return None
        return readers[0]


class FusionGelu(Fusion):
    """x·0.5·(1 + erf(x/√2)) — the division or a multiplication by 1/√2, the 0.5 and x multiplied in either
    order — becomes com.microsoft Gelu(x)."""

    def __init__(self, model):
        super().__init__(model, "Gelu", "Erf")

    def fuse(self, erf, input_name_to_nodes, output_name_to_node):
        pre = output_name_to_node.get(erf.input[0])
        if pre is None or self.model.is_graph_output(erf.input[0]) \
                or len(input_name_to_nodes.get(erf.input[0], [])) != 1:
            return
        if pre.op_type == "Div" and self.is_scalar(pre.input[1], math.sqrt(2.0)):
            x = pre.input[0]
        elif pre.op_type == "Mul":
            x = next((i for i in pre.input if self.is_scalar(self.other_input(pre, i) or "", 1 / math.sqrt(2.0))),
                     None)
        else:
            return
        add = self.only_child(erf.output[0], "Add", input_name_to_nodes)
        if x is None or add is None or not self.is_scalar(self.other_input(add, erf.output[0]), 1.0):
            return
        m1 = self.only_child(add.output[0], "Mul", input_name_to_nodes)
        if m1 is None:
            return
        other = self.other_input(m1, add.output[0])
        chain = [pre, erf, add, m1]
        half = output_name_to_node.get(other)
        if half is not None and half.op_type == "Mul" and x in half.input \
                and self.is_scalar(self.other_input(half, x), 0.5) and len(input_name_to_nodes[other]) == 1:
            chain.append(half)  # (1 + erf) · (x · 0.5)
            out = m1.output[0]
        else:
            m2 = self.only_child(m1.output[0], "Mul", input_name_to_nodes)
            if m2 is None:
                return
            last = self.other_input(m2, m1.output[0])
            if not ((other == x and self.is_scalar(last, 0.5)) or (self.is_scalar(other, 0.5) and last == x)):
                return
            chain.append(m2)
            out = m2.output[0]
        self.nodes_to_remove.extend(chain)
        self.nodes_to_add.append(helper.make_node("Gelu", [x], [out], name=self.create_unique_node_name(),
                                                  domain=ms_domain))


class FusionLayerNormalization(Fusion):
    """(x − mean(x)) / sqrt(mean((x − mean(x))²) + ε) · scale + bias over one axis (the square a Pow or a Mul)
    becomes
    LayerNormalization(x, scale, bias, axis=-1, epsilon=ε)."""

    def __init__(self, model):
        super().__init__(model, "LayerNormalization", "ReduceMean")

    def _axes(self, node):
        attr = next((a for a in node.attribute if a.name == "axes"), None)
        if attr is not None:
            return list(attr.ints)
        v = self.constant(node.input[1]) if len(node.input) > 1 and node.input[1] else None
        return None if v is None else [int(a) for a in v.ravel()]

    def fuse(self, rm0, input_name_to_nodes, output_name_to_node):
        x = rm0.input[0]
        axes = self._axes(rm0)
        readers = input_name_to_nodes.get(rm0.output[0], [])
        if axes is None or len(axes) != 1 or len(readers) != 1 or readers[0].op_type != "Sub":
            return
        sub = readers[0]
        if list(sub.input) != [x, rm0.output[0]]:
            return
        users = []
        for n in input_name_to_nodes.get(sub.output[0], []):
            if not any(n is u for u in users):
                users.append(n)
        d = sub.output[0]
        pow_ = next((n for n in users if (n.op_type == "Pow" and n.input[0] == d and self.is_scalar(n.input[1], 2.0))
                     or (n.op_type == "Mul" and list(n.input) == [d, d])), None)  # (x − mean)² either way
        div = next((n for n in users if n.op_type == "Div"), None)
        if len(users) != 2 or pow_ is None or div is None or self.model.is_graph_output(d):
            return
        rm1 = self.only_child(pow_.output[0], "ReduceMean", input_name_to_nodes)
        if rm1 is None or self._axes(rm1) != axes:
            return
        add_eps = self.only_child(rm1.output[0], "Add", input_name_to_nodes)
        eps = self.constant(self.other_input(add_eps, rm1.output[0]) or "") if add_eps is not None else None
        if eps is None or eps.size != 1:
            return
        sqrt = self.only_child(add_eps.output[0], "Sqrt", input_name_to_nodes)
        if sqrt is None or list(div.input) != [sub.output[0], sqrt.output[0]]:
            return
        mul = self.only_child(div.output[0], "Mul", input_name_to_nodes)
        scale = self.other_input(mul, div.output[0]) if mul is not None else None
        add = self.only_child(mul.output[0], "Add", input_name_to_nodes) if mul is not None else None
        bias = self.other_input(add, mul.output[0]) if add is not None else None
        if scale is None or bias is None or self.model.get_initializer(scale) is None \
                or self.model.get_initializer(bias) is None:
            return
        self.nodes_to_remove.extend([rm0, sub, pow_, rm1, add_eps, sqrt, div, mul, add])
        self.nodes_to_add.append(helper.make_node(
            "LayerNormalization", [x, scale, bias], [add.output[0]], name=self.create_unique_node_name(),
            axis=axes[0], epsilon=float(np.asarray(eps).ravel()[0])))
