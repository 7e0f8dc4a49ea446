"""tests/webgpu: WebGPU EP kernels against the CPU EP, skipped where wgpu-py or a WebGPU adapter is unavailable."""
import functools

import pytest

import onnxide


@functools.lru_cache(maxsize=None)
def unavailable():
    """Why the WebGPU EP cannot run here, or None."""
    if "WebGpuExecutionProvider" not in onnxide.get_available_providers():
        return "wgpu-py is not installed (pip install wgpu; a Vulkan driver such as mesa-vulkan-drivers)"
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    try:
        onnxide.InferenceSession(model, providers=["WebGpuExecutionProvider"])
    except onnxide.EPFail as e:
        return f"no WebGPU adapter here: {e}"
    return None


@pytest.fixture(autouse=True)
def _webgpu():
    why = unavailable()
    if why:
        pytest.skip(why)
