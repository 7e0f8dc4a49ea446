"""Device values at the API, on the mock device: OrtValue carries its device, IO binding keeps inputs and outputs
there (no transfer), sessions chain on the device, foreign tensors come in through DLPack."""
import gc

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide as ort
from device.mock_device import MOCK, install

F = TensorProto.FLOAT


@pytest.fixture
def dev():
    gc.collect()
    return install()


def _mul_add(w=2.0):
    g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "x"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", F, ["N", 3])],
                          [helper.make_tensor_value_info("y", F, ["N", 3])],
                          [numpy_helper.from_array(np.full(3, w, np.float32), "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_ortvalue_carries_its_device(dev):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = ort.OrtValue.ortvalue_from_numpy(x, "mock", 0)
    assert (v.device_name(), v.shape(), v.data_type(), v.element_type()) == ("mock", [2, 3], "tensor(float)",
                                                                            TensorProto.FLOAT)
    assert dev.uploads == 1
    np.testing.assert_array_equal(v.numpy(), x)
    assert dev.downloads == 1
    assert ort.OrtValue.ortvalue_from_numpy(x).device_name() == "cpu"
    assert ort.OrtDevice.make("mock", 0).device_type() == ort.OrtDevice.cuda()  # a GPU-kind device
    with pytest.raises(ort.InvalidArgument, match="nodevice"):
        ort.OrtValue.ortvalue_from_numpy(x, "nodevice", 0)


def test_io_binding_keeps_inputs_and_outputs_on_the_device(dev):
    sess = ort.InferenceSession(_mul_add(), providers=[MOCK])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    xv = ort.OrtValue.ortvalue_from_numpy(x, "mock", 0)
    b = sess.io_binding()
    b.bind_ortvalue_input("x", xv)
    b.bind_output("y", "mock", 0)
    for _ in range(2):
        dev.uploads = dev.downloads = 0
        sess.run_with_iobinding(b)
        (y,) = b.get_outputs()
        assert y.device_name() == "mock" and (dev.uploads, dev.downloads) == (0, 0)
    assert dev.constants == 1  # the weight, placed once
    np.testing.assert_array_equal(b.copy_outputs_to_cpu()[0], x * 2 + x)
    assert dev.downloads == 1


def test_sessions_chain_on_the_device(dev):
    first = ort.InferenceSession(_mul_add(2.0), providers=[MOCK])
    second = ort.InferenceSession(_mul_add(3.0), providers=[MOCK])
    x = np.ones((1, 3), np.float32)
    b1 = first.io_binding()
    b1.bind_cpu_input("x", x)
    b1.bind_output("y", "mock")
    first.run_with_iobinding(b1)
    mid = b1.get_outputs()[0]
    dev.uploads = dev.downloads = 0
    (y,) = second.run(None, {"x": mid})  # a device OrtValue as an ordinary feed
    assert dev.uploads == 0 and dev.downloads == 1
    np.testing.assert_array_equal(y, (x * 3) * 3 + x * 3)


def test_bound_output_ortvalue_on_the_device_is_filled(dev):
    sess = ort.InferenceSession(_mul_add(), providers=[MOCK])
    out = ort.OrtValue.ortvalue_from_shape_and_type([1, 3], np.float32, "mock", 0)
    b = sess.io_binding()
    b.bind_cpu_input("x", np.ones((1, 3), np.float32))
    b.bind_ortvalue_output("y", out)
    sess.run_with_iobinding(b)
    assert b.get_outputs()[0] is out and out.device_name() == "mock"
    np.testing.assert_array_equal(out.numpy(), [[3, 3, 3]])


def test_a_device_value_fed_to_a_host_session_is_read_back(dev):
    sess = ort.InferenceSession(_mul_add(), providers=["CPUExecutionProvider"])
    v = ort.OrtValue.ortvalue_from_numpy(np.ones((1, 3), np.float32), "mock")
    np.testing.assert_array_equal(sess.run(None, {"x": v})[0], [[3, 3, 3]])
    out = sess.run_with_ort_values(None, {"x": v})[0]
    assert out.device_name() == "cpu"


def test_dlpack_feeds(dev):
    sess = ort.InferenceSession(_mul_add(), providers=["CPUExecutionProvider"])

    class OnAnotherDevice:
        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

        def __dlpack__(self, stream=None):
            raise AssertionError("not read")

    with pytest.raises(ort.InvalidArgument, match="Input 'x'.*DLPack device type 2"):
        sess.run(None, {"x": OnAnotherDevice()})
    torch = pytest.importorskip("torch", reason="torch is not installed (its CPU tensors are a DLPack producer)")
    t = torch.ones((2, 3), dtype=torch.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": t})[0], np.full((2, 3), 3, np.float32))
