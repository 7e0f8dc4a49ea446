"""Stands in for the `onnx` package where it is not installed (Pyodide): the names onnxide's tools use — load / save,
the message classes, helper, numpy_helper, shape_inference, checker.MAXIMUM_PROTOBUF, external_data_helper —
on onnxide's own codec. What it does not cover (version_converter) raises NotImplemented
naming the missing `onnx` package."""
import os
from types import SimpleNamespace

from ..errors import NotImplemented as _NotImplemented
from ..tensors import _external_bytes
from . import onnx_helper as _h
from . import parse
from .schema import (  # noqa: F401
    AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, SparseTensorProto,
    StringStringEntryProto, TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
)

IR_VERSION = _h.IR_VERSION
__version__ = "onnxide-compat"


def _missing(what):
    return _NotImplemented(f"{what} needs the `onnx` package, which is not installed (onnxide's stand-in covers "
                           "loading, saving, building and shape-inferring models)")


def load_model(f, format=None, load_external_data=True):  # noqa: A002 - onnx's name
    """A ModelProto from a path or a binary file object; external data read into raw_data unless
    load_external_data is False."""
    if hasattr(f, "read"):
        data, base = f.read(), None
    else:
        with open(os.fspath(f), "rb") as fh:
            data = fh.read()
        base = os.path.dirname(os.path.abspath(os.fspath(f)))
    model = parse(ModelProto, data)
    if load_external_data and model.graph is not None:
        for t in _tensors(model.graph):
            if t.data_location == TensorProto.EXTERNAL:
                if base is None:
                    raise _missing("loading external data of a model read from a file object")
                t.raw_data = bytes(_external_bytes(t, base))
                del t.external_data[:]
                t.data_location = TensorProto.DEFAULT
    return model


def _tensors(graph):
    """The graph's initializers and tensor attributes, its subgraphs' included."""
    yield from graph.initializer
    for n in graph.node:
        for a in n.attribute:
            if a.t is not None:
                yield a.t
            yield from a.tensors
            for g in ([a.g] if a.g is not None else []) + list(a.graphs):
                yield from _tensors(g)


def load_model_from_string(s, format=None):  # noqa: A002
    return parse(ModelProto, s)


def save_model(proto, f, format=None, save_as_external_data=False, all_tensors_to_one_file=True,  # noqa: A002
               location=None, size_threshold=1024, convert_attribute=False):
    """Writes the model's bytes to a path or a binary file object. save_as_external_data (to a path): the raw data of
    initializers (and of tensor attributes with convert_attribute) of size_threshold bytes or more goes to
    `location` beside the model (one file, written afresh; without all_tensors_to_one_file one file per tensor, named
    after it), the model keeping their location / offset / length; `proto` itself is left as it was."""
    if save_as_external_data:
        if hasattr(f, "write"):
            raise _missing("saving external data beside a file object")
        copy = ModelProto()
        copy.CopyFrom(proto)
        _write_external(copy, os.path.dirname(os.path.abspath(os.fspath(f))), all_tensors_to_one_file,
                        location or os.path.basename(os.fspath(f)) + ".data", size_threshold, convert_attribute)
        proto = copy
    data = proto if isinstance(proto, bytes) else proto.SerializeToString()
    if hasattr(f, "write"):
        f.write(data)
    else:
        with open(os.fspath(f), "wb") as fh:
            fh.write(data)


def _write_external(model, base, one_file, location, threshold, with_attributes):
    tensors = list(_tensors(model.graph)) if with_attributes else list(model.graph.initializer)
    opened = {}
    try:
        for t in tensors:
            if t.data_location == TensorProto.EXTERNAL or len(t.raw_data) < threshold or not len(t.raw_data):
                continue
            name = location if one_file else t.name
            if os.path.basename(name) != name or name in ("", ".", ".."):
                raise _NotImplemented(f"external data location {name!r} is not a file name beside the model")
            fh = opened.get(name)
            if fh is None:
                fh = opened[name] = open(os.path.join(base, name), "wb")
            offset = fh.tell()
            fh.write(t.raw_data)
            t.external_data = [StringStringEntryProto(key=k, value=str(v)) for k, v in (
                ("location", name), ("offset", offset), ("length", len(t.raw_data)))]
            t.data_location, t.raw_data = TensorProto.EXTERNAL, b""
    finally:
        for fh in opened.values():
            fh.close()


load, save, load_from_string = load_model, save_model, load_model_from_string


def _infer_shapes(model, check_type=False, strict_mode=False, data_prop=False):
    """A copy of `model` with the types onnxide's inference gives its main graph's values added to value_info
    (and to untyped graph outputs); declared types are kept."""
    from ..ir.model import load_model as build
    from ..ir.infer import infer_shapes
    if isinstance(model, (bytes, bytearray)):
        model = parse(ModelProto, model)
    out = ModelProto()
    out.CopyFrom(model)
    ir = build(out)
    infer_shapes(ir)
    g = ir.graph
    declared = {v.name for v in out.graph.value_info} | {v.name for v in out.graph.input}
    for o in out.graph.output:
        inferred = next((v for v in g.outputs if v.name == o.name), None)
        if o.type is None and inferred is not None and inferred.type is not None:
            o.type = inferred.type
        declared.add(o.name)
    for name, vi in g.value_info.items():
        if name not in declared and vi.type is not None:
            out.graph.value_info.append(ValueInfoProto(name=name, type=vi.type))
    return out


def _convert_version(model, target_version):
    raise _missing("onnx.version_converter.convert_version")


def _uses_external_data(tensor):
    return tensor.data_location == TensorProto.EXTERNAL


helper = SimpleNamespace(
    make_node=_h.make_node, make_attribute=_h.make_attribute, get_attribute_value=_h.get_attribute_value,
    make_tensor=_h.make_tensor, make_tensor_value_info=_h.make_tensor_value_info, make_graph=_h.make_graph,
    make_model=_h.make_model, make_opsetid=_h.make_opsetid, np_dtype_to_tensor_dtype=_h.np_dtype_to_tensor_dtype,
    NodeProto=NodeProto, TensorProto=TensorProto, AttributeProto=AttributeProto, ModelProto=ModelProto,
    GraphProto=GraphProto, ValueInfoProto=ValueInfoProto)
numpy_helper = SimpleNamespace(to_array=_h.to_array, from_array=_h.from_array)
shape_inference = SimpleNamespace(infer_shapes=_infer_shapes)
version_converter = SimpleNamespace(convert_version=_convert_version)
checker = SimpleNamespace(MAXIMUM_PROTOBUF=2147483648)
external_data_helper = SimpleNamespace(uses_external_data=_uses_external_data)
