"""Mixed precision: a tensor overridden to another activation type pulls its producer's and consumers' other
tensors to that type, and 'convert' entries bridge back to the default type where the graph meets it."""
from dataclasses import dataclass

from ...calibrate import FLOAT_TYPES, value_types
from ...tensor_quant_overrides import QuantTypeInfo


@dataclass
class TensorTypeRequest:
    """The type a tensor's producer must write (or None), and the type its listed consumers must read."""

    producer: QuantTypeInfo = None
    consumers: tuple = None  # (QuantTypeInfo, set of node names)


class MixedPrecisionTensorQuantOverridesFixer:
    def __init__(self, overrides, producers, consumers, value_types_, initializers):
        self.overrides = overrides
        self.producers, self.consumers = producers, consumers
        self.types, self.initializers = value_types_, initializers

    @staticmethod
    def create_from_model(overrides, model, default_activation_qtype):  # noqa: ARG004 - onnxruntime's signature
        from ....proto.onnx_api import onnx

        model = onnx.shape_inference.infer_shapes(model)
        producers, consumers = {}, {}
        for node in model.graph.node:
            for o in node.output:
                producers[o] = node
            for i in node.input:
                if i:
                    consumers.setdefault(i, []).append(node)
        inits = {i.name: i for i in model.graph.initializer}
        types = value_types(model)
        for name, init in inits.items():
            types.setdefault(name, init.data_type)
        return MixedPrecisionTensorQuantOverridesFixer(overrides, producers, consumers, types, inits)

    def _quantizable(self, name):
        return self.types.get(name) in FLOAT_TYPES

    def _request_node(self, requests, info, node):
        """node's outputs are written in `info`, and node reads its activation inputs in `info`."""
        for out in node.output:
            if not self._quantizable(out):
                continue
            req = requests.setdefault(out, TensorTypeRequest())
            if req.producer is not None and req.producer != info:
                raise ValueError(f"Tensor {out} has multiple types.")
            req.producer = info
        for inp in node.input:
            if not inp or inp in self.initializers or not self._quantizable(inp):
                continue
            req = requests.setdefault(inp, TensorTypeRequest())
            if req.consumers is None:
                req.consumers = (info, set())
            if req.consumers[0] != info:
                raise ValueError(f"Tensor {inp} has consumers requesting different types.")
            if not node.name:
                raise ValueError(f"Node of type {node.op_type} with output 0 {node.output[0]} does not have a name!")
            req.consumers[1].add(node.name)

    def get_desired_tensor_types(self, default_activation_qtype, default_activation_symmetric):
        default = QuantTypeInfo(default_activation_qtype, default_activation_symmetric)
        requests = {}
        for name, entries in list(self.overrides.items()):
            if not self._quantizable(name) or name in self.initializers or not entries or len(entries) > 1:
                continue
            info = QuantTypeInfo.load_from_dict(entries[0], default_activation_qtype, default_activation_symmetric)
            if info == default or "convert" in entries[0]:
                continue
            if name in self.producers:
                self._request_node(requests, info, self.producers[name])
            for node in self.consumers.get(name, []):
                self._request_node(requests, info, node)
        return requests

    def _convert(self, name, producer_info, consumer_info, consumer_names, default_symmetric):
        entry = self.overrides.get(name)
        if not entry:
            self.overrides[name] = entry = [{}]
        d = entry[0]
        producer_info.save_to_dict(d, default_symmetric)
        if producer_info != consumer_info and consumer_names:  # a graph output read by no node needs no convert
            convert = d.setdefault("convert", {})
            consumer_info.save_to_dict(convert, default_symmetric)
            convert.setdefault("recv_nodes", set()).update(consumer_names)

    def apply(self, default_activation_qtype, default_activation_symmetric):
        """Rewrites the overrides so every node reads and writes one type, adding 'convert' entries."""
        default = QuantTypeInfo(default_activation_qtype, default_activation_symmetric)
        sym = default_activation_symmetric
        for name, req in self.get_desired_tensor_types(default_activation_qtype, sym).items():
            everyone = {n.name for n in self.consumers.get(name, [])}
            if req.producer is not None and not req.consumers:
                self._convert(name, req.producer, default, everyone, sym)
            elif req.producer is None and req.consumers:
                produced = self.overrides.get_node_output_qtype_info(name, default_activation_qtype, sym)
                if produced != req.consumers[0]:
                    self._convert(name, produced, req.consumers[0], req.consumers[1], sym)
            elif req.producer is not None:
                wanted, readers = req.consumers
                if req.producer != wanted:
                    self._convert(name, req.producer, wanted, readers, sym)
                elif not everyone - readers:
                    d = {}
                    req.producer.save_to_dict(d, sym)
                    self.overrides[name] = [d]
                else:
                    self._convert(name, req.producer, default, everyone - readers, sym)
