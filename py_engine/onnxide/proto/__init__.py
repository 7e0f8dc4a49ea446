"""Pure-Python ONNX protobuf codec: read and write ModelProto and everything it holds (no onnx, no protobuf)."""
from ..errors import InvalidProtobuf
from .schema import (  # noqa: F401
    AttributeProto, Dimension, FunctionProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
    SparseTensorProto, StringStringEntryProto, TensorProto, TensorShapeProto, TypeProto, TypeProtoMap,
    TypeProtoOptional, TypeProtoSequence, TypeProtoTensor, ValueInfoProto,
)
from .wire import decode, encode, has_field  # noqa: F401


def parse(cls, data):
    """Decode `data` (bytes-like) as message class `cls`; any malformation, or nesting deeper than protobuf's
    recursion limit, raises InvalidProtobuf."""
    try:
        return decode(cls, data, depth=0)
    except InvalidProtobuf:
        raise
    except (IndexError, ValueError, KeyError, RecursionError, TypeError, OverflowError) as e:
        why = {IndexError: "truncated data", RecursionError: "messages nested too deeply"}.get(type(e), "a malformed "
                                                                                                  "value")
        raise InvalidProtobuf(f"Failed to load model: protobuf parsing failed ({why})") from None
