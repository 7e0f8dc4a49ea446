"""The ONNX backend API over onnxide (`onnxruntime.backend`): prepare a model, run it, ask about devices."""
from .backend import OnnxRuntimeBackend, is_compatible, prepare, run, run_model, supports_device  # noqa: F401
