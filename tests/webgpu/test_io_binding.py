"""IO binding on the WebGPU device natively: OrtValues made on 'webgpu' are read in place, outputs bound there stay
there (wgpu buffers of onnxide's device), and a second session consumes them without a readback."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

import onnxide as ort


def _model(w):
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                          [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_outputs_stay_on_the_gpu_between_sessions():
    w = np.array([[1, -1, 0], [0, 1, 0], [0, 0, -1]], np.float32)
    a = ort.InferenceSession(_model(w), providers=["WebGpuExecutionProvider"])
    b = ort.InferenceSession(_model(w.T.copy()), providers=["WebGpuExecutionProvider"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    xv = ort.OrtValue.ortvalue_from_numpy(x, "webgpu", 0)
    assert xv.device_name() == "webgpu"
    bind = a.io_binding()
    bind.bind_ortvalue_input("x", xv)
    bind.bind_output("y", "webgpu", 0)
    a.run_with_iobinding(bind)
    (mid,) = bind.get_outputs()
    device = mid.device
    reads = device.backend.read
    calls = []
    device.backend.read = lambda *args: calls.append(1) or reads(*args)
    try:
        b2 = b.io_binding()
        b2.bind_ortvalue_input("x", mid)
        b2.bind_output("y", "webgpu", 0)
        b.run_with_iobinding(b2)
        assert not calls  # nothing read back between the two sessions
    finally:
        device.backend.read = reads
    want = np.maximum(np.maximum(x @ w, 0) @ w.T, 0)
    np.testing.assert_allclose(b2.copy_outputs_to_cpu()[0], want, rtol=1e-6)
