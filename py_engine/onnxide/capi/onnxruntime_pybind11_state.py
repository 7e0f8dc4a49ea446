"""The names of onnxruntime's native module, each re-exported from onnxide's own modules."""
from ..errors import (  # noqa: F401
    DeviceReset, EngineError, EPFail, Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, ModelLoadCanceled,
    ModelLoaded, ModelRequiresCompilation, NoModel, NoSuchFile, NotFound, NotImplemented, RuntimeException,
)
from ..runtime.compile import ModelCompiler, OrtExternalInitializerInfo  # noqa: F401
from ..runtime.enums import (  # noqa: F401
    ArenaExtendStrategy, ExecutionMode, ExecutionOrder, GraphOptimizationLevel, OrtAllocatorType, OrtCompileApiFlags,
    OrtCompiledModelCompatibility, OrtDeviceEpIncompatibilityReason, OrtDeviceMemoryType,
    OrtExecutionProviderDevicePolicy, OrtHardwareDeviceType, OrtMemoryInfoDeviceType, OrtMemType, OrtSparseFormat,
    kNextPowerOfTwo, kSameAsRequested,
)
from ..runtime.env import (  # noqa: F401
    disable_telemetry_events, enable_telemetry_events, get_all_providers, get_build_info, get_device,
    get_version_string, has_collective_ops, register_execution_provider_library, set_default_logger_callback,
    set_default_logger_severity, set_default_logger_verbosity, set_global_thread_pool_sizes, set_seed,
    unregister_execution_provider_library,
)
from ..runtime.ep_devices import (  # noqa: F401
    OrtEpAssignedNode, OrtEpAssignedSubgraph, OrtEpDevice, OrtHardwareDevice, get_ep_devices, get_hardware_devices,
    get_model_compatibility_for_ep_devices,
)
from ..runtime.lora import AdapterFormat, LoraAdapter  # noqa: F401
from ..runtime.memory_info import (  # noqa: F401
    OrtArenaCfg, OrtMemoryInfo, create_and_register_allocator, create_and_register_allocator_v2,
)
from ..runtime.options import RunOptions, SessionOptions  # noqa: F401
from ..runtime.ortvalue import OrtDevice, OrtValue, OrtValueVector  # noqa: F401
from ..runtime.providers import available_providers as get_available_providers  # noqa: F401
from ..runtime.session import ModelMetadata, NodeArg  # noqa: F401
from ..runtime.sparse import SparseTensor  # noqa: F401
from .onnxruntime_inference_collection import copy_tensors  # noqa: F401
from .session import CSession as InferenceSession  # noqa: F401
from .session import SessionIOBinding, get_default_session_options  # noqa: F401
