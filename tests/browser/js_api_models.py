"""Small ONNX models the browser tests serve (built with onnx at test time): every onnxruntime-web dtype through
Identity, 4-bit Identity, a MatMul with external data."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# onnxruntime-web type name -> (ONNX type, numpy dtype of the JS data)
JS_TYPES = {
    "float32": (TensorProto.FLOAT, np.float32), "float64": (TensorProto.DOUBLE, np.float64),
    "float16": (TensorProto.FLOAT16, np.float16), "int8": (TensorProto.INT8, np.int8),
    "uint8": (TensorProto.UINT8, np.uint8), "int16": (TensorProto.INT16, np.int16),
    "uint16": (TensorProto.UINT16, np.uint16), "int32": (TensorProto.INT32, np.int32),
    "uint32": (TensorProto.UINT32, np.uint32), "int64": (TensorProto.INT64, np.int64),
    "uint64": (TensorProto.UINT64, np.uint64), "bool": (TensorProto.BOOL, np.bool_),
    "string": (TensorProto.STRING, object),
}


def _identity_model(types, opset=21):
    ins, outs, nodes = [], [], []
    for name, code in types.items():
        ins.append(helper.make_tensor_value_info(f"x_{name}", code, ["n", 3]))
        outs.append(helper.make_tensor_value_info(f"y_{name}", code, ["n", 3]))
        nodes.append(helper.make_node("Identity", [f"x_{name}"], [f"y_{name}"]))
    g = helper.make_graph(nodes, "identities", ins, outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def write_all(folder):
    """Writes the test models under `folder`; returns their file names."""
    os.makedirs(folder, exist_ok=True)
    onnx.save(_identity_model({k: v[0] for k, v in JS_TYPES.items()}), os.path.join(folder, "alltypes.onnx"))
    onnx.save(_identity_model({"int4": TensorProto.INT4, "uint4": TensorProto.UINT4}),
              os.path.join(folder, "int4.onnx"))
    # MatMul + Add with its weight in an external file next to the model
    ext = os.path.join(folder, "ext")
    os.makedirs(ext, exist_ok=True)
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    m = helper.make_model(helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "ext", [x], [y], [w]),
                          opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(m, os.path.join(ext, "matmul.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="matmul.weights", size_threshold=0)
    return ["alltypes.onnx", "int4.onnx", "ext/matmul.onnx"]


def ext_weight():
    return np.arange(12, dtype=np.float32).reshape(4, 3) / 10
