"""Example models by name, as onnxruntime.datasets has them (logreg_iris, mul_1, sigmoid): built in code on first use
(the same graphs, weights and metadata as onnxruntime's files) and kept in a cache folder."""
import os

import numpy as np

from .. import proto as P
from ..ir.to_proto import make_attribute, tensor_value_info
from ..tensors import from_numpy

# scikit-learn's logistic regression on iris' first two features, as onnxruntime's logreg_iris.onnx holds it
_IRIS_COEFFICIENTS = [0.385741144418716, 1.38054060935974, -2.13144993782043, -0.992804825305939, 0.642774522304535,
                      -1.74893879890442, 0.515096604824066, -1.4053475856781, -1.72411918640137, -1.15951371192932,
                      2.24788475036621, 2.428391456604]
_IRIS_INTERCEPTS = [0.249629199504852, 0.582027792930603, -0.941616654396057]


def _model(graph, opset, opset_domain="", **meta):
    return P.ModelProto(ir_version=3, graph=graph, opset_import=[P.OperatorSetIdProto(domain=opset_domain,
                                                                                      version=opset)],
                        **meta).SerializeToString()


def _logreg_iris():
    ml = "ai.onnx.ml"
    nodes = [P.NodeProto(op_type="LinearClassifier", name="LinearClassifier", domain=ml, input=["float_input"],
                         output=["label", "probability_tensor"],
                         attribute=[make_attribute("classlabels_ints", [0, 1, 2]),
                                    make_attribute("coefficients", [float(c) for c in _IRIS_COEFFICIENTS]),
                                    make_attribute("intercepts", [float(c) for c in _IRIS_INTERCEPTS]),
                                    make_attribute("multi_class", 0), make_attribute("post_transform", "LOGISTIC")]),
             P.NodeProto(op_type="Normalizer", name="Normalizer", domain=ml, input=["probability_tensor"],
                         output=["probability_tensor_normalized"], attribute=[make_attribute("norm", "L1")]),
             P.NodeProto(op_type="ZipMap", name="ZipMap", domain=ml, input=["probability_tensor_normalized"],
                         output=["probabilities"],
                         attribute=[make_attribute("classlabels_int64s", [0, 1, 2])])]
    seq_of_maps = P.TypeProto(sequence_type=P.TypeProtoSequence(elem_type=P.TypeProto(map_type=P.TypeProtoMap(
        key_type=7, value_type=P.TypeProto(tensor_type=P.TypeProtoTensor(elem_type=1))))))
    graph = P.GraphProto(name="3c59201b940f410fa29dc71ea9d5767d", node=nodes,
                         input=[tensor_value_info("float_input", (3, 2))],
                         output=[tensor_value_info("label", (3,), 7), P.ValueInfoProto(name="probabilities",
                                                                                      type=seq_of_maps)])
    return _model(graph, 1, "ai.onnx.ml", producer_name="OnnxMLTools", producer_version="1.2.0.0116", domain="onnxml")


def _mul_1():
    w = from_numpy(np.arange(1, 7, dtype=np.float32).reshape(3, 2), "W")
    graph = P.GraphProto(name="mul test", node=[P.NodeProto(op_type="Mul", name="mul_1", input=["X", "W"],
                                                            output=["Y"])],
                         initializer=[w], input=[tensor_value_info("X", (3, 2))],
                         output=[tensor_value_info("Y", (3, 2))])
    return _model(graph, 7, producer_name="chenta")


def _sigmoid():
    graph = P.GraphProto(name="test_sigmoid", node=[P.NodeProto(op_type="Sigmoid", input=["x"], output=["y"])],
                         input=[tensor_value_info("x", (3, 4, 5))], output=[tensor_value_info("y", (3, 4, 5))])
    return _model(graph, 9, producer_name="backend-test")


EXAMPLES = {"logreg_iris.onnx": _logreg_iris, "mul_1.onnx": _mul_1, "sigmoid.onnx": _sigmoid}


def _cache_dir():
    """This package's folder where it can be written (a checkout, a venv), else ~/.cache/onnxide/datasets."""
    here = os.path.dirname(os.path.abspath(__file__))
    if os.access(here, os.W_OK):
        return here
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "onnxide", "datasets")


def get_example(name):
    """The absolute path of example model `name`; FileNotFoundError when there is none of that name."""
    if name not in EXAMPLES:
        raise FileNotFoundError(f"Unable to find example '{name}'")
    folder = _cache_dir()
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(EXAMPLES[name]())
            os.replace(tmp, path)  # (processes building it at once each put a whole file)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return path
