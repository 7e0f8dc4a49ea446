"""onnx.helper's and onnx.numpy_helper's builders (the subset onnxide's tools use), on onnxide's message classes:
make_node / make_attribute / make_tensor / make_tensor_value_info / make_graph / make_model / make_opsetid,
get_attribute_value, np_dtype_to_tensor_dtype, to_array / from_array. Semantics as onnx documents them."""
import numbers

import numpy as np

from .. import dtypes as dt
from ..tensors import from_numpy, pack_bits, to_numpy
from .schema import (
    AttributeProto as A, Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto as T,
    TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
)

IR_VERSION = 10  # what make_model writes by default (onnx 1.16's; onnxide reads up to ir/model.py's NEWEST_IR_VERSION)
_FLOAT8 = (T.FLOAT8E4M3FN, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2, T.FLOAT8E5M2FNUZ, T.FLOAT8E8M0, T.BFLOAT16)


def make_opsetid(domain, version):
    return OperatorSetIdProto(domain=domain, version=int(version))


def _text(v):
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


def make_attribute(key, value, doc_string=None):
    """An AttributeProto, its type from the value: int (bool too), float, str / bytes, TensorProto, GraphProto, or a
    non-empty list of one of those (ints and floats mixed make FLOATS)."""
    a = A(name=key)
    if doc_string:
        a.doc_string = doc_string
    if isinstance(value, numbers.Integral):
        a.type, a.i = A.INT, int(value)
    elif isinstance(value, numbers.Real):
        a.type, a.f = A.FLOAT, float(value)
    elif isinstance(value, (str, bytes)):
        a.type, a.s = A.STRING, _text(value)
    elif isinstance(value, T):
        a.type, a.t = A.TENSOR, value
    elif isinstance(value, GraphProto):
        a.type, a.g = A.GRAPH, value
    elif isinstance(value, TypeProto):
        a.type, a.tp = A.TYPE_PROTO, value
    elif hasattr(value, "__iter__"):
        items = list(value)
        if not items:
            raise ValueError(f"Could not infer attribute `{key}` type from empty iterator")
        if all(isinstance(v, numbers.Integral) for v in items):
            a.type, a.ints = A.INTS, [int(v) for v in items]
        elif all(isinstance(v, numbers.Real) for v in items):
            a.type, a.floats = A.FLOATS, [float(v) for v in items]
        elif all(isinstance(v, (str, bytes)) for v in items):
            a.type, a.strings = A.STRINGS, [_text(v) for v in items]
        elif all(isinstance(v, T) for v in items):
            a.type, a.tensors = A.TENSORS, items
        elif all(isinstance(v, GraphProto) for v in items):
            a.type, a.graphs = A.GRAPHS, items
        else:
            raise ValueError(f"Could not infer the attribute type from the elements of the passed Iterable value "
                             f"(attribute `{key}`).")
    else:
        raise TypeError(f"'{value}' is not an accepted attribute value.")
    return a


def get_attribute_value(attr):
    """The attribute's value by its type: a number, bytes, a TensorProto / GraphProto, or a list of those."""
    t = attr.type
    if t == A.FLOAT:
        return attr.f
    if t == A.INT:
        return attr.i
    if t == A.STRING:
        return bytes(attr.s)
    if t == A.TENSOR:
        return attr.t
    if t == A.GRAPH:
        return attr.g
    if t == A.SPARSE_TENSOR:
        return attr.sparse_tensor
    if t == A.TYPE_PROTO:
        return attr.tp
    lists = {A.FLOATS: "floats", A.INTS: "ints", A.TENSORS: "tensors", A.GRAPHS: "graphs",
             A.SPARSE_TENSORS: "sparse_tensors", A.TYPE_PROTOS: "type_protos"}
    if t == A.STRINGS:
        return [bytes(s) for s in attr.strings]
    if t in lists:
        return list(getattr(attr, lists[t]))
    if t == A.UNDEFINED:
        return None
    raise ValueError(f"Unsupported ONNX attribute: {attr}")


def make_node(op_type, inputs, outputs, name=None, doc_string=None, domain=None, overload=None, **kwargs):
    """A NodeProto; keyword arguments become attributes, sorted by name, those that are None left out."""
    node = NodeProto(op_type=op_type, input=list(inputs), output=list(outputs))
    if name:
        node.name = name
    if doc_string:
        node.doc_string = doc_string
    if domain is not None:
        node.domain = domain
    if overload is not None:
        node.overload = overload
    node.attribute = [make_attribute(k, v) for k, v in sorted(kwargs.items()) if v is not None]
    return node


def np_dtype_to_tensor_dtype(np_dtype):
    return dt.exotic_code(np.dtype(np_dtype)) or dt.code_of(np_dtype)


