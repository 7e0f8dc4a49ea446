"""Example models by name: onnxruntime's logreg_iris, mul_1 and sigmoid files (MIT, (c) Microsoft)."""
import os


def get_example(name):
    """The absolute path of example model `name`; FileNotFoundError when there is none of that name."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"Unable to find example '{name}'")
    return path
