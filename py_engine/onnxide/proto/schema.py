"""The ONNX protobuf messages (onnx-ml.proto, IR version 13) as field tables for the pure-Python codec."""
from .wire import BYTES, DOUBLE, FLOAT, INT, MESSAGE, STRING, UINT, Field, message_class


def F(num, name, kind, rep=False, msg=None, presence=False, oneof=None):
    return Field(num, name, kind, rep, msg, presence, oneof)


def M(num, name, msg, rep=False, oneof=None):
    return Field(num, name, MESSAGE, rep, msg, oneof=oneof)


StringStringEntryProto = message_class("StringStringEntryProto", [F(1, "key", STRING), F(2, "value", STRING)])
OperatorSetIdProto = message_class("OperatorSetIdProto", [F(1, "domain", STRING), F(2, "version", INT)])
Segment = message_class("Segment", [F(1, "begin", INT), F(2, "end", INT)])
TensorProto = message_class("TensorProto", [
    F(1, "dims", INT, True), F(2, "data_type", INT), M(3, "segment", "Segment"),
    F(4, "float_data", FLOAT, True), F(5, "int32_data", INT, True), F(6, "string_data", BYTES, True),
    F(7, "int64_data", INT, True), F(8, "name", STRING), F(12, "doc_string", STRING), F(9, "raw_data", BYTES),
    M(13, "external_data", "StringStringEntryProto", True), F(14, "data_location", INT),
    F(10, "double_data", DOUBLE, True), F(11, "uint64_data", UINT, True),
    M(16, "metadata_props", "StringStringEntryProto", True),
])
SparseTensorProto = message_class("SparseTensorProto", [
    M(1, "values", "TensorProto"), M(2, "indices", "TensorProto"), F(3, "dims", INT, True)])
Dimension = message_class("Dimension", [
    F(1, "dim_value", INT, presence=True, oneof="value"), F(2, "dim_param", STRING, presence=True, oneof="value"),
    F(3, "denotation", STRING)])
TensorShapeProto = message_class("TensorShapeProto", [M(1, "dim", "Dimension", True)])
TypeProtoTensor = message_class("TypeProtoTensor", [F(1, "elem_type", INT), M(2, "shape", "TensorShapeProto")])
TypeProtoSequence = message_class("TypeProtoSequence", [M(1, "elem_type", "TypeProto")])
TypeProtoMap = message_class("TypeProtoMap", [F(1, "key_type", INT), M(2, "value_type", "TypeProto")])
TypeProtoOptional = message_class("TypeProtoOptional", [M(1, "elem_type", "TypeProto")])
TypeProtoOpaque = message_class("TypeProtoOpaque", [F(1, "domain", STRING), F(2, "name", STRING)])
TypeProto = message_class("TypeProto", [
    M(1, "tensor_type", "TypeProtoTensor", oneof="value"), M(4, "sequence_type", "TypeProtoSequence", oneof="value"),
    M(5, "map_type", "TypeProtoMap", oneof="value"), M(9, "optional_type", "TypeProtoOptional", oneof="value"),
    M(8, "sparse_tensor_type", "TypeProtoTensor", oneof="value"), M(7, "opaque_type", "TypeProtoOpaque", oneof="value"),
    F(6, "denotation", STRING),
])
ValueInfoProto = message_class("ValueInfoProto", [
    F(1, "name", STRING), M(2, "type", "TypeProto"), F(3, "doc_string", STRING),
    M(4, "metadata_props", "StringStringEntryProto", True)])
AttributeProto = message_class("AttributeProto", [
    F(1, "name", STRING), F(21, "ref_attr_name", STRING), F(13, "doc_string", STRING), F(20, "type", INT),
    F(2, "f", FLOAT), F(3, "i", INT), F(4, "s", BYTES), M(5, "t", "TensorProto"), M(6, "g", "GraphProto"),
    M(22, "sparse_tensor", "SparseTensorProto"), M(14, "tp", "TypeProto"),
    F(7, "floats", FLOAT, True), F(8, "ints", INT, True), F(9, "strings", BYTES, True),
    M(10, "tensors", "TensorProto", True), M(11, "graphs", "GraphProto", True),
    M(23, "sparse_tensors", "SparseTensorProto", True), M(15, "type_protos", "TypeProto", True),
])
SimpleShardedDimProto = message_class("SimpleShardedDimProto", [
    F(1, "dim_value", INT, presence=True, oneof="value"), F(2, "dim_param", STRING, presence=True, oneof="value"),
    F(3, "num_shards", INT)])
ShardedDimProto = message_class("ShardedDimProto", [
    F(1, "axis", INT), M(2, "simple_sharding", "SimpleShardedDimProto", True)])