def make_tensor(name, data_type, dims, vals, raw=False):
    """A TensorProto of `vals`: with raw=True, `vals` are the little-endian bytes; else the values go to the type's
    field (float16 / bfloat16 / float8 as their bit patterns in int32_data, 4-bit values two a byte)."""
    t = T(name=name, data_type=int(data_type), dims=[int(d) for d in dims])
    if raw:
        if data_type == T.STRING:
            raise TypeError("Can not use raw_data to store string type.")
        t.raw_data = bytes(vals)
        return t
    code = int(data_type)
    if code == T.STRING:
        t.string_data = [_text(v) for v in np.asarray(vals, dtype=object).ravel()]
        return t
    flat = np.asarray(vals).ravel() if not isinstance(vals, (bytes, bytearray)) else np.frombuffer(vals, np.uint8)
    count = int(np.prod(t.dims)) if t.dims else 1
    if code in (T.COMPLEX64, T.COMPLEX128):
        pairs = np.stack([flat.real, flat.imag], axis=-1).ravel().tolist()
        if code == T.COMPLEX64:
            t.float_data = pairs
        else:
            t.double_data = pairs
    elif code == T.FLOAT:
        t.float_data = flat.astype(np.float32).tolist()
    elif code == T.DOUBLE:
        t.double_data = flat.astype(np.float64).tolist()
    elif code == T.INT64:
        t.int64_data = flat.astype(np.int64).tolist()
    elif code in (T.UINT32, T.UINT64):
        t.uint64_data = flat.astype(np.uint64).tolist()
    elif code == T.FLOAT16:
        t.int32_data = flat.astype(np.float16).view(np.uint16).astype(np.int64).tolist()
    elif code in _FLOAT8:
        bits = dt.raw(dt.from_float32(flat.astype(np.float32), code), code)
        t.int32_data = bits.astype(np.int64).tolist()
    elif code in (T.INT4, T.UINT4, T.INT2, T.UINT2, T.FLOAT4E2M1):
        if code == T.FLOAT4E2M1:
            packed = pack_bits(dt.from_float32(flat.astype(np.float32), code), code)
        else:
            packed = pack_bits(dt.wrap(flat.astype(np.int8 if code in (T.INT4, T.INT2) else np.uint8), code), code)
        t.int32_data = packed.astype(np.int64).tolist()
    else:
        t.int32_data = flat.astype(np.int64).tolist()
    if code not in (T.INT4, T.UINT4, T.INT2, T.UINT2, T.FLOAT4E2M1) and flat.size != count:
        raise ValueError(f"Number of values does not match tensor's size. Expected {count}, but it is {flat.size}.")
    return t


def make_tensor_value_info(name, elem_type, shape, doc_string="", shape_denotation=None):
    """A ValueInfoProto of a tensor; `shape` None (unknown rank) or dims each int, str (symbolic) or None."""
    tt = TypeProtoTensor(elem_type=int(elem_type))
    if shape is not None:
        dims = []
        for d in shape:
            if d is None:
                dims.append(Dimension())
            elif isinstance(d, numbers.Integral):
                dims.append(Dimension(dim_value=int(d)))
            elif isinstance(d, str):
                dims.append(Dimension(dim_param=d))
            else:
                raise ValueError(f"Invalid item in shape: {d}. Needs to be of int or str.")
        for dim, den in zip(dims, shape_denotation or ()):
            dim.denotation = den
        tt.shape = TensorShapeProto(dim=dims)
    return ValueInfoProto(name=name, type=TypeProto(tensor_type=tt), doc_string=doc_string)


def make_graph(nodes, name, inputs, outputs, initializer=None, doc_string=None, value_info=(),
               sparse_initializer=None):
    return GraphProto(node=list(nodes), name=name, input=list(inputs), output=list(outputs),
                      initializer=list(initializer or ()), doc_string=doc_string or "",
                      value_info=list(value_info or ()), sparse_initializer=list(sparse_initializer or ()))


def make_model(graph, **kwargs):
    """A ModelProto of `graph`: ir_version IR_VERSION and the default opset unless given (opset_imports=[...]);
    other keyword arguments set the ModelProto's fields of that name."""
    from ..ops.registry import newest_opset  # (ops import the IR: imported on use)
    opsets = kwargs.pop("opset_imports", None)
    m = ModelProto(ir_version=kwargs.pop("ir_version", IR_VERSION), graph=graph,
                   opset_import=list(opsets) if opsets is not None else [make_opsetid("", newest_opset(""))])
    for k, v in kwargs.items():
        f = ModelProto._BY_NAME.get(k)
        if f is None:
            raise AttributeError(f"ModelProto has no field {k!r}")
        setattr(m, k, list(v) if f.repeated else v)
    return m


# --- numpy_helper --------------------------------------------------------------------------------------------------

def to_array(tensor, base_dir=""):
    """The tensor's values as a numpy array (external data read from base_dir)."""
    return to_numpy(tensor, base_dir or None)


def from_array(arr, name=None):
    """A TensorProto holding `arr` in raw_data (strings in string_data)."""
    return from_numpy(np.asarray(arr), name or "")
