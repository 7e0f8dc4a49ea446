"""`onnxruntime.capi._pybind_state`: the native module's names (capi/onnxruntime_pybind11_state.py)."""
from .onnxruntime_pybind11_state import *  # noqa: F401,F403
