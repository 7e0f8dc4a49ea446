"""onnxruntime's QNN quantization helpers: get_qnn_qdq_config and the mixed-precision overrides fixer (pure graph
tooling: the configs they build quantize and run on onnxide like any other)."""
from .quant_config import get_qnn_qdq_config  # noqa: F401
from .preprocess import qnn_preprocess_model  # noqa: F401,E402
