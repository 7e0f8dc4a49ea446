"""WebGpuExecutionProvider: GPU kernels in WGSL (webgpu_shaders/), dispatched through wgpu-py natively and through
the page's navigator.gpu in Pyodide, on one device layer (device.py) with its buffer pool. Registers the
"webgpu" device type and the provider where a WebGPU implementation is present."""
import sys

from ...runtime.devices import register_device
from ...runtime.providers import register_provider

_page_backend = []  # set by init_page() in Pyodide


def available():
    """Whether a WebGPU implementation can be asked for a device here (natively: wgpu-py is installed)."""
    if sys.platform == "emscripten":
        return bool(_page_backend)
    import importlib.util
    return importlib.util.find_spec("wgpu") is not None


def _device(device_id):
    from .device import WebGpuDevice
    if _page_backend:
        return WebGpuDevice(_page_backend[0], device_id)
    from .backend_wgpu import WgpuBackend
    try:
        return WebGpuDevice(WgpuBackend(), device_id)
    except Exception as e:  # noqa: BLE001 - no driver / adapter: a clear one-line error at session creation
        from ...errors import EPFail
        raise EPFail(f"WebGpuExecutionProvider: no WebGPU device here ({type(e).__name__}: {e})") from None


def register():
    from .provider import WebGpuExecutionProvider
    register_device("webgpu", _device)
    register_provider(WebGpuExecutionProvider)


def __getattr__(name):
    """The provider class, imported on first use: a page without a GPU session does not pay its import (its kernel
    modules take ~0.1 s of a cold start in Pyodide)."""
    if name == "WebGpuExecutionProvider":
        from .provider import WebGpuExecutionProvider
        return WebGpuExecutionProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def init_page(device, f16, limits, description=""):
    """In Pyodide: adopt the page's GPUDevice (requested by the JS host) and register the provider."""
    from .backend_js import JsBackend
    _page_backend[:] = [JsBackend(device, f16, limits, description)]
    register()


__all__ = ["WebGpuExecutionProvider", "available", "init_page", "register"]
