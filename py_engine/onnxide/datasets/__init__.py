"""Small example models for documentation and tests (`datasets.get_example(name)`): logreg_iris.onnx, mul_1.onnx,
sigmoid.onnx — the model files onnxruntime ships under the same names (MIT license, (c) Microsoft)."""
import os


def get_example(name):
    """The absolute path of example model `name`; FileNotFoundError when there is none of that name."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"Unable to find example '{name}'")
    return path
