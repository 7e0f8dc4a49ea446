"""Process-wide settings onnxruntime's module functions configure (providers, logging, seed, thread pools)."""
import logging
import platform

import numpy as np

from ..errors import Fail
from . import providers as eps

# every provider name onnxruntime knows, highest priority first (get_all_providers); CPU comes last
_ORT_PROVIDERS = (
    "TensorrtExecutionProvider", "CUDAExecutionProvider", "MIGraphXExecutionProvider", "OpenVINOExecutionProvider",
    "DnnlExecutionProvider", "VitisAIExecutionProvider", "QNNExecutionProvider", "NnapiExecutionProvider",
    "VSINPUExecutionProvider", "JsExecutionProvider", "CoreMLExecutionProvider", "DmlExecutionProvider",
    "RknpuExecutionProvider", "WebNNExecutionProvider", "WebGpuExecutionProvider", "XnnpackExecutionProvider",
    "CANNExecutionProvider", "AzureExecutionProvider")

_state = {"telemetry": True, "severity": 2, "verbosity": 0, "logger_callback": None, "global_threads": None,
          "allocators": [], "ep_libraries": {}}


def get_all_providers():
    """onnxruntime's provider names and onnxide's own, CPUExecutionProvider last."""
    own = [n for n in eps.available_providers() if n not in _ORT_PROVIDERS and n != "CPUExecutionProvider"]
    return list(_ORT_PROVIDERS) + own + ["CPUExecutionProvider"]


def is_known_provider(name):
    return name in _ORT_PROVIDERS or name in eps.available_providers() or name == "CPUExecutionProvider"


def get_build_info():
    from .. import __version__
    native = "NativeCPUExecutionProvider" in eps.available_providers()
    return (f"onnxide Build Info: version={__version__}, onnxruntime API=1.32, python={platform.python_version()}, "
            f"numpy={np.__version__}, native CPU kernels={'built' if native else 'not built'}")


def disable_telemetry_events():
    """onnxide sends no telemetry; the switch is kept for onnxruntime's API."""
    _state["telemetry"] = False


def enable_telemetry_events():
    _state["telemetry"] = True


_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR, 4: logging.CRITICAL}


def set_default_logger_severity(severity):
    """0 verbose, 1 info, 2 warning, 3 error, 4 fatal: the level of onnxide's `logging` logger."""
    if int(severity) not in _LEVELS:
        raise RuntimeError("Invalid logging severity. 0:Verbose, 1:Info, 2:Warning, 3:Error, 4:Fatal")
    _state["severity"] = int(severity)
    logging.getLogger("onnxide").setLevel(_LEVELS[int(severity)])


def set_default_logger_verbosity(verbosity):
    _state["verbosity"] = int(verbosity)


def set_default_logger_callback(callback):
    _state["logger_callback"] = callback


def set_seed(seed):
    """Seeds the generator of random ops that have no `seed` attribute."""
    from ..ops import random as random_ops
    random_ops.set_seed(int(seed))


def set_global_thread_pool_sizes(intra_op_num_threads=0, inter_op_num_threads=0):
    """Global thread pools: sessions created afterwards must set use_per_session_threads = False and use these."""
    if _state["global_threads"] is not None:
        raise Fail("Global thread pools have already been created, cannot replace them")
    _state["global_threads"] = (int(intra_op_num_threads), int(inter_op_num_threads))


def session_threads(so):
    """The intra-op thread count a session with options `so` runs with (checking its use of global pools)."""
    pools = _state["global_threads"]
    if not so.use_per_session_threads:
        if pools is None:
            raise RuntimeError("When the session is not configured to use per session threadpools, the env must "
                               "be created with global thread pools (set_global_thread_pool_sizes)")
        return pools[0]
    if pools is not None:
        raise RuntimeError("use_per_session_threads must be false when using a global thread pool")
    return so.intra_op_num_threads


def preload_dlls(cuda=True, cudnn=True, msvc=True, directory=None):
    """onnxruntime loads CUDA / cuDNN / MSVC runtime libraries here; onnxide needs none."""


def has_collective_ops():
    return False


def register_allocator(entry):
    _state["allocators"].append(entry)


def register_execution_provider_library(registration_name, path):
    """onnxruntime loads a compiled plugin EP library; onnxide cannot run compiled onnxruntime EPs."""
    if registration_name in _state["ep_libraries"]:
        raise Fail(f"Execution provider library: {registration_name} is already registered.")
    raise Fail(f"Failed to load library {path}: onnxide cannot load compiled onnxruntime execution provider "
               f"libraries")


def unregister_execution_provider_library(registration_name):
    if registration_name not in _state["ep_libraries"]:
        raise Fail(f"Execution provider library: {registration_name} was not registered.")
    del _state["ep_libraries"][registration_name]


def get_device():
    """'CPU', like onnxruntime's CPU build."""
    return "CPU"


def get_version_string():
    from .. import __version__
    return __version__
