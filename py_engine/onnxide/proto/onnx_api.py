"""The `onnx` API onnxide's tools are written against: the `onnx` package when it is installed, else onnxide's
stand-in (onnx_compat.py: Pyodide has no `onnx`). Import from here: `from ..proto.onnx_api import onnx, helper`."""
try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    HAVE_ONNX = True
except ImportError:
    from . import onnx_compat as onnx
    from .onnx_compat import TensorProto, helper, numpy_helper
    HAVE_ONNX = False

__all__ = ["HAVE_ONNX", "TensorProto", "helper", "numpy_helper", "onnx"]
