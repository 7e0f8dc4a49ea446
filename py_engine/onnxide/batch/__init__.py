"""Batch inference over datasets on Ray Data with onnxide as the engine (`pip install onnxide[ray]`)."""
from .model_source import put_model  # noqa: F401
from .predictor import BadRowsError, OnnxPredictor  # noqa: F401
from .score import connect, score  # noqa: F401
from .sizing import batch_size, plan  # noqa: F401