IntIntListEntryProto = message_class("IntIntListEntryProto", [F(1, "key", INT), F(2, "value", INT, True)])
ShardingSpecProto = message_class("ShardingSpecProto", [
    F(1, "tensor_name", STRING), F(2, "device", INT, True),
    M(3, "index_to_device_group_map", "IntIntListEntryProto", True), M(4, "sharded_dim", "ShardedDimProto", True)])
NodeDeviceConfigurationProto = message_class("NodeDeviceConfigurationProto", [
    F(1, "configuration_id", STRING), M(2, "sharding_spec", "ShardingSpecProto", True), F(3, "pipeline_stage", INT)])
NodeProto = message_class("NodeProto", [
    F(1, "input", STRING, True), F(2, "output", STRING, True), F(3, "name", STRING), F(4, "op_type", STRING),
    F(7, "domain", STRING), F(8, "overload", STRING), M(5, "attribute", "AttributeProto", True),
    F(6, "doc_string", STRING), M(9, "metadata_props", "StringStringEntryProto", True),
    M(10, "device_configurations", "NodeDeviceConfigurationProto", True),
])
TensorAnnotation = message_class("TensorAnnotation", [
    F(1, "tensor_name", STRING), M(2, "quant_parameter_tensor_names", "StringStringEntryProto", True)])
GraphProto = message_class("GraphProto", [
    M(1, "node", "NodeProto", True), F(2, "name", STRING), M(5, "initializer", "TensorProto", True),
    M(15, "sparse_initializer", "SparseTensorProto", True), F(10, "doc_string", STRING),
    M(11, "input", "ValueInfoProto", True), M(12, "output", "ValueInfoProto", True),
    M(13, "value_info", "ValueInfoProto", True), M(14, "quantization_annotation", "TensorAnnotation", True),
    M(16, "metadata_props", "StringStringEntryProto", True),
])
TrainingInfoProto = message_class("TrainingInfoProto", [
    M(1, "initialization", "GraphProto"), M(2, "algorithm", "GraphProto"),
    M(3, "initialization_binding", "StringStringEntryProto", True),
    M(4, "update_binding", "StringStringEntryProto", True)])
FunctionProto = message_class("FunctionProto", [
    F(1, "name", STRING), F(4, "input", STRING, True), F(5, "output", STRING, True),
    F(6, "attribute", STRING, True), M(11, "attribute_proto", "AttributeProto", True),
    M(7, "node", "NodeProto", True), F(8, "doc_string", STRING), M(9, "opset_import", "OperatorSetIdProto", True),
    F(10, "domain", STRING), F(13, "overload", STRING), M(12, "value_info", "ValueInfoProto", True),
    M(14, "metadata_props", "StringStringEntryProto", True),
])
DeviceConfigurationProto = message_class("DeviceConfigurationProto", [
    F(1, "name", STRING), F(2, "num_devices", INT), F(3, "device", STRING, True)])
ModelProto = message_class("ModelProto", [
    F(1, "ir_version", INT), M(8, "opset_import", "OperatorSetIdProto", True), F(2, "producer_name", STRING),
    F(3, "producer_version", STRING), F(4, "domain", STRING), F(5, "model_version", INT),
    F(6, "doc_string", STRING), M(7, "graph", "GraphProto"), M(14, "metadata_props", "StringStringEntryProto", True),
    M(20, "training_info", "TrainingInfoProto", True), M(25, "functions", "FunctionProto", True),
    M(26, "configuration", "DeviceConfigurationProto", True),
])

# AttributeProto.type codes
ATTR_FLOAT, ATTR_INT, ATTR_STRING, ATTR_TENSOR, ATTR_GRAPH = 1, 2, 3, 4, 5
ATTR_FLOATS, ATTR_INTS, ATTR_STRINGS, ATTR_TENSORS, ATTR_GRAPHS = 6, 7, 8, 9, 10
ATTR_SPARSE_TENSOR, ATTR_SPARSE_TENSORS, ATTR_TYPE_PROTO, ATTR_TYPE_PROTOS = 11, 12, 13, 14

# the enum values and nested-class names protobuf's generated classes carry (TensorProto.FLOAT, ...), for code
# written against the `onnx` package (onnx_api.py)
from .. import dtypes as _dt  # noqa: E402

for _code, _name in _dt.NAMES.items():
    setattr(TensorProto, {"float": "FLOAT", "double": "DOUBLE"}.get(_name, _name.upper()), _code)
TensorProto.UNDEFINED, TensorProto.DEFAULT, TensorProto.EXTERNAL = 0, 0, 1
for _i, _name in enumerate(("UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS",
                            "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS")):
    setattr(AttributeProto, _name, _i)
TensorShapeProto.Dimension = Dimension
TypeProto.Tensor, TypeProto.Sequence, TypeProto.Map, TypeProto.Optional = (
    TypeProtoTensor, TypeProtoSequence, TypeProtoMap, TypeProtoOptional)
