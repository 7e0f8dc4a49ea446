"""ONNXModel: a ModelProto with the graph queries and edits the quantization tool uses."""
from pathlib import Path

from ..proto.onnx_api import onnx
from .graph_utils import replace_input, replace_output
from .graph_utils import topological_sort as _sort
from .quant_utils import find_by_name


class ONNXModel:
    def __init__(self, model):
        self.model = model

    def nodes(self):
        return self.model.graph.node

    def initializer(self):
        return self.model.graph.initializer

    def graph(self):
        return self.model.graph

    def ir_version(self):
        return self.model.ir_version

    def opset_import(self):
        return self.model.opset_import

    def set_opset_import(self, domain, version):
        for o in self.model.opset_import:
            if o.domain == domain:
                o.version = version
                return
        self.model.opset_import.append(onnx.helper.make_opsetid(domain, version))

    def remove_node(self, node):
        if node in self.model.graph.node:
            self.model.graph.node.remove(node)

    def remove_nodes(self, nodes):
        for n in nodes:
            self.remove_node(n)

    def add_node(self, node):
        self.model.graph.node.append(node)

    def add_nodes(self, nodes):
        self.model.graph.node.extend(nodes)

    def add_initializer(self, tensor):
        if find_by_name(tensor.name, self.model.graph.initializer) is None:
            self.model.graph.initializer.append(tensor)

    def add_initializers(self, tensors):
        for t in tensors:
            self.add_initializer(t)

    def get_initializer(self, name):
        return find_by_name(name, self.model.graph.initializer)

    def find_node_by_name(self, node_name, new_nodes_list=(), graph=None):
        graph = graph or self.model.graph
        return next((n for n in list(new_nodes_list) + list(graph.node) if n.name == node_name), None)

    def get_initializer_name_set(self):
        return {i.name for i in self.model.graph.initializer}

    def remove_initializer(self, tensor):
        if tensor in self.model.graph.initializer:
            self.model.graph.initializer.remove(tensor)
            for i in self.model.graph.input:
                if i.name == tensor.name:
                    self.model.graph.input.remove(i)
                    break

    def remove_initializers(self, tensors):
        for t in tensors:
            self.remove_initializer(t)

    def get_non_initializer_inputs(self):
        inits = self.get_initializer_name_set()
        return {i.name for i in self.model.graph.input if i.name not in inits}

    def input_name_to_nodes(self):
        out = {}
        for n in self.model.graph.node:
            for name in n.input:
                if name:
                    out.setdefault(name, []).append(n)
        return out

    def output_name_to_node(self):
        return {o: n for n in self.model.graph.node for o in n.output if o}

    def get_children(self, node, input_name_to_nodes=None):
        uses = input_name_to_nodes or self.input_name_to_nodes()
        return [c for o in node.output for c in uses.get(o, [])]

    def get_parents(self, node, output_name_to_node=None):
        producers = output_name_to_node or self.output_name_to_node()
        return [producers[i] for i in node.input if i in producers]

    def get_parent(self, node, idx, output_name_to_node=None):
        producers = output_name_to_node or self.output_name_to_node()
        return producers.get(node.input[idx]) if len(node.input) > idx else None

    def is_graph_output(self, output_name):
        return any(o.name == output_name for o in self.model.graph.output)

    def is_graph_input(self, tensor_name):
        return any(i.name == tensor_name for i in self.model.graph.input)

    def replace_input_of_all_nodes(self, old_input_name, new_input_name):
        replace_input(self.model.graph, old_input_name, new_input_name)

    def replace_output_of_all_nodes(self, old_output_name, new_output_name):
        replace_output(self.model.graph, old_output_name, new_output_name)

    def remove_unused_constant(self):
        used = {i for n in self.model.graph.node for i in n.input} | {o.name for o in self.model.graph.output}
        for n in [n for n in self.model.graph.node if n.op_type == "Constant" and n.output[0] not in used]:
            self.model.graph.node.remove(n)
        for t in [t for t in self.model.graph.initializer if t.name not in used]:
            self.model.graph.initializer.remove(t)

    def clean_initializers(self):
        self.remove_unused_constant()

    def topological_sort(self):
        _sort(self.model.graph)

    def save_model_to_file(self, output_path, use_external_data_format=False):
        self.topological_sort()
        path = Path(output_path)
        onnx.save_model(self.model, str(path), save_as_external_data=use_external_data_format,
                        all_tensors_to_one_file=True, location=path.name + ".data" if use_external_data_format else None)
