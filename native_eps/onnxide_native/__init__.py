"""onnxide's native-only execution providers (native_eps/): each registers itself with onnxide only when its native
library is built and loads. onnxide.eps imports this package when it is installed; it may import onnxide's op
registry, runtime.providers and ops helpers, never the other EPs."""
from onnxide.runtime.providers import register_provider

from . import cpu as _cpu

if _cpu.available():
    _cpu.NativeCPUExecutionProvider.by_default = _cpu.by_default_here()
    register_provider(_cpu.NativeCPUExecutionProvider)
