"""Import shim: makes `import onnxruntime` resolve to onnxide, so third-party clients run their own pipelines on it.

    from models.ort_shim import onnxruntime_as
    with onnxruntime_as("onnxide", purge=("rapidocr_onnxruntime",)):
        import rapidocr_onnxruntime          # its `from onnxruntime import InferenceSession` now gets onnxide's
        ...

`onnxruntime_as("onnxide")` puts a module named `onnxruntime` built from onnxide's public API into sys.modules
(and on the `onnxruntime` attribute of nothing else); `onnxruntime_as("onnxruntime")` makes sure the real one is
there. `purge` names packages whose already-imported modules are dropped on entry and on exit, so that modules
binding onnxruntime names at import time (`from onnxruntime import X`) pick up the right ones. Every
InferenceSession the shim creates is recorded in `sessions` so tests can check onnxide really ran.
"""
import contextlib
import sys
import types

import onnxide

# Names the clients touch (rapidocr: InferenceSession, SessionOptions, GraphOptimizationLevel,
# get_available_providers, get_device; silero-vad and openwakeword: InferenceSession, SessionOptions) and the
# rest of onnxide's onnxruntime-compatible surface.
_EXPORTS = (
    "InferenceSession", "SessionOptions", "RunOptions", "GraphOptimizationLevel", "ExecutionMode", "ExecutionOrder",
    "get_available_providers", "get_device", "get_version_string", "IOBinding", "OrtValue", "NodeArg",
    "ModelMetadata",
)


def _build_module():
    mod = types.ModuleType("onnxruntime", "onnxide standing in for onnxruntime (tests/models/ort_shim.py)")
    for name in _EXPORTS:
        if hasattr(onnxide, name):
            setattr(mod, name, getattr(onnxide, name))
    sessions = []

    class InferenceSession(onnxide.InferenceSession):
        """onnxide's session, recorded so a test can prove the client used it."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            sessions.append(self)

    mod.InferenceSession = InferenceSession
    mod.sessions = sessions
    mod.__version__ = "1.32.0"  # the onnxruntime version whose API onnxide mirrors; clients may compare it
    mod.__onnxide__ = True
    # `onnxruntime.capi.onnxruntime_pybind11_state` exception names some clients catch
    capi = types.ModuleType("onnxruntime.capi")
    state = types.ModuleType("onnxruntime.capi.onnxruntime_pybind11_state")
    for name in ("Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
                 "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail"):
        if hasattr(onnxide, name):
            setattr(state, name, getattr(onnxide, name))
    capi.onnxruntime_pybind11_state = state
    mod.capi = capi
    return mod, {"onnxruntime.capi": capi, "onnxruntime.capi.onnxruntime_pybind11_state": state}


def _drop(prefixes):
    for name in list(sys.modules):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            del sys.modules[name]


@contextlib.contextmanager
def onnxruntime_as(engine, purge=()):
    """Within the block `import onnxruntime` gives `engine` ("onnxide" or "onnxruntime"); yields that module."""
    saved = {k: v for k, v in sys.modules.items() if k == "onnxruntime" or k.startswith("onnxruntime.")}
    fakes = {}
    _drop(purge)
    try:
        if engine == "onnxide":
            for k in saved:
                del sys.modules[k]
            mod, fakes = _build_module()
            fakes["onnxruntime"] = mod
            sys.modules.update(fakes)
        elif engine == "onnxruntime":
            import onnxruntime as mod  # the real one (raises ImportError when absent)
            if getattr(mod, "__onnxide__", False):
                raise RuntimeError("the onnxide shim is already active")
        else:
            raise ValueError(f"unknown engine {engine!r}")
        yield mod
    finally:
        _drop(purge)
        for k, v in fakes.items():
            if sys.modules.get(k) is v:
                del sys.modules[k]
        sys.modules.update(saved)
