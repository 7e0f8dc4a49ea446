"""Weight-only bnb4 quantization (FP4 / NF4, bitsandbytes' 4-bit formats): each MatMul whose B is a 2-D float
initializer becomes a com.microsoft MatMulBnb4 reading B transposed, flattened and quantized in blocks."""
import numpy as np

from ..ops.contrib_bnb4 import FP4, NF4, check_quant_type, quantize_bnb4
from ..proto.onnx_api import TensorProto, helper, numpy_helper, onnx
from .graph_utils import ensure_opset
from .onnx_model import ONNXModel
from .quant_utils import ms_domain


class MatMulBnb4Quantizer:
    """MatMul nodes (of the main graph, not in nodes_to_exclude) with a float / float16 2-D initializer B."""

    FP4 = FP4
    NF4 = NF4

    def __init__(self, model, quant_type, block_size, nodes_to_exclude=None):
        if isinstance(model, str):
            model = onnx.load(model)
        check_quant_type(quant_type, block_size, "MatMulBnb4Quantizer")
        self.model = model if isinstance(model, ONNXModel) else ONNXModel(model)
        self.quant_type, self.block_size = quant_type, block_size
        self.nodes_to_exclude = set(nodes_to_exclude or [])

    def process(self):
        graph = self.model.graph()
        inits = {i.name: i for i in graph.initializer}
        out_nodes, used = [], False
        for node in list(graph.node):
            b = inits.get(node.input[1]) if node.op_type == "MatMul" and node.name not in self.nodes_to_exclude \
                else None
            if b is None or b.data_type not in (TensorProto.FLOAT, TensorProto.FLOAT16) or len(b.dims) != 2:
                out_nodes.append(node)
                continue
            w = numpy_helper.to_array(b)
            k, n = w.shape
            packed, absmax = quantize_bnb4(np.ascontiguousarray(w.T), self.block_size, self.quant_type)
            graph.initializer.append(numpy_helper.from_array(packed, b.name + "_Bnb4"))
            graph.initializer.append(numpy_helper.from_array(absmax, b.name + "_absmax"))
            out_nodes.append(helper.make_node("MatMulBnb4", [node.input[0], b.name + "_Bnb4", b.name + "_absmax"],
                                              list(node.output), name=(node.name or node.output[0]) + "_Bnb4",
                                              domain=ms_domain, K=k, N=n, block_size=self.block_size,
                                              quant_type=self.quant_type))
            used = True
            if not any(b.name in x.input for x in graph.node if x is not node):
                graph.initializer.remove(b)
        del graph.node[:]
        graph.node.extend(out_nodes)
        if used:
            ensure_opset(self.model.model, ms_domain, 1)
        self.model.topological_sort()
        return self.model.model
