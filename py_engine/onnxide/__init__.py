"""onnxide: an ONNX inference engine in pure Python + numpy, with onnxruntime's Python API."""
from . import errors  # noqa: F401
from .errors import (  # noqa: F401
    EngineError, EPFail, Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, ModelLoaded, NoModel, NoSuchFile,
    NotImplemented, RuntimeException,
)
from .runtime.options import (  # noqa: F401
    ExecutionMode, ExecutionOrder, GraphOptimizationLevel, RunOptions, SessionOptions,
)
from .runtime.providers import available_providers as get_available_providers  # noqa: F401
from .runtime.iobinding import IOBinding  # noqa: F401
from .runtime.ortvalue import OrtDevice, OrtValue  # noqa: F401
from .runtime.session import InferenceSession, ModelMetadata, NodeArg  # noqa: F401
from . import ops as _ops  # noqa: F401  (registers every kernel)
from . import eps as _eps  # noqa: F401  (registers WasmExecutionProvider where its runtime and a build exist)

__version__ = "0.1.0"


def get_device():
    """'CPU', like onnxruntime's CPU build."""
    return "CPU"


def get_version_string():
    return __version__
