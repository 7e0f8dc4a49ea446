"""onnxide: an ONNX inference engine in pure Python + numpy, with onnxruntime's Python API."""
from . import errors  # noqa: F401
from .errors import (  # noqa: F401
    DeviceReset, EngineError, EPFail, Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, ModelLoadCanceled,
    ModelLoaded, ModelRequiresCompilation, NoModel, NoSuchFile, NotFound, NotImplemented, RuntimeException,
)
from .runtime.enums import OrtDeviceVendorId  # noqa: F401
from .runtime.options import (  # noqa: F401
    ExecutionMode, ExecutionOrder, GraphOptimizationLevel, RunOptions, SessionOptions,
)
from .runtime.providers import available_providers as get_available_providers  # noqa: F401
from .runtime.iobinding import IOBinding  # noqa: F401
from .runtime.ortvalue import OrtDevice, OrtValue  # noqa: F401
from .runtime.session import InferenceSession, ModelMetadata, NodeArg  # noqa: F401
from .runtime.env import get_device, get_version_string, preload_dlls  # noqa: F401
from .capi.onnxruntime_pybind11_state import (  # noqa: F401  onnxruntime's top-level names
    LoraAdapter, ModelCompiler, OrtAllocatorType, OrtArenaCfg, OrtCompileApiFlags, OrtDeviceMemoryType,
    OrtEpAssignedNode, OrtEpAssignedSubgraph, OrtEpDevice, OrtExecutionProviderDevicePolicy,
    OrtExternalInitializerInfo, OrtHardwareDevice, OrtHardwareDeviceType, OrtMemoryInfo, OrtMemoryInfoDeviceType,
    OrtMemType, OrtSparseFormat, SessionIOBinding, create_and_register_allocator, create_and_register_allocator_v2,
    disable_telemetry_events, enable_telemetry_events, get_all_providers, get_build_info, get_ep_devices,
    has_collective_ops, register_execution_provider_library, set_default_logger_callback,
    set_default_logger_severity, set_default_logger_verbosity, set_global_thread_pool_sizes, set_seed,
    unregister_execution_provider_library,
)
from .capi.onnxruntime_inference_collection import AdapterFormat, SparseTensor, copy_tensors  # noqa: F401
from .capi import _pybind_state, onnxruntime_inference_collection, onnxruntime_pybind11_state  # noqa: F401
from . import ops as _ops  # noqa: F401  (registers every kernel)
from . import eps as _eps  # noqa: F401  (registers WasmExecutionProvider where its runtime and a build exist)

__version__ = "0.1.0"
