"""Optional execution providers beside the CPU EP; each registers itself only when its runtime is present.

Import order: EPs depend on the op registry and runtime.providers, never on each other.
"""
from ..runtime.providers import register_provider

from . import wasm as _wasm
from . import webgpu as _webgpu

if _wasm.available():
    register_provider(_wasm.WasmExecutionProvider)
if _webgpu.available():
    _webgpu.register()

try:  # native_eps/ (installed with the package natively): registers its EPs where their libraries are built
    import onnxide_native  # noqa: F401
except ImportError:
    pass
